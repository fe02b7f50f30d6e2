//! A question in a result: an attempt that exits 0 with a result ending in a question
//! makes its worker wait; the answer, a message sent after the end, the timeout and a
//! cancel.

use std::path::PathBuf;

use chrono::Duration;

use super::steer::{check, Steer};
use super::tests::{launched, launches, run, t0};
use super::{update, Effect, Input, RunMemory};
use crate::domain::{ExitSource, RunState, RunStatus, Stage, WorkerKind, WorkerStatus};

const Q: &str = "Should I also backfill the old rows?";

fn exit_asking(attempt: u32, question: Option<&str>) -> Input {
    Input::Exited {
        worker: "w0".into(),
        attempt,
        code: 0,
        source: ExitSource::ExitFile,
        missing_artifacts: vec![],
        result: Some(PathBuf::from("/r.md")),
        said: None,
        ended_at: None,
        question: question.map(String::from),
    }
}

/// A run of one agent worker (`provider`) whose first attempt runs.
fn started(provider: &str) -> (RunState, RunMemory) {
    let (mut s, mut mem) = (run(1, 1), RunMemory::default());
    let w = s.worker_mut("w0").unwrap();
    w.provider = provider.into();
    w.flow.question_timeout_s = Some(600);
    w.idle_timeout_s = Some(30);
    update(&mut s, &mut mem, t0(), Input::Start);
    launched(&mut s, &mut mem, "w0", 1, t0());
    (s, mem)
}

fn answer(s: &mut RunState, mem: &mut RunMemory, text: &str) -> Vec<Effect> {
    let input = Input::AnswerWorker {
        worker: "w0".into(),
        text: text.into(),
    };
    update(s, mem, t0() + Duration::seconds(5), input)
}

#[test]
fn a_result_that_ends_with_a_question_makes_the_worker_wait_and_the_answer_starts_its_next_attempt()
{
    let (mut s, mut mem) = started("claude");
    update(&mut s, &mut mem, t0(), exit_asking(1, Some(Q)));
    let w = s.worker("w0").unwrap();
    assert_eq!(w.status, WorkerStatus::Waiting);
    assert_eq!(w.question.as_deref(), Some(Q));
    let p = w.pending.clone().unwrap();
    assert!(p.from_result && p.tool_call.is_none());
    assert_eq!(p.deadline, Some(t0() + Duration::seconds(600)));
    // The attempt itself completed, its result kept; the run does not go on to verify.
    assert_eq!(s.dispatches[0].status, WorkerStatus::Completed);
    assert_eq!(w.result, Some(PathBuf::from("/r.md")));
    assert_eq!(s.stage, Stage::TeamExec);
    // Waiting on its result, no idle clock runs (no process to kill), and what is seen
    // of the ended attempt again (a lead that took over finds its exit) changes nothing.
    let later = t0() + Duration::seconds(100);
    let fx = update(&mut s, &mut mem, later, Input::Tick);
    assert!(
        !fx.iter().any(|e| matches!(e, Effect::Kill { .. })),
        "{fx:?}"
    );
    update(&mut s, &mut mem, later, exit_asking(1, Some(Q)));
    update(
        &mut s,
        &mut mem,
        later,
        Input::Output {
            worker: "w0".into(),
            attempt: 1,
        },
    );
    assert!(s.worker("w0").unwrap().waits_on_its_result());

    let fx = answer(&mut s, &mut mem, "yes, all of them");
    assert_eq!(launches(&fx), [("w0".to_string(), 2)]);
    assert!(
        !fx.iter().any(|e| matches!(e, Effect::Paste { .. })),
        "nothing to paste into"
    );
    let w = s.worker("w0").unwrap();
    assert_eq!(w.attempt, 2);
    assert!(w.question.is_none() && w.pending.is_none());
    assert!(
        w.reason
            .as_deref()
            .unwrap()
            .starts_with(crate::domain::clarification::GOES_ON_WITH),
        "{:?}",
        w.reason
    );
    let a = s.clarification.worker_answers.last().unwrap();
    assert_eq!(
        (a.question.as_str(), a.answer.as_str()),
        (Q, "yes, all of them")
    );
}

