//! Steering from the dashboard end to end: the dashboard runs in a tmux pane of a viewer
//! server (its workers on a second private server); keys go in with `send-keys`, the run is
//! read from its `state.json`. `+` adds a sim worker that completes, `r` retries a worker,
//! `e` edits its task with `$EDITOR` (a script here) and retries with the edit, and a run
//! that had finished is reopened by each and finishes again.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::support::*;

const TEAM: &str = r#"
name = "steer"

[[worker]]
id = "first"
role = "architect"
provider = "sim"
prompt = "Plan: {problem}\nsim: lines=3"
"#;

/// The editor `e` opens: it appends a line to the task file it is given.
const EDITOR: &str = "#!/bin/sh\nprintf '%s\\n' 'Also: EDITED-BY-SCRIPT' >> \"$1\"\n";

fn worker_is(s: &Value, id: &str, attempt: u64, status: &str) -> bool {
    let w = state_worker(s, id);
    w["attempt"] == attempt && w["status"] == status
}

fn done_with(project: &Path, what: &str, cond: impl Fn(&Value) -> bool) -> Value {
    wait_state(project, what, Duration::from_secs(180), |s| {
        s["status"] == "done" && cond(s)
    })
}

/// Every attempt of every worker started once and ended once in `events.jsonl`.
fn assert_each_attempt_once(run: &Path) {
    use std::collections::HashMap;
    let mut n: HashMap<(String, u64, &str), usize> = HashMap::new();
    for e in events(run) {
        let (Some(w), Some(a)) = (e["worker"].as_str(), e["attempt"].as_u64()) else {
            continue;
        };
        let class = match e["kind"].as_str().unwrap_or("") {
            "worker-started" => "started",
            "worker-completed" | "worker-failed" | "worker-crashed" | "worker-timeout"
            | "worker-cancelled" => "ended",
            _ => continue,
        };
        *n.entry((w.to_string(), a, class)).or_default() += 1;
    }
    for ((w, a, class), count) in &n {
        assert_eq!(*count, 1, "{w}#{a} has {count} `{class}` events");
    }
}

