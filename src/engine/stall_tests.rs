//! Engine tests of stall detection, the retry back-off and the rate-limited mark.

use chrono::{DateTime, Duration, Utc};

use super::tests::{exited, launched, launches, run, t0};
use super::*;
use crate::domain::EventKind;
use crate::domain::*;

const RECONNECT: &str = "Reconnecting... 2/5 (stream disconnected before completion)";

fn at(s: i64) -> DateTime<Utc> {
    t0() + Duration::seconds(s)
}

fn stall_line(s: &mut RunState, mem: &mut RunMemory, when: i64) {
    update(
        s,
        mem,
        at(when),
        Input::StallLine {
            worker: "w0".into(),
            attempt: s.workers[0].attempt,
            line: RECONNECT.into(),
        },
    );
}

fn kills(fx: &[Effect]) -> Vec<KillReason> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::Kill { reason, .. } => Some(*reason),
            _ => None,
        })
        .collect()
}

fn one_worker(stall_after: u64) -> (RunState, RunMemory) {
    let mut s = run(1, 1);
    s.workers[0].flow.stall_after_s = Some(stall_after);
    let mut mem = RunMemory::default();
    update(&mut s, &mut mem, t0(), Input::Start);
    launched(&mut s, &mut mem, "w0", 1, t0());
    (s, mem)
}

#[test]
fn only_stall_lines_for_stall_after_s_end_the_attempt_failed_stalled() {
    let (mut s, mut mem) = one_worker(10);
    for t in (2..=8).step_by(2) {
        stall_line(&mut s, &mut mem, t);
        assert!(kills(&update(&mut s, &mut mem, at(t), Input::Tick)).is_empty());
    }
    // The window opened at 2 s: 12 s is 10 s of nothing but stall lines.
    assert!(kills(&update(&mut s, &mut mem, at(11), Input::Tick)).is_empty());
    let fx = update(&mut s, &mut mem, at(12), Input::Tick);
    assert_eq!(kills(&fx), [KillReason::Stalled]);
    assert!(
        kills(&update(&mut s, &mut mem, at(13), Input::Tick)).is_empty(),
        "asked once"
    );
    s.workers[0].max_attempts = 1;
    exited(&mut s, &mut mem, "w0", 1, 143);
    let w = &s.workers[0];
    assert_eq!(w.status, WorkerStatus::Failed);
    assert_eq!(
        w.reason.as_deref(),
        Some(format!("stalled: {RECONNECT}").as_str())
    );
}

#[test]
fn ordinary_output_closes_the_stall_window() {
    let (mut s, mut mem) = one_worker(10);
    stall_line(&mut s, &mut mem, 1);
    update(
        &mut s,
        &mut mem,
        at(9),
        Input::Output {
            worker: "w0".into(),
            attempt: 1,
        },
    );
    stall_line(&mut s, &mut mem, 10);
    assert!(kills(&update(&mut s, &mut mem, at(15), Input::Tick)).is_empty());
    assert_eq!(
        kills(&update(&mut s, &mut mem, at(20), Input::Tick)),
        [KillReason::Stalled]
    );
}

#[test]
fn a_stalled_worker_retries_after_its_back_off_not_at_once() {
    let (mut s, mut mem) = one_worker(10);
    stall_line(&mut s, &mut mem, 0);
    update(&mut s, &mut mem, at(10), Input::Tick);
    let fx = update(
        &mut s,
        &mut mem,
        at(11),
        Input::Exited {
            worker: "w0".into(),
            attempt: 1,
            code: 143,
            source: ExitSource::ExitFile,
            missing_artifacts: vec![],
            result: None,
            said: None,
            ended_at: None,
            question: None,
        },
    );
    assert!(launches(&fx).is_empty(), "no restart at once");
    let retry_at = s.workers[0].flow.retry_at.expect("a back-off");
    let wait = (retry_at - at(11)).num_seconds();
    assert!((24..=30).contains(&wait), "{wait}");
    assert!(graph::blocked_on(&s, &s.workers[0]).is_empty());
    assert!(launches(&update(
        &mut s,
        &mut mem,
        retry_at - Duration::seconds(1),
        Input::Tick
    ))
    .is_empty());
    let fx = update(&mut s, &mut mem, retry_at, Input::Tick);
    assert_eq!(launches(&fx), vec![("w0".to_string(), 2)]);
    assert_eq!(s.workers[0].flow.retry_at, None);
}

