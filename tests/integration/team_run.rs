//! End to end: a three-worker team of sim agents in real tmux panes on a private server,
//! and the same team on the process backend.

use crate::support::*;

fn assert_three_worker_run(project: &std::path::Path, out: &std::process::Output, backend: &str) {
    let s = summary(out);
    assert_eq!(s["backend"], backend);
    assert_eq!(s["status"], "done", "{s}");
    let ok = worker(&s, "ok");
    assert_eq!(
        (ok["status"].as_str(), ok["exit_code"].as_i64()),
        (Some("completed"), Some(0))
    );
    let bad = worker(&s, "bad");
    assert_eq!(
        (bad["status"].as_str(), bad["exit_code"].as_i64()),
        (Some("failed"), Some(3))
    );
    assert_eq!(bad["attempts"], 1);
    let flaky = worker(&s, "flaky");
    assert_eq!(flaky["status"], "completed");
    assert_eq!(flaky["attempts"], 2);
    // A failed worker is not a failed run, but the council sees it.
    assert_eq!(
        out.status.code(),
        Some(if s["council"]["status"] == "blocked" {
            1
        } else {
            0
        })
    );

    let run = only_run_dir(project);
    for f in ["manifest.json", "state.json", "events.jsonl", "report.md"] {
        assert!(run.join(f).exists(), "{f}");
    }
    for (w, attempts) in [("ok", 1), ("bad", 1), ("flaky", 2)] {
        for n in 1..=attempts {
            let dir = run.join("workers").join(w).join(format!("attempt-{n}"));
            for f in ["prompt.md", "launch.sh", "output.log", "exit.json"] {
                assert!(dir.join(f).exists(), "{}", dir.join(f).display());
            }
        }
    }
    let exit = std::fs::read_to_string(run.join("workers/bad/attempt-1/exit.json")).unwrap();
    assert!(exit.contains("\"code\":3"), "{exit}");
    let log = std::fs::read_to_string(run.join("workers/flaky/attempt-1/output.log")).unwrap();
    assert!(log.contains("simulated failure on attempt 1"), "{log}");
    assert!(run.join("workers/flaky/attempt-2/result.md").exists());
    assert!(!run.join("workers/flaky/attempt-1/result.md").exists());
    let events = std::fs::read_to_string(run.join("events.jsonl")).unwrap();
    for kind in [
        "worker-started",
        "worker-failed",
        "worker-retry-scheduled",
        "worker-completed",
        "run-done",
    ] {
        assert!(
            events.contains(&format!("\"kind\":\"{kind}\"")),
            "{kind} in events"
        );
    }
    let state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("state.json")).unwrap()).unwrap();
    assert_eq!(state["schema_version"], 1);
    // One dispatch record per attempt of the team (a fix round may add a fixer's).
    let team_rows = state["dispatches"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| ["ok", "bad", "flaky"].contains(&d["worker_id"].as_str().unwrap()))
        .count();
    assert_eq!(team_rows, 4, "one dispatch record per attempt");
}

#[test]
fn three_sim_workers_in_tmux_panes() {
    if !tmux_ready("three_sim_workers_in_tmux_panes") {
        return;
    }
    let server = TmuxServer::new("team");
    let tmp = TeamProject::new(THREE_SIM_WORKERS);
    let out = tmp
        .run("Add a health endpoint to the API")
        .socket(&server.socket)
        .args(&["--provider", "sim"])
        .output();
    assert_three_worker_run(tmp.path(), &out, "tmux");
    // Every attempt had its own pane; each dead pane's status agrees with exit.json.
    let panes = server.tmux(&[
        "list-panes",
        "-a",
        "-F",
        "#{window_name} #{pane_dead} #{pane_dead_status}",
    ]);
    let panes = String::from_utf8_lossy(&panes.stdout);
    for want in ["ok-1 1 0", "bad-1 1 3", "flaky-1 1 1", "flaky-2 1 0"] {
        assert!(panes.lines().any(|l| l == want), "{want} in\n{panes}");
    }
}

#[test]
fn three_sim_workers_as_child_processes() {
    let tmp = TeamProject::new(THREE_SIM_WORKERS);
    let out = tmp
        .run("Add a health endpoint to the API")
        .process()
        .args(&["--provider", "sim"])
        .output();
    assert_three_worker_run(tmp.path(), &out, "process");
}

/// More workers than one launch batch (`driver::LAUNCH_BATCH`), all at once: every one is
/// launched, recorded with its pane or pid, and completes.
#[test]
fn more_workers_than_one_launch_batch_all_run() {
    let n = crewmux::lead::LAUNCH_BATCH * 2 + 5;
    let mut team = format!("parallel = {n}\nmax_fix_rounds = 0\n");
    for i in 0..n {
        team.push_str(&format!(
            "\n[[worker]]\nid = \"w{i}\"\nrole = \"backend-engineer\"\nprovider = \"command\"\nmax_attempts = 1\ncommand = [\"sh\", \"-c\", \"sleep 0.3; echo done {i}\"]\n"
        ));
    }
    for backend in backends("batch") {
        let tmp = TeamProject::new(&team);
        let out = tmp.run("many at once").on(&backend).output();
        let s = summary(&out);
        let done = s["workers"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|w| w["status"] == "completed")
            .count();
        assert_eq!(done, n, "{backend}: {s}");
    }
}
