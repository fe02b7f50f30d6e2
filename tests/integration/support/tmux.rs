//! A private tmux server per test (started and killed by the test), and the skip contract:
//! without tmux a test says so loudly and skips, and `CREWMUX_REQUIRE_TMUX=1` (set by CI)
//! turns the skip into a failure.

use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};

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

/// A tmux server on a socket of its own; `kill-server` on drop, never the default server.
pub struct TmuxServer {
    pub socket: String,
}

impl TmuxServer {
    pub fn new(tag: &str) -> Self {
        TmuxServer {
            socket: format!(
                "crewmux-test-{tag}-{}-{}",
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

    pub fn kill(&self) {
        let _ = self.tmux(&["kill-server"]);
    }
}

impl Drop for TmuxServer {
    fn drop(&mut self) {
        self.kill();
    }
}
