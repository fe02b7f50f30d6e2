//! Engine rules for steering: add a worker, retry (as it was or with an edited task), send
//! text; a finished run reopened; added workers kept across a stop.

use super::steer::{check, Steer};
use super::tests::{exited, launched, launches, run, t0, verdict};
use super::*;
use crate::domain::*;

fn add(id: &str) -> Input {
    Input::Steer(Steer::AddWorker {
        id: id.into(),
        role: "backend-engineer".into(),
        provider: "sim".into(),
        task: "Write the rate limiter's tests".into(),
        command: None,
    })
}

fn retry(id: &str, task: Option<&str>) -> Input {
    Input::Steer(Steer::Retry {
        worker: id.into(),
        task: task.map(str::to_string),
    })
}

/// A request the engine refused: its only effect is the `request-refused` event saying why.
fn only_refused(fx: &[Effect]) -> bool {
    !fx.is_empty()
        && fx
            .iter()
            .all(|e| matches!(e, Effect::Event(e) if e.kind == EventKind::RequestRefused))
}

fn kinds(fx: &[Effect]) -> Vec<String> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::Event(e) => Some(e.kind.to_string()),
            _ => None,
        })
        .collect()
}

/// A one-worker run taken to `done` through verify, council and report.
fn finished_run() -> (RunState, RunMemory) {
    let (mut s, mut mem) = (run(1, 2), RunMemory::default());
    update(&mut s, &mut mem, t0(), Input::Start);
    launched(&mut s, &mut mem, "w0", 1, t0());
    exited(&mut s, &mut mem, "w0", 1, 0);
    update(
        &mut s,
        &mut mem,
        t0(),
        Input::CouncilReady(vec![verdict(Verdict::Pass)]),
    );
    update(
        &mut s,
        &mut mem,
        t0(),
        Input::ReportWritten {
            path: "/p/report.md".into(),
            bytes: 10,
        },
    );
    assert_eq!(s.status, RunStatus::Done);
    (s, mem)
}

#[test]
fn an_added_worker_launches_in_the_running_stage_with_the_teams_limits() {
    let (mut s, mut mem) = (run(1, 2), RunMemory::default());
    s.workers[0].timeout_s = Some(900);
    update(&mut s, &mut mem, t0(), Input::Start);
    let fx = update(&mut s, &mut mem, t0(), add("tests"));
    assert_eq!(launches(&fx), vec![("tests".into(), 1)]);
    assert_eq!(kinds(&fx)[0], "worker-added");
    let w = s.worker("tests").unwrap();
    assert_eq!(
        (w.stage, w.kind, w.timeout_s, w.task.as_str()),
        (
            Stage::TeamExec,
            WorkerKind::Worker,
            Some(900),
            "Write the rate limiter's tests"
        )
    );
}

#[test]
fn an_added_worker_waits_for_a_slot_within_parallel() {
    let (mut s, mut mem) = (run(1, 1), RunMemory::default());
    update(&mut s, &mut mem, t0(), Input::Start);
    let fx = update(&mut s, &mut mem, t0(), add("tests"));
    assert!(launches(&fx).is_empty());
    launched(&mut s, &mut mem, "w0", 1, t0());
    let fx = exited(&mut s, &mut mem, "w0", 1, 0);
    assert_eq!(launches(&fx), vec![("tests".into(), 1)]);
    assert_eq!(
        s.stage,
        Stage::TeamExec,
        "verify waits for the added worker"
    );
}

