//! Worker lifecycle: launches, exits, crashes, questions, timeouts, cancel and retries.

use super::{Effect, Effects, Input, KillReason, RunMemory};
use crate::domain::EventKind;
use crate::domain::{DispatchRecord, ExitSource, RunState, WorkerState, WorkerStatus};

/// Apply an input that concerns one worker's attempt. Inputs for an attempt that is not
/// the worker's current one are stale (an old pane, a late marker) and are ignored.
#[allow(
    clippy::too_many_lines,
    reason = "split into named steps with the driver split (#15, reliability)"
)]
pub(super) fn on_worker_input(
    state: &mut RunState,
    mem: &mut RunMemory,
    input: Input,
    fx: &mut Effects,
) {
    match input {
        Input::Launched {
            worker,
            attempt,
            nonce,
            prompt_path,
            backend,
            pane_id,
            pid,
            credential_label,
        } => {
            let Some(w) = current(state, &worker, attempt) else {
                return;
            };
            if w.status != WorkerStatus::Starting {
                return;
            }
            w.status = WorkerStatus::Running;
            w.pane_id = pane_id.clone();
            w.pid = pid;
            w.started_at = Some(fx.now);
            w.reason = None;
            mem.last_output.insert(worker.clone(), fx.now);
            let where_ = pane_id
                .as_deref()
                .map(|p| format!("pane {p}"))
                .or_else(|| pid.map(|p| format!("pid {p}")))
                .unwrap_or_default();
            let label_note = credential_label
                .as_deref()
                .map(|l| format!(", credential `{l}`"))
                .unwrap_or_default();
            state.dispatches.push(DispatchRecord {
                worker_id: worker.clone(),
                prompt_path,
                attempt,
                backend,
                status: WorkerStatus::Running,
                reason: None,
                nonce,
                pane_id,
                exit_code: None,
                exit_source: None,
                started_at: fx.now,
                ended_at: None,
                credential_label,
            });
            fx.event(
                EventKind::WorkerStarted,
                Some((&worker, attempt)),
                "engine",
                format!("attempt {attempt} running in {where_}{label_note}"),
            );
        }
        Input::LaunchFailed {
            worker,
            attempt,
            error,
        } => {
            if current(state, &worker, attempt).is_none() {
                return;
            }
            finish(
                state,
                mem,
                &worker,
                attempt,
                WorkerStatus::Failed,
                None,
                None,
                format!("launch failed: {error}"),
                "engine",
                fx,
            );
        }
        Input::CwdFailed {
            worker,
            attempt,
            code,
            dir,
        } => {
            if current(state, &worker, attempt).is_none_or(|w| !w.status.is_live()) {
                return;
            }
            finish(
                state,
                mem,
                &worker,
                attempt,
                WorkerStatus::Failed,
                Some((code, ExitSource::ExitFile)),
                None,
                format!("cannot enter working directory {}", dir.display()),
                "exit-file",
                fx,
            );
        }
        Input::SetupFailed {
            worker,
            attempt,
            code,
        } => {
            if current(state, &worker, attempt).is_none_or(|w| !w.status.is_live()) {
                return;
            }
            finish(
                state,
                mem,
                &worker,
                attempt,
                WorkerStatus::Failed,
                Some((code, ExitSource::ExitFile)),
                None,
                format!("setup failed (exit {code})"),
                "exit-file",
                fx,
            );
        }
        Input::Exited {
            worker,
            attempt,
            code,
            source,
            missing_artifacts,
            result,
            said,
        } => {
            let Some(w) = current(state, &worker, attempt) else {
                return;
            };
            if !w.status.is_live() {
                return;
            }
            let killed = mem.kills.get(&worker).map(|k| killed_status(k.0, w));
            let (status, reason) = match killed {
                Some(k) => k,
                None if code == 0 && missing_artifacts.is_empty() => {
                    (WorkerStatus::Completed, String::new())
                }
                None if code == 0 => (
                    WorkerStatus::Failed,
                    format!(
                        "required artifact missing: {}",
                        missing_artifacts.join(", ")
                    ),
                ),
                None => (
                    WorkerStatus::Failed,
                    super::exits::failed_exit(
                        state,
                        mem,
                        &worker,
                        attempt,
                        code,
                        said.as_ref(),
                        fx,
                    ),
                ),
            };
            let source_name = match source {
                ExitSource::ExitFile => "exit-file",
                ExitSource::Marker => "marker",
                ExitSource::PaneStatus => "pane-status",
            };
            finish(
                state,
                mem,
                &worker,
                attempt,
                status,
                Some((code, source)),
                result,
                reason,
                source_name,
                fx,
            );
        }
        Input::Vanished {
            worker,
            attempt,
            detail,
        } => {
            let Some(w) = current(state, &worker, attempt) else {
                return;
            };
            if !w.status.is_live() {
                return;
            }
            let killed = mem.kills.get(&worker).map(|k| killed_status(k.0, w));
            let (status, reason) = match killed {
                Some(k) => k,
                None => (
                    WorkerStatus::Crashed,
                    format!("vanished with no exit code: {detail}"),
                ),
            };
            finish(
                state,
                mem,
                &worker,
                attempt,
                status,
                None,
                None,
                reason,
                "pane-status",
                fx,
            );
        }
        Input::Output { worker, attempt } => {
            let Some(w) = current(state, &worker, attempt) else {
                return;
            };
            mem.last_output.insert(worker.clone(), fx.now);
            mem.last_output_moved = true;
            if w.status == WorkerStatus::Waiting && mem.answered.remove(&worker).is_some() {
                w.status = WorkerStatus::Running;
                w.question = None;
                fx.event(
                    EventKind::WorkerResumed,
                    Some((&worker, attempt)),
                    "engine",
                    "output moved after the answer",
                );
            }
        }
        Input::Asked {
            worker,
            attempt,
            question,
        } => {
            let Some(w) = current(state, &worker, attempt) else {
                return;
            };
            if !w.status.is_live() {
                return;
            }
            if w.status == WorkerStatus::Waiting && w.question.as_deref() == Some(&question) {
                // The same question seen again (a second detector, a reattach): it was
                // recorded and announced once already.
                return;
            }
            w.status = WorkerStatus::Waiting;
            w.question = Some(question.clone());
            mem.answered.remove(&worker);
            fx.event(
                EventKind::WorkerWaiting,
                Some((&worker, attempt)),
                "engine",
                question.clone(),
            );
            fx.push(Effect::Notify(format!("{worker} asks: {question}")));
        }
        Input::AnswerWorker { worker, text } => {
            let Some(w) = state.worker_mut(&worker) else {
                return;
            };
            if w.status != WorkerStatus::Waiting {
                return;
            }
            let attempt = w.attempt;
            if mem.answered.contains_key(&worker) {
                // Already answered; it has not moved yet. A second paste would be typed
                // into whatever the agent shows next.
                fx.event(
                    EventKind::AnswerIgnored,
                    Some((&worker, attempt)),
                    "user",
                    "already answered; waiting for the worker to go on",
                );
                return;
            }
            let question = w.question.clone().unwrap_or_default();
            state
                .clarification
                .worker_answers
                .push(crate::domain::clarification::WorkerAnswer {
                    worker: worker.clone(),
                    question,
                    answer: text.clone(),
                });
            mem.answered.insert(worker.clone(), fx.now);
            fx.event(
                EventKind::WorkerAnswered,
                Some((&worker, attempt)),
                "user",
                format!("answer of {} bytes pasted", text.len()),
            );
            fx.push(Effect::Paste { worker, text });
        }
        _ => {}
    }
}

