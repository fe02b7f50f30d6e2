//! The integration step of the engine: pure inputs and effects.

use std::path::PathBuf;

use chrono::{TimeZone, Utc};

use super::integrate::IntegrationOutcome;
use super::stages::blank_worker;
use super::*;
use crate::domain::*;

pub(super) fn now() -> chrono::DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 1, 12, 0, 0).unwrap()
}

/// Two command workers in worktrees, one check, optionally a `[fixer]`.
pub(super) fn run(fixer: bool) -> RunState {
    let workers = ["a", "b"]
        .iter()
        .map(|id| {
            let mut w = blank_worker(
                id.to_string(),
                "backend-engineer".into(),
                "command".into(),
                WorkerKind::Worker,
                Stage::TeamExec,
                0,
            );
            w.max_attempts = 1;
            w
        })
        .collect();
    let ws = RunWorkspace {
        repo: "/p".into(),
        prefix: PathBuf::new(),
        base: "abc".into(),
        base_ref: "HEAD".into(),
        user_branch: Some("main".into()),
        uncommitted: false,
        root: "/p/.crewmux/worktrees/r1".into(),
        copy: vec![],
        setup: None,
        workers: Default::default(),
        pending: vec![],
        integration: None,
        integrated_round: None,
    };
    RunState {
        schema_version: SCHEMA_VERSION,
        run_id: "r1".into(),
        problem: "p".into(),
        team: "t".into(),
        project_dir: "/p".into(),
        run_dir: "/p/.crewmux/runs/r1".into(),
        stage: Stage::TeamPlan,
        status: RunStatus::Running,
        reason: None,
        backend: BackendKind::Process,
        tmux_socket: "t".into(),
        session: "s".into(),
        parallel: 4,
        host_slots: Default::default(),
        fix_round: 0,
        max_fix_rounds: 1,
        workers,
        dispatches: vec![],
        council: Council::default(),
        council_history: vec![],
        workspace: Some(ws),
        routing: Default::default(),
        hosts_not_answering: Default::default(),
        inbox_read: None,
        inputs: Default::default(),
        budget: None,
        clarification: ClarificationState::default(),
        clarify: false,
        checks: vec![CheckSpec {
            id: "test".into(),
            command: vec!["true".into()],
            cwd: None,
            timeout_s: None,
        }],
        critics: vec![],
        fixer: fixer.then(|| AgentSpec {
            provider: Some("command".into()),
            command: Some(vec!["resolve".into()]),
            ..Default::default()
        }),
        sandbox: Default::default(),
        report: None,
        races: Default::default(),
        created_at: now(),
        updated_at: now(),
    }
}

pub(super) fn finish(s: &mut RunState, mem: &mut RunMemory, w: &str) -> Vec<Effect> {
    let attempt = s.worker(w).unwrap().attempt;
    update(
        s,
        mem,
        now(),
        Input::Launched {
            worker: w.into(),
            attempt,
            nonce: "n".into(),
            prompt_path: PathBuf::from(format!("/p/{w}/prompt.md")),
            backend: "process".into(),
            pane_id: None,
            pid: Some(1),
            credential_label: None,
        },
    );
    update(
        s,
        mem,
        now(),
        Input::Exited {
            worker: w.into(),
            attempt,
            code: 0,
            source: ExitSource::ExitFile,
            missing_artifacts: vec![],
            result: None,
            said: None,
            ended_at: None,
            question: None,
        },
    )
}

fn conflict() -> IntegrationOutcome {
    IntegrationOutcome::Conflict {
        conflict: MergeConflict {
            files: vec!["src/lib.rs".into()],
            ours: "a".into(),
            theirs: "b".into(),
        },
        task: "resolve src/lib.rs".into(),
    }
}