#[test]
fn bad_additions_are_refused_with_the_reason_and_change_nothing() {
    let (mut s, mut mem) = (run(1, 1), RunMemory::default());
    update(&mut s, &mut mem, t0(), Input::Start);
    let before = s.clone();
    for (id, why) in [("w0", "exists already"), ("Bad_Id", "lowercase")] {
        let steer = Steer::AddWorker {
            id: id.into(),
            role: "r".into(),
            provider: "sim".into(),
            task: "t".into(),
            command: None,
        };
        assert!(check(&s, &steer).unwrap_err().contains(why), "{id}");
        assert!(only_refused(&update(
            &mut s,
            &mut mem,
            t0(),
            Input::Steer(steer)
        )));
    }
    let no_task = Steer::AddWorker {
        id: "x".into(),
        role: "r".into(),
        provider: "sim".into(),
        task: " \n".into(),
        command: None,
    };
    assert!(check(&s, &no_task).unwrap_err().contains("needs a task"));
    let no_command = Steer::AddWorker {
        id: "x".into(),
        role: "r".into(),
        provider: "command".into(),
        task: String::new(),
        command: Some(vec![]),
    };
    assert!(check(&s, &no_command).unwrap_err().contains("give it one"));
    let agent_with_command = Steer::AddWorker {
        id: "x".into(),
        role: "r".into(),
        provider: "sim".into(),
        task: "t".into(),
        command: Some(vec!["true".into()]),
    };
    assert!(check(&s, &agent_with_command)
        .unwrap_err()
        .contains("is for provider `command`"));
    assert_eq!(s, before);
}

#[test]
fn an_added_worker_is_saved_and_launched_when_the_run_is_continued() {
    let (mut s, mut mem) = (run(1, 1), RunMemory::default());
    update(&mut s, &mut mem, t0(), Input::Start);
    launched(&mut s, &mut mem, "w0", 1, t0());
    update(&mut s, &mut mem, t0(), add("tests"));
    // Stopped here (quit or killed): the state as saved, read by the next driver.
    let json = serde_json::to_string(&s).unwrap();
    let mut s: RunState = serde_json::from_str(&json).unwrap();
    s.status = RunStatus::Detached;
    let mut mem = RunMemory::default();
    update(&mut s, &mut mem, t0(), Input::Start);
    let fx = exited(&mut s, &mut mem, "w0", 1, 0);
    assert_eq!(launches(&fx), vec![("tests".into(), 1)]);
}

#[test]
fn an_offline_addition_is_recorded_and_launched_by_the_next_driver() {
    let (mut s, _) = (run(1, 1), RunMemory::default());
    update(&mut s, &mut RunMemory::default(), t0(), Input::Start);
    s.status = RunStatus::Detached;
    let mut offline = RunMemory {
        offline: true,
        ..RunMemory::default()
    };
    let fx = update(&mut s, &mut offline, t0(), add("tests"));
    assert!(launches(&fx).is_empty(), "nothing launches offline");
    assert!(s.worker("tests").is_some());
}

#[test]
fn a_worktree_run_makes_the_added_workers_worktree_at_its_launch() {
    let (mut s, mut mem) = (run(1, 2), RunMemory::default());
    s.workspace = Some(RunWorkspace {
        repo: "/p".into(),
        prefix: "".into(),
        base: "abc".into(),
        base_ref: "HEAD".into(),
        user_branch: None,
        uncommitted: false,
        root: "/p/.crewmux/worktrees/r1".into(),
        copy: vec![],
        setup: None,
        workers: Default::default(),
        pending: vec![],
        integration: None,
        integrated_round: None,
    });
    update(&mut s, &mut mem, t0(), add("tests"));
    assert_eq!(s.workspace.unwrap().pending, vec!["tests".to_string()]);
}

#[test]
fn retry_starts_a_new_attempt_of_a_failed_worker() {
    let (mut s, mut mem) = (run(2, 2), RunMemory::default());
    s.workers[0].max_attempts = 1;
    update(&mut s, &mut mem, t0(), Input::Start);
    launched(&mut s, &mut mem, "w0", 1, t0());
    launched(&mut s, &mut mem, "w1", 1, t0());
    exited(&mut s, &mut mem, "w0", 1, 3);
    assert_eq!(s.worker("w0").unwrap().status, WorkerStatus::Failed);
    let fx = update(&mut s, &mut mem, t0(), retry("w0", None));
    assert_eq!(launches(&fx), vec![("w0".into(), 2)]);
    assert!(kinds(&fx).contains(&"worker-retried".to_string()));
    let w = s.worker("w0").unwrap();
    assert_eq!(
        (w.attempt, w.max_attempts),
        (2, 2),
        "attempt 2 of 2, not 2 of 1"
    );
}

