//! A run lives on its own: its lead drives it to the end (council, report) whatever its
//! dashboards do; a killed lead is taken over by `attach`; every dashboard is a window onto
//! the same run; a finished run's tmux session goes after the grace period, its files stay.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::support::*;

/// A team like the demo's, small: two workers, the second after the first, then the
/// council and the report.
const WALKAWAY_TEAM: &str = r#"
name = "walkaway"
parallel = 2

[[worker]]
id = "planner"
role = "architect"
provider = "sim"
prompt = "Plan: {problem}\nsim: lines=12\nsim: delay-ms=250"

[[worker]]
id = "builder"
role = "backend-engineer"
provider = "sim"
after = ["planner"]
prompt = "Build: {problem}\nsim: lines=8\nsim: delay-ms=150"
"#;

/// One worker that asks, so an answer can be given from a dashboard.
const ASKING_TEAM: &str = r#"
name = "asking"

[[worker]]
id = "asker"
role = "frontend-designer"
provider = "sim"
prompt = "Design: {problem}\nsim: lines=4\nsim: delay-ms=100\nsim: ask=Which colour should the badge be?\nsim: ask-timeout=300"
"#;

const PROBLEM: &str = "Add a rejected-requests badge to the usage page";

/// A config directory whose `config.toml` has the lead linger `linger_s` seconds.
fn config_dir(t: &TeamProject, linger_s: u64) -> PathBuf {
    let dir = t.path().join("config");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("config.toml"),
        format!("[lead]\nlinger-s = {linger_s}\n"),
    )
    .unwrap();
    dir
}