#[test]
fn an_unanswered_result_question_lets_the_result_stand_and_the_run_goes_on() {
    let (mut s, mut mem) = started("claude");
    update(&mut s, &mut mem, t0(), exit_asking(1, Some(Q)));
    let fx = update(&mut s, &mut mem, t0() + Duration::seconds(601), Input::Tick);
    let w = s.worker("w0").unwrap();
    assert_eq!(w.status, WorkerStatus::Completed);
    assert_eq!(w.attempt, 1);
    assert_eq!(w.result, Some(PathBuf::from("/r.md")));
    assert!(launches(&fx).is_empty());
    let a = s.clarification.worker_answers.last().unwrap();
    assert_eq!(a.question, Q);
    assert!(
        a.answer.contains("not answered") && a.answer.contains("stands"),
        "{}",
        a.answer
    );
    assert_ne!(s.stage, Stage::TeamExec, "the run went on past its work");
}

#[test]
fn a_cancel_while_a_result_question_waits_keeps_the_result() {
    let (mut s, mut mem) = started("claude");
    update(&mut s, &mut mem, t0(), exit_asking(1, Some(Q)));
    let fx = update(&mut s, &mut mem, t0(), Input::Cancel { worker: None });
    assert!(
        !fx.iter().any(|e| matches!(e, Effect::Kill { .. })),
        "no process: {fx:?}"
    );
    assert_eq!(s.worker("w0").unwrap().status, WorkerStatus::Completed);
    assert!(s.status.is_final(), "{:?}", s.status);
}

#[test]
fn commands_checks_and_results_without_a_question_complete_as_before() {
    let (mut s, mut mem) = started("command");
    update(&mut s, &mut mem, t0(), exit_asking(1, Some(Q)));
    assert_eq!(s.worker("w0").unwrap().status, WorkerStatus::Completed);

    let (mut s, mut mem) = started("claude");
    s.worker_mut("w0").unwrap().kind = WorkerKind::Critic;
    update(&mut s, &mut mem, t0(), exit_asking(1, Some(Q)));
    assert_eq!(s.worker("w0").unwrap().status, WorkerStatus::Completed);

    let (mut s, mut mem) = started("claude");
    update(&mut s, &mut mem, t0(), exit_asking(1, None));
    assert_eq!(s.worker("w0").unwrap().status, WorkerStatus::Completed);
}

#[test]
fn text_sent_to_an_ended_agent_worker_starts_its_next_attempt_with_the_message() {
    let (mut s, mut mem) = started("claude");
    update(&mut s, &mut mem, t0(), exit_asking(1, None));
    assert!(s.status.is_final() || s.stage != Stage::TeamExec);
    let send = Steer::SendText {
        worker: "w0".into(),
        text: "also add a changelog entry".into(),
    };
    assert_eq!(check(&s, &send), Ok(()));
    let fx = update(
        &mut s,
        &mut mem,
        t0() + Duration::seconds(9),
        Input::Steer(send),
    );
    assert_eq!(launches(&fx), [("w0".to_string(), 2)]);
    let w = s.worker("w0").unwrap();
    assert_eq!(w.flow.messages, ["also add a changelog entry"]);
    assert_eq!(s.status, RunStatus::Running, "the run was reopened");

    // A command has no conversation: refused with what to do instead.
    let (mut s, mut mem) = started("command");
    update(&mut s, &mut mem, t0(), exit_asking(1, None));
    let send = Steer::SendText {
        worker: "w0".into(),
        text: "x".into(),
    };
    let why = check(&s, &send).unwrap_err();
    assert!(why.contains("retry it instead"), "{why}");
}
