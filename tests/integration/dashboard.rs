//! The dashboard end to end: crewmux runs inside a tmux pane of a viewer server (its
//! workers on a second private server), keys are typed with `send-keys`, and the screen is
//! read with `capture-pane`.

use std::time::Duration;

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
prompt = "Design: {problem}\nsim: lines=6\nsim: delay-ms=100\nsim: ask=Which colour should the rejected-requests badge be?\nsim: ask-default=Red\nsim: ask-timeout=120"
"#;

/// The problem the dashboard's runs here are given.
const BADGE: &str = "Add a rejected-requests badge to the usage page";

#[test]
fn a_waiting_worker_is_answered_from_the_dashboard() {
    if !tmux_ready("a_waiting_worker_is_answered_from_the_dashboard") {
        return;
    }
    let workers = TmuxServer::new("dash-workers");
    let t = TeamProject::new(ASKING_TEAM);
    let tmp = t.path();
    let cmd = dashboard_cmd(tmp, &workers, "", t.team(), BADGE, "");
    let viewer = Viewer::start("dash-viewer", (140, 42), &cmd);

    viewer.wait_screen(
        "Which colour should the rejected-requests badge be?",
        Duration::from_secs(60),
    );
    let asked = viewer.wait_screen("asker is waiting for your answer", Duration::from_secs(60));
    // The panel counts down the agent's own wait (120 s), not question_timeout_s (600 s),
    // and says the default the agent takes then.
    assert!(
        asked.contains("1:5") && asked.contains("left · then the agent takes its default: Red"),
        "{asked}"
    );
    // n jumps to the waiting worker, a opens the input, the text goes in, Enter sends it.
    viewer.keys(&["n"]);
    viewer.keys(&["a"]);
    viewer.type_text("Amber, with the count");
    let typed = viewer.wait_screen("Amber, with the count", Duration::from_secs(60));
    assert!(typed.contains("› Amber"), "{typed}");
    viewer.keys(&["Enter"]);

    let done = viewer.wait_screen("Workers 2 · 2 done", Duration::from_secs(60));
    assert!(done.contains("asker"), "{done}");
    // The header says the run is done once the council sat and report.md is written.
    viewer.wait_screen("done  council", Duration::from_secs(60));
    // The answer reached the worker: it is in its pane and in its result.
    let run = only_run_dir(tmp);
    let result = std::fs::read_to_string(run.join("workers/asker/attempt-1/result.md")).unwrap();
    assert!(
        result.contains("Answer received: Amber, with the count"),
        "{result}"
    );
    let events = std::fs::read_to_string(run.join("events.jsonl")).unwrap();
    assert!(events.contains("\"worker-answered\""), "{events}");

    viewer.keys(&["q"]);
    let after = viewer.wait_screen("EXITED", Duration::from_secs(60));
    assert!(after.contains("EXITED 0"), "{after}");
}

#[test]
fn quitting_leaves_the_run_to_its_lead_and_an_answer_from_the_cli_finishes_it() {
    if !tmux_ready("quitting_leaves_the_run_to_its_lead_and_an_answer_from_the_cli_finishes_it") {
        return;
    }
    let workers = TmuxServer::new("dash-q-workers");
    let t = TeamProject::new(ASKING_TEAM);
    let tmp = t.path();
    let cmd = dashboard_cmd(tmp, &workers, "", t.team(), BADGE, "");
    let viewer = Viewer::start("dash-q-viewer", (140, 42), &cmd);
    viewer.wait_screen("asker is waiting for your answer", Duration::from_secs(60));
    viewer.keys(&["q"]);
    let after = viewer.wait_screen("EXITED", Duration::from_secs(60));
    assert!(
        after.contains("crewmux attach"),
        "the person is told how to come back:\n{after}"
    );
    // The waiting worker is still alive in its pane.
    let panes = workers.tmux(&["list-panes", "-a", "-F", "#{window_name} #{pane_dead}"]);
    assert!(String::from_utf8_lossy(&panes.stdout).contains("asker-1 0"));
    // Answer it without the dashboard, then attach headless to finish the run.
    let id = run_id(tmp);
    let st = run_crewmux(tmp, &workers.socket, &["status", &id]);
    let st = String::from_utf8_lossy(&st.stdout);
    assert!(st.contains("asks: Which colour"), "{st}");
    let ans = run_crewmux(
        tmp,
        &workers.socket,
        &["answer", &id, "--worker", "asker", "Teal"],
    );
    assert_eq!(
        ans.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&ans.stderr)
    );
    // The run's lead carries the answer out and finishes the run with no dashboard open.
    wait_state(tmp, "run done", Duration::from_secs(120), |s| {
        s["status"] == "done"
    });
    let result =
        std::fs::read_to_string(only_run_dir(tmp).join("workers/asker/attempt-1/result.md"))
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
fn terminal_flags(viewer: &Viewer) -> String {
    viewer.display("#{alternate_on} #{cursor_flag}")
}

