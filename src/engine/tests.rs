//! Engine unit tests: pure inputs and effects, no tmux, no clock, no filesystem.

use std::path::PathBuf;

use chrono::{DateTime, Duration, TimeZone, Utc};

use super::stages::blank_worker;
use super::*;
use crate::domain::*;

pub(super) fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 1, 12, 0, 0).unwrap()
}

pub(crate) fn run(workers: usize, parallel: usize) -> RunState {
    let workers = (0..workers)
        .map(|i| {
            let mut w = blank_worker(
                format!("w{i}"),
                "backend-engineer".into(),
                "sim".into(),
                WorkerKind::Worker,
                Stage::TeamExec,
                0,
            );
            w.order = i as u32;
            w
        })
        .collect();
    RunState {
        schema_version: SCHEMA_VERSION,
        run_id: "r1".into(),
        problem: "Add rate limiting to the public API".into(),
        team: "test".into(),
        project_dir: PathBuf::from("/p"),
        run_dir: PathBuf::from("/p/.crewmux/runs/r1"),
        stage: Stage::TeamPlan,
        status: RunStatus::Running,
        reason: None,
        backend: BackendKind::Tmux,
        tmux_socket: "t".into(),
        session: "crewmux-r1".into(),
        parallel,
        host_slots: Default::default(),
        fix_round: 0,
        max_fix_rounds: 1,
        workers,
        dispatches: vec![],
        council: Council::default(),
        council_history: vec![],
        workspace: None,
        routing: Default::default(),
        hosts_not_answering: Default::default(),
        inbox_read: None,
        inputs: Default::default(),
        budget: None,
        clarification: ClarificationState::default(),
        clarify: false,
        checks: vec![],
        critics: vec![],
        fixer: None,
        sandbox: Default::default(),
        report: None,
        races: Default::default(),
        created_at: t0(),
        updated_at: t0(),
    }
}

pub(super) fn launches(fx: &[Effect]) -> Vec<(String, u32)> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::Launch { worker, attempt } => Some((worker.clone(), *attempt)),
            _ => None,
        })
        .collect()
}

pub(super) fn launched(
    s: &mut RunState,
    mem: &mut RunMemory,
    w: &str,
    attempt: u32,
    now: DateTime<Utc>,
) {
    update(
        s,
        mem,
        now,
        Input::Launched {
            worker: w.into(),
            attempt,
            nonce: format!("n{attempt}"),
            prompt_path: PathBuf::from(format!("/p/{w}/attempt-{attempt}/prompt.md")),
            backend: "tmux".into(),
            pane_id: Some("%1".into()),
            pid: Some(42),
            credential_label: None,
        },
    );
}

pub(super) fn exited(
    s: &mut RunState,
    mem: &mut RunMemory,
    w: &str,
    attempt: u32,
    code: i32,
) -> Vec<Effect> {
    update(
        s,
        mem,
        t0(),
        Input::Exited {
            worker: w.into(),
            attempt,
            code,
            source: ExitSource::ExitFile,
            missing_artifacts: vec![],
            result: Some(PathBuf::from("/r.md")),
            said: None,
            ended_at: None,
            question: None,
        },
    )
}

#[test]
fn start_launches_no_more_than_parallel_and_the_rest_as_slots_free() {
    let (mut s, mut mem) = (run(3, 2), RunMemory::default());
    let fx = update(&mut s, &mut mem, t0(), Input::Start);
    assert_eq!(s.stage, Stage::TeamExec);
    assert_eq!(launches(&fx), vec![("w0".into(), 1), ("w1".into(), 1)]);
    assert_eq!(s.worker("w2").unwrap().status, WorkerStatus::Pending);
    launched(&mut s, &mut mem, "w0", 1, t0());
    let fx = exited(&mut s, &mut mem, "w0", 1, 0);
    assert_eq!(s.worker("w0").unwrap().status, WorkerStatus::Completed);
    assert_eq!(launches(&fx), vec![("w2".into(), 1)]);
}

