//! How an attempt ends: its final status and reason (an exit code, a vanished pane, a kill
//! crewmux asked for), the dispatch record's update, and the retry it may earn.

use std::path::PathBuf;

use super::lifecycle::current;
use super::{Effects, KillReason, RunMemory};
use crate::domain::EventKind;
use crate::domain::{ExitSaid, ExitSource, RunState, WorkerState, WorkerStatus};

/// An observed exit (the `Input::Exited` fields besides the attempt's identity).
pub(super) struct Exit {
    pub code: i32,
    pub source: ExitSource,
    /// Required artifacts that do not exist.
    pub missing_artifacts: Vec<String>,
    /// The result file, if it exists.
    pub result: Option<PathBuf>,
    /// What the CLI's output says a non-zero exit means, when a rule matched.
    pub said: Option<ExitSaid>,
    /// When it ended by its own record (`exit.json`), if that says.
    pub at: Option<chrono::DateTime<chrono::Utc>>,
    /// The question its result ends with (see `Input::Exited`).
    pub question: Option<String>,
}

/// The attempt exited with a code: completed, failed (a missing artifact, a failing code),
/// or the status of the kill crewmux asked for.
pub(super) fn on_exited(
    state: &mut RunState,
    mem: &mut RunMemory,
    worker: &str,
    attempt: u32,
    exit: Exit,
    fx: &mut Effects,
) {
    let Some(w) = current(state, worker, attempt) else {
        return;
    };
    if !w.status.is_live() {
        return;
    }
    let killed = mem.kills.get(worker).map(|k| killed_status(k.0, w));
    let (status, reason) = match killed {
        Some(k) => k,
        // Exit 0 and its output says the API failed (`ProviderSpec::exit_zero_on_failure`):
        // that is no result.
        None if exit.code == 0 && exit.said.is_some() => (
            WorkerStatus::Failed,
            super::exits::failed_exit(state, mem, worker, attempt, 0, exit.said.as_ref(), fx),
        ),
        None if exit.code == 0 && exit.missing_artifacts.is_empty() => {
            (WorkerStatus::Completed, String::new())
        }
        None if exit.code == 0 => (
            WorkerStatus::Failed,
            format!(
                "required artifact missing: {}",
                exit.missing_artifacts.join(", ")
            ),
        ),
        None => (
            WorkerStatus::Failed,
            super::exits::failed_exit(
                state,
                mem,
                worker,
                attempt,
                exit.code,
                exit.said.as_ref(),
                fx,
            ),
        ),
    };
    let source = match exit.source {
        ExitSource::ExitFile => "exit-file",
        ExitSource::Marker => "marker",
        ExitSource::PaneStatus => "pane-status",
    };
    let end = Ending {
        worker,
        attempt,
        status,
        exit: Some((exit.code, exit.source)),
        result: exit.result,
        reason,
        source,
        at: exit.at,
    };
    finish(state, mem, end, fx);
    if let Some(question) = exit.question.filter(|_| status == WorkerStatus::Completed) {
        super::questions::ask_in_result(state, mem, worker, attempt, question, fx);
    }
}

/// The pane or process is gone with no exit code: crashed, unless crewmux ended it.
pub(super) fn on_vanished(
    state: &mut RunState,
    mem: &mut RunMemory,
    worker: &str,
    attempt: u32,
    detail: &str,
    fx: &mut Effects,
) {
    let reason = format!("vanished with no exit code: {detail}");
    on_gone(state, mem, worker, attempt, reason, fx);
}

/// The attempt is gone with no exit code: crashed with `reason`, unless crewmux ended it.
pub(super) fn on_gone(
    state: &mut RunState,
    mem: &mut RunMemory,
    worker: &str,
    attempt: u32,
    reason: String,
    fx: &mut Effects,
) {
    let Some(w) = current(state, worker, attempt) else {
        return;
    };
    if !w.status.is_live() {
        return;
    }
    let killed = mem.kills.get(worker).map(|k| killed_status(k.0, w));
    let (status, reason) = killed.unwrap_or((WorkerStatus::Crashed, reason));
    let end = Ending {
        worker,
        attempt,
        status,
        exit: None,
        result: None,
        reason,
        source: "pane-status",
        at: None,
    };
    finish(state, mem, end, fx);
}

