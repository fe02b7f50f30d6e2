//! Stalls, rate limits and the back-off before a retry.
//!
//! The driver sorts each new output line of an attempt: a line matching the provider's
//! `stall_patterns` comes as [`Input::StallLine`](super::Input::StallLine), a line matching
//! its rate-limit patterns as [`Input::RateLimited`](super::Input::RateLimited), anything
//! else as `Input::Output`. An attempt whose output since its first stall line has been
//! only stall lines for `stall_after_s` is ended like a timed-out one (process group: TERM,
//! grace, KILL) and ends `failed` with the reason `stalled: <last such line>`. The window
//! is saved in the worker's state (`flow.stall`, opened with a `worker-stalling` event), so
//! a run attached again ends the attempt on time rather than a full window later.
//!
//! Each ended attempt keeps its provider's stall streak (`RunRouting::stalled`): a stall adds
//! one, any other ending but a cancel clears it; a fix round skips a provider with a streak
//! (`exits::fixer_route`), whose endpoint its attempts could not reach.
//!
//! A retry after a stall or a rate limit waits: 30 s after the first attempt, doubling per
//! attempt up to 5 min, minus up to a fifth of that as jitter (so workers that hit the same
//! wall do not come back together). The jitter is derived from the worker, the attempt and
//! the time, which keeps the engine free of a random source and its tests exact.

use std::hash::{Hash, Hasher};

use chrono::{DateTime, Duration, Utc};

use super::{Effect, Effects, KillReason, RunMemory};
use crate::domain::EventKind;
use crate::domain::{RunState, StallWindow, WorkerState, WorkerStatus};

/// The first back-off, seconds.
pub const BACKOFF_BASE_S: u64 = 30;
/// The longest back-off, seconds.
pub const BACKOFF_MAX_S: u64 = 300;

/// A stall line from `worker`'s `attempt`: open its stall window (a `worker-stalling`
/// event when detection is on), or keep it open with this as its last line.
pub(super) fn on_stall_line(
    state: &mut RunState,
    worker: &str,
    attempt: u32,
    line: String,
    fx: &mut Effects,
) {
    let Some(w) = state
        .worker_mut(worker)
        .filter(|w| w.attempt == attempt && w.status.is_live())
    else {
        return;
    };
    if let Some(s) = w.flow.stall.as_mut() {
        s.line = line;
        return;
    }
    if let Some(after) = w.flow.stall_after_s {
        fx.event(
            EventKind::WorkerStalling,
            Some((worker, attempt)),
            "output",
            format!(
                "only stall lines from here; ended after {after}s unless other output comes: {}",
                line.trim()
            ),
        );
    }
    w.flow.stall = Some(StallWindow {
        since: fx.now,
        line,
    });
}

/// Output that is not a stall line closes the stall window.
pub(super) fn on_output(state: &mut RunState, worker: &str) {
    if let Some(w) = state.worker_mut(worker) {
        w.flow.stall = None;
    }
}

/// A rate-limit line: set the worker's `rate-limited` mark (an event the first time in an
/// attempt).
pub(super) fn on_rate_limited(
    state: &mut RunState,
    worker: &str,
    attempt: u32,
    line: String,
    fx: &mut Effects,
) {
    let Some(w) = state
        .worker_mut(worker)
        .filter(|w| w.attempt == attempt && w.status.is_live())
    else {
        return;
    };
    let first = w.flow.rate_limited.is_none();
    w.flow.rate_limited = Some(line.clone());
    if first {
        fx.event(
            EventKind::WorkerRateLimited,
            Some((worker, attempt)),
            "output",
            line,
        );
    }
}

