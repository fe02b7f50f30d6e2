//! A tmux server that does not answer (SIGSTOP) never hangs a command: `status` and
//! `cancel` on a run nobody drives answer within a few seconds, with one line naming the
//! socket, and the cancel still ends the workers (by their pids); a driver keeps recording
//! exits while its server is stopped and finishes the run once it answers again.

use std::time::{Duration, Instant};

use crate::support::*;

const SLEEPERS: &str = r#"
parallel = 2
[[worker]]
id = "one"
role = "backend-engineer"
provider = "command"
max_attempts = 1
command = ["sleep", "120"]

[[worker]]
id = "two"
role = "backend-engineer"
provider = "command"
max_attempts = 1
command = ["sleep", "120"]
"#;

/// SIGCONT on drop, so the server can be killed whatever the test did.
struct Stopped(i32);

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill")
            .args(["-CONT", &self.0.to_string()])
            .status();
    }
}

#[test]
fn status_and_cancel_answer_within_seconds_when_the_tmux_server_is_stopped() {
    if !tmux_ready("stopped_server") {
        return;
    }
    let server = TmuxServer::new("stopped");
    let tmp = TeamProject::new(SLEEPERS);
    let mut child = tmp.run("sleep").tmux(&server).spawn();
    wait_running(tmp.path(), 2);
    child.kill().unwrap(); // nobody drives the run now
    child.wait().unwrap();
    let pid: i32 = String::from_utf8_lossy(&server.tmux(&["display", "-p", "#{pid}"]).stdout)
        .trim()
        .parse()
        .expect("the server's pid");
    let id = run_id(tmp.path());
    assert!(std::process::Command::new("kill")
        .args(["-STOP", &pid.to_string()])
        .status()
        .unwrap()
        .success());
    let _cont = Stopped(pid);

    let started = Instant::now();
    let out = run_crewmux(tmp.path(), &server.socket, &["status", &id]);
    let took = started.elapsed();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(took < Duration::from_secs(10), "status took {took:?}");
    assert!(out.status.success(), "status failed: {err}");
    let lines: Vec<&str> = err.lines().filter(|l| l.contains(&server.socket)).collect();
    assert_eq!(lines.len(), 1, "one line names the socket: {err}");
    assert!(lines[0].contains("did not answer"), "{err}");

    let started = Instant::now();
    let out = run_crewmux(tmp.path(), &server.socket, &["cancel", &id, "--grace", "1"]);
    let took = started.elapsed();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        took < Duration::from_secs(15),
        "cancel took {took:?}: {err}"
    );
    assert!(out.status.success(), "cancel failed: {err}");
    let s = read_state_file(tmp.path());
    assert_eq!(s["status"], "cancelled", "{s}");
}

fn read_state_file(project: &std::path::Path) -> serde_json::Value {
    try_state(project).expect("a complete state.json")
}

#[test]
fn a_killed_session_is_told_apart_from_a_gone_server() {
    if !tmux_ready("killed_session") {
        return;
    }
    let server = TmuxServer::new("killsess");
    let tmp = TeamProject::new(SLEEPERS);
    let mut child = tmp.run("sleep").tmux(&server).spawn();
    wait_running(tmp.path(), 2);
    child.kill().unwrap();
    child.wait().unwrap();
    let run = only_run_dir(tmp.path());
    let id = run.file_name().unwrap().to_string_lossy().into_owned();
    // Another session keeps the server up; only the run's session goes.
    server.tmux(&["new-session", "-d", "-s", "keep"]);
    server.tmux(&["kill-session", "-t", &format!("=crewmux-{id}")]);
    let out = run_crewmux(tmp.path(), &server.socket, &["status", &id, "--json"]);
    let s = summary(&out);
    let reason = worker(&s, "one")["reason"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        reason.contains("session") && reason.contains("was killed"),
        "{reason}"
    );
    assert!(!reason.contains("server"), "{reason}");
}

#[test]
fn status_of_a_run_whose_server_is_gone_says_so_once_and_then_nothing() {
    if !tmux_ready("gone_server_status") {
        return;
    }
    let server = TmuxServer::new("gonestatus");
    // Two attempts each: the crashed one's retry waits for a driver.
    let tmp = TeamProject::new(&SLEEPERS.replace("max_attempts = 1", "max_attempts = 2"));
    let mut child = tmp.run("sleep").tmux(&server).spawn();
    wait_running(tmp.path(), 2);
    child.kill().unwrap(); // nobody drives the run now
    child.wait().unwrap();
    server.kill();
    let id = run_id(tmp.path());
    let out = run_crewmux(tmp.path(), &server.socket, &["status", &id]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "status failed: {err}");
    // The workers are marked crashed, said once; the server, still gone, never "answers".
    assert_eq!(err.matches("is gone").count(), 1, "{err}");
    assert!(!err.contains("answers again"), "{err}");
    // Its workers ended: a later status has nothing to say about the server.
    let out = run_crewmux(tmp.path(), &server.socket, &["status", &id]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "status failed: {err}");
    assert!(!err.contains("tmux server"), "{err}");
}

