//! `run` checks its input, then makes the run's folder and prints the run id before routing
//! probes the agent CLIs (seconds on a loaded machine): a run killed while it is planned
//! leaves a folder that `status` explains and `clean --purge` removes.

use std::process::Stdio;
use std::time::Duration;

use crate::support::standins::{serial, Auth, Bin};
use crate::support::*;

#[test]
fn a_run_killed_while_it_is_planned_leaves_a_folder_status_explains_and_clean_removes() {
    let _g = serial();
    let bin = Bin::new();
    // A claude whose auth probe hangs, and a probe limit longer than the test: routing waits.
    bin.add("claude", "auth status", Auth::Hang);
    bin.user_providers("[providers.claude.auth]\ntimeout_ms = 120000\n");
    let tmp = project();
    let d = tmp.path();
    let in_env = |c: &mut std::process::Command| {
        c.current_dir(d)
            .env("PATH", format!("{}:/usr/bin:/bin", bin.bin_dir().display()))
            .env("HOME", bin.home())
            .env("CREWMUX_CONFIG_DIR", bin.dir.path().join("config"));
    };
    let mut run = crewmux();
    in_env(&mut run);
    let child = run
        .args(["run", "--headless", "--backend", "process", "--no-clarify"])
        .args(["--", "add a health endpoint"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let planning = || try_run_dir(d).filter(|r| r.join("planning.json").is_file());
    assert!(
        wait_for(|| planning().is_some(), Duration::from_secs(60)),
        "no run folder with planning.json"
    );
    let dir = planning().unwrap();
    let id = dir.file_name().unwrap().to_string_lossy().into_owned();
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL).unwrap();
    let out = wait_limited(child, &["run"]);
    let err = stderr(&out);
    assert!(
        err.starts_with(&format!("crewmux: run {id} in {}: planning", dir.display())),
        "the id and folder come first: {err}"
    );
    assert!(!dir.join("state.json").exists());

    let stopped = format!("run {id} was stopped while it was planned");
    let mut status = crewmux();
    in_env(&mut status);
    let list = status.arg("status").output().unwrap();
    assert!(list.status.success(), "{}", stderr(&list));
    let list = String::from_utf8_lossy(&list.stdout);
    assert!(
        list.contains(&stopped) && !list.contains("unreadable"),
        "{list}"
    );

    let mut status = crewmux();
    in_env(&mut status);
    let one = status.args(["status", &id]).output().unwrap();
    assert_eq!(one.status.code(), Some(2), "{}", stderr(&one));
    let err = stderr(&one);
    assert!(
        err.contains(&stopped) && err.trim().lines().count() == 1,
        "{err}"
    );

    let mut clean = crewmux();
    in_env(&mut clean);
    let cleaned = clean.args(["clean", "--purge"]).output().unwrap();
    assert!(cleaned.status.success(), "{}", stderr(&cleaned));
    assert!(!dir.exists(), "{}", stderr(&cleaned));
    assert_events_once(d);
}

/// What planning finds for the person (here: a project that is not a git repository) is
/// in the dashboard's log panel and the run's events, not on stderr, where the
/// dashboard's screen would hide it.
#[test]
fn the_dashboard_shows_what_planning_found_in_its_log_and_keeps_it_off_stderr() {
    if !tmux_ready("the_dashboard_shows_what_planning_found_in_its_log_and_keeps_it_off_stderr") {
        return;
    }
    let workers = TmuxServer::new("plan-note-workers");
    let t = TeamProject::new(
        "name = \"one\"\n\n[[worker]]\nid = \"one\"\nrole = \"architect\"\nprovider = \"sim\"\nprompt = \"{problem}\\nsim: lines=2\"\n",
    );
    let d = t.path();
    let cmd = format!(
        "cd {} && CREWMUX_TMUX_SOCKET={} {} run --team {} --no-clarify 'say hello' 2>{}; echo EXITED $?; sleep 60",
        d.display(),
        workers.socket,
        env!("CARGO_BIN_EXE_crewmux"),
        t.team().display(),
        d.join("stderr.txt").display()
    );
    let viewer = Viewer::start("plan-note-viewer", (160, 45), &cmd);
    let screen = viewer.wait_screen("is not a git repository", Duration::from_secs(60));
    assert!(screen.contains("plan-notice"), "{screen}");
    viewer.wait_screen("done  council", Duration::from_secs(60));
    viewer.keys(&["q"]);
    viewer.wait_screen("EXITED", Duration::from_secs(60));
    let err = std::fs::read_to_string(d.join("stderr.txt")).unwrap();
    assert!(!err.contains("not a git repository"), "{err}");
    let events = std::fs::read_to_string(only_run_dir(d).join("events.jsonl")).unwrap();
    let notices: Vec<&str> = events
        .lines()
        .filter(|l| l.contains("\"plan-notice\""))
        .collect();
    assert_eq!(notices.len(), 1, "{events}");
    assert!(notices[0].contains("is not a git repository"), "{events}");
    assert_events_once(d);
}
