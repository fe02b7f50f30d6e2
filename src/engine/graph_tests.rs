//! Engine tests of the dependency graph: diamond, failing upstreams, the parallel bound and
//! a reattach in the middle of the graph.

use chrono::Duration;

use super::tests::{exited, launched, launches, run, t0};
use super::*;
use crate::domain::EventKind;
use crate::domain::*;

/// `n` workers w0..; `edges` (worker, its upstreams).
fn graph(n: usize, parallel: usize, edges: &[(usize, &[usize])]) -> RunState {
    let mut s = run(n, parallel);
    for (w, ups) in edges {
        s.workers[*w].flow.after = ups.iter().map(|u| format!("w{u}")).collect();
    }
    s
}

fn ids(l: Vec<(String, u32)>) -> Vec<String> {
    l.into_iter().map(|(w, _)| w).collect()
}

fn status(s: &RunState, id: &str) -> (WorkerStatus, Option<String>) {
    let w = s.worker(id).unwrap();
    (w.status, w.reason.clone())
}

/// Launch and finish `w`'s current attempt with `code`; returns the launches it caused.
fn finish(s: &mut RunState, mem: &mut RunMemory, w: &str, code: i32) -> Vec<String> {
    let attempt = s.worker(w).unwrap().attempt;
    launched(s, mem, w, attempt, t0());
    ids(launches(&exited(s, mem, w, attempt, code)))
}

#[test]
fn a_diamond_runs_level_by_level() {
    // w0 → w1, w0 → w2, w1 + w2 → w3
    let mut s = graph(4, 5, &[(1, &[0]), (2, &[0]), (3, &[1, 2])]);
    let mut mem = RunMemory::default();
    assert_eq!(
        ids(launches(&update(&mut s, &mut mem, t0(), Input::Start))),
        ["w0"]
    );
    assert_eq!(graph::blocked_on(&s, s.worker("w3").unwrap()), ["w1", "w2"]);
    assert_eq!(finish(&mut s, &mut mem, "w0", 0), ["w1", "w2"]);
    assert!(
        finish(&mut s, &mut mem, "w1", 0).is_empty(),
        "w3 still waits for w2"
    );
    assert_eq!(graph::blocked_on(&s, s.worker("w3").unwrap()), ["w2"]);
    assert_eq!(finish(&mut s, &mut mem, "w2", 0), ["w3"]);
    finish(&mut s, &mut mem, "w3", 0);
    assert_eq!(s.stage, Stage::TeamVerify);
}

#[test]
fn a_failed_upstream_skips_its_downstream_chain_without_retry() {
    // w0 → w1 → w2; w3 independent.
    let mut s = graph(4, 5, &[(1, &[0]), (2, &[1])]);
    s.workers[0].max_attempts = 1;
    let mut mem = RunMemory::default();
    assert_eq!(
        ids(launches(&update(&mut s, &mut mem, t0(), Input::Start))),
        ["w0", "w3"]
    );
    let fx = {
        launched(&mut s, &mut mem, "w0", 1, t0());
        exited(&mut s, &mut mem, "w0", 1, 3)
    };
    assert!(launches(&fx).is_empty());
    assert_eq!(
        status(&s, "w1"),
        (WorkerStatus::Skipped, Some("upstream w0 failed".into()))
    );
    assert_eq!(
        status(&s, "w2"),
        (WorkerStatus::Skipped, Some("upstream w1 skipped".into()))
    );
    assert_eq!(s.worker("w1").unwrap().attempt, 0, "never launched");
    let events: Vec<&str> = fx
        .iter()
        .filter_map(|e| match e {
            Effect::Event(ev) if ev.kind == EventKind::WorkerSkipped => ev.worker.as_deref(),
            _ => None,
        })
        .collect();
    assert_eq!(events, ["w1", "w2"]);
    finish(&mut s, &mut mem, "w3", 0);
    assert_eq!(s.stage, Stage::TeamVerify, "skipped workers end the stage");
}