#[test]
fn nonzero_exit_retries_with_a_new_attempt_then_completes() {
    let (mut s, mut mem) = (run(1, 1), RunMemory::default());
    update(&mut s, &mut mem, t0(), Input::Start);
    launched(&mut s, &mut mem, "w0", 1, t0());
    let fx = exited(&mut s, &mut mem, "w0", 1, 1);
    assert_eq!(launches(&fx), vec![("w0".into(), 2)]);
    assert_eq!(s.dispatches[0].status, WorkerStatus::Failed);
    assert_eq!(s.dispatches[0].exit_code, Some(1));
    launched(&mut s, &mut mem, "w0", 2, t0());
    exited(&mut s, &mut mem, "w0", 2, 0);
    let w = s.worker("w0").unwrap();
    assert_eq!(
        (w.status, w.attempt, w.exit_code),
        (WorkerStatus::Completed, 2, Some(0))
    );
    assert_eq!(s.dispatches.len(), 2);
}

#[test]
fn last_attempt_failure_is_terminal_with_its_exit_code() {
    let (mut s, mut mem) = (run(1, 1), RunMemory::default());
    s.workers[0].max_attempts = 1;
    update(&mut s, &mut mem, t0(), Input::Start);
    launched(&mut s, &mut mem, "w0", 1, t0());
    let fx = exited(&mut s, &mut mem, "w0", 1, 3);
    let w = s.worker("w0").unwrap();
    assert_eq!((w.status, w.exit_code), (WorkerStatus::Failed, Some(3)));
    assert!(launches(&fx).is_empty());
    assert!(fx.contains(&Effect::RunCouncil), "verify follows: {fx:?}");
}

#[test]
fn a_stale_attempt_exit_is_ignored() {
    let (mut s, mut mem) = (run(1, 1), RunMemory::default());
    update(&mut s, &mut mem, t0(), Input::Start);
    launched(&mut s, &mut mem, "w0", 1, t0());
    exited(&mut s, &mut mem, "w0", 1, 1);
    launched(&mut s, &mut mem, "w0", 2, t0());
    exited(&mut s, &mut mem, "w0", 1, 0);
    assert_eq!(s.worker("w0").unwrap().status, WorkerStatus::Running);
}

#[test]
fn missing_required_artifact_fails_a_zero_exit() {
    let (mut s, mut mem) = (run(1, 1), RunMemory::default());
    s.workers[0].max_attempts = 1;
    update(&mut s, &mut mem, t0(), Input::Start);
    launched(&mut s, &mut mem, "w0", 1, t0());
    update(
        &mut s,
        &mut mem,
        t0(),
        Input::Exited {
            worker: "w0".into(),
            attempt: 1,
            code: 0,
            source: ExitSource::Marker,
            missing_artifacts: vec!["result.md".into()],
            result: None,
            said: None,
            ended_at: None,
            question: None,
        },
    );
    let w = s.worker("w0").unwrap();
    assert_eq!(w.status, WorkerStatus::Failed);
    assert!(w.reason.as_deref().unwrap().contains("result.md"));
}

#[test]
fn duplicate_dispatch_rows_update_the_newest() {
    let (mut s, mut mem) = (run(1, 1), RunMemory::default());
    update(&mut s, &mut mem, t0(), Input::Start);
    launched(&mut s, &mut mem, "w0", 1, t0());
    // A re-sent prompt with the same attempt appends a second row for the same prompt.
    let dup = s.dispatches[0].clone();
    s.dispatches.push(dup);
    exited(&mut s, &mut mem, "w0", 1, 0);
    assert_eq!(s.dispatches[0].status, WorkerStatus::Running);
    assert_eq!(s.dispatches[1].status, WorkerStatus::Completed);
}