#[test]
fn a_rate_limit_line_marks_the_worker_and_names_itself_in_the_reason() {
    let (mut s, mut mem) = one_worker(10);
    s.workers[0].max_attempts = 1;
    let line = "429 Too Many Requests";
    let mark = |s: &mut RunState, mem: &mut RunMemory| {
        update(
            s,
            mem,
            at(1),
            Input::RateLimited {
                worker: "w0".into(),
                attempt: 1,
                line: line.into(),
            },
        )
    };
    let fx = mark(&mut s, &mut mem);
    assert!(fx
        .iter()
        .any(|e| matches!(e, Effect::Event(ev) if ev.kind == EventKind::WorkerRateLimited)));
    assert!(mark(&mut s, &mut mem).is_empty(), "one event per attempt");
    assert_eq!(s.workers[0].flow.rate_limited.as_deref(), Some(line));
    exited(&mut s, &mut mem, "w0", 1, 1);
    assert_eq!(
        s.workers[0].reason.as_deref(),
        Some("exit code 1 (rate-limited: 429 Too Many Requests)")
    );
}

#[test]
fn the_stall_window_is_saved_and_a_reattached_run_ends_the_attempt_on_time() {
    let (mut s, mut rt) = one_worker(10);
    stall_line(&mut s, &mut rt, 2);
    let opened = update(&mut s, &mut rt, at(3), Input::Tick);
    assert!(kills(&opened).is_empty());
    // What was saved, loaded by a new process with a fresh runtime.
    let saved = serde_json::to_string(&s).unwrap();
    let mut s: RunState = serde_json::from_str(&saved).unwrap();
    let mut rt = RunMemory::default();
    assert_eq!(
        s.workers[0].flow.stall.as_ref().map(|w| w.since),
        Some(at(2)),
        "the window's start is in state.json"
    );
    // The reattached driver re-reads the log's tail: its stall lines keep the window.
    stall_line(&mut s, &mut rt, 8);
    assert!(kills(&update(&mut s, &mut rt, at(11), Input::Tick)).is_empty());
    assert_eq!(
        kills(&update(&mut s, &mut rt, at(12), Input::Tick)),
        [KillReason::Stalled],
        "10 s after the window opened, not 10 s after the reattach"
    );
}

#[test]
fn opening_a_stall_window_is_an_event_so_the_state_is_saved() {
    let (mut s, mut rt) = one_worker(10);
    let fx = update(
        &mut s,
        &mut rt,
        at(1),
        Input::StallLine {
            worker: "w0".into(),
            attempt: 1,
            line: RECONNECT.into(),
        },
    );
    assert!(
        fx.iter()
            .any(|e| matches!(e, Effect::Event(ev) if ev.kind == EventKind::WorkerStalling)),
        "{fx:?}"
    );
    // Further stall lines extend the open window without another event.
    let fx = update(
        &mut s,
        &mut rt,
        at(2),
        Input::StallLine {
            worker: "w0".into(),
            attempt: 1,
            line: RECONNECT.into(),
        },
    );
    assert!(fx.is_empty(), "{fx:?}");
}