fn wait_flags(viewer: &Viewer, want: &str, limit: Duration) {
    assert!(
        wait_for(|| terminal_flags(viewer) == want, limit),
        "the pane never reached alternate_on cursor_flag = {want} (now {}):\n{}",
        terminal_flags(viewer),
        viewer.screen()
    );
}

/// The pid of the crewmux process the pane's shell started.
fn dashboard_pid(viewer: &Viewer) -> u32 {
    let shell: u32 = viewer.display("#{pane_pid}").parse().unwrap();
    let children = std::fs::read_to_string(format!("/proc/{shell}/task/{shell}/children")).unwrap();
    children
        .split_whitespace()
        .next()
        .expect("the shell runs crewmux")
        .parse()
        .unwrap()
}

/// Start the dashboard on a slow run in a viewer pane (`tag`) whose shell afterwards
/// prints the exit code and the terminal modes crewmux left (`stty -a`), then `MODES-END`.
fn dashboard_in_pane(t: &TeamProject, workers: &TmuxServer, tag: &str, env: &str) -> Viewer {
    let cmd = dashboard_cmd(
        t.path(),
        workers,
        env,
        t.team(),
        "Plan the badge",
        // The marker tells the screen is whole: `EXITED` shows before `stty` has printed.
        "stty -a; echo MODES-END;",
    );
    Viewer::start(tag, (120, 40), &cmd)
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
        let t = TeamProject::new(SLOW_TEAM);
        let tmp = t.path();
        let viewer = dashboard_in_pane(&t, &workers, "dash-sig-viewer", "");
        viewer.wait_screen("Workers", Duration::from_secs(60));
        wait_flags(&viewer, "1 0", Duration::from_secs(30));
        // The roster shows before the worker has started: signal only a run whose worker
        // runs, or `status` below would read it still starting.
        wait_state(tmp, "slow running", Duration::from_secs(90), |s| {
            state_worker(s, "slow")["status"] == "running"
        });

        let pid = nix::unistd::Pid::from_raw(dashboard_pid(&viewer) as i32);
        nix::sys::signal::kill(pid, signal).unwrap();
        let after = viewer.wait_screen("MODES-END", Duration::from_secs(45));
        wait_flags(&viewer, "0 1", Duration::from_secs(20));
        assert!(after.contains("EXITED 0"), "{signal}:\n{after}");
        assert!(
            after.contains(&format!("{signal}: left the dashboard"))
                && after.contains("crewmux attach"),
            "{signal}: the person is told how to come back:\n{after}"
        );
        assert_cooked(&after);
        // The run was left detached: its worker still runs and `status` shows it.
        let id = run_id(tmp);
        let st = run_crewmux(tmp, &workers.socket, &["status", &id]);
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
    let t = TeamProject::new(SLOW_TEAM);
    let viewer = dashboard_in_pane(
        &t,
        &workers,
        "dash-panic-viewer",
        "RUST_BACKTRACE=0 CREWMUX_DEBUG_PANIC=dashboard",
    );
    let after = viewer.wait_screen("MODES-END", Duration::from_secs(60));
    wait_flags(&viewer, "0 1", Duration::from_secs(20));
    // color-eyre's report, printed on the normal screen after the restore.
    assert!(after.contains("The application panicked"), "{after}");
    assert!(after.contains("asked the dashboard to panic"), "{after}");
    assert!(
        !after.contains("EXITED 0"),
        "a panic is not a success:\n{after}"
    );
    assert_cooked(&after);
}