/// Ask to end workers whose output has been only stall lines for their `stall_after_s`.
pub(super) fn check_stalls(state: &mut RunState, mem: &mut RunMemory, fx: &mut Effects) {
    for w in state.workers.iter_mut() {
        if w.status != WorkerStatus::Running || mem.kills.contains_key(&w.id) {
            continue;
        }
        let (Some(after), Some(window)) = (w.flow.stall_after_s, &w.flow.stall) else {
            continue;
        };
        if (fx.now - window.since).num_milliseconds() < (after as i64) * 1000 {
            continue;
        }
        let reason = format!("stalled: {}", window.line.trim());
        w.reason = Some(reason.clone());
        mem.kills
            .insert(w.id.clone(), (KillReason::Stalled, fx.now));
        fx.event(
            EventKind::WorkerStalled,
            Some((&w.id, w.attempt)),
            "timer",
            format!("only stall lines for {after}s; {reason}"),
        );
        fx.push(Effect::Kill {
            worker: w.id.clone(),
            attempt: w.attempt,
            reason: KillReason::Stalled,
        });
    }
}

/// The reason of an ended attempt, with the rate limit named when the attempt printed one
/// and did not complete.
pub(super) fn reason_with_rate_limit(
    reason: String,
    status: WorkerStatus,
    w: &WorkerState,
) -> String {
    match (&w.flow.rate_limited, status) {
        (_, WorkerStatus::Completed) | (None, _) => reason,
        (Some(line), _) if reason.is_empty() => format!("rate-limited: {line}"),
        (Some(line), _) => format!("{reason} (rate-limited: {line})"),
    }
}

/// Keep the provider's stall streak (`RunRouting::stalled`) when one of its attempts ended
/// with `status` and `reason`: a stall adds one, any other ending but a cancel ends it.
pub(super) fn note_provider_end(
    routing: &mut crate::domain::RunRouting,
    provider: &str,
    status: WorkerStatus,
    reason: &str,
) {
    if status == WorkerStatus::Failed && reason.starts_with("stalled: ") {
        let s = routing
            .stalled
            .entry(provider.to_string())
            .or_insert_with(|| crate::domain::StalledProvider {
                attempts: 0,
                reason: String::new(),
            });
        s.attempts += 1;
        s.reason = reason.to_string();
    } else if status != WorkerStatus::Cancelled {
        routing.stalled.remove(provider);
    }
}

/// Set a retry's back-off when the attempt that ended stalled or was rate-limited, or its
/// wait for a parked worker's reset time (`engine::parking`); returns
/// the wait in seconds (`None`: the retry may start at once).
pub(super) fn schedule_backoff(
    w: &mut WorkerState,
    attempt: u32,
    now: DateTime<Utc>,
) -> Option<u64> {
    if let Some(at) = super::parking::retry_at(w) {
        w.flow.retry_at = Some(at);
        return Some(u64::try_from((at - now).num_seconds()).unwrap_or(0));
    }
    let stalled = w
        .reason
        .as_deref()
        .is_some_and(|r| r.starts_with("stalled: "));
    if !stalled && w.flow.rate_limited.is_none() {
        return None;
    }
    let wait = backoff_s(&w.id, attempt, now);
    w.flow.retry_at = Some(now + Duration::seconds(wait as i64));
    Some(wait)
}

/// The wait before the retry that follows `attempt` (1-based): `30 · 2^(attempt−1)` seconds,
/// at most 300, minus a jitter of up to a fifth.
pub fn backoff_s(worker: &str, attempt: u32, now: DateTime<Utc>) -> u64 {
    let full = BACKOFF_BASE_S
        .saturating_mul(1u64 << attempt.saturating_sub(1).min(16))
        .min(BACKOFF_MAX_S);
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (worker, attempt, now.timestamp_nanos_opt()).hash(&mut h);
    full - h.finish() % (full / 5 + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_from_30s_to_at_most_5min_with_a_jitter_of_up_to_a_fifth() {
        let now = Utc::now();
        for (attempt, full) in [(1, 30), (2, 60), (3, 120), (4, 240), (5, 300), (40, 300)] {
            let waits: Vec<u64> = (0..50)
                .map(|i| backoff_s("w", attempt, now + Duration::milliseconds(i)))
                .collect();
            assert!(
                waits.iter().all(|&s| s <= full && s >= full - full / 5),
                "attempt {attempt}: {waits:?}"
            );
            assert!(waits.iter().any(|&s| s != waits[0]), "jittered: {waits:?}");
        }
    }
}