/// `w0`'s attempt `n` ends stalled at `t` seconds (its stall window opened at `t - 10`).
fn stalls(s: &mut RunState, mem: &mut RunMemory, n: u32, t: i64) -> Vec<Effect> {
    if n > 1 {
        let at_retry = s.workers[0].flow.retry_at.expect("a back-off");
        update(s, mem, at_retry, Input::Tick);
        launched(s, mem, "w0", n, at_retry);
    }
    stall_line(s, mem, t - 10);
    update(s, mem, at(t), Input::Tick);
    update(
        s,
        mem,
        at(t),
        Input::Exited {
            worker: "w0".into(),
            attempt: n,
            code: 143,
            source: ExitSource::ExitFile,
            missing_artifacts: vec![],
            result: None,
            said: None,
            ended_at: None,
            question: None,
        },
    )
}

fn council_fails(s: &mut RunState, mem: &mut RunMemory) -> Vec<Effect> {
    update(
        s,
        mem,
        at(900),
        Input::CouncilReady(vec![super::tests::verdict(Verdict::Fail)]),
    )
}

fn fix_skipped(fx: &[Effect]) -> Option<String> {
    fx.iter().find_map(|e| match e {
        Effect::Event(ev) if ev.kind == EventKind::FixSkipped => Some(ev.message.clone()),
        _ => None,
    })
}

/// A fix round sent to a provider whose attempts all stalled would wait on the same dead
/// endpoint again (codex: 576 s for a run whose stall limit is 2 min): the fix round says
/// why it is skipped instead.
#[test]
fn no_fixer_goes_to_a_provider_whose_last_attempts_all_stalled() {
    let (mut s, mut mem) = one_worker(10);
    stalls(&mut s, &mut mem, 1, 20);
    stalls(&mut s, &mut mem, 2, 100);
    assert_eq!(s.workers[0].status, WorkerStatus::Failed);
    assert_eq!(s.routing.stalled["sim"].attempts, 2);
    let fx = council_fails(&mut s, &mut mem);
    assert!(launches(&fx).is_empty(), "{fx:?}");
    assert!(s.worker("fixer-r1").is_none());
    let why = fix_skipped(&fx).expect("a fix-skipped event");
    assert!(
        why.contains("sim: endpoint unreachable (its last 2 attempts stalled: \"Reconnecting"),
        "{why}"
    );
    assert!(fx.contains(&Effect::WriteReport), "{fx:?}");
    // The routing survives a reattach.
    let saved: RunState = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
    assert_eq!(saved.routing.stalled, s.routing.stalled);
}

#[test]
fn a_fixer_moves_off_a_stalled_provider_to_a_usable_fallback() {
    let (mut s, mut mem) = one_worker(10);
    s.routing.fallbacks.insert(
        "w0".into(),
        vec![
            Fallback {
                provider: "sim".into(),
                model: None,
            },
            Fallback {
                provider: "codex".into(),
                model: Some("gpt-5".into()),
            },
        ],
    );
    s.workers[0].max_attempts = 1;
    stalls(&mut s, &mut mem, 1, 20);
    let fx = council_fails(&mut s, &mut mem);
    assert_eq!(launches(&fx), vec![("fixer-r1".into(), 1)]);
    assert_eq!(s.worker("fixer-r1").unwrap().provider, "codex");
}

#[test]
fn an_attempt_that_ends_otherwise_ends_the_providers_stall_streak() {
    let (mut s, mut mem) = one_worker(10);
    stalls(&mut s, &mut mem, 1, 20);
    assert_eq!(s.routing.stalled["sim"].attempts, 1);
    let at_retry = s.workers[0].flow.retry_at.unwrap();
    update(&mut s, &mut mem, at_retry, Input::Tick);
    launched(&mut s, &mut mem, "w0", 2, at_retry);
    exited(&mut s, &mut mem, "w0", 2, 1);
    assert!(s.routing.stalled.is_empty(), "{:?}", s.routing.stalled);
    let fx = council_fails(&mut s, &mut mem);
    assert_eq!(launches(&fx), vec![("fixer-r1".into(), 1)]);
}
