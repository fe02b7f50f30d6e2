//! Engine rules for runs continued after a stop, and for the offline commands.

use chrono::Duration;

use super::tests::{exited, launched, run, t0, verdict};
use super::*;
use crate::domain::*;

#[test]
fn a_council_recorded_before_a_stop_gets_its_report_when_the_run_continues() {
    let (mut s, mut mem) = (run(1, 1), RunMemory::default());
    update(&mut s, &mut mem, t0(), Input::Start);
    launched(&mut s, &mut mem, "w0", 1, t0());
    exited(&mut s, &mut mem, "w0", 1, 0);
    update(
        &mut s,
        &mut mem,
        t0(),
        Input::CouncilReady(vec![verdict(Verdict::Pass)]),
    );
    // The driver stopped here: the council is saved, the report was never written.
    let mut mem = RunMemory::default();
    let fx = update(&mut s, &mut mem, t0(), Input::Start);
    assert!(fx.contains(&Effect::WriteReport), "{fx:?}");
    let fx = update(&mut s, &mut mem, t0(), Input::Tick);
    assert!(!fx.contains(&Effect::WriteReport), "asked once: {fx:?}");
}

#[test]
fn an_offline_cancel_ends_a_detached_run_once_its_workers_end() {
    let (mut s, mut mem) = (run(2, 1), RunMemory::default());
    update(&mut s, &mut mem, t0(), Input::Start);
    launched(&mut s, &mut mem, "w0", 1, t0());
    s.status = RunStatus::Detached;
    let mut mem = RunMemory {
        offline: true,
        ..RunMemory::default()
    };
    let fx = update(&mut s, &mut mem, t0(), Input::Cancel { worker: None });
    assert!(fx.iter().any(|e| matches!(e, Effect::Kill { .. })));
    assert_eq!(s.status, RunStatus::Detached, "w0 still runs");
    let fx = exited(&mut s, &mut mem, "w0", 1, 143);
    assert_eq!(s.worker("w0").unwrap().status, WorkerStatus::Cancelled);
    assert_eq!(s.status, RunStatus::Cancelled);
    assert!(fx.contains(&Effect::Finished));
    assert!(!fx.iter().any(|e| matches!(e, Effect::Launch { .. })));
}

#[test]
fn an_offline_run_answer_is_recorded_and_leaves_the_gate_to_the_next_start() {
    let (mut s, _) = (run(1, 1), RunMemory::default());
    s.clarify = true;
    s.status = RunStatus::Halted;
    s.clarification.pending = true;
    s.clarification.prompt = Some("Which API?".into());
    let mut mem = RunMemory {
        offline: true,
        ..RunMemory::default()
    };
    let fx = update(
        &mut s,
        &mut mem,
        t0(),
        Input::AnswerRun {
            text: "public".into(),
        },
    );
    assert_eq!(s.status, RunStatus::Detached);
    assert_eq!(s.clarification.answers, vec!["public".to_string()]);
    assert!(!fx.contains(&Effect::EvaluateGate));
    let fx = update(&mut s, &mut RunMemory::default(), t0(), Input::Start);
    assert!(fx.contains(&Effect::EvaluateGate), "{fx:?}");
}

#[test]
fn the_same_question_seen_again_while_waiting_is_not_a_new_event() {
    let (mut s, mut mem) = (run(1, 1), RunMemory::default());
    update(&mut s, &mut mem, t0(), Input::Start);
    launched(&mut s, &mut mem, "w0", 1, t0());
    let ask = Input::Asked {
        worker: "w0".into(),
        attempt: 1,
        question: "Which database?".into(),
    };
    assert!(!update(&mut s, &mut mem, t0(), ask.clone()).is_empty());
    let again = update(&mut s, &mut mem, t0() + Duration::seconds(1), ask);
    assert!(again.is_empty(), "{again:?}");
}

#[test]
fn an_attempt_whose_launch_a_stopped_driver_cut_short_starts_again_as_the_same_attempt() {
    let (mut s, mut mem) = (run(1, 1), RunMemory::default());
    s.workers[0].max_attempts = 1;
    let fx = update(&mut s, &mut mem, t0(), Input::Start);
    assert_eq!(super::tests::launches(&fx), [("w0".to_string(), 1)]);
    // The driver stopped here: attempt 1 is `starting`, with no dispatch record.
    let mut mem = RunMemory::default();
    let input = Input::LaunchInterrupted {
        worker: "w0".into(),
        attempt: 1,
    };
    let mut fx = update(&mut s, &mut mem, t0(), input);
    fx.extend(update(&mut s, &mut mem, t0(), Input::Tick));
    assert_eq!(
        super::tests::launches(&fx),
        [("w0".to_string(), 1)],
        "the same attempt, not counted: {fx:?}"
    );
    launched(&mut s, &mut mem, "w0", 1, t0());
    exited(&mut s, &mut mem, "w0", 1, 0);
    assert_eq!(s.worker("w0").unwrap().status, WorkerStatus::Completed);
}

#[test]
fn a_late_launch_interrupted_for_a_started_attempt_changes_nothing() {
    let (mut s, mut mem) = (run(1, 1), RunMemory::default());
    update(&mut s, &mut mem, t0(), Input::Start);
    launched(&mut s, &mut mem, "w0", 1, t0());
    let input = Input::LaunchInterrupted {
        worker: "w0".into(),
        attempt: 1,
    };
    let fx = update(&mut s, &mut mem, t0(), input);
    assert!(super::tests::launches(&fx).is_empty(), "{fx:?}");
    let w = s.worker("w0").unwrap();
    assert_eq!((w.status, w.attempt), (WorkerStatus::Running, 1));
}