#[test]
fn integration_comes_between_the_work_and_the_checks_and_is_asked_once() {
    let (mut s, mut mem) = (run(false), RunMemory::default());
    update(&mut s, &mut mem, now(), Input::Start);
    assert!(finish(&mut s, &mut mem, "a")
        .iter()
        .all(|e| *e != Effect::Integrate));
    let fx = finish(&mut s, &mut mem, "b");
    assert_eq!(fx.iter().filter(|e| **e == Effect::Integrate).count(), 1);
    assert_eq!(s.stage, Stage::TeamExec, "no verify before the merge");
    let fx = update(&mut s, &mut mem, now(), Input::Tick);
    assert!(!fx.contains(&Effect::Integrate), "asked once");
    update(
        &mut s,
        &mut mem,
        now(),
        Input::Integrated(IntegrationOutcome::Clean),
    );
    assert_eq!(s.stage, Stage::TeamVerify);
    assert!(s.worker("check-test").is_some());
}

#[test]
fn a_conflict_brings_in_a_merge_fixer_and_integration_runs_again_after_it() {
    let (mut s, mut mem) = (run(true), RunMemory::default());
    update(&mut s, &mut mem, now(), Input::Start);
    finish(&mut s, &mut mem, "a");
    finish(&mut s, &mut mem, "b");
    let fx = update(&mut s, &mut mem, now(), Input::Integrated(conflict()));
    let fixer = s.worker("merge-fixer-b").expect("a merge-fixer");
    assert_eq!(
        (fixer.kind, fixer.role.as_str()),
        (WorkerKind::Fixer, "fixer")
    );
    assert_eq!(fixer.task, "resolve src/lib.rs");
    assert!(fx.contains(&Effect::Launch {
        worker: "merge-fixer-b".into(),
        attempt: 1
    }));
    let fx = finish(&mut s, &mut mem, "merge-fixer-b");
    assert!(fx.contains(&Effect::Integrate));
    update(
        &mut s,
        &mut mem,
        now(),
        Input::Integrated(IntegrationOutcome::Clean),
    );
    assert_eq!(s.stage, Stage::TeamVerify);
}

#[test]
fn a_conflict_without_an_agent_blocks_the_council_with_the_finding() {
    let (mut s, mut mem) = (run(false), RunMemory::default());
    update(&mut s, &mut mem, now(), Input::Start);
    finish(&mut s, &mut mem, "a");
    finish(&mut s, &mut mem, "b");
    let fx = update(&mut s, &mut mem, now(), Input::Integrated(conflict()));
    assert_eq!(s.council.status, CouncilStatus::Blocked);
    assert_eq!(
        s.council.verdicts[0].findings,
        vec!["merge conflict in src/lib.rs between a and b".to_string()]
    );
    assert!(fx.contains(&Effect::WriteReport));
    assert!(s.worker("merge-fixer-b").is_none());
    assert!(!update(&mut s, &mut mem, now(), Input::Tick).contains(&Effect::Integrate));
}

#[test]
fn a_conflict_the_merge_fixer_left_blocks() {
    let (mut s, mut mem) = (run(true), RunMemory::default());
    update(&mut s, &mut mem, now(), Input::Start);
    finish(&mut s, &mut mem, "a");
    finish(&mut s, &mut mem, "b");
    update(&mut s, &mut mem, now(), Input::Integrated(conflict()));
    finish(&mut s, &mut mem, "merge-fixer-b");
    update(&mut s, &mut mem, now(), Input::Integrated(conflict()));
    assert_eq!(s.council.status, CouncilStatus::Blocked);
    assert!(s.council.verdicts[0].findings[0].contains("left it unresolved"));
}

#[test]
fn a_failed_setup_fails_the_attempt_with_its_exit_code() {
    let (mut s, mut mem) = (run(false), RunMemory::default());
    update(&mut s, &mut mem, now(), Input::Start);
    update(
        &mut s,
        &mut mem,
        now(),
        Input::SetupFailed {
            worker: "a".into(),
            attempt: 1,
            code: 3,
        },
    );
    let a = s.worker("a").unwrap();
    assert_eq!(a.status, WorkerStatus::Failed);
    assert_eq!(a.reason.as_deref(), Some("setup failed (exit 3)"));
}

