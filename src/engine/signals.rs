//! What an attempt's own hooks say (`Input::Signal`, docs/mcp.md "Status from the agents'
//! hooks"): `working` is activity (the idle clock and the stall window start again, and a
//! worker waiting on an answered or hook-announced question runs again); `waiting` makes
//! a running worker wait on the hook's message, as a question read from the screen does;
//! `turn ended` and `turn failed` are said in the Log. A hook never ends an attempt (its
//! exit does) and never touches a question that waits on an MCP tool call.

use super::lifecycle::{current, moved_after_answer, on_asked};
use super::{Effects, RunMemory};
use crate::domain::{AgentSignal, EventKind, RunState, SignalState, WorkerStatus};

/// Take one hook signal of `worker`'s attempt `attempt`.
pub(super) fn on_signal(
    state: &mut RunState,
    mem: &mut RunMemory,
    worker: &str,
    attempt: u32,
    signal: AgentSignal,
    fx: &mut Effects,
) {
    let Some(w) = current(state, worker, attempt) else {
        return;
    };
    if !w.status.is_live() || mem.kills.contains_key(worker) {
        return;
    }
    let said = match &signal.detail {
        Some(d) => format!("{} {d}", signal.event),
        None => signal.event.clone(),
    };
    let (told, detail) = (signal.state, signal.detail.clone());
    w.signal = Some(signal);
    match told {
        SignalState::Working => {
            mem.last_output.insert(worker.to_string(), fx.now);
            mem.last_output_moved = true;
            super::stall::on_output(state, worker);
            let Some(w) = current(state, worker, attempt) else {
                return;
            };
            if w.status == WorkerStatus::Waiting && w.pending.as_ref().is_some_and(|p| p.from_hooks)
            {
                // Answered in its pane, or it went on alone: it works again either way.
                mem.answered.remove(worker);
                w.status = WorkerStatus::Running;
                w.question = None;
                w.pending = None;
                fx.event(
                    EventKind::WorkerResumed,
                    Some((worker, attempt)),
                    "hooks",
                    format!("its hooks say it works again ({said})"),
                );
            } else {
                moved_after_answer(state, mem, worker, attempt, fx);
            }
        }
        SignalState::Waiting => {
            if w.status != WorkerStatus::Running {
                // Already waiting (an MCP call, a screen question): that question stands.
                return;
            }
            let message = detail.unwrap_or(said);
            on_asked(state, mem, worker, attempt, &message, fx);
            if let Some(p) = current(state, worker, attempt).and_then(|w| w.pending.as_mut()) {
                p.from_hooks = true;
            }
        }
        SignalState::TurnEnded => fx.event(
            EventKind::WorkerTurnEnded,
            Some((worker, attempt)),
            "hooks",
            format!("its hooks say its turn ended ({said})"),
        ),
        SignalState::TurnFailed => fx.event(
            EventKind::WorkerTurnEnded,
            Some((worker, attempt)),
            "hooks",
            format!("its hooks say its turn failed ({said})"),
        ),
    }
}