/// The status and reason of an attempt that ended after crewmux asked it to.
fn killed_status(reason: KillReason, w: &WorkerState) -> (WorkerStatus, String) {
    match reason {
        KillReason::Cancel => (
            WorkerStatus::Cancelled,
            "ended on request (SIGTERM, grace, SIGKILL)".to_string(),
        ),
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
        KillReason::QuestionTimeout => (
            WorkerStatus::Failed,
            format!(
                "no answer to its question within {}s (question_timeout_s)",
                w.flow.question_timeout_s.unwrap_or(0)
            ),
        ),
        KillReason::Rejudge => (
            WorkerStatus::Cancelled,
            "stopped: the work it judged has changed".to_string(),
        ),
        KillReason::Budget => (
            WorkerStatus::Cancelled,
            "ended: the run's budget is spent (SIGTERM, grace, SIGKILL)".to_string(),
        ),
    }
}

/// How one attempt ended, for [`finish`].
pub(super) struct Ending<'a> {
    pub worker: &'a str,
    pub attempt: u32,
    pub status: WorkerStatus,
    /// The exit code and where it was read, when there is one.
    pub exit: Option<(i32, ExitSource)>,
    /// The result file (kept only when the attempt completed).
    pub result: Option<PathBuf>,
    /// Why, for the person (empty for a plain success).
    pub reason: String,
    /// Who decided: the event's source (`engine`, `exit-file`, `marker`, `pane-status`).
    pub source: &'a str,
    /// When the attempt ended by its own record (`exit.json`); `None`: now, when it was
    /// noticed.
    pub at: Option<chrono::DateTime<chrono::Utc>>,
}

impl<'a> Ending<'a> {
    /// A failure without a result file.
    pub fn failed(
        worker: &'a str,
        attempt: u32,
        exit: Option<(i32, ExitSource)>,
        reason: String,
        source: &'a str,
    ) -> Self {
        Ending {
            worker,
            attempt,
            status: WorkerStatus::Failed,
            exit,
            result: None,
            reason,
            source,
            at: None,
        }
    }
}

/// End an attempt: set the status, update the dispatch record, and schedule a retry when
/// the status allows it and attempts remain.
/// A worker that ends while still waiting on a question nobody answered (an agent that
/// took its own default after a while, or gave up) keeps that question in the run's
/// clarifications, marked unanswered, so `report.md` says what was asked and that the
/// answer was the agent's own.
fn keep_unanswered_question(
    state: &mut RunState,
    id: &str,
    attempt: u32,
    answered: bool,
    fx: &mut Effects,
) {
    let Some(w) = state.worker(id) else {
        return;
    };
    if w.status != WorkerStatus::Waiting || answered {
        return;
    }
    let Some(question) = w.question.clone() else {
        return;
    };
    // Answered before a reattach (which forgets `answered`): the answer is on record.
    let recorded = state
        .clarification
        .worker_answers
        .iter()
        .any(|a| a.worker == id && a.question == question);
    if recorded {
        return;
    }
    state
        .clarification
        .worker_answers
        .push(crate::domain::clarification::WorkerAnswer {
            worker: id.to_string(),
            question: question.clone(),
            answer: UNANSWERED.to_string(),
        });
    fx.event(
        EventKind::WorkerUnanswered,
        Some((id, attempt)),
        "engine",
        question,
    );
}

/// The answer recorded for a question the attempt ended without (see
/// [`keep_unanswered_question`]).
pub(super) const UNANSWERED: &str = "(not answered: the worker went on without an answer)";

