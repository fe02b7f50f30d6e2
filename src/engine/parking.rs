//! Usage limits park, not fail (docs/failures.md "Usage limits"). An agent CLI that says its
//! plan's usage limit is reached until a time (an `exit_output` rule of meaning `limit`
//! with its reset, `ExitSaid::resets_at`) has not failed at the task: the same provider
//! works again then. In this order, the worker
//!
//! 1. runs its next attempt at once when the lead moved the provider to another key of the
//!    credential store (`ExitSaid::other_key`);
//! 2. else moves to its next usable fallback provider, as for a quota (`engine::exits`);
//! 3. else is parked: pending with its next attempt at the reset time (`FlowState::parked`
//!    and `retry_at`), the attempt not counted against its `max_attempts`, and pending
//!    workers of the same provider that have no fallback wait for the same time. The next
//!    attempt continues the conversation where the provider can resume.
//!
//! A reset more than [`MAX_PARK_DAYS`] away, or a cancelled run, is not waited for: the exit
//! reads as a quota.

use chrono::{DateTime, Duration, Local, Utc};

use super::{Effects, RunMemory};
use crate::domain::{EventKind, ExitSaid, Parked, RunState, WorkerStatus};

/// The longest wait a reset time may ask for: a week's limit (Claude Code's weekly limits)
/// and a day's slack.
pub const MAX_PARK_DAYS: i64 = 8;

/// What a limit does with `id`'s attempt `attempt` that ended on it (`reason`: the ended
/// reason as `ExitSaid::reason` words it). `None`: it is handled as a quota (a fallback
/// provider takes it, or it ends).
pub(super) fn on_limit(
    state: &mut RunState,
    mem: &RunMemory,
    (id, attempt): (&str, u32),
    reason: &str,
    said: &ExitSaid,
    fx: &mut Effects,
) -> Option<String> {
    if mem.cancelled {
        return None;
    }
    if said.other_key {
        let w = state.worker_mut(id)?;
        // The limited attempt does not count: the worker keeps all it had left.
        w.max_attempts += 1;
        return Some(format!("{reason}; the next attempt uses another key"));
    }
    if super::exits::next_provider(state, id).is_some() {
        return None;
    }
    let until = said
        .resets_at
        .filter(|t| *t <= fx.now + Duration::days(MAX_PARK_DAYS))?
        .max(fx.now);
    let provider = state.worker(id)?.provider.clone();
    let parked = Parked {
        until,
        provider: provider.clone(),
        line: said.line.clone(),
    };
    let w = state.worker_mut(id)?;
    // The limited attempt does not count: the worker keeps all it had left.
    w.max_attempts += 1;
    w.flow.parked = Some(parked.clone());
    fx.event(
        EventKind::WorkerParked,
        Some((id, attempt)),
        "output",
        format!(
            "parked until {}: {provider}'s usage limit; attempt {} starts then",
            clock(until, fx.now),
            attempt + 1
        ),
    );
    // The same provider's workers not started yet would meet the same limit.
    let others: Vec<String> = state
        .workers
        .iter()
        .filter(|o| {
            o.id != id
                && o.provider == provider
                && o.status == WorkerStatus::Pending
                && o.flow.retry_at.is_none_or(|t| t < until)
        })
        .map(|o| o.id.clone())
        .collect();
    for other in others {
        if super::exits::next_provider(state, &other).is_some() {
            continue;
        }
        if let Some(o) = state.worker_mut(&other) {
            o.flow.retry_at = Some(until);
            o.flow.parked = Some(parked.clone());
            let next = o.attempt + 1;
            fx.event(
                EventKind::WorkerParked,
                Some((&other, o.attempt)),
                "engine",
                format!(
                    "parked until {}: {provider}'s usage limit (seen by {id}); attempt {next} starts then",
                    clock(until, fx.now)
                ),
            );
        }
    }
    Some(format!("parked until {}: {reason}", clock(until, fx.now)))
}

/// The retry wait of a parked worker: its reset time (the back-off's place).
pub(super) fn retry_at(w: &crate::domain::WorkerState) -> Option<DateTime<Utc>> {
    w.flow.parked.as_ref().map(|p| p.until)
}

/// `15:04` (`15:04:05` when it has seconds) in this machine's zone, with the date first
/// when it is not today's (`Dec 04 15:04`): how the roster, status and the Log say a reset time.
pub fn clock(t: DateTime<Utc>, now: DateTime<Utc>) -> String {
    let (l, n) = (t.with_timezone(&Local), now.with_timezone(&Local));
    let time = if chrono::Timelike::second(&l) == 0 {
        "%H:%M"
    } else {
        "%H:%M:%S"
    };
    if l.date_naive() == n.date_naive() {
        l.format(time).to_string()
    } else {
        l.format(&format!("%b %d {time}")).to_string()
    }
}

#[cfg(test)]
#[path = "parking_tests.rs"]
mod tests;