#[test]
fn wall_and_idle_timeouts_ask_for_a_kill_once_and_end_as_timeout() {
    let (mut s, mut mem) = (run(2, 2), RunMemory::default());
    s.workers[0].timeout_s = Some(10);
    s.workers[1].idle_timeout_s = Some(5);
    for w in &mut s.workers {
        w.max_attempts = 1;
    }
    update(&mut s, &mut mem, t0(), Input::Start);
    launched(&mut s, &mut mem, "w0", 1, t0());
    launched(&mut s, &mut mem, "w1", 1, t0());
    let fx = update(&mut s, &mut mem, t0() + Duration::seconds(4), Input::Tick);
    assert!(!fx.iter().any(|e| matches!(e, Effect::Kill { .. })));
    let fx = update(&mut s, &mut mem, t0() + Duration::seconds(6), Input::Tick);
    assert!(fx.contains(&Effect::Kill {
        worker: "w1".into(),
        attempt: 1,
        reason: KillReason::IdleTimeout
    }));
    let fx = update(&mut s, &mut mem, t0() + Duration::seconds(11), Input::Tick);
    assert_eq!(
        fx.iter()
            .filter(|e| matches!(e, Effect::Kill { .. }))
            .count(),
        1,
        "w1 is not killed twice: {fx:?}"
    );
    update(
        &mut s,
        &mut mem,
        t0() + Duration::seconds(12),
        Input::Vanished {
            worker: "w0".into(),
            attempt: 1,
            detail: "pane gone".into(),
        },
    );
    exited(&mut s, &mut mem, "w1", 1, 143);
    assert_eq!(s.worker("w0").unwrap().status, WorkerStatus::Timeout);
    assert_eq!(s.worker("w1").unwrap().status, WorkerStatus::Timeout);
}

#[test]
fn a_vanished_pane_without_a_kill_is_crashed_and_retried() {
    let (mut s, mut mem) = (run(1, 1), RunMemory::default());
    update(&mut s, &mut mem, t0(), Input::Start);
    launched(&mut s, &mut mem, "w0", 1, t0());
    let fx = update(
        &mut s,
        &mut mem,
        t0(),
        Input::Vanished {
            worker: "w0".into(),
            attempt: 1,
            detail: "tmux server died".into(),
        },
    );
    assert_eq!(s.dispatches[0].status, WorkerStatus::Crashed);
    assert_eq!(launches(&fx), vec![("w0".into(), 2)]);
}

#[test]
fn cancel_all_stops_live_workers_and_marks_pending_ones() {
    let (mut s, mut mem) = (run(2, 1), RunMemory::default());
    update(&mut s, &mut mem, t0(), Input::Start);
    launched(&mut s, &mut mem, "w0", 1, t0());
    let fx = update(&mut s, &mut mem, t0(), Input::Cancel { worker: None });
    assert!(fx.contains(&Effect::Kill {
        worker: "w0".into(),
        attempt: 1,
        reason: KillReason::Cancel
    }));
    assert_eq!(s.worker("w1").unwrap().status, WorkerStatus::Cancelled);
    let fx = exited(&mut s, &mut mem, "w0", 1, 143);
    assert_eq!(s.worker("w0").unwrap().status, WorkerStatus::Cancelled);
    assert_eq!(s.status, RunStatus::Cancelled);
    assert!(fx.contains(&Effect::Finished));
    // The reason says what happened, not the status again.
    let said = format!("{fx:?}");
    assert!(!said.contains("cancelled: cancelled"), "{said}");
    assert_eq!(
        s.worker("w0").unwrap().reason.as_deref(),
        Some("ended on request (SIGTERM, grace, SIGKILL)")
    );
}