pub(super) fn finish(state: &mut RunState, mem: &mut RunMemory, end: Ending, fx: &mut Effects) {
    let Ending {
        worker: id,
        attempt,
        status,
        exit,
        result,
        reason,
        source,
        at,
    } = end;
    let rejudge = matches!(mem.kills.remove(id), Some((KillReason::Rejudge, _)));
    if state.budget.is_some() {
        mem.spend_pending = true;
    }
    let answered = mem.answered.remove(id).is_some();
    let cancelled_run = mem.cancelled;
    keep_unanswered_question(state, id, attempt, answered, fx);
    let Some(w) = state.worker_mut(id) else {
        return;
    };
    let now = ended_at(at, w.started_at, fx.now);
    w.flow.stall = None;
    let reason = super::stall::reason_with_rate_limit(reason, status, w);
    w.status = status;
    w.exit_code = exit.map(|e| e.0);
    w.ended_at = Some(now);
    w.question = None;
    w.pending = None;
    w.reason = (!reason.is_empty()).then(|| reason.clone());
    if status == WorkerStatus::Completed {
        w.result = result;
    }
    let provider = w.provider.clone();
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
    super::stall::note_provider_end(&mut state.routing, &provider, status, &reason);
    update_dispatch(state, id, attempt, status, exit, &reason, now);
    fx.event(
        EventKind::worker_ended(status),
        Some((id, attempt)),
        source,
        ended_line(status, &code_note, &reason),
    );
    if retry {
        schedule_retry(state, id, attempt, status, fx);
    }
    super::breaker::note_end(
        state,
        (id, attempt),
        &provider,
        (status, exit.map(|e| e.0), &reason),
        fx,
    );
    if rejudge && !cancelled_run {
        judge_again(state, id, attempt, fx);
    }
}

/// When an attempt that started at `started` ended: the time its own record says (`at`),
/// kept between its start and `noticed` (the record comes from the clock of the machine it
/// ran on, an SSH host's maybe off), else when its end was `noticed`.
fn ended_at(
    at: Option<chrono::DateTime<chrono::Utc>>,
    started: Option<chrono::DateTime<chrono::Utc>>,
    noticed: chrono::DateTime<chrono::Utc>,
) -> chrono::DateTime<chrono::Utc> {
    let Some(at) = at else {
        return noticed;
    };
    let at = at.min(noticed);
    started.map_or(at, |s| at.max(s.min(noticed)))
}

/// The event line of an ending: `failed (exit 1): <reason>`; a lost host's reason
/// (`host lost: box unreachable …`) reads `crashed (host lost): box unreachable …`.
fn ended_line(status: WorkerStatus, code_note: &str, reason: &str) -> String {
    match reason.strip_prefix(super::hosts::HOST_LOST) {
        Some(rest) => format!("{} (host lost){code_note}: {rest}", status.as_str()),
        None if reason.is_empty() => format!("{}{code_note}", status.as_str()),
        None => format!("{}{code_note}: {reason}", status.as_str()),
    }
}

/// A judge stopped because the work changed under it (see [`KillReason::Rejudge`]): back
/// to pending for a new attempt, which the verify stage launches once the work is done.
fn judge_again(state: &mut RunState, id: &str, attempt: u32, fx: &mut Effects) {
    let Some(w) = state.worker_mut(id) else {
        return;
    };
    w.status = WorkerStatus::Pending;
    w.max_attempts = w.max_attempts.max(attempt + 1);
    w.reason = Some("judges again: the work changed".into());
    fx.event(
        EventKind::WorkerRetried,
        Some((id, attempt)),
        "engine",
        format!("attempt {} judges the new work", attempt + 1),
    );
}

/// Put the worker back to pending for its next attempt, after the back-off if any.
fn schedule_retry(
    state: &mut RunState,
    id: &str,
    attempt: u32,
    status: WorkerStatus,
    fx: &mut Effects,
) {
    let Some(w) = state.worker_mut(id) else {
        return;
    };
    let max = w.max_attempts;
    let wait = super::stall::schedule_backoff(w, attempt, fx.now);
    w.status = WorkerStatus::Pending;
    if w.flow.parked.is_some() {
        // Its reason says until when, and why (`parking::on_limit`).
        return;
    }
    w.reason = Some(format!(
        "retry {} of {max} after {}",
        attempt + 1,
        status.as_str()
    ));
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