/// Two workers end on their own while the run's tmux server is stopped (`quick` printed a
/// line before, `mute` nothing), the other runs on.
const ONE_ENDS: &str = r#"
parallel = 3
max_fix_rounds = 0
[[worker]]
id = "quick"
role = "backend-engineer"
provider = "command"
max_attempts = 1
command = ["sh", "-c", "echo quick starts; while [ ! -e go ]; do sleep 0.1; done; echo quick is done"]

[[worker]]
id = "mute"
role = "backend-engineer"
provider = "command"
max_attempts = 1
command = ["sh", "-c", "while [ ! -e go ]; do sleep 0.1; done; echo mute is done"]

[[worker]]
id = "slow"
role = "backend-engineer"
provider = "command"
max_attempts = 1
command = ["sh", "-c", "while [ ! -e done ]; do sleep 0.1; done; echo slow is done"]
"#;

#[test]
fn a_driver_records_an_exit_while_its_tmux_server_is_stopped_and_finishes_after() {
    if !tmux_ready("stopped_server_driver") {
        return;
    }
    let server = TmuxServer::new("stopdrv");
    let tmp = TeamProject::new(ONE_ENDS);
    let child = tmp.run("stop").tmux(&server).spawn();
    wait_running(tmp.path(), 3);
    let quick_dir = || only_run_dir(tmp.path()).join("workers/quick/attempt-1");
    let started = wait_for(
        || {
            std::fs::read_to_string(quick_dir().join("output.log"))
                .is_ok_and(|l| l.contains("quick starts"))
        },
        Duration::from_secs(30),
    );
    assert!(started, "quick's first line never reached output.log");
    let pid: i32 = String::from_utf8_lossy(&server.tmux(&["display", "-p", "#{pid}"]).stdout)
        .trim()
        .parse()
        .expect("the server's pid");
    assert!(std::process::Command::new("kill")
        .args(["-STOP", &pid.to_string()])
        .status()
        .unwrap()
        .success());
    let cont = Stopped(pid);
    // The worker's process is not the server's: it ends and writes its exit record, and
    // the driver, whose tmux calls now get no answer, still records the exit.
    std::fs::write(tmp.path().join("go"), "").unwrap();
    let s = wait_state(
        tmp.path(),
        "quick and mute completed while the server is stopped",
        Duration::from_secs(30),
        |s| {
            s["workers"].as_array().is_some_and(|w| {
                ["quick", "mute"].iter().all(|id| {
                    w.iter()
                        .any(|w| w["id"] == *id && w["status"] == "completed")
                })
            })
        },
    );
    let slow = s["workers"]
        .as_array()
        .and_then(|w| w.iter().find(|w| w["id"] == "slow"))
        .cloned()
        .unwrap();
    assert_eq!(slow["status"], "running", "not taken for dead: {slow}");
    drop(cont);
    std::fs::write(tmp.path().join("done"), "").unwrap();
    let out = wait_limited(child, &["the run after SIGCONT"]);
    // The run ends (its council judges these one-line results as it likes).
    let s = summary(&out);
    assert_eq!(s["status"], "done", "{s}");
    assert_eq!(worker(&s, "quick")["exit_code"], 0, "{s}");
    assert_eq!(worker(&s, "slow")["status"], "completed", "{s}");
    assert_eq!(worker(&s, "slow")["exit_code"], 0, "{s}");
    // quick's exit was settled before its last line reached output.log (the server was
    // stopped): its result was taken again once the line and the marker came.
    let result = std::fs::read_to_string(quick_dir().join("result.md")).unwrap();
    assert!(
        result.contains("quick starts") && result.contains("quick is done"),
        "{result}"
    );
    // mute's output had not reached output.log at all: it got its result then.
    let mute = only_run_dir(tmp.path()).join("workers/mute/attempt-1/result.md");
    let result = std::fs::read_to_string(&mute).unwrap();
    assert!(result.contains("mute is done"), "{result}");
    assert!(worker(&s, "mute")["result"].is_string(), "{s}");
    assert_events_once(tmp.path());
}