/// `crewmux run --detach` of the team on `backend`; returns the run id it printed at once.
fn detach(t: &TeamProject, backend: &Backend, config: &Path, team_extra: &[&str]) -> String {
    let mut args = vec![
        "run",
        "--team",
        t.team_arg(),
        "--no-clarify",
        "--detach",
        "--backend",
        backend.name,
    ];
    args.extend_from_slice(team_extra);
    args.extend(["--", PROBLEM]);
    let child = crewmux()
        .current_dir(t.path())
        .env("CREWMUX_TMUX_SOCKET", backend.socket())
        .env("CREWMUX_CONFIG_DIR", config)
        .args(&args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let out = wait_limited(child, &args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "run --detach: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(!id.is_empty() && !id.contains(' '), "printed {id:?}");
    id
}

/// The process backend, and tmux on a private server tagged `tag` where it is installed.
fn both(tag: &str) -> Vec<Backend> {
    let mut v = vec![Backend::process()];
    if tmux_ready(tag) {
        v.push(Backend::tmux(tag));
    }
    v
}

/// The lead's log of the run under `project`, for a failure's message.
fn lead_log(project: &Path) -> String {
    std::fs::read_to_string(only_run_dir(project).join("lead.log")).unwrap_or_default()
}

/// The pid `lead.json` of the run names.
fn lead_pid(run: &Path) -> u32 {
    let text = std::fs::read_to_string(run.join("lead.json")).expect("lead.json");
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["pid"].as_u64().unwrap() as u32
}

/// The saved state of the run in `run`.
fn read_state(run: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(run.join("state.json")).unwrap()).unwrap()
}

/// Wait until the run under `project` is `done` with its council sat and its report written.
fn wait_done(project: &Path, limit: Duration) -> serde_json::Value {
    let s = wait_state(project, "run done", limit, |s| s["status"] == "done");
    assert_ne!(s["council"]["status"], "pending", "{s}");
    let report = only_run_dir(project).join("report.md");
    assert!(
        std::fs::metadata(&report).is_ok_and(|m| m.len() > 0),
        "no report at {}",
        report.display()
    );
    s
}

/// The dashboard of a new run of the team in `t` on the process backend, as a shell
/// command for a viewer's pane (the dashboard still needs a terminal; its workers do not
/// use tmux).
fn process_dashboard_cmd(t: &TeamProject) -> String {
    format!(
        "cd {} && CREWMUX_TMUX_SOCKET=unused {} run --team {} --no-clarify --backend process '{PROBLEM}'; echo EXITED $?; sleep 60",
        t.path().display(),
        env!("CARGO_BIN_EXE_crewmux"),
        t.team().display()
    )
}

/// `q` a second after the dashboard `cmd` of the run in `t` shows its workers: the
/// dashboard ends, and the lead alone finishes the run.
fn quit_a_second_after_start(t: &TeamProject, tag: &str, cmd: &str) {
    let viewer = Viewer::start(tag, (140, 42), cmd);
    viewer.wait_screen("Workers", Duration::from_secs(60));
    std::thread::sleep(Duration::from_secs(1));
    viewer.keys(&["q"]);
    let after = viewer.wait_screen("EXITED", Duration::from_secs(60));
    assert!(after.contains("goes on"), "{after}");
    // No dashboard runs any more: the lead alone finishes the run.
    let s = wait_done(t.path(), Duration::from_secs(120));
    assert_eq!(state_worker(&s, "builder")["status"], "completed", "{s}");
}

/// The dashboard `cmd`'s window killed while the run in `t` has its planner running: the
/// lead alone finishes the run.
fn kill_the_window_mid_run(t: &TeamProject, tag: &str, cmd: &str) {
    let viewer = Viewer::start(tag, (140, 42), cmd);
    wait_state(t.path(), "planner running", Duration::from_secs(60), |s| {
        state_worker(s, "planner")["status"] == "running"
    });
    // The dashboard's terminal goes away with its window (SIGHUP to everything in it).
    viewer.server.tmux(&["kill-window", "-t", "v"]);
    let s = wait_done(t.path(), Duration::from_secs(120));
    assert_eq!(state_worker(&s, "builder")["status"], "completed", "{s}");
}

#[test]
fn quitting_the_dashboard_a_second_after_start_leaves_the_run_to_its_end() {
    if !tmux_ready("quitting_the_dashboard_a_second_after_start_leaves_the_run_to_its_end") {
        return;
    }
    let workers = TmuxServer::new("lead-q-workers");
    let t = TeamProject::new(WALKAWAY_TEAM);
    let cmd = dashboard_cmd(t.path(), &workers, "", t.team(), PROBLEM, "");
    quit_a_second_after_start(&t, "lead-q-viewer", &cmd);
}

#[test]
fn on_the_process_backend_quitting_the_dashboard_leaves_the_run_to_its_end() {
    if !tmux_ready("on_the_process_backend_quitting_the_dashboard_leaves_the_run_to_its_end") {
        return;
    }
    let t = TeamProject::new(WALKAWAY_TEAM);
    quit_a_second_after_start(&t, "lead-qp-viewer", &process_dashboard_cmd(&t));
    assert_eq!(read_state(&only_run_dir(t.path()))["backend"], "process");
}

#[test]
fn killing_the_dashboards_window_mid_run_leaves_the_run_to_its_end() {
    if !tmux_ready("killing_the_dashboards_window_mid_run_leaves_the_run_to_its_end") {
        return;
    }
    let workers = TmuxServer::new("lead-kw-workers");
    let t = TeamProject::new(WALKAWAY_TEAM);
    let cmd = dashboard_cmd(t.path(), &workers, "", t.team(), PROBLEM, "");
    kill_the_window_mid_run(&t, "lead-kw-viewer", &cmd);
}

#[test]
fn on_the_process_backend_killing_the_dashboards_window_leaves_the_run_to_its_end() {
    if !tmux_ready("on_the_process_backend_killing_the_dashboards_window_leaves_the_run_to_its_end")
    {
        return;
    }
    let t = TeamProject::new(WALKAWAY_TEAM);
    kill_the_window_mid_run(&t, "lead-kwp-viewer", &process_dashboard_cmd(&t));
    assert_eq!(read_state(&only_run_dir(t.path()))["backend"], "process");
}

#[test]
fn a_lead_killed_mid_run_is_said_gone_and_attach_finishes_the_run_once() {
    for backend in both("lead-kill") {
        let t = TeamProject::new(WALKAWAY_TEAM);
        let config = config_dir(&t, 0);
        let id = detach(&t, &backend, &config, &[]);
        let run = only_run_dir(t.path());
        wait_state(t.path(), "planner running", Duration::from_secs(60), |s| {
            state_worker(s, "planner")["status"] == "running"
        });
        let pid = lead_pid(&run);
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        )
        .unwrap();
        assert!(
            wait_for(|| !procs::alive(pid), Duration::from_secs(10)),
            "{backend}: the lead survived SIGKILL"
        );
        // On the process backend `status` read `(being driven)` for a moment after the
        // lead's death in 1 of 2 runs (cause not found yet): give it a few seconds.
        let gone = format!("its lead (pid {pid}");
        let mut st = String::new();
        let said = wait_for(
            || {
                let out = run_crewmux(t.path(), backend.socket(), &["status", &id]);
                st = String::from_utf8_lossy(&out.stdout).into_owned();
                st.contains(&gone) && st.contains("is gone")
            },
            Duration::from_secs(15),
        );
        assert!(said, "{backend}: {st}");
        let out = run_crewmux(t.path(), backend.socket(), &["attach", "--headless", &id]);
        let s = summary(&out);
        assert_eq!(s["status"], "done", "{backend}: {s}");
        // No attempt was run twice: one dispatch record per worker.
        let state: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(run.join("state.json")).unwrap())
                .unwrap();
        for w in ["planner", "builder"] {
            let n = state["dispatches"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| d["worker_id"] == w)
                .count();
            assert_eq!(n, 1, "{backend}: {w} ran {n} attempts: {state}");
        }
    }
}

