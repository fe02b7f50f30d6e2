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
    wait_state(project, what, Duration::from_secs(60), |s| {
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
    viewer.wait_screen("run done", Duration::from_secs(20));

    // `+`: the form takes the task (letters are text there), C-s adds the worker; the
    // finished run reopens and finishes again with it.
    viewer.keys(&["+"]);
    viewer.wait_screen("Add a worker", Duration::from_secs(10));
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
    viewer.wait_screen("added-1", Duration::from_secs(10));

    // `r` on the first worker: attempt 2, the same task.
    viewer.keys(&["g", "r"]);
    done_with(project, "the retry completes", |s| {
        worker_is(s, "first", 2, "completed")
    });
    let prompt2 = std::fs::read_to_string(run.join("workers/first/attempt-2/prompt.md")).unwrap();
    assert!(prompt2.contains("Plan: Plan the badge"), "{prompt2}");

    // `e`: the editor script appends a line; attempt 3 is told the edited task.
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
    viewer.wait_screen("Workers 2", Duration::from_secs(10));
    assert!(
        count_events(&run, "run-reopened") >= 3,
        "each steer reopened the run"
    );
    assert_each_attempt_once(&run);

    viewer.keys(&["q"]);
    let after = viewer.wait_screen("EXITED", Duration::from_secs(15));
    assert!(after.contains("EXITED 0"), "{after}");
}
