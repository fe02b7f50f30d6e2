//! Teams that flow, end to end in real tmux panes with scripted `command` workers: a
//! downstream worker starts after its upstreams and its prompt holds their results; a
//! failed upstream skips its downstream. In a git project: `flow_merge`.

use crate::support::*;

/// `plan` and `api` print their results; `review` waits for both and prints its prompt.
const PIPELINE: &str = r#"
name = "pipeline"
parallel = 3

[[worker]]
id = "plan"
role = "architect"
provider = "command"
command = ["sh", "-c", "echo 'PLAN-RESULT: split the parser in two'"]

[[worker]]
id = "api"
role = "backend-engineer"
provider = "command"
command = ["sh", "-c", "sleep 1; echo 'API-RESULT: handler added in src/api.rs'"]
after = ["plan"]

[[worker]]
id = "review"
role = "reviewer"
provider = "command"
command = ["sh", "-c", "cat \"$CREWMUX_PROMPT_FILE\""]
after = ["plan", "api"]
"#;

fn started_ended(state: &serde_json::Value, id: &str) -> (String, String) {
    let w = state["workers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["id"] == id)
        .unwrap();
    (
        w["started_at"].as_str().unwrap().to_string(),
        w["ended_at"].as_str().unwrap().to_string(),
    )
}

#[test]
fn a_downstream_prompt_holds_its_upstreams_results() {
    if !tmux_ready("a_downstream_prompt_holds_its_upstreams_results") {
        return;
    }
    let server = TmuxServer::new("flow");
    let tmp = TeamProject::new(PIPELINE);
    let out = tmp.run("Split the parser").socket(&server.socket).output();
    let s = summary(&out);
    for id in ["plan", "api", "review"] {
        assert_eq!(worker(&s, id)["status"], "completed", "{id}: {s}");
    }
    let run = only_run_dir(tmp.path());
    let prompt = std::fs::read_to_string(run.join("workers/review/attempt-1/prompt.md")).unwrap();
    assert!(
        prompt.contains("Results of the workers this one waited for"),
        "{prompt}"
    );
    assert!(
        prompt.contains("### plan (architect) — completed"),
        "{prompt}"
    );
    assert!(
        prompt.contains("PLAN-RESULT: split the parser in two"),
        "{prompt}"
    );
    assert!(
        prompt.contains("API-RESULT: handler added in src/api.rs"),
        "{prompt}"
    );
    let plan_result = run.join("workers/plan/attempt-1/result.md");
    assert!(
        prompt.contains(&format!("Result: {}", plan_result.display())),
        "{prompt}"
    );
    // The worker saw it too: its output is its prompt.
    let result = std::fs::read_to_string(run.join("workers/review/attempt-1/result.md")).unwrap();
    assert!(result.contains("API-RESULT"), "{result}");
    // It started only after both upstreams ended (RFC 3339 UTC strings sort by time).
    let state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("state.json")).unwrap()).unwrap();
    let (review_start, _) = started_ended(&state, "review");
    for up in ["plan", "api"] {
        let (_, ended) = started_ended(&state, up);
        assert!(
            review_start >= ended,
            "review {review_start} before {up} ended {ended}"
        );
    }
}

#[test]
fn a_failed_upstream_skips_its_downstream_in_a_real_run() {
    if !tmux_ready("a_failed_upstream_skips_its_downstream_in_a_real_run") {
        return;
    }
    let server = TmuxServer::new("flowskip");
    let body = PIPELINE
        .replace("echo 'PLAN-RESULT: split the parser in two'", "exit 4")
        .replace("parallel = 3", "parallel = 3\nmax_fix_rounds = 0");
    let tmp = TeamProject::new(&body);
    let out = tmp
        .run("Split the parser")
        .socket(&server.socket)
        .args(&["--max-attempts", "1"])
        .output();
    let s = summary(&out);
    assert_eq!(worker(&s, "plan")["status"], "failed", "{s}");
    assert_eq!(worker(&s, "api")["status"], "skipped", "{s}");
    assert_eq!(worker(&s, "api")["reason"], "upstream plan failed", "{s}");
    assert_eq!(worker(&s, "api")["attempts"], 0, "never started: {s}");
    assert_eq!(
        worker(&s, "review")["reason"],
        "upstream plan failed",
        "{s}"
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "the council blocks on the failure"
    );
    let report = std::fs::read_to_string(only_run_dir(tmp.path()).join("report.md")).unwrap();
    assert!(report.contains("skipped"), "{report}");
}