#[test]
fn an_answer_given_in_one_dashboard_shows_in_another() {
    if !tmux_ready("an_answer_given_in_one_dashboard_shows_in_another") {
        return;
    }
    let backend = Backend::tmux("lead-two-workers");
    let t = TeamProject::new(ASKING_TEAM);
    let config = config_dir(&t, 0);
    let id = detach(&t, &backend, &config, &[]);
    let attach = format!(
        "cd {} && CREWMUX_TMUX_SOCKET={} {} attach {id}; echo EXITED $?; sleep 60",
        t.path().display(),
        backend.socket(),
        env!("CARGO_BIN_EXE_crewmux"),
    );
    let one = Viewer::start("lead-two-a", (140, 42), &attach);
    let two = Viewer::start("lead-two-b", (140, 42), &attach);
    wait_state(t.path(), "asker waiting", Duration::from_secs(90), |s| {
        state_worker(s, "asker")["status"] == "waiting"
    });
    for v in [&one, &two] {
        let shown = wait_for(
            || v.screen().contains("asker is waiting for your answer"),
            Duration::from_secs(30),
        );
        assert!(shown, "{}\nlead.log:\n{}", v.screen(), lead_log(t.path()));
    }
    one.keys(&["n", "a"]);
    one.type_text("Amber, with the count");
    one.wait_screen("Amber, with the count", Duration::from_secs(30));
    one.keys(&["Enter"]);
    // The other dashboard shows the answer's event and the worker done.
    two.wait_screen("worker-answered", Duration::from_secs(60));
    two.wait_screen("done  council", Duration::from_secs(60));
    let result =
        std::fs::read_to_string(only_run_dir(t.path()).join("workers/asker/attempt-1/result.md"))
            .unwrap();
    assert!(
        result.contains("Answer received: Amber, with the count"),
        "{result}"
    );
}

#[test]
fn a_finished_runs_session_and_lead_end_after_the_grace_period_and_its_files_stay() {
    for backend in both("lead-grace") {
        let t = TeamProject::new(WALKAWAY_TEAM);
        let config = config_dir(&t, 3);
        let id = detach(&t, &backend, &config, &[]);
        let run = only_run_dir(t.path());
        wait_done(t.path(), Duration::from_secs(120));
        let pid = lead_pid(&run);
        if let Some(server) = &backend.server {
            // Still there right after the end: the panes can be read.
            let session = format!("crewmux-{id}");
            let has = || {
                server
                    .tmux(&["has-session", "-t", &session])
                    .status
                    .success()
            };
            assert!(has(), "{backend}: the session went at once");
            assert!(
                wait_for(|| !has(), Duration::from_secs(30)),
                "{backend}: the session outlived the grace period"
            );
        }
        assert!(
            wait_for(|| !procs::alive(pid), Duration::from_secs(30)),
            "{backend}: the lead outlived the grace period"
        );
        // Nothing of the run works any more (`tail -F`, `pipe-pane`, the lead).
        assert!(
            procs::working_in(t.path()).is_empty(),
            "{backend}: left working: {:?}",
            procs::working_in(t.path())
        );
        for f in [
            "report.md",
            "events.jsonl",
            "lead.log",
            "workers/planner/attempt-1/output.log",
            "workers/planner/attempt-1/result.md",
            "workers/builder/attempt-1/result.md",
        ] {
            assert!(run.join(f).exists(), "{backend}: {f} is gone");
        }
    }
}

/// A cancel that reaches a lead as it is being killed (its threads still hold the run's
/// driver lock for a moment after its main thread ended) is carried out by `cancel` itself
/// once the lock is free, not left in the inbox for a lead that never comes. The dying lead
/// is played by `flock(1)` holding `driver.lock` for 2 s after the real lead was killed.
#[test]
fn a_cancel_sent_as_the_lead_dies_is_carried_out_by_the_cancel() {
    let backend = Backend::process();
    let t = TeamProject::new(ASKING_TEAM);
    let config = config_dir(&t, 0);
    let id = detach(&t, &backend, &config, &[]);
    let run = only_run_dir(t.path());
    wait_state(t.path(), "the worker asks", Duration::from_secs(90), |s| {
        count_status(s, "waiting") == 1
    });
    let pid = lead_pid(&run);
    procs::kill_all(&[pid]);
    assert!(wait_for(|| !procs::alive(pid), Duration::from_secs(10)));
    let mut holder = std::process::Command::new("flock")
        .arg(run.join("driver.lock"))
        .args(["sleep", "2"])
        .spawn()
        .expect("flock(1)");
    let held = || {
        std::process::Command::new("flock")
            .args(["-n"])
            .arg(run.join("driver.lock"))
            .arg("true")
            .status()
            .is_ok_and(|s| !s.success())
    };
    assert!(
        wait_for(held, Duration::from_secs(5)),
        "flock took the lock"
    );
    let out = crewmux()
        .current_dir(t.path())
        .env("CREWMUX_CONFIG_DIR", &config)
        .args(["cancel", &id, "--grace", "1"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("stopped before it took the cancel"),
        "{}",
        stderr(&out)
    );
    let _ = holder.wait();
    let s = wait_state(t.path(), "run cancelled", Duration::from_secs(15), |s| {
        s["status"] == "cancelled"
    });
    assert_eq!(
        s["inbox_read"],
        std::fs::metadata(run.join("inbox.jsonl")).unwrap().len()
    );
}