#[test]
fn a_question_makes_the_worker_wait_until_output_moves_after_the_answer() {
    let (mut s, mut mem) = (run(1, 1), RunMemory::default());
    update(&mut s, &mut mem, t0(), Input::Start);
    launched(&mut s, &mut mem, "w0", 1, t0());
    update(
        &mut s,
        &mut mem,
        t0(),
        Input::Asked {
            worker: "w0".into(),
            attempt: 1,
            question: "Which database?".into(),
        },
    );
    assert_eq!(s.worker("w0").unwrap().status, WorkerStatus::Waiting);
    update(
        &mut s,
        &mut mem,
        t0(),
        Input::Output {
            worker: "w0".into(),
            attempt: 1,
        },
    );
    assert_eq!(
        s.worker("w0").unwrap().status,
        WorkerStatus::Waiting,
        "no answer yet"
    );
    let fx = update(
        &mut s,
        &mut mem,
        t0(),
        Input::AnswerWorker {
            worker: "w0".into(),
            text: "PostgreSQL".into(),
        },
    );
    assert!(fx.contains(&Effect::Paste {
        worker: "w0".into(),
        text: "PostgreSQL".into()
    }));
    update(
        &mut s,
        &mut mem,
        t0(),
        Input::Output {
            worker: "w0".into(),
            attempt: 1,
        },
    );
    let w = s.worker("w0").unwrap();
    assert_eq!(
        (w.status, w.question.as_deref()),
        (WorkerStatus::Running, None)
    );
}

#[test]
fn a_question_the_attempt_ended_without_is_kept_unanswered_for_the_report() {
    let (mut s, mut mem) = (run(2, 2), RunMemory::default());
    update(&mut s, &mut mem, t0(), Input::Start);
    for w in ["w0", "w1"] {
        launched(&mut s, &mut mem, w, 1, t0());
        let question = format!("{w}: which database?");
        update(
            &mut s,
            &mut mem,
            t0(),
            Input::Asked {
                worker: w.into(),
                attempt: 1,
                question,
            },
        );
    }
    let answer = Input::AnswerWorker {
        worker: "w1".into(),
        text: "PostgreSQL".into(),
    };
    update(&mut s, &mut mem, t0(), answer);
    let fx0 = exited(&mut s, &mut mem, "w0", 1, 0);
    let fx1 = exited(&mut s, &mut mem, "w1", 1, 0);
    let asked: Vec<(&str, &str, &str)> = s
        .clarification
        .worker_answers
        .iter()
        .map(|a| (a.worker.as_str(), a.question.as_str(), a.answer.as_str()))
        .collect();
    assert_eq!(
        asked,
        vec![
            ("w1", "w1: which database?", "PostgreSQL"),
            ("w0", "w0: which database?", super::ending::UNANSWERED),
        ]
    );
    let unanswered = |fx: &[Effect]| {
        fx.iter()
            .filter(|e| matches!(e, Effect::Event(ev) if ev.kind == EventKind::WorkerUnanswered))
            .count()
    };
    assert_eq!((unanswered(&fx0), unanswered(&fx1)), (1, 0));
}

#[test]
fn the_gate_halts_the_run_until_an_answer_clears_it() {
    let (mut s, mut mem) = (run(1, 1), RunMemory::default());
    s.clarify = true;
    assert_eq!(
        update(&mut s, &mut mem, t0(), Input::Start),
        vec![Effect::EvaluateGate]
    );
    let gate = ClarificationGate {
        requires_clarification: true,
        intent_class: "fix".into(),
        missing_slots: vec!["target".into()],
        prompt: Some("What should be fixed?".into()),
        confidence: 0.8,
    };
    let fx = update(&mut s, &mut mem, t0(), Input::Gate(gate));
    assert_eq!(s.status, RunStatus::Halted);
    assert!(s.clarification.pending);
    assert!(launches(&fx).is_empty());
    let fx = update(
        &mut s,
        &mut mem,
        t0(),
        Input::AnswerRun {
            text: "the login form".into(),
        },
    );
    assert!(fx.contains(&Effect::EvaluateGate));
    let fx = update(
        &mut s,
        &mut mem,
        t0(),
        Input::Gate(ClarificationGate::default()),
    );
    assert_eq!(s.stage, Stage::TeamExec);
    assert_eq!(launches(&fx).len(), 1);
    assert_eq!(s.clarification.answers, vec!["the login form".to_string()]);
}

pub(super) fn verdict(v: Verdict) -> CriticVerdict {
    CriticVerdict {
        critic: "tests".into(),
        verdict: v,
        confidence: 1.0,
        findings: vec!["cargo test failed: 1 test".into()],
    }
}