#[test]
fn a_retried_upstream_keeps_its_downstream_waiting() {
    let mut s = graph(2, 5, &[(1, &[0])]);
    let mut mem = RunMemory::default();
    update(&mut s, &mut mem, t0(), Input::Start);
    assert_eq!(
        finish(&mut s, &mut mem, "w0", 1),
        ["w0"],
        "retry, w1 not started"
    );
    assert_eq!(s.worker("w1").unwrap().status, WorkerStatus::Pending);
    assert_eq!(finish(&mut s, &mut mem, "w0", 0), ["w1"]);
}

#[test]
fn on_upstream_failure_run_starts_the_downstream_anyway() {
    let mut s = graph(2, 5, &[(1, &[0])]);
    s.workers[0].max_attempts = 1;
    s.workers[1].flow.on_upstream_failure = UpstreamPolicy::Run;
    let mut mem = RunMemory::default();
    update(&mut s, &mut mem, t0(), Input::Start);
    assert_eq!(finish(&mut s, &mut mem, "w0", 1), ["w1"]);
}

#[test]
fn parallel_bounds_ready_workers_and_order_breaks_ties() {
    // w0 → w1..w4; parallel 2; w4 has the lowest order among the ready ones.
    let mut s = graph(5, 2, &[(1, &[0]), (2, &[0]), (3, &[0]), (4, &[0])]);
    s.workers[4].order = 0;
    s.workers[0].order = 0;
    let mut mem = RunMemory::default();
    assert_eq!(
        ids(launches(&update(&mut s, &mut mem, t0(), Input::Start))),
        ["w0"]
    );
    assert_eq!(finish(&mut s, &mut mem, "w0", 0), ["w4", "w1"]);
    assert_eq!(live_count(&s), 2);
    assert_eq!(finish(&mut s, &mut mem, "w4", 0), ["w2"]);
    assert_eq!(live_count(&s), 2);
}

#[test]
fn reattach_in_the_middle_of_the_graph_resumes_it() {
    // w0 → w1 → w2: w0 completed, w1 running when the driver went away.
    let mut s = graph(3, 5, &[(1, &[0]), (2, &[1])]);
    let mut mem = RunMemory::default();
    update(&mut s, &mut mem, t0(), Input::Start);
    finish(&mut s, &mut mem, "w0", 0);
    launched(&mut s, &mut mem, "w1", 1, t0());
    s.status = RunStatus::Detached;
    // A new process: saved state through JSON, fresh run memory.
    let mut s: RunState = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
    let mut mem = RunMemory::default();
    let later = t0() + Duration::seconds(5);
    let fx = update(&mut s, &mut mem, later, Input::Start);
    assert!(launches(&fx).is_empty(), "w1 still runs, w2 waits: {fx:?}");
    assert_eq!(graph::blocked_on(&s, s.worker("w2").unwrap()), ["w1"]);
    let fx = exited(&mut s, &mut mem, "w1", 1, 0);
    assert_eq!(ids(launches(&fx)), ["w2"]);
}

#[test]
fn a_critic_waits_for_the_critic_it_names() {
    let mut s = run(1, 5);
    s.critics = vec![
        CriticSpec {
            id: "first".into(),
            command: Some(vec!["true".into()]),
            ..Default::default()
        },
        CriticSpec {
            id: "second".into(),
            command: Some(vec!["true".into()]),
            after: vec!["first".into(), "w0".into()],
            approvals: Some(crate::domain::clarification::ApprovalsSpec {
                policy: Some(crate::domain::clarification::ApprovalPolicy::Deny),
            }),
            ..Default::default()
        },
    ];
    let mut mem = RunMemory::default();
    update(&mut s, &mut mem, t0(), Input::Start);
    let fx = {
        launched(&mut s, &mut mem, "w0", 1, t0());
        exited(&mut s, &mut mem, "w0", 1, 0)
    };
    assert_eq!(s.stage, Stage::TeamVerify);
    assert_eq!(ids(launches(&fx)), ["critic-first"]);
    assert_eq!(
        s.worker("critic-second").unwrap().flow.after,
        ["critic-first", "w0"]
    );
    // A critic takes the approval policy its spec carries.
    assert_eq!(
        s.worker("critic-second").unwrap().flow.approvals,
        crate::domain::clarification::ApprovalPolicy::Deny
    );
    assert_eq!(
        finish(&mut s, &mut mem, "critic-first", 0),
        ["critic-second"]
    );
}
