//! crewmux runs that reach the test's SSH host ([`super::sshd::SshHost`]): the test's tmux
//! socket here and the host's private SSH control directory, so a run, a background run
//! and a later `merge`/`clean` share one connection set-up.

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use super::sshd::SshHost;
use super::{assert_events_once, crewmux, state_worker, try_state, wait_for, wait_limited};

/// `crewmux args…` in `project` with the tmux socket `socket` and `host`'s private SSH
/// control directory, debug log on, output piped; not started, so a test can add its own
/// environment.
pub fn crewmux_on_host(project: &Path, socket: &str, host: &SshHost, args: &[&str]) -> Command {
    let mut cmd = crewmux();
    cmd.current_dir(project)
        .env("CREWMUX_TMUX_SOCKET", socket)
        .env("XDG_RUNTIME_DIR", host.runtime_dir())
        .env("CREWMUX_LOG", "debug")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// As [`crewmux_on_host`], started in the background.
pub fn spawn_on_host(project: &Path, socket: &str, host: &SshHost, args: &[&str]) -> Child {
    crewmux_on_host(project, socket, host, args)
        .spawn()
        .expect("crewmux runs")
}

/// As [`crewmux_on_host`], run to its end (bounded); every run passes the event-once check.
pub fn run_with_host(project: &Path, socket: &str, host: &SshHost, args: &[&str]) -> Output {
    let out = wait_limited(spawn_on_host(project, socket, host, args), args);
    assert_events_once(project);
    out
}

/// Wait (60 s at most) until `worker` runs in a pane of the host the tests name `box`.
pub fn wait_running_remotely(project: &Path, worker: &str) {
    let ok = wait_for(
        || {
            try_state(project).is_some_and(|s| {
                let w = state_worker(&s, worker);
                w["status"] == "running"
                    && w["pane_id"].as_str().is_some_and(|p| p.starts_with("box:"))
            })
        },
        Duration::from_secs(60),
    );
    assert!(ok, "{worker} never ran on box: {:?}", try_state(project));
}