#[test]
fn retry_with_an_edited_task_gives_the_new_attempt_the_new_task() {
    let (mut s, mut mem) = (run(2, 2), RunMemory::default());
    update(&mut s, &mut mem, t0(), Input::Start);
    launched(&mut s, &mut mem, "w0", 1, t0());
    exited(&mut s, &mut mem, "w0", 1, 0);
    let fx = update(
        &mut s,
        &mut mem,
        t0(),
        retry("w0", Some("Use a token bucket")),
    );
    assert_eq!(launches(&fx), vec![("w0".into(), 2)]);
    assert_eq!(s.worker("w0").unwrap().task, "Use a token bucket");
}

#[test]
fn retry_is_refused_for_live_pending_and_council_workers() {
    let (mut s, mut mem) = (run(2, 1), RunMemory::default());
    update(&mut s, &mut mem, t0(), Input::Start);
    launched(&mut s, &mut mem, "w0", 1, t0());
    let live = check(
        &s,
        &Steer::Retry {
            worker: "w0".into(),
            task: None,
        },
    );
    assert!(live.unwrap_err().contains("cancel it first"));
    let pending = check(
        &s,
        &Steer::Retry {
            worker: "w1".into(),
            task: None,
        },
    );
    assert!(pending.unwrap_err().contains("has not started"));
    let ghost = check(
        &s,
        &Steer::Retry {
            worker: "ghost".into(),
            task: None,
        },
    );
    assert!(ghost.unwrap_err().contains("no worker `ghost`"));
    let fx = update(&mut s, &mut mem, t0(), retry("w0", None));
    assert!(
        only_refused(&fx),
        "a refused retry does nothing but say so: {fx:?}"
    );
}

#[test]
fn retrying_in_a_finished_run_reopens_it_and_the_council_judges_again() {
    let (mut s, mut mem) = finished_run();
    let fx = update(&mut s, &mut mem, t0(), retry("w0", None));
    assert_eq!(s.status, RunStatus::Running);
    assert_eq!(s.stage, Stage::TeamExec);
    assert_eq!(s.report, None);
    assert_eq!(s.council.round, None, "the old council is forgotten");
    assert!(kinds(&fx).contains(&"run-reopened".to_string()), "{fx:?}");
    assert_eq!(launches(&fx), vec![("w0".into(), 2)]);
    launched(&mut s, &mut mem, "w0", 2, t0());
    let fx = exited(&mut s, &mut mem, "w0", 2, 0);
    assert!(fx.contains(&Effect::RunCouncil), "{fx:?}");
    let fx = update(
        &mut s,
        &mut mem,
        t0(),
        Input::CouncilReady(vec![verdict(Verdict::Pass)]),
    );
    assert!(
        fx.contains(&Effect::WriteReport),
        "the report is written again: {fx:?}"
    );
}

#[test]
fn a_worker_added_to_a_finished_run_reopens_it() {
    let (mut s, mut mem) = finished_run();
    let fx = update(&mut s, &mut mem, t0(), add("tests"));
    assert_eq!((s.status, s.stage), (RunStatus::Running, Stage::TeamExec));
    assert_eq!(launches(&fx), vec![("tests".into(), 1)]);
}

