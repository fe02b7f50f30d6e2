//! A test that fails leaves nothing running: its guards (`support::TmuxServer`,
//! `support::Project`, `support::sshd::SshHost`) end a driver it did not wait for, the
//! run's tmux servers here and on the SSH host, the host's sshd with every connection
//! (frozen or not) and the shared SSH connection. A test process that was killed before
//! its guards ran has its tmux servers ended by the next test process.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::Duration;

use crate::support::on_host::{headless, wait_running_remotely, HostRepo};
use crate::support::procs::{self, Proc};
use crate::support::tmux::{socket_path, sweep_now};
use crate::support::*;

/// What a test started, noted before it fails: pids that must end, the tmux sockets no
/// process may name afterwards (nor their files stay), the text no ssh client's command
/// line may hold, and the directory nothing may work in.
#[derive(Default)]
struct Started {
    pids: Vec<u32>,
    sockets: Vec<String>,
    ssh_needle: Option<String>,
    dir: PathBuf,
    /// The driver the test started and did not wait for (reaped once the check is done).
    driver: Option<Child>,
}

impl Started {
    /// What of it is still there (empty once everything ended).
    fn left(&self) -> Vec<String> {
        let all = procs::all();
        let mut left: Vec<String> = self
            .pids
            .iter()
            .filter(|p| procs::alive(**p))
            .map(|p| format!("pid {p} alive"))
            .collect();
        let named = |p: &Proc| {
            self.sockets.iter().any(|s| procs::names_socket(p, s))
                || self
                    .ssh_needle
                    .as_ref()
                    .is_some_and(|n| p.cmdline.starts_with("ssh") && p.cmdline.contains(n))
        };
        left.extend(
            all.iter()
                .filter(|p| named(p) && procs::alive(p.pid))
                .map(|p| format!("{} {}", p.pid, p.cmdline)),
        );
        left.extend(
            procs::working_in(&self.dir)
                .into_iter()
                .map(|p| format!("pid {p} works in {}", self.dir.display())),
        );
        left.extend(
            self.sockets
                .iter()
                .filter(|s| socket_path(s).exists())
                .map(|s| format!("socket file {s}")),
        );
        left
    }
}

/// The pid of the tmux server on `socket` (asked here: the test's host is this machine).
fn server_pid(socket: &str) -> u32 {
    let out = Command::new("tmux")
        .args(["-L", socket, "display", "-p", "#{pid}"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("no tmux server on {socket}"))
}

/// Run `test` (it notes what it started, then fails), then check that nothing of it is
/// left within a few seconds.
fn fails_and_leaves_nothing(test: impl FnOnce(&mut Started)) {
    let mut started = Started::default();
    let failed = catch_unwind(AssertUnwindSafe(|| {
        test(&mut started);
        // Fails as a failed assertion does (unwinding), without a panic message.
        std::panic::resume_unwind(Box::new("failed on purpose"));
    }));
    assert!(failed.is_err());
    let mut left = vec![];
    let gone = wait_for(
        || {
            left = started.left();
            left.is_empty()
        },
        Duration::from_secs(10),
    );
    if let Some(mut d) = started.driver.take() {
        let _ = d.kill();
        let _ = d.wait();
    }
    assert!(gone, "left behind by a failed test:\n{}", left.join("\n"));
}

const SLEEPER: &str =
    "[[worker]]\nid = \"w\"\nrole = \"backend-engineer\"\nprovider = \"command\"\n\
     max_attempts = 1\ncommand = [\"sh\", \"-c\", \"echo up; sleep 300\"]\n";

#[test]
fn a_failed_test_leaves_neither_its_driver_nor_its_tmux_server() {
    if !tmux_ready("cleanup_local") {
        return;
    }
    fails_and_leaves_nothing(|started| {
        let server = TmuxServer::new("cleanup-local");
        let t = TeamProject::new(SLEEPER);
        let driver = t.run("sleep on").tmux(&server).spawn();
        wait_running(t.path(), 1);
        started.pids = vec![driver.id(), server_pid(&server.socket)];
        started.sockets = vec![server.socket.clone()];
        started.dir = t.path().to_path_buf();
        // The driver is not waited for: the test fails first.
        started.driver = Some(driver);
    });
}

#[test]
fn a_failed_test_with_its_host_frozen_leaves_nothing_of_the_host() {
    fails_and_leaves_nothing(|started| {
        let Some(t) = HostRepo::start("cleanup-host") else {
            return;
        };
        let team = t.team(&SLEEPER.replace("max_attempts", "host = \"box\"\nmax_attempts"));
        let driver = t.spawn(&headless(&team, "sleep there"));
        wait_running_remotely(t.path(), "w");
        started.pids = vec![driver.id(), server_pid(&t.host.tmux_socket)];
        // sshd and each connection's process, stopped as a hung host's are.
        started.pids.extend(t.host.freeze());
        started.sockets = vec![t.server.socket.clone(), t.host.tmux_socket.clone()];
        started.ssh_needle = Some(t.host.runtime_dir().display().to_string());
        started.dir = t.path().to_path_buf();
        started.driver = Some(driver);
    });
}

#[test]
fn the_tmux_servers_of_a_killed_test_process_are_ended_by_the_next_one() {
    if !tmux_ready("cleanup_sweep") {
        return;
    }
    // No process has the pid `pid_max` (pids stay below it): it stands for the killed test
    // process. A live test's server stays.
    let gone = std::fs::read_to_string("/proc/sys/kernel/pid_max").unwrap();
    let orphan = format!("crewmux-test-cleanup-{}-0", gone.trim());
    let ours = TmuxServer::new("cleanup-sweep");
    for socket in [&orphan, &ours.socket] {
        let st = Command::new("tmux")
            .args(["-L", socket, "new-session", "-d", "sleep 300"])
            .status()
            .unwrap();
        assert!(st.success(), "tmux -L {socket} new-session");
    }
    let orphan_pid = server_pid(&orphan);
    sweep_now();
    let ended = wait_for(|| !procs::alive(orphan_pid), Duration::from_secs(10));
    assert!(ended, "the server of the gone process is still running");
    assert!(!socket_path(&orphan).exists(), "its socket file stays");
    assert!(
        procs::alive(server_pid(&ours.socket)),
        "a live test's server was ended"
    );
}