#[test]
fn checks_run_at_verify_then_council_then_report_then_done() {
    let (mut s, mut mem) = (run(1, 1), RunMemory::default());
    s.checks = vec![CheckSpec {
        id: "tests".into(),
        command: vec!["cargo".into(), "test".into()],
        cwd: None,
        timeout_s: None,
    }];
    update(&mut s, &mut mem, t0(), Input::Start);
    launched(&mut s, &mut mem, "w0", 1, t0());
    let fx = exited(&mut s, &mut mem, "w0", 1, 0);
    assert_eq!(s.stage, Stage::TeamVerify);
    assert_eq!(launches(&fx), vec![("check-tests".into(), 1)]);
    launched(&mut s, &mut mem, "check-tests", 1, t0());
    let fx = exited(&mut s, &mut mem, "check-tests", 1, 0);
    assert!(fx.contains(&Effect::RunCouncil));
    let fx = update(
        &mut s,
        &mut mem,
        t0(),
        Input::CouncilReady(vec![verdict(Verdict::Pass)]),
    );
    assert_eq!(s.council.status, CouncilStatus::Ok);
    assert!(fx.contains(&Effect::WriteReport));
    let fx = update(
        &mut s,
        &mut mem,
        t0(),
        Input::ReportWritten {
            path: "/p/report.md".into(),
            bytes: 120,
        },
    );
    assert_eq!((s.status, s.stage), (RunStatus::Done, Stage::Done));
    assert!(fx.contains(&Effect::Finished));
}

#[test]
fn a_blocked_council_sends_findings_to_a_fixer_then_verifies_again() {
    let (mut s, mut mem) = (run(1, 1), RunMemory::default());
    s.checks = vec![CheckSpec {
        id: "tests".into(),
        command: vec!["cargo".into(), "test".into()],
        cwd: None,
        timeout_s: None,
    }];
    update(&mut s, &mut mem, t0(), Input::Start);
    launched(&mut s, &mut mem, "w0", 1, t0());
    exited(&mut s, &mut mem, "w0", 1, 0);
    launched(&mut s, &mut mem, "check-tests", 1, t0());
    exited(&mut s, &mut mem, "check-tests", 1, 101);
    let fx = update(
        &mut s,
        &mut mem,
        t0(),
        Input::CouncilReady(vec![verdict(Verdict::Fail)]),
    );
    assert_eq!((s.stage, s.fix_round), (Stage::TeamFix, 1));
    assert_eq!(launches(&fx), vec![("fixer-r1".into(), 1)]);
    assert!(s
        .worker("fixer-r1")
        .unwrap()
        .task
        .contains("cargo test failed"));
    launched(&mut s, &mut mem, "fixer-r1", 1, t0());
    let fx = exited(&mut s, &mut mem, "fixer-r1", 1, 0);
    assert_eq!(s.stage, Stage::TeamVerify);
    assert_eq!(launches(&fx), vec![("check-tests-r1".into(), 1)]);
    launched(&mut s, &mut mem, "check-tests-r1", 1, t0());
    let fx = exited(&mut s, &mut mem, "check-tests-r1", 1, 0);
    assert!(fx.contains(&Effect::RunCouncil));
    let fx = update(
        &mut s,
        &mut mem,
        t0(),
        Input::CouncilReady(vec![verdict(Verdict::Pass)]),
    );
    assert!(
        fx.contains(&Effect::WriteReport),
        "no second fix round: {fx:?}"
    );
}

/// Attempt 1 of `w` exited `code` with what its output said (`said`).
pub(super) fn exited_saying(
    s: &mut RunState,
    mem: &mut RunMemory,
    w: &str,
    code: i32,
    said: Option<ExitSaid>,
) -> Vec<Effect> {
    update(
        s,
        mem,
        t0(),
        Input::Exited {
            worker: w.into(),
            attempt: 1,
            code,
            source: ExitSource::ExitFile,
            missing_artifacts: vec![],
            result: None,
            said,
            ended_at: None,
            question: None,
        },
    )
}
