//! The dashboard end to end: crewmux runs inside a tmux pane of a viewer server (its
//! workers on a second private server), keys are typed with `send-keys`, and the screen is
//! read with `capture-pane`.

use std::time::{Duration, Instant};

use crate::support::*;

const ASKING_TEAM: &str = r#"
name = "asking"
parallel = 2

[[worker]]
id = "planner"
role = "architect"
provider = "sim"
prompt = "Plan: {problem}\nsim: lines=4\nsim: delay-ms=100"

[[worker]]
id = "asker"
role = "frontend-designer"
provider = "sim"
prompt = "Design: {problem}\nsim: lines=6\nsim: delay-ms=100\nsim: ask=Which colour should the rejected-requests badge be?\nsim: ask-timeout=120"
"#;

fn screen(viewer: &TmuxServer) -> String {
    String::from_utf8_lossy(&viewer.tmux(&["capture-pane", "-p", "-t", "v"]).stdout).into_owned()
}

pub(crate) fn wait_screen(viewer: &TmuxServer, what: &str, limit: Duration) -> String {
    let end = Instant::now() + limit;
    loop {
        let s = screen(viewer);
        if s.contains(what) {
            return s;
        }
        if Instant::now() > end {
            panic!("{what:?} never appeared on the dashboard:\n{s}");
        }
        std::thread::sleep(Duration::from_millis(150));
    }
}

