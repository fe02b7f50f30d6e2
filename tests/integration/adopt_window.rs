//! A lead killed between starting an attempt's window and saving that it did: the state
//! says the worker is `starting` with no pane and no dispatch record while its window is
//! there. `resume` adopts that window (one window of that name, the attempt's
//! `output.log` kept whole) instead of launching the attempt again over its folder.

use std::time::Duration;

use crate::support::*;

#[test]
fn resume_adopts_the_window_a_killed_lead_started_and_did_not_record() {
    if !tmux_ready("adopt_window") {
        return;
    }
    let server = TmuxServer::new("adopt_window");
    let t = TeamProject::new(&command_worker(
        "slow",
        "echo started here; sleep 8; echo finished here",
        "Done.",
    ));
    let d = t.path();
    let mut lead = t.run("wait a while").tmux(&server).spawn();
    wait_running(d, 1);
    let run = only_run_dir(d);
    let log = run.join("workers/slow/attempt-1/output.log");
    assert!(
        wait_for(
            || std::fs::read_to_string(&log).is_ok_and(|l| l.contains("started here")),
            Duration::from_secs(60)
        ),
        "the worker never started"
    );
    lead.kill().unwrap();
    lead.wait().unwrap();

    // What a lead killed before saving its launch leaves: starting, no pane, no record.
    let path = run.join("state.json");
    let mut state: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    for w in state["workers"].as_array_mut().unwrap() {
        if w["id"] == "slow" {
            w["status"] = "starting".into();
            w["pane_id"] = serde_json::Value::Null;
            w["pid"] = serde_json::Value::Null;
        }
    }
    state["dispatches"]
        .as_array_mut()
        .unwrap()
        .retain(|r| r["worker_id"] != "slow");
    std::fs::write(&path, serde_json::to_vec_pretty(&state).unwrap()).unwrap();

    let id = run_id(d);
    let out = run_crewmux(d, &server.socket, &["resume", &id]);
    let s = summary(&out);
    assert_eq!(s["status"], "done", "{}: {s}", stderr(&out));
    assert_eq!(worker(&s, "slow")["attempts"], 1, "{s}");
    let said = std::fs::read_to_string(&log).unwrap();
    assert!(
        said.contains("started here") && said.contains("finished here"),
        "the attempt's output.log is whole: {said}"
    );
    let windows = server.tmux(&[
        "list-windows",
        "-t",
        &format!("=crewmux-{id}"),
        "-F",
        "#{window_name}",
    ]);
    let names = String::from_utf8_lossy(&windows.stdout);
    assert_eq!(
        names.lines().filter(|n| *n == "slow-1").count(),
        1,
        "one window of the attempt: {names}"
    );
}