#[test]
fn checks_of_the_round_judge_again_after_a_retry() {
    let (mut s, mut mem) = (run(1, 2), RunMemory::default());
    s.checks = vec![CheckSpec {
        id: "test".into(),
        command: vec!["true".into()],
        cwd: None,
        timeout_s: None,
    }];
    update(&mut s, &mut mem, t0(), Input::Start);
    launched(&mut s, &mut mem, "w0", 1, t0());
    let fx = exited(&mut s, &mut mem, "w0", 1, 0);
    assert_eq!(launches(&fx), vec![("check-test".into(), 1)]);
    launched(&mut s, &mut mem, "check-test", 1, t0());
    exited(&mut s, &mut mem, "check-test", 1, 0);
    update(&mut s, &mut mem, t0(), retry("w0", None));
    assert_eq!(
        s.worker("check-test").unwrap().status,
        WorkerStatus::Pending
    );
    launched(&mut s, &mut mem, "w0", 2, t0());
    let fx = exited(&mut s, &mut mem, "w0", 2, 0);
    assert_eq!(launches(&fx), vec![("check-test".into(), 2)]);
}

#[test]
fn a_check_still_running_when_the_run_reopens_is_stopped_and_judges_again() {
    let (mut s, mut mem) = (run(1, 2), RunMemory::default());
    s.checks = vec![CheckSpec {
        id: "test".into(),
        command: vec!["true".into()],
        cwd: None,
        timeout_s: None,
    }];
    update(&mut s, &mut mem, t0(), Input::Start);
    launched(&mut s, &mut mem, "w0", 1, t0());
    exited(&mut s, &mut mem, "w0", 1, 0);
    launched(&mut s, &mut mem, "check-test", 1, t0());
    assert_eq!(
        s.worker("check-test").unwrap().status,
        WorkerStatus::Running
    );

    // A worker is added while the check judges w0's work: the check is stopped.
    let fx = update(&mut s, &mut mem, t0(), add("tests"));
    let kills: Vec<(&str, u32, KillReason)> = fx
        .iter()
        .filter_map(|e| match e {
            Effect::Kill {
                worker,
                attempt,
                reason,
            } => Some((worker.as_str(), *attempt, *reason)),
            _ => None,
        })
        .collect();
    assert_eq!(kills, vec![("check-test", 1, KillReason::Rejudge)]);
    assert_eq!(launches(&fx), vec![("tests".into(), 1)]);

    // Its end (SIGTERM) is not a verdict: it waits to judge the new work, and is launched
    // as a new attempt once the added worker is done.
    let fx = exited(&mut s, &mut mem, "check-test", 1, 143);
    assert!(launches(&fx).is_empty(), "{fx:?}");
    let check = s.worker("check-test").unwrap();
    assert_eq!(check.status, WorkerStatus::Pending);
    assert!(check.max_attempts >= 2);
    assert!(kinds(&fx).contains(&"worker-retried".to_string()), "{fx:?}");
    launched(&mut s, &mut mem, "tests", 1, t0());
    let fx = exited(&mut s, &mut mem, "tests", 1, 0);
    assert_eq!(launches(&fx), vec![("check-test".into(), 2)]);
}

#[test]
fn a_downstream_worker_waits_again_for_a_retried_upstream() {
    let (mut s, mut mem) = (run(2, 2), RunMemory::default());
    s.workers[1].flow.after = vec!["w0".into()];
    update(&mut s, &mut mem, t0(), Input::Start);
    launched(&mut s, &mut mem, "w0", 1, t0());
    exited(&mut s, &mut mem, "w0", 1, 0);
    launched(&mut s, &mut mem, "w1", 1, t0());
    exited(&mut s, &mut mem, "w1", 1, 0);
    let fx = update(&mut s, &mut mem, t0(), retry("w0", None));
    assert_eq!(launches(&fx), vec![("w0".into(), 2)]);
    assert_eq!(s.worker("w1").unwrap().status, WorkerStatus::Pending);
    launched(&mut s, &mut mem, "w0", 2, t0());
    let fx = exited(&mut s, &mut mem, "w0", 2, 0);
    assert_eq!(launches(&fx), vec![("w1".into(), 2)]);
}