/// A conflict the pass left out (no agent to fix it) keeps only that worker's work away:
/// the check judges what was merged and the run waits for it; its verdict and the
/// integration's are both in the council, which blocks, and the run ends `done`, not
/// `failed` with the check still starting.
#[test]
fn a_conflict_left_out_still_lets_the_checks_judge_and_end_with_their_verdicts() {
    let (mut s, mut mem) = (run(false), RunMemory::default());
    s.max_fix_rounds = 1;
    update(&mut s, &mut mem, now(), Input::Start);
    finish(&mut s, &mut mem, "a");
    finish(&mut s, &mut mem, "b");
    s.workspace.as_mut().unwrap().integration = Some(Integration {
        path: "/p/.crewmux/worktrees/r1/integration".into(),
        branch: "crewmux/r1/integration".into(),
        merged: vec!["a".into()],
        conflict: None,
        left_out: vec![MergeConflict {
            files: vec!["src/lib.rs".into()],
            ours: "a".into(),
            theirs: "b".into(),
        }],
        diff: None,
        tips: Default::default(),
    });
    let fx = update(
        &mut s,
        &mut mem,
        now(),
        Input::Integrated(IntegrationOutcome::Clean),
    );
    assert!(!fx.contains(&Effect::WriteReport), "{fx:?}");
    assert_eq!(s.stage, Stage::TeamVerify);
    assert!(fx.contains(&Effect::Launch {
        worker: "check-test".into(),
        attempt: 1
    }));
    let fx = finish(&mut s, &mut mem, "check-test");
    assert!(fx.contains(&Effect::RunCouncil), "{fx:?}");
    let fx = update(
        &mut s,
        &mut mem,
        now(),
        Input::CouncilReady(vec![CriticVerdict {
            critic: "check-test".into(),
            verdict: Verdict::Pass,
            confidence: 1.0,
            findings: vec!["exit 0".into()],
        }]),
    );
    assert_eq!(s.council.status, CouncilStatus::Blocked);
    let critics: Vec<&str> = s
        .council
        .verdicts
        .iter()
        .map(|v| v.critic.as_str())
        .collect();
    assert_eq!(critics, ["integration", "check-test"]);
    assert_eq!(
        s.council.verdicts[0].findings,
        ["merge conflict in src/lib.rs between a and b (no agent to fix it: add a [fixer] table); b left out"]
    );
    assert!(s.worker("fixer-r1").is_none(), "no fix round can merge it");
    assert!(fx.contains(&Effect::WriteReport), "{fx:?}");
    update(
        &mut s,
        &mut mem,
        now(),
        Input::ReportWritten {
            path: "/p/report.md".into(),
            bytes: 10,
        },
    );
    assert_eq!((s.status, s.reason.as_deref()), (RunStatus::Done, None));
    assert_eq!(
        s.worker("check-test").unwrap().status,
        WorkerStatus::Completed
    );
}

/// A round blocked for good by its integration (git failed) while a check of the round
/// waits to judge again: the check is skipped with the finding, and the report follows, so
/// no judge is left pending or starting when the run ends.
#[test]
fn a_round_blocked_by_integration_skips_its_waiting_judges_before_the_report() {
    let (mut s, mut mem) = (run(false), RunMemory::default());
    update(&mut s, &mut mem, now(), Input::Start);
    finish(&mut s, &mut mem, "a");
    finish(&mut s, &mut mem, "b");
    let mut check = blank_worker(
        "check-test".into(),
        "check".into(),
        "command".into(),
        WorkerKind::Check,
        Stage::TeamVerify,
        0,
    );
    check.attempt = 1;
    s.workers.push(check);
    let fx = update(
        &mut s,
        &mut mem,
        now(),
        Input::Integrated(IntegrationOutcome::Failed("git merge crashed".into())),
    );
    let check = s.worker("check-test").unwrap();
    assert_eq!(check.status, WorkerStatus::Skipped);
    assert_eq!(
        check.reason.as_deref(),
        Some("integration blocked: integration failed: git merge crashed")
    );
    assert_eq!(fx.iter().filter(|e| **e == Effect::WriteReport).count(), 1);
    update(
        &mut s,
        &mut mem,
        now(),
        Input::ReportWritten {
            path: "/p/report.md".into(),
            bytes: 10,
        },
    );
    assert_eq!(s.status, RunStatus::Done, "{:?}", s.reason);
}