/// The status and reason of an attempt that ended after crewmux asked it to.
fn killed_status(reason: KillReason, w: &WorkerState) -> (WorkerStatus, String) {
    match reason {
        KillReason::Cancel => (WorkerStatus::Cancelled, "cancelled".to_string()),
        KillReason::Timeout => (
            WorkerStatus::Timeout,
            format!("wall timeout of {}s", w.timeout_s.unwrap_or(0)),
        ),
        KillReason::IdleTimeout => (
            WorkerStatus::Timeout,
            format!("no output for {}s", w.idle_timeout_s.unwrap_or(0)),
        ),
        // `stall::check_stalls` put `stalled: <line>` in the reason when it asked.
        KillReason::Stalled => (
            WorkerStatus::Failed,
            w.reason.clone().unwrap_or_else(|| "stalled".into()),
        ),
    }
}

/// The worker `id` if `attempt` is its current attempt.
fn current<'a>(state: &'a mut RunState, id: &str, attempt: u32) -> Option<&'a mut WorkerState> {
    state.worker_mut(id).filter(|w| w.attempt == attempt)
}

/// End an attempt: set the status, update the dispatch record, and schedule a retry when
/// the status allows it and attempts remain.
#[allow(
    clippy::needless_pass_by_value,
    reason = "`finish` takes a struct in the driver split (#15, reliability)"
)]
#[allow(clippy::too_many_arguments)]
fn finish(
    state: &mut RunState,
    mem: &mut RunMemory,
    id: &str,
    attempt: u32,
    status: WorkerStatus,
    exit: Option<(i32, ExitSource)>,
    result: Option<std::path::PathBuf>,
    reason: String,
    source: &str,
    fx: &mut Effects,
) {
    mem.kills.remove(id);
    mem.answered.remove(id);
    mem.stalls.remove(id);
    let cancelled_run = mem.cancelled;
    let now = fx.now;
    let Some(w) = state.worker_mut(id) else {
        return;
    };
    let reason = super::stall::reason_with_rate_limit(reason, status, w);
    w.status = status;
    w.exit_code = exit.map(|e| e.0);
    w.ended_at = Some(now);
    w.question = None;
    w.reason = (!reason.is_empty()).then(|| reason.clone());
    if status == WorkerStatus::Completed {
        w.result = result;
    }
    let max = w.max_attempts;
    let retry = matches!(
        status,
        WorkerStatus::Failed | WorkerStatus::Timeout | WorkerStatus::Crashed
    ) && attempt < max
        && !cancelled_run
        && !mem.no_retry.remove(id);
    let code_note = exit
        .map(|(c, _)| format!(" (exit {c})"))
        .unwrap_or_default();
    update_dispatch(state, id, attempt, status, exit, &reason, now);
    fx.event(
        EventKind::worker_ended(status),
        Some((id, attempt)),
        source,
        format!(
            "{}{code_note}{}",
            status.as_str(),
            if reason.is_empty() {
                String::new()
            } else {
                format!(": {reason}")
            }
        ),
    );
    if retry {
        let mut wait = None;
        if let Some(w) = state.worker_mut(id) {
            wait = super::stall::schedule_backoff(w, attempt, now);
            w.status = WorkerStatus::Pending;
            w.reason = Some(format!(
                "retry {} of {max} after {}",
                attempt + 1,
                status.as_str()
            ));
        }
        let wait = wait.map(|s| format!(" in {s}s")).unwrap_or_default();
        fx.event(
            EventKind::WorkerRetryScheduled,
            Some((id, attempt)),
            "engine",
            format!(
                "attempt {} of {max} after {}{wait}",
                attempt + 1,
                status.as_str()
            ),
        );
    }
}