#[test]
fn sent_text_is_pasted_into_a_running_worker_that_asked_nothing() {
    let (mut s, mut mem) = (run(1, 1), RunMemory::default());
    update(&mut s, &mut mem, t0(), Input::Start);
    launched(&mut s, &mut mem, "w0", 1, t0());
    let steer = Steer::SendText {
        worker: "w0".into(),
        text: "also cover the admin API".into(),
    };
    let fx = update(&mut s, &mut mem, t0(), Input::Steer(steer));
    assert!(fx.contains(&Effect::Paste {
        worker: "w0".into(),
        text: "also cover the admin API".into()
    }));
    assert_eq!(kinds(&fx), vec!["text-sent".to_string()]);
    assert_eq!(s.worker("w0").unwrap().status, WorkerStatus::Running);
}

#[test]
fn sent_text_to_a_waiting_worker_is_its_answer() {
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
            question: "Which store?".into(),
        },
    );
    let steer = Steer::SendText {
        worker: "w0".into(),
        text: "redis".into(),
    };
    let fx = update(&mut s, &mut mem, t0(), Input::Steer(steer));
    assert_eq!(kinds(&fx), vec!["worker-answered".to_string()]);
    assert_eq!(s.clarification.worker_answers.len(), 1);
}

#[test]
fn text_to_a_worker_that_is_not_running_is_refused() {
    let (mut s, mut mem) = (run(2, 1), RunMemory::default());
    update(&mut s, &mut mem, t0(), Input::Start);
    let steer = Steer::SendText {
        worker: "w1".into(),
        text: "hi".into(),
    };
    assert!(check(&s, &steer)
        .unwrap_err()
        .contains("only to a started worker"));
    assert!(only_refused(&update(
        &mut s,
        &mut mem,
        t0(),
        Input::Steer(steer)
    )));
}

#[test]
fn steering_requests_read_back_from_the_inbox_format() {
    let s = Steer::Retry {
        worker: "w0".into(),
        task: Some("new".into()),
    };
    let json = serde_json::to_string(&s).unwrap();
    assert_eq!(json, r#"{"steer":"retry","worker":"w0","task":"new"}"#);
    assert_eq!(serde_json::from_str::<Steer>(&json).unwrap(), s);
}

#[test]
fn an_added_command_worker_runs_its_argv_and_is_told_to_when_given_no_task() {
    let (mut s, mut mem) = (run(1, 2), RunMemory::default());
    let fx = update(
        &mut s,
        &mut mem,
        t0(),
        Input::Steer(Steer::AddWorker {
            id: "tests".into(),
            role: "backend-engineer".into(),
            provider: "command".into(),
            task: String::new(),
            command: Some(vec!["pytest".into(), "-q".into(), "a b.py".into()]),
        }),
    );
    let w = s.worker("tests").unwrap();
    assert_eq!(w.provider, "command");
    assert_eq!(
        w.command.as_deref(),
        Some(&["pytest".to_string(), "-q".into(), "a b.py".into()][..])
    );
    assert_eq!(w.task, "Run `pytest -q 'a b.py'`.");
    assert!(
        fx.iter().any(|e| matches!(e, Effect::Event(e)
            if e.message == "backend-engineer running pytest -q 'a b.py'")),
        "{fx:?}"
    );
}

#[test]
fn two_adds_with_no_id_sent_at_once_are_two_workers() {
    let (mut s, mut mem) = (run(1, 2), RunMemory::default());
    let add = || {
        Input::Steer(Steer::AddWorker {
            id: String::new(),
            role: "backend-engineer".into(),
            provider: "sim".into(),
            task: "Write the tests".into(),
            command: None,
        })
    };
    // Both were checked against the same state when they were sent.
    update(&mut s, &mut mem, t0(), add());
    update(&mut s, &mut mem, t0(), add());
    assert!(s.worker("added-1").is_some() && s.worker("added-2").is_some());
    // An id taken in between is refused with a word, not dropped.
    let taken = Input::Steer(Steer::AddWorker {
        id: "added-1".into(),
        role: "backend-engineer".into(),
        provider: "sim".into(),
        task: "again".into(),
        command: None,
    });
    let fx = update(&mut s, &mut mem, t0(), taken);
    assert!(only_refused(&fx), "{fx:?}");
    assert!(kinds(&fx)[0] == "request-refused");
}
