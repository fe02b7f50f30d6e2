//! A private tmux server per test (started and killed by the test), and the skip contract:
//! without tmux a test says so loudly and skips, and `CREWMUX_REQUIRE_TMUX=1` (set by CI)
//! turns the skip into a failure.
//!
//! A server is ended on drop, also when the test failed: `kill-server` (bounded: a stopped
//! server never answers it), then SIGKILL for whatever still names its socket, then its
//! socket file (tmux 3.3a leaves it behind). A test process that was killed itself leaves
//! its servers running: the first server a later test process makes ends those first
//! ([`sweep_dead_tests`]).

use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};

use super::procs;
pub use super::procs::{end_server, socket_path};

/// Set by CI: a test that needs tmux fails instead of skipping when tmux is missing.
pub const REQUIRE_TMUX_ENV: &str = "CREWMUX_REQUIRE_TMUX";

static NEXT: AtomicU32 = AtomicU32::new(0);

/// True when tmux can be used; otherwise says so loudly (and panics under CI's
/// `CREWMUX_REQUIRE_TMUX=1`).
pub fn tmux_ready(test: &str) -> bool {
    let ok = Command::new("tmux")
        .arg("-V")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !ok {
        if std::env::var(REQUIRE_TMUX_ENV).as_deref() == Ok("1") {
            panic!("{test}: tmux is required ({REQUIRE_TMUX_ENV}=1) but not on PATH");
        }
        eprintln!("\n!!! SKIPPED {test}: tmux is not installed; install tmux to run it !!!\n");
    }
    ok
}

/// The prefix of every socket a test names (`crewmux-test-<tag>-<pid>-<n>`).
const PREFIX: &str = "crewmux-test-";

/// A tmux server on a socket of its own, ended on drop ([`end_server`]), never the default
/// server.
pub struct TmuxServer {
    pub socket: String,
}

impl TmuxServer {
    pub fn new(tag: &str) -> Self {
        sweep_dead_tests();
        TmuxServer {
            socket: format!(
                "{PREFIX}{tag}-{}-{}",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::SeqCst)
            ),
        }
    }

    /// Run `tmux -L <socket> args...`.
    pub fn tmux(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            // A server this starts hands it to its panes: crewmux in a pane keeps to the
            // tests' own state directory too.
            .env("XDG_STATE_HOME", super::run::state_home())
            .args(args)
            .output()
            .expect("tmux runs")
    }

    /// `kill-server`, as a person would (a test's run then meets a server that is gone).
    pub fn kill(&self) {
        let _ = self.tmux(&["kill-server"]);
    }
}

impl Drop for TmuxServer {
    fn drop(&mut self) {
        end_server(&self.socket);
    }
}

/// Once per test process, [`sweep_now`].
pub fn sweep_dead_tests() {
    static SWEPT: std::sync::Once = std::sync::Once::new();
    SWEPT.call_once(sweep_now);
}

/// End the servers of test processes that are gone (killed before their guards ran: a
/// timeout, a person's Ctrl-C) and remove their socket files. The pid in a test socket's
/// name says whose it is; a live process's servers are never touched.
pub fn sweep_now() {
    let Some(dir) = socket_path(PREFIX).parent().map(PathBuf::from) else {
        return;
    };
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(PREFIX) else {
            continue;
        };
        let owner = rest.rsplit('-').nth(1).and_then(|p| p.parse::<u32>().ok());
        if owner.is_none_or(procs::alive) {
            continue;
        }
        if std::os::unix::net::UnixStream::connect(e.path()).is_ok() {
            end_server(&name);
        } else {
            let _ = std::fs::remove_file(e.path());
        }
    }
}