#[test]
fn a_waiting_worker_is_answered_from_the_dashboard() {
    if !tmux_ready("a_waiting_worker_is_answered_from_the_dashboard") {
        return;
    }
    let workers = TmuxServer::new("dash-workers");
    let viewer = TmuxServer::new("dash-viewer");
    let tmp = crate::support::project();
    let team = team_file(tmp.path(), "team.toml", ASKING_TEAM);
    let cmd = format!(
        "cd {} && CREWMUX_TMUX_SOCKET={} {} run --team {} --no-clarify 'Add a rejected-requests badge to the usage page'; echo EXITED $?; sleep 60",
        tmp.path().display(),
        workers.socket,
        env!("CARGO_BIN_EXE_crewmux"),
        team.display()
    );
    let out = viewer.tmux(&[
        "new-session",
        "-d",
        "-s",
        "v",
        "-x",
        "140",
        "-y",
        "42",
        &cmd,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    wait_screen(
        &viewer,
        "Which colour should the rejected-requests badge be?",
        Duration::from_secs(20),
    );
    wait_screen(
        &viewer,
        "asker is waiting for your answer",
        Duration::from_secs(30),
    );
    // n jumps to the waiting worker, a opens the input, the text goes in, Enter sends it.
    viewer.tmux(&["send-keys", "-t", "v", "n"]);
    viewer.tmux(&["send-keys", "-t", "v", "a"]);
    viewer.tmux(&["send-keys", "-t", "v", "-l", "Amber, with the count"]);
    let typed = wait_screen(&viewer, "Amber, with the count", Duration::from_secs(30));
    assert!(typed.contains("› Amber"), "{typed}");
    viewer.tmux(&["send-keys", "-t", "v", "Enter"]);

    let done = wait_screen(&viewer, "Workers 2 · 2 done", Duration::from_secs(30));
    assert!(done.contains("asker"), "{done}");
    // The header says the run is done once the council sat and report.md is written.
    wait_screen(&viewer, "done  council", Duration::from_secs(60));
    // The answer reached the worker: it is in its pane and in its result.
    let run = only_run_dir(tmp.path());
    let result = std::fs::read_to_string(run.join("workers/asker/attempt-1/result.md")).unwrap();
    assert!(
        result.contains("Answer received: Amber, with the count"),
        "{result}"
    );
    let events = std::fs::read_to_string(run.join("events.jsonl")).unwrap();
    assert!(events.contains("\"worker-answered\""), "{events}");

    viewer.tmux(&["send-keys", "-t", "v", "q"]);
    let after = wait_screen(&viewer, "EXITED", Duration::from_secs(30));
    assert!(after.contains("EXITED 0"), "{after}");
}

#[test]
fn quitting_leaves_workers_running_and_attach_comes_back() {
    if !tmux_ready("quitting_leaves_workers_running_and_attach_comes_back") {
        return;
    }
    let workers = TmuxServer::new("dash-q-workers");
    let viewer = TmuxServer::new("dash-q-viewer");
    let tmp = crate::support::project();
    let team = team_file(tmp.path(), "team.toml", ASKING_TEAM);
    let cmd = format!(
        "cd {} && CREWMUX_TMUX_SOCKET={} {} run --team {} --no-clarify 'Add a rejected-requests badge to the usage page'; echo EXITED $?; sleep 60",
        tmp.path().display(),
        workers.socket,
        env!("CARGO_BIN_EXE_crewmux"),
        team.display()
    );
    viewer.tmux(&[
        "new-session",
        "-d",
        "-s",
        "v",
        "-x",
        "140",
        "-y",
        "42",
        &cmd,
    ]);
    wait_screen(
        &viewer,
        "asker is waiting for your answer",
        Duration::from_secs(20),
    );
    viewer.tmux(&["send-keys", "-t", "v", "q"]);
    let after = wait_screen(&viewer, "EXITED", Duration::from_secs(30));
    assert!(
        after.contains("crewmux attach"),
        "the person is told how to come back:\n{after}"
    );
    // The waiting worker is still alive in its pane.
    let panes = workers.tmux(&["list-panes", "-a", "-F", "#{window_name} #{pane_dead}"]);
    assert!(String::from_utf8_lossy(&panes.stdout).contains("asker-1 0"));
    // Answer it without the dashboard, then attach headless to finish the run.
    let id = only_run_dir(tmp.path())
        .file_name()
        .unwrap()
        .to_string_lossy()
        .to_string();
    let st = run_crewmux(tmp.path(), &workers.socket, &["status", &id]);
    let st = String::from_utf8_lossy(&st.stdout);
    assert!(st.contains("asks: Which colour"), "{st}");
    let ans = run_crewmux(
        tmp.path(),
        &workers.socket,
        &["answer", &id, "--worker", "asker", "Teal"],
    );
    assert_eq!(
        ans.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&ans.stderr)
    );
    let out = run_crewmux(tmp.path(), &workers.socket, &["attach", "--headless", &id]);
    let s = summary(&out);
    assert_eq!(s["status"], "done", "{s}");
    let result =
        std::fs::read_to_string(only_run_dir(tmp.path()).join("workers/asker/attempt-1/result.md"))
            .unwrap();
    assert!(result.contains("Answer received: Teal"));
}

const SLOW_TEAM: &str = r#"
name = "slow"

[[worker]]
id = "slow"
role = "architect"
provider = "sim"
prompt = "Plan: {problem}\nsim: lines=400\nsim: delay-ms=300"
"#;

/// The dashboard's terminal state as tmux sees it: alternate screen on, cursor visible.
fn terminal_flags(viewer: &TmuxServer) -> String {
    let out = viewer.tmux(&["display", "-p", "-t", "v", "#{alternate_on} #{cursor_flag}"]);
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn wait_flags(viewer: &TmuxServer, want: &str, limit: Duration) {
    let end = Instant::now() + limit;
    while terminal_flags(viewer) != want {
        assert!(
            Instant::now() < end,
            "the pane never reached alternate_on cursor_flag = {want} (now {}):\n{}",
            terminal_flags(viewer),
            screen(viewer)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The pid of the crewmux process the pane's shell started.
fn dashboard_pid(viewer: &TmuxServer) -> u32 {
    let out = viewer.tmux(&["display", "-p", "-t", "v", "#{pane_pid}"]);
    let shell: u32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    let children = std::fs::read_to_string(format!("/proc/{shell}/task/{shell}/children")).unwrap();
    children
        .split_whitespace()
        .next()
        .expect("the shell runs crewmux")
        .parse()
        .unwrap()
}

/// Start the dashboard on a slow run in a viewer pane whose shell afterwards prints the exit
/// code and the terminal modes crewmux left (`stty -a`); returns once the dashboard shows.
fn dashboard_in_pane(tmp: &std::path::Path, workers: &TmuxServer, viewer: &TmuxServer, env: &str) {
    let team = team_file(tmp, "team.toml", SLOW_TEAM);
    let cmd = format!(
        "cd {} && {env} CREWMUX_TMUX_SOCKET={} {} run --team {} --no-clarify 'Plan the badge'; echo EXITED $?; stty -a; sleep 60",
        tmp.display(),
        workers.socket,
        env!("CARGO_BIN_EXE_crewmux"),
        team.display()
    );
    let out = viewer.tmux(&[
        "new-session",
        "-d",
        "-s",
        "v",
        "-x",
        "120",
        "-y",
        "40",
        &cmd,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Echo and canonical mode are on again (raw mode left): `stty -a` lists them without `-`.
fn assert_cooked(after: &str) {
    let words: Vec<&str> = after.split_whitespace().collect();
    for mode in ["echo", "icanon", "isig"] {
        assert!(
            words.contains(&mode),
            "{mode} is off after the dashboard:\n{after}"
        );
    }
}

#[test]
fn every_ending_signal_gives_the_terminal_back_and_leaves_the_run_resumable() {
    if !tmux_ready("every_ending_signal_gives_the_terminal_back_and_leaves_the_run_resumable") {
        return;
    }
    for signal in [
        nix::sys::signal::Signal::SIGTERM,
        nix::sys::signal::Signal::SIGINT,
        nix::sys::signal::Signal::SIGHUP,
        nix::sys::signal::Signal::SIGQUIT,
    ] {
        let workers = TmuxServer::new("dash-sig-workers");
        let viewer = TmuxServer::new("dash-sig-viewer");
        let tmp = crate::support::project();
        dashboard_in_pane(tmp.path(), &workers, &viewer, "");
        wait_screen(&viewer, "Workers", Duration::from_secs(20));
        wait_flags(&viewer, "1 0", Duration::from_secs(10));

        let pid = nix::unistd::Pid::from_raw(dashboard_pid(&viewer) as i32);
        nix::sys::signal::kill(pid, signal).unwrap();
        let after = wait_screen(&viewer, "EXITED", Duration::from_secs(15));
        wait_flags(&viewer, "0 1", Duration::from_secs(5));
        assert!(after.contains("EXITED 0"), "{signal}:\n{after}");
        assert!(
            after.contains(&format!("{signal}: left the dashboard"))
                && after.contains("crewmux attach"),
            "{signal}: the person is told how to come back:\n{after}"
        );
        assert_cooked(&after);
        // The run was left detached: its worker still runs and `status` shows it.
        let id = only_run_dir(tmp.path())
            .file_name()
            .unwrap()
            .to_string_lossy()
            .to_string();
        let st = run_crewmux(tmp.path(), &workers.socket, &["status", &id]);
        let st = String::from_utf8_lossy(&st.stdout);
        assert!(st.contains("running"), "{signal}: {st}");
    }
}

#[test]
fn a_panic_gives_the_terminal_back_before_the_report() {
    if !tmux_ready("a_panic_gives_the_terminal_back_before_the_report") {
        return;
    }
    let workers = TmuxServer::new("dash-panic-workers");
    let viewer = TmuxServer::new("dash-panic-viewer");
    let tmp = crate::support::project();
    dashboard_in_pane(
        tmp.path(),
        &workers,
        &viewer,
        "RUST_BACKTRACE=0 CREWMUX_DEBUG_PANIC=dashboard",
    );
    let after = wait_screen(&viewer, "EXITED", Duration::from_secs(20));
    wait_flags(&viewer, "0 1", Duration::from_secs(5));
    // color-eyre's report, printed on the normal screen after the restore.
    assert!(after.contains("The application panicked"), "{after}");
    assert!(after.contains("asked the dashboard to panic"), "{after}");
    assert!(
        !after.contains("EXITED 0"),
        "a panic is not a success:\n{after}"
    );
    assert_cooked(&after);
}