/// Update the dispatch record of `id`'s `attempt`: matched by prompt path and attempt, and
/// when two rows match, the newest is updated (the okstra seed's fix: an older row updated
/// instead would leave the live one running for good).
fn update_dispatch(
    state: &mut RunState,
    id: &str,
    attempt: u32,
    status: WorkerStatus,
    exit: Option<(i32, ExitSource)>,
    reason: &str,
    now: chrono::DateTime<chrono::Utc>,
) {
    let prompt = state
        .dispatches
        .iter()
        .rev()
        .find(|r| r.worker_id == id && r.attempt == attempt)
        .map(|r| r.prompt_path.clone());
    let Some(prompt) = prompt else {
        return;
    };
    if let Some(r) = state
        .dispatches
        .iter_mut()
        .rev()
        .find(|r| r.prompt_path == prompt && r.attempt == attempt)
    {
        r.status = status;
        r.exit_code = exit.map(|e| e.0);
        r.exit_source = exit.map(|e| e.1);
        r.reason = (!reason.is_empty()).then(|| reason.to_string());
        r.ended_at = Some(now);
    }
}

/// Ask to end workers past their wall or idle timeout (once per attempt).
pub(super) fn check_timeouts(state: &mut RunState, mem: &mut RunMemory, fx: &mut Effects) {
    for w in &state.workers {
        if !w.status.is_live()
            || w.status == WorkerStatus::Starting
            || mem.kills.contains_key(&w.id)
        {
            continue;
        }
        let wall = w
            .timeout_s
            .zip(w.started_at)
            .filter(|(t, started)| (fx.now - *started).num_milliseconds() >= (*t as i64) * 1000);
        let idle = w
            .idle_timeout_s
            .filter(|_| w.status == WorkerStatus::Running)
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
                    Some((&w.id, w.attempt)),
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
