//! The agent's own hook signals (`Input::Signal`): activity, a hook-announced question, the
//! end of a turn, and what they never touch.

use chrono::Duration;

use super::questions::ToolQuestion;
use super::tests::{launched, run, t0};
use super::{update, Effect, Input, RunMemory};
use crate::domain::clarification::Reach;
use crate::domain::{AgentSignal, EventKind, RunState, SignalState, WorkerStatus};

fn started() -> (RunState, RunMemory) {
    let (mut s, mut mem) = (run(1, 1), RunMemory::default());
    s.worker_mut("w0").unwrap().idle_timeout_s = Some(30);
    s.worker_mut("w0").unwrap().flow.question_timeout_s = Some(300);
    update(&mut s, &mut mem, t0(), Input::Start);
    launched(&mut s, &mut mem, "w0", 1, t0());
    (s, mem)
}

fn signal(attempt: u32, state: SignalState, event: &str, detail: Option<&str>) -> Input {
    Input::Signal {
        worker: "w0".into(),
        attempt,
        signal: AgentSignal {
            state,
            event: event.into(),
            detail: detail.map(String::from),
            at: t0(),
        },
    }
}

fn kills(fx: &[Effect]) -> usize {
    fx.iter()
        .filter(|e| matches!(e, Effect::Kill { .. }))
        .count()
}

fn events(fx: &[Effect]) -> Vec<(EventKind, String)> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::Event(e) => Some((e.kind.clone(), e.message.clone())),
            _ => None,
        })
        .collect()
}

#[test]
fn a_working_signal_is_activity_for_the_idle_clock() {
    let (mut s, mut mem) = started();
    let at = t0() + Duration::seconds(25);
    update(
        &mut s,
        &mut mem,
        at,
        signal(1, SignalState::Working, "PreToolUse", Some("Bash")),
    );
    // 29 s after the signal (54 s after the launch, idle limit 30 s): no kill.
    let fx = update(&mut s, &mut mem, at + Duration::seconds(29), Input::Tick);
    assert_eq!(kills(&fx), 0, "{fx:?}");
    let fx = update(&mut s, &mut mem, at + Duration::seconds(31), Input::Tick);
    assert_eq!(kills(&fx), 1, "{fx:?}");
    let sig = s.worker("w0").unwrap().signal.clone().unwrap();
    assert_eq!(sig.line(), "hooks: working (Bash)");
}

#[test]
fn a_hook_notification_waits_and_the_agents_next_work_ends_the_wait() {
    let (mut s, mut mem) = started();
    let msg = "Claude needs your permission to use Bash";
    let fx = update(
        &mut s,
        &mut mem,
        t0(),
        signal(1, SignalState::Waiting, "Notification", Some(msg)),
    );
    let w = s.worker("w0").unwrap();
    assert_eq!(w.status, WorkerStatus::Waiting);
    assert_eq!(w.question.as_deref(), Some(msg));
    let p = w.pending.clone().unwrap();
    assert!(p.from_hooks && p.tool_call.is_none());
    assert_eq!(p.deadline, Some(t0() + Duration::seconds(300)));
    assert!(events(&fx)
        .iter()
        .any(|(k, _)| *k == EventKind::WorkerWaiting));
    // The person answered in the pane itself; the agent works again.
    let fx = update(
        &mut s,
        &mut mem,
        t0() + Duration::seconds(5),
        signal(1, SignalState::Working, "PostToolUse", Some("Bash")),
    );
    let w = s.worker("w0").unwrap();
    assert_eq!(w.status, WorkerStatus::Running);
    assert!(w.question.is_none() && w.pending.is_none());
    assert!(
        events(&fx)
            .iter()
            .any(|(k, m)| *k == EventKind::WorkerResumed && m.contains("PostToolUse Bash")),
        "{fx:?}"
    );
}

#[test]
fn a_permission_tool_call_takes_the_place_of_the_hook_notification() {
    let (mut s, mut mem) = started();
    update(
        &mut s,
        &mut mem,
        t0(),
        signal(1, SignalState::Waiting, "Notification", Some("permission")),
    );
    let fx = update(
        &mut s,
        &mut mem,
        t0(),
        Input::ToolAsked {
            worker: "w0".into(),
            attempt: 1,
            question: ToolQuestion {
                call: "7-1".into(),
                question: "Bash: rm -rf build".into(),
                choices: vec![],
                default: None,
                approval: None,
                reach: Reach::Unknown,
            },
        },
    );
    assert!(
        !fx.iter().any(|e| matches!(e, Effect::Reply { .. })),
        "not refused: {fx:?}"
    );
    let w = s.worker("w0").unwrap();
    assert_eq!(w.question.as_deref(), Some("Bash: rm -rf build"));
    let p = w.pending.clone().unwrap();
    assert_eq!(p.tool_call.as_deref(), Some("7-1"));
    assert!(!p.from_hooks);
    // The agent's hooks keep firing while it waits on the call: the call still waits.
    update(
        &mut s,
        &mut mem,
        t0(),
        signal(
            1,
            SignalState::Working,
            "PreToolUse",
            Some("mcp__crewmux__approve"),
        ),
    );
    assert_eq!(s.worker("w0").unwrap().status, WorkerStatus::Waiting);
    // And a second notification does not replace it.
    update(
        &mut s,
        &mut mem,
        t0(),
        signal(1, SignalState::Waiting, "Notification", Some("again")),
    );
    assert_eq!(
        s.worker("w0").unwrap().question.as_deref(),
        Some("Bash: rm -rf build")
    );
}

#[test]
fn the_end_of_a_turn_is_said_and_changes_no_status() {
    let (mut s, mut mem) = started();
    let fx = update(
        &mut s,
        &mut mem,
        t0(),
        signal(1, SignalState::TurnEnded, "Stop", None),
    );
    assert_eq!(s.worker("w0").unwrap().status, WorkerStatus::Running);
    assert!(events(&fx)
        .iter()
        .any(|(k, m)| *k == EventKind::WorkerTurnEnded && m.contains("turn ended (Stop)")));
    let fx = update(
        &mut s,
        &mut mem,
        t0(),
        signal(
            1,
            SignalState::TurnFailed,
            "StopFailure",
            Some("rate_limit"),
        ),
    );
    assert!(events(&fx)
        .iter()
        .any(|(k, m)| *k == EventKind::WorkerTurnEnded
            && m.contains("turn failed (StopFailure rate_limit)")));
    assert_eq!(
        s.worker("w0").unwrap().signal.as_ref().unwrap().line(),
        "hooks: turn failed (rate_limit)"
    );
}

#[test]
fn a_signal_of_another_attempt_changes_nothing() {
    let (mut s, mut mem) = started();
    let fx = update(
        &mut s,
        &mut mem,
        t0(),
        signal(2, SignalState::Waiting, "Notification", Some("x")),
    );
    assert!(events(&fx).is_empty(), "{fx:?}");
    let w = s.worker("w0").unwrap();
    assert_eq!(w.status, WorkerStatus::Running);
    assert!(w.signal.is_none());
}
