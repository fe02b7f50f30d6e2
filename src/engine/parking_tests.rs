//! Usage limits park: the worker waits for the reset (its attempt not counted), another
//! key or a fallback goes first, a cancelled run does not wait, and the provider's other
//! pending workers wait too.

use chrono::Duration;

use super::super::tests::{exited_saying, launched, launches, run, t0};
use super::super::*;
use crate::domain::*;

/// Two claude workers, one at a time, one attempt each.
fn claude_run(fallback: bool) -> RunState {
    let mut s = run(2, 1);
    for w in &mut s.workers {
        w.provider = "claude".into();
        w.max_attempts = 1;
        if fallback {
            s.routing.fallbacks.insert(
                w.id.clone(),
                vec![Fallback {
                    provider: "codex".into(),
                    model: None,
                }],
            );
        }
    }
    s
}

fn limit(resets_in_s: i64, other_key: bool) -> ExitSaid {
    ExitSaid {
        meaning: ExitMeaning {
            meaning: ExitKind::Limit,
            fix: "wait for the limit to reset".into(),
        },
        line: "You've hit your session limit · resets 3pm (UTC)".into(),
        resets_at: Some(t0() + Duration::seconds(resets_in_s)),
        other_key,
    }
}

fn limited(s: &mut RunState, mem: &mut RunMemory, w: &str, said: ExitSaid) -> Vec<Effect> {
    exited_saying(s, mem, w, 1, Some(said))
}

fn kinds(fx: &[Effect], kind: &str) -> Vec<String> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::Event(ev) if ev.kind.as_str() == kind => Some(ev.message.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_limit_with_a_reset_parks_the_worker_until_then_and_its_attempt_does_not_count() {
    let (mut s, mut mem) = (claude_run(false), RunMemory::default());
    update(&mut s, &mut mem, t0(), Input::Start);
    launched(&mut s, &mut mem, "w0", 1, t0());
    let fx = limited(&mut s, &mut mem, "w0", limit(300, false));
    let w0 = s.worker("w0").unwrap();
    assert_eq!(
        w0.status,
        WorkerStatus::Pending,
        "parked, not failed for good"
    );
    assert_eq!(w0.max_attempts, 2, "the limited attempt is not counted");
    assert_eq!(w0.flow.retry_at, Some(t0() + Duration::seconds(300)));
    let parked = w0.flow.parked.as_ref().unwrap();
    assert_eq!(
        (parked.provider.as_str(), parked.until),
        ("claude", t0() + Duration::seconds(300))
    );
    assert!(
        w0.reason.as_deref().unwrap().starts_with("parked until "),
        "{:?}",
        w0.reason
    );
    assert!(w0
        .reason
        .as_deref()
        .unwrap()
        .contains("claude: usage limit reached (exit 1"));
    assert!(launches(&fx).is_empty(), "nothing starts before the reset");
    assert!(
        s.routing.failed.is_empty(),
        "the provider is not failed for the run"
    );
    // The other claude worker, not started yet, waits for the same reset.
    let w1 = s.worker("w1").unwrap();
    assert_eq!(w1.flow.retry_at, Some(t0() + Duration::seconds(300)));
    assert_eq!(kinds(&fx, "worker-parked").len(), 2);
    // Before the reset nothing starts; at it, w0's next attempt does.
    let fx = update(&mut s, &mut mem, t0() + Duration::seconds(299), Input::Tick);
    assert!(launches(&fx).is_empty());
    let fx = update(&mut s, &mut mem, t0() + Duration::seconds(301), Input::Tick);
    assert_eq!(launches(&fx), vec![("w0".to_string(), 2)]);
    assert_eq!(
        s.worker("w0").unwrap().flow.parked,
        None,
        "unparked as it starts"
    );
    assert!(
        s.routing.failing.is_empty(),
        "a limit does not count for the breaker"
    );
}

#[test]
fn another_key_goes_first_and_the_next_attempt_starts_at_once() {
    let (mut s, mut mem) = (claude_run(false), RunMemory::default());
    update(&mut s, &mut mem, t0(), Input::Start);
    launched(&mut s, &mut mem, "w0", 1, t0());
    let fx = limited(&mut s, &mut mem, "w0", limit(300, true));
    assert_eq!(launches(&fx), vec![("w0".to_string(), 2)]);
    let w0 = s.worker("w0").unwrap();
    assert_eq!(w0.flow.parked, None);
    assert!(kinds(&fx, "worker-parked").is_empty());
    assert!(kinds(&fx, "worker-failed")[0].ends_with("; the next attempt uses another key"));
}

#[test]
fn a_fallback_goes_before_waiting() {
    let (mut s, mut mem) = (claude_run(true), RunMemory::default());
    s.workers[0].max_attempts = 2;
    update(&mut s, &mut mem, t0(), Input::Start);
    launched(&mut s, &mut mem, "w0", 1, t0());
    let fx = limited(&mut s, &mut mem, "w0", limit(300, false));
    assert_eq!(s.worker("w0").unwrap().provider, "codex");
    assert_eq!(s.worker("w0").unwrap().flow.parked, None);
    assert_eq!(launches(&fx), vec![("w0".to_string(), 2)]);
    assert!(kinds(&fx, "worker-parked").is_empty());
}

#[test]
fn a_reset_too_far_away_or_a_cancelled_run_does_not_wait() {
    let (mut s, mut mem) = (claude_run(false), RunMemory::default());
    update(&mut s, &mut mem, t0(), Input::Start);
    launched(&mut s, &mut mem, "w0", 1, t0());
    let far = limit(parking::MAX_PARK_DAYS * 86_400 + 60, false);
    limited(&mut s, &mut mem, "w0", far);
    assert_eq!(s.worker("w0").unwrap().status, WorkerStatus::Failed);
    assert!(s.routing.failed.contains_key("claude"));

    let (mut s, mut mem) = (claude_run(false), RunMemory::default());
    update(&mut s, &mut mem, t0(), Input::Start);
    launched(&mut s, &mut mem, "w0", 1, t0());
    mem.cancelled = true;
    limited(&mut s, &mut mem, "w0", limit(300, false));
    assert_ne!(s.worker("w0").unwrap().status, WorkerStatus::Pending);
    assert_eq!(s.worker("w0").unwrap().flow.parked, None);
}

#[test]
fn a_parked_worker_ends_at_once_when_the_run_is_cancelled() {
    let (mut s, mut mem) = (claude_run(false), RunMemory::default());
    update(&mut s, &mut mem, t0(), Input::Start);
    launched(&mut s, &mut mem, "w0", 1, t0());
    limited(&mut s, &mut mem, "w0", limit(3_600, false));
    update(
        &mut s,
        &mut mem,
        t0() + Duration::seconds(1),
        Input::Cancel { worker: None },
    );
    assert_eq!(s.worker("w0").unwrap().status, WorkerStatus::Cancelled);
    assert_eq!(s.worker("w1").unwrap().status, WorkerStatus::Cancelled);
}

#[test]
fn the_limited_attempt_leaves_every_attempt_the_worker_had_left() {
    let (mut s, mut mem) = (claude_run(false), RunMemory::default());
    s.workers[0].max_attempts = 2;
    update(&mut s, &mut mem, t0(), Input::Start);
    launched(&mut s, &mut mem, "w0", 1, t0());
    limited(&mut s, &mut mem, "w0", limit(5, false));
    assert_eq!(
        s.worker("w0").unwrap().max_attempts,
        3,
        "attempt 1 met the limit: attempts 2 and 3 are still the worker's"
    );
}