#[test]
fn plus_adds_a_worker_r_retries_and_e_retries_with_the_edited_task() {
    if !tmux_ready("plus_adds_a_worker_r_retries_and_e_retries_with_the_edited_task") {
        return;
    }
    let workers = TmuxServer::new("steer-workers");
    let t = TeamProject::new(TEAM);
    let project = t.path();
    let editor = project.join("editor.sh");
    std::fs::write(&editor, EDITOR).unwrap();
    std::fs::set_permissions(&editor, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let env = format!("EDITOR={}", editor.display());
    let cmd = dashboard_cmd(project, &workers, &env, t.team(), "Plan the badge", "");
    let viewer = Viewer::start("steer-viewer", (120, 40), &cmd);
    done_with(project, "the first pass", |s| {
        worker_is(s, "first", 1, "completed")
    });
    viewer.wait_screen("run done", Duration::from_secs(60));

    // `+`: the form takes the task (letters are text there), C-s adds the worker; the
    // finished run reopens and finishes again with it.
    viewer.keys(&["+"]);
    viewer.wait_screen("Add a worker", Duration::from_secs(30));
    viewer.type_text("Say hello from the added worker");
    viewer.keys(&["C-s"]);
    let s = done_with(project, "the added worker completes", |s| {
        worker_is(s, "added-1", 1, "completed")
    });
    assert_eq!(
        state_worker(&s, "added-1")["task"],
        "Say hello from the added worker"
    );
    let run = only_run_dir(project);
    assert!(run.join("workers/added-1/attempt-1/result.md").is_file());
    viewer.wait_screen("added-1", Duration::from_secs(30));

    // `r` on the first worker: attempt 2, the same task.
    viewer.keys(&["g", "r"]);
    done_with(project, "the retry completes", |s| {
        worker_is(s, "first", 2, "completed")
    });
    let prompt2 = std::fs::read_to_string(run.join("workers/first/attempt-2/prompt.md")).unwrap();
    assert!(prompt2.contains("Plan: Plan the badge"), "{prompt2}");

    // `e`: the editor script appends a line; attempt 3 is told the edited task. The
    // dashboard follows the run's lead: it shows the retry ended a moment after the file.
    viewer.wait_screen("Workers 2 · 2 done", Duration::from_secs(30));
    viewer.keys(&["e"]);
    let s = done_with(project, "the edited retry completes", |s| {
        worker_is(s, "first", 3, "completed")
    });
    let prompt3 = std::fs::read_to_string(run.join("workers/first/attempt-3/prompt.md")).unwrap();
    assert!(prompt3.contains("EDITED-BY-SCRIPT"), "{prompt3}");
    assert!(!prompt2.contains("EDITED-BY-SCRIPT"));
    assert!(state_worker(&s, "first")["task"]
        .as_str()
        .unwrap()
        .ends_with("Also: EDITED-BY-SCRIPT"));
    // The dashboard came back from the editor and still takes keys.
    viewer.wait_screen("Workers 2", Duration::from_secs(30));
    assert!(
        count_events(&run, "run-reopened") >= 3,
        "each steer reopened the run"
    );
    assert_each_attempt_once(&run);

    viewer.keys(&["q"]);
    let after = viewer.wait_screen("EXITED", Duration::from_secs(45));
    assert!(after.contains("EXITED 0"), "{after}");
}

/// Workers that wait for one line on their terminal and write it into their result.
const READERS: &str = r##"
name = "readers"

[[worker]]
id = "one"
role = "architect"
provider = "command"
max_attempts = 1
command = ["sh", "-c", 'read line; printf "# got\n\ngot: %s\n" "$line" > "$CREWMUX_RESULT_FILE"']

[[worker]]
id = "two"
role = "architect"
provider = "command"
max_attempts = 1
command = ["sh", "-c", 'read line; printf "# got\n\ngot: %s\n" "$line" > "$CREWMUX_RESULT_FILE"']
"##;

fn result_of(run: &Path, worker: &str) -> String {
    std::fs::read_to_string(run.join(format!("workers/{worker}/attempt-1/result.md")))
        .unwrap_or_default()
}

/// The viewer runs `crewmux <command>` in `project` with its workers on `workers`.
fn open_in_viewer(tag: &str, project: &Path, workers: &TmuxServer, command: &str) -> Viewer {
    let cmd = format!(
        "cd {} && XDG_STATE_HOME={} CREWMUX_TMUX_SOCKET={} {} {command}; echo EXITED $?; sleep 60",
        project.display(),
        state_home().display(),
        workers.socket,
        env!("CARGO_BIN_EXE_crewmux"),
    );
    Viewer::start(tag, (120, 40), &cmd)
}

#[test]
fn s_types_a_line_into_a_running_worker_that_asked_nothing() {
    if !tmux_ready("s_types_a_line_into_a_running_worker_that_asked_nothing") {
        return;
    }
    let workers = TmuxServer::new("send-workers");
    let t = TeamProject::new(READERS);
    let project = t.path();
    let viewer = open_in_viewer(
        "send-viewer",
        project,
        &workers,
        &format!(
            "run --team {} --no-clarify 'Echo a line'",
            t.team().display()
        ),
    );
    wait_state(project, "both running", Duration::from_secs(180), |s| {
        count_status(s, "running") == 2
    });
    // The dashboard follows the run's lead: its roster says so a moment after the file.
    viewer.wait_screen("Workers 2 · 2 running", Duration::from_secs(60));

    // `s` on the selected (first) worker opens the line; Enter types it into its pane.
    viewer.keys(&["s"]);
    viewer.wait_screen("one", Duration::from_secs(30));
    viewer.type_text("hello from s");
    viewer.keys(&["Enter"]);
    let s = wait_state(project, "one completes", Duration::from_secs(180), |s| {
        state_worker(s, "one")["status"] == "completed"
    });
    assert_eq!(state_worker(&s, "two")["status"], "running");
    let run = only_run_dir(project);
    assert!(result_of(&run, "one").contains("got: hello from s"));
    assert_eq!(count_events(&run, "text-sent"), 1);

    // `s` on a command worker that has ended says why on the screen and types nothing.
    viewer.wait_screen("Workers 2 · 1 running · 1 done", Duration::from_secs(30));
    viewer.keys(&["s"]);
    viewer.wait_screen("no conversation to go on with", Duration::from_secs(30));
    viewer.keys(&["j", "s"]);
    viewer.type_text("and to two");
    viewer.keys(&["Enter"]);
    wait_state(project, "two completes", Duration::from_secs(180), |s| {
        s["status"] == "done"
    });
    assert!(result_of(&run, "two").contains("got: and to two"));
    viewer.keys(&["q"]);
    let after = viewer.wait_screen("EXITED", Duration::from_secs(45));
    assert!(after.contains("EXITED 0"), "{after}");
}

#[test]
fn a_headless_run_is_steered_from_the_cli_and_from_a_dashboard_opened_on_it() {
    if !tmux_ready("a_headless_run_is_steered_from_the_cli_and_from_a_dashboard_opened_on_it") {
        return;
    }
    let workers = TmuxServer::new("inbox-workers");
    let t = TeamProject::new(READERS);
    let project = t.path();
    let team = t.team().display().to_string();
    let headless = spawn_crewmux(
        project,
        &workers.socket,
        &[
            "run",
            "--headless",
            "--team",
            &team,
            "--no-clarify",
            "Echo lines",
        ],
    );
    wait_state(project, "both running", Duration::from_secs(180), |s| {
        count_status(s, "running") == 2
    });
    let run = only_run_dir(project);
    let id = run.file_name().unwrap().to_str().unwrap().to_string();

    // The command line: refusals are one line and exit 2; text goes through the inbox.
    let bad = run_crewmux(
        project,
        &workers.socket,
        &["steer", &id, "add", "x", "--role", "poet"],
    );
    assert_eq!(bad.status.code(), Some(2));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.contains("--role poet: no such role") && err.lines().count() == 1,
        "{err}"
    );
    let bad = run_crewmux(project, &workers.socket, &["steer", &id, "retry", "one"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("one is still running"));
    let bad = run_crewmux(
        project,
        &workers.socket,
        &["steer", &id, "retry", "one", "--task-file", "/nonexistent"],
    );
    assert_eq!(bad.status.code(), Some(2));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.starts_with("crewmux: --task-file /nonexistent: cannot read it (")
            && err.trim_end().ends_with("): give a readable file")
            && err.lines().count() == 1,
        "{err}"
    );
    let sent = run_crewmux(
        project,
        &workers.socket,
        &["steer", &id, "send", "one", "from the cli"],
    );
    assert!(
        sent.status.success(),
        "{}",
        String::from_utf8_lossy(&sent.stderr)
    );
    assert!(String::from_utf8_lossy(&sent.stderr).contains("sent to the process driving run"));
    wait_state(project, "one completes", Duration::from_secs(180), |s| {
        state_worker(s, "one")["status"] == "completed"
    });
    assert!(result_of(&run, "one").contains("got: from the cli"));

    // A dashboard opened on the run follows it; `+` adds a sim worker through the inbox.
    let viewer = open_in_viewer("inbox-viewer", project, &workers, &format!("attach {id}"));
    viewer.wait_screen(
        "is driven by another crewmux process",
        Duration::from_secs(60),
    );
    viewer.keys(&["+"]);
    viewer.wait_screen("Add a worker", Duration::from_secs(30));
    viewer.type_text("Say hello from the inbox");
    // A team of command workers: the form offers the simulated agent first, as
    // `crewmux steer add` picks it.
    viewer.keys(&["C-s"]);
    let s = wait_state(
        project,
        "the added worker completes",
        Duration::from_secs(180),
        |s| state_worker(s, "added-1")["status"] == "completed",
    );
    assert_eq!(state_worker(&s, "added-1")["provider"], "sim");
    viewer.wait_screen("added-1", Duration::from_secs(45));

    // `steer add --command`: a command worker, its argv split as a shell would, no task.
    let added = run_crewmux(
        project,
        &workers.socket,
        &[
            "steer",
            &id,
            "add",
            "--id",
            "lint",
            "--command",
            "sh -c 'echo added command ran'",
        ],
    );
    assert!(
        added.status.success(),
        "{}",
        String::from_utf8_lossy(&added.stderr)
    );
    let s = wait_state(
        project,
        "the command worker completes",
        Duration::from_secs(180),
        |s| state_worker(s, "lint")["status"] == "completed",
    );
    assert_eq!(state_worker(&s, "lint")["provider"], "command");
    let out = std::fs::read_to_string(run.join("workers/lint/attempt-1/output.log")).unwrap();
    assert!(out.contains("added command ran"), "{out}");
    // Two adds with no id, one right after the other: two workers, not one and a silence.
    for _ in 0..2 {
        let added = run_crewmux(
            project,
            &workers.socket,
            &["steer", &id, "add", "--command", "true"],
        );
        assert!(
            added.status.success(),
            "{}",
            String::from_utf8_lossy(&added.stderr)
        );
    }
    wait_state(project, "both adds land", Duration::from_secs(120), |s| {
        ["added-2", "added-3"]
            .iter()
            .all(|w| state_worker(s, w)["status"] == "completed")
    });
    let bad = run_crewmux(
        project,
        &workers.socket,
        &[
            "steer",
            &id,
            "add",
            "--command",
            "nosuch-program-xyz --flag",
        ],
    );
    assert_eq!(bad.status.code(), Some(2));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.contains("`nosuch-program-xyz` not found on PATH") && err.lines().count() == 1,
        "{err}"
    );

    // `s` on `two` (second in the roster) types into its pane through the inbox too.
    viewer.keys(&["g", "j", "s"]);
    viewer.wait_screen("two", Duration::from_secs(30));
    viewer.type_text("from the dashboard");
    viewer.keys(&["Enter"]);
    let out = wait_limited(headless, &["run", "--headless"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(result_of(&run, "two").contains("got: from the dashboard"));
    viewer.wait_screen("run done", Duration::from_secs(60));
    viewer.keys(&["q"]);
    let after = viewer.wait_screen("EXITED", Duration::from_secs(45));
    assert!(after.contains("EXITED 0"), "{after}");
    assert_events_once(project);
}
