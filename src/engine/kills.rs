//! Kills the engine asks for: wall and idle timeouts (checked on every tick) and cancel of
//! one worker or the whole run. The attempt's end arrives later as an exit or a vanished
//! pane, and `ending` gives it the status of the kill.

use super::{Effect, Effects, KillReason, RunMemory};
use crate::domain::EventKind;
use crate::domain::{RunState, WorkerStatus};

/// Ask to end workers past their wall or idle timeout (once per attempt).
pub(super) fn check_timeouts(state: &mut RunState, mem: &mut RunMemory, fx: &mut Effects) {
    for w in &state.workers {
        // A worker waiting on its result's question has no process: its question timeout
        // is its only clock.
        if !w.status.is_live()
            || w.status == WorkerStatus::Starting
            || w.waits_on_its_result()
            || mem.kills.contains_key(&w.id)
        {
            continue;
        }
        let wall = w
            .timeout_s
            .zip(w.started_at)
            .filter(|(t, started)| (fx.now - *started).num_milliseconds() >= (*t as i64) * 1000);
        // A waiting worker's idle clock stands still until it is answered, and runs from
        // the answer on (its own output after it makes it running again).
        let answered = w.status == WorkerStatus::Waiting && mem.answered.contains_key(&w.id);
        let idle = w
            .idle_timeout_s
            .filter(|_| w.status == WorkerStatus::Running || answered)
            .zip(mem.last_output.get(&w.id))
            .filter(|(t, last)| (fx.now - **last).num_milliseconds() >= (*t as i64) * 1000);
        let reason = if wall.is_some() {
            KillReason::Timeout
        } else if idle.is_some() {
            KillReason::IdleTimeout
        } else {
            continue;
        };
        mem.kills.insert(w.id.clone(), (reason, fx.now));
        fx.event(
            EventKind::WorkerTimeout,
            Some((&w.id, w.attempt)),
            "timer",
            match reason {
                KillReason::Timeout => format!("wall timeout of {}s", w.timeout_s.unwrap_or(0)),
                _ => format!("no output for {}s", w.idle_timeout_s.unwrap_or(0)),
            },
        );
        fx.push(Effect::Kill {
            worker: w.id.clone(),
            attempt: w.attempt,
            reason,
        });
    }
}

/// Cancel one worker, or every worker and the run.
pub(super) fn cancel(
    state: &mut RunState,
    mem: &mut RunMemory,
    only: Option<&str>,
    fx: &mut Effects,
) {
    if only.is_none() {
        mem.cancelled = true;
    }
    let now = fx.now;
    let in_result: Vec<String> = state
        .workers
        .iter()
        .filter(|w| w.waits_on_its_result() && only.is_none_or(|id| id == w.id))
        .map(|w| w.id.clone())
        .collect();
    for id in in_result {
        super::questions::cancel_in_result(state, &id, fx);
    }
    for w in state.workers.iter_mut() {
        if only.is_some_and(|id| id != w.id) {
            continue;
        }
        match w.status {
            WorkerStatus::Pending => {
                w.status = WorkerStatus::Cancelled;
                w.reason = Some("cancelled before it started".into());
                w.ended_at = Some(now);
                fx.event(
                    EventKind::WorkerCancelled,
                    Some((&w.id, super::lifecycle::not_started(w))),
                    "user",
                    "cancelled before it started",
                );
            }
            s if s.is_live() && !mem.kills.contains_key(&w.id) => {
                mem.kills.insert(w.id.clone(), (KillReason::Cancel, now));
                fx.push(Effect::Kill {
                    worker: w.id.clone(),
                    attempt: w.attempt,
                    reason: KillReason::Cancel,
                });
                fx.event(
                    EventKind::WorkerCancelRequested,
                    Some((&w.id, w.attempt)),
                    "user",
                    "SIGTERM, grace, SIGKILL",
                );
            }
            _ => {}
        }
    }
}
