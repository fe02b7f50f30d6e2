//! Worker lifecycle: the inputs that concern one worker's attempt (launched, output,
//! questions and answers, exits), routed to named steps. How an attempt ends lives in
//! `ending`; timeouts and cancel, which ask for kills, in `kills`.

use super::ending::{self, Ending};
use super::{Effect, Effects, Input, RunMemory};
use crate::domain::clarification::ScreenAsk;
use crate::domain::EventKind;
use crate::domain::{DispatchRecord, ExitSource, RunState, WorkerState, WorkerStatus};

/// Apply an input that concerns one worker's attempt. Inputs for an attempt that is not
/// the worker's current one are stale (an old pane, a late marker) and are ignored.
#[allow(
    clippy::too_many_lines,
    reason = "one arm per input a worker's attempt sends"
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
            let launch = Launch {
                nonce,
                prompt_path,
                backend,
                pane_id,
                pid,
                credential_label,
            };
            on_launched(state, mem, &worker, attempt, launch, fx);
        }
        Input::LaunchFailed {
            worker,
            attempt,
            error,
        } => launch_failed(state, mem, &worker, attempt, &error, fx),
        Input::LaunchInterrupted { worker, attempt } => {
            launch_interrupted(state, &worker, attempt);
        }
        Input::CwdFailed {
            worker,
            attempt,
            code,
            dir,
        } => {
            // The directory is the same for every attempt: a retry cannot help.
            let reason = format!("cannot enter working directory {}", dir.display());
            failed_for_good(state, mem, &worker, attempt, code, reason, fx);
        }
        Input::SandboxFailed {
            worker,
            attempt,
            code,
            detail,
        } => {
            // The same fence on the same host fails the same way: no retry here.
            let reason = format!("sandbox: {detail}");
            failed_for_good(state, mem, &worker, attempt, code, reason, fx);
        }
        Input::SetupFailed {
            worker,
            attempt,
            code,
        } => {
            let reason = format!("setup failed (exit {code})");
            failed_before_agent(state, mem, &worker, attempt, code, reason, fx);
        }
        Input::Exited {
            worker,
            attempt,
            code,
            source,
            missing_artifacts,
            result,
            said,
            ended_at,
            question,
        } => {
            let exit = ending::Exit {
                code,
                source,
                missing_artifacts,
                result,
                said,
                at: ended_at,
                question,
            };
            ending::on_exited(state, mem, &worker, attempt, exit, fx);
        }
        Input::Vanished {
            worker,
            attempt,
            detail,
        } => ending::on_vanished(state, mem, &worker, attempt, &detail, fx),
        Input::Output { worker, attempt } => on_output(state, mem, &worker, attempt, fx),
        Input::Asked {
            worker,
            attempt,
            question,
        } => on_asked(state, mem, &worker, attempt, &question, fx),
        Input::AnswerWorker { worker, text } => on_answer(state, mem, worker, text, fx),
        Input::ToolAsked {
            worker,
            attempt,
            question,
        } => super::questions::on_tool_asked(state, mem, &worker, attempt, question, fx),
        Input::ToolCallGone {
            worker,
            attempt,
            call,
        } => super::questions::on_call_gone(state, mem, &worker, attempt, &call, fx),
        Input::Progress {
            worker,
            attempt,
            text,
        } => super::questions::on_progress(state, &worker, attempt, text, fx),
        Input::Signal {
            worker,
            attempt,
            signal,
        } => super::signals::on_signal(state, mem, &worker, attempt, signal, fx),
        _ => {}
    }
}

/// Where and how an attempt started (the `Input::Launched` fields besides its identity).
struct Launch {
    nonce: String,
    prompt_path: std::path::PathBuf,
    backend: String,
    pane_id: Option<String>,
    pid: Option<u32>,
    credential_label: Option<String>,
}

/// A starting attempt is running: record it, start its idle clock, add its dispatch record.
fn on_launched(
    state: &mut RunState,
    mem: &mut RunMemory,
    worker: &str,
    attempt: u32,
    launch: Launch,
    fx: &mut Effects,
) {
    let Some(w) = current(state, worker, attempt) else {
        return;
    };
    if w.status != WorkerStatus::Starting {
        return;
    }
    w.status = WorkerStatus::Running;
    let host = w.host.clone();
    let moved_from = w.moved_from.clone().filter(|_| host.is_none());
    w.pane_id = launch.pane_id.clone();
    w.pid = launch.pid;
    w.signal = None;
    w.started_at = Some(fx.now);
    w.reason = None;
    // The lead marked a launch that continues the worker's conversation.
    let resumed = w
        .flow
        .session
        .as_ref()
        .filter(|_| w.flow.resumed)
        .map(|s| s.id.clone());
    mem.last_output.insert(worker.to_string(), fx.now);
    let where_ = launch
        .pane_id
        .as_deref()
        .map(|p| format!("pane {}", crate::domain::pane_label(p)))
        .or_else(|| launch.pid.map(|p| format!("pid {p}")))
        .unwrap_or_default();
    let label_note = launch
        .credential_label
        .as_deref()
        .map(|l| format!(", credential `{l}`"))
        .unwrap_or_default();
    state.dispatches.push(DispatchRecord {
        worker_id: worker.to_string(),
        prompt_path: launch.prompt_path,
        attempt,
        backend: launch.backend,
        status: WorkerStatus::Running,
        reason: None,
        nonce: launch.nonce,
        pane_id: launch.pane_id,
        exit_code: None,
        exit_source: None,
        started_at: fx.now,
        ended_at: None,
        credential_label: launch.credential_label,
        host,
        left_on_host: false,
        moved_from: moved_from.clone(),
        session: None,
        resumed: resumed.clone(),
    });
    let moved_note = moved_from
        .map(|lost| format!(" on {} ({lost} lost)", crate::domain::LOCAL_HOST))
        .unwrap_or_default();
    fx.event(
        EventKind::WorkerStarted,
        Some((worker, attempt)),
        "engine",
        format!(
            "attempt {attempt} running in {where_}{moved_note}{label_note}{}",
            resumed
                .as_deref()
                .map(|id| format!(", resuming conversation {id}"))
                .unwrap_or_default()
        ),
    );
}

/// Keep the conversation attempt `attempt` of `worker` had: in its dispatch record, and as
/// the one the worker's next attempt continues (`crate::lead::launching` decides whether it
/// can: same provider and host, `resume` not turned off, the provider has `resume_args`).
pub(super) fn on_session(state: &mut RunState, worker: &str, attempt: u32, id: String) {
    if let Some(d) = state
        .dispatches
        .iter_mut()
        .rev()
        .find(|d| d.worker_id == worker && d.attempt == attempt)
    {
        d.session = Some(id.clone());
    }
    if let Some(w) = state.worker_mut(worker).filter(|w| w.attempt == attempt) {
        w.flow.session = Some(crate::domain::AgentSession {
            provider: w.provider.clone(),
            id,
            host: w.host.clone(),
            attempt,
        });
    }
}

/// An attempt that ended before its agent ran, for a reason a retry on this host would
/// meet again (its working directory, its fence): failed, and not retried.
fn failed_for_good(
    state: &mut RunState,
    mem: &mut RunMemory,
    worker: &str,
    attempt: u32,
    code: i32,
    reason: String,
    fx: &mut Effects,
) {
    if current(state, worker, attempt).is_some_and(|w| w.status.is_live()) {
        mem.no_retry.insert(worker.to_string());
    }
    failed_before_agent(state, mem, worker, attempt, code, reason, fx);
}

/// The attempt could not be started: it failed (and may be retried, unless its fence is
/// what this host cannot give).
fn launch_failed(
    state: &mut RunState,
    mem: &mut RunMemory,
    worker: &str,
    attempt: u32,
    error: &str,
    fx: &mut Effects,
) {
    if current(state, worker, attempt).is_none() {
        return;
    }
    // A fence this host cannot give (`sandbox: …`) is the same at every attempt.
    let reason = if error.starts_with("sandbox: ") {
        mem.no_retry.insert(worker.to_string());
        error.to_string()
    } else {
        format!("launch failed: {error}")
    };
    let end = Ending::failed(worker, attempt, None, reason, "engine");
    ending::finish(state, mem, end, fx);
}

/// See [`Input::LaunchInterrupted`]: a worker still `starting` goes back to pending with the
/// attempt uncounted, so the next launch pass starts the same attempt again.
fn launch_interrupted(state: &mut RunState, worker: &str, attempt: u32) {
    let Some(w) = current(state, worker, attempt) else {
        return;
    };
    if w.status != WorkerStatus::Starting {
        return;
    }
    w.attempt = attempt.saturating_sub(1);
    w.status = WorkerStatus::Pending;
    w.reason = Some(format!(
        "attempt {attempt} was being started when its driver ended; it starts again"
    ));
}

/// The wrapper wrote an exit file before the agent ran (its `cd` or setup failed).
fn failed_before_agent(
    state: &mut RunState,
    mem: &mut RunMemory,
    worker: &str,
    attempt: u32,
    code: i32,
    reason: String,
    fx: &mut Effects,
) {
    if current(state, worker, attempt).is_none_or(|w| !w.status.is_live()) {
        return;
    }
    let exit = Some((code, ExitSource::ExitFile));
    let end = Ending::failed(worker, attempt, exit, reason, "exit-file");
    ending::finish(state, mem, end, fx);
}

/// New output (never the echo of a paste: the driver leaves that out, `lead::echo`):
/// restart the idle clock; a waiting worker that was answered is running again.
fn on_output(
    state: &mut RunState,
    mem: &mut RunMemory,
    worker: &str,
    attempt: u32,
    fx: &mut Effects,
) {
    if current(state, worker, attempt).is_none() {
        return;
    }
    mem.last_output.insert(worker.to_string(), fx.now);
    mem.last_output_moved = true;
    moved_after_answer(state, mem, worker, attempt, fx);
}

/// The worker printed something of its own (output, a stall line): if it was answered and
/// waits no more, it is running again (`worker-resumed`). Not once it is being ended: what
/// a killed attempt prints on its way out (its wrapper's last lines) is no resumption.
pub(super) fn moved_after_answer(
    state: &mut RunState,
    mem: &mut RunMemory,
    worker: &str,
    attempt: u32,
    fx: &mut Effects,
) {
    let Some(w) = current(state, worker, attempt) else {
        return;
    };
    if w.status == WorkerStatus::Waiting
        && !mem.kills.contains_key(worker)
        && mem.answered.remove(worker).is_some()
    {
        w.status = WorkerStatus::Running;
        w.question = None;
        w.pending = None;
        fx.event(
            EventKind::WorkerResumed,
            Some((worker, attempt)),
            "engine",
            "output moved after the answer",
        );
    }
}

/// The attempt waits for input: record the question once and tell the person.
pub(super) fn on_asked(
    state: &mut RunState,
    mem: &mut RunMemory,
    worker: &str,
    attempt: u32,
    question: &str,
    fx: &mut Effects,
) {
    let Some(w) = current(state, worker, attempt) else {
        return;
    };
    if !w.status.is_live() {
        return;
    }
    let ask = ScreenAsk::parse(question);
    let question = ask.question.clone();
    if w.status == WorkerStatus::Waiting && w.question.as_deref() == Some(&question) {
        // The same question seen again (a second detector, a reattach): it was
        // recorded and announced once already.
        return;
    }
    w.status = WorkerStatus::Waiting;
    w.question = Some(question.clone());
    w.pending = Some(super::questions::screen_question(
        w.flow.question_timeout_s,
        &ask,
        fx,
    ));
    mem.answered.remove(worker);
    fx.event(
        EventKind::WorkerWaiting,
        Some((worker, attempt)),
        "engine",
        question,
    );
}

/// The person answered a waiting worker: record the answer and paste it, once.
fn on_answer(
    state: &mut RunState,
    mem: &mut RunMemory,
    worker: String,
    text: String,
    fx: &mut Effects,
) {
    if state
        .worker(&worker)
        .is_some_and(|w| w.waits_on_its_result())
    {
        super::questions::answer_in_result(state, &worker, text, fx);
        return;
    }
    let waiting = state
        .worker(&worker)
        .is_some_and(|w| w.status == WorkerStatus::Waiting);
    if waiting && super::questions::answer_tool_call(state, mem, &worker, text.clone(), fx) {
        return;
    }
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
    // The person's turn is over: the idle clock runs from the answer (the echo of the
    // paste is not output), and the question's deadline no longer applies.
    mem.last_output.insert(worker.clone(), fx.now);
    fx.event(
        EventKind::WorkerAnswered,
        Some((&worker, attempt)),
        "user",
        format!("answer of {} bytes pasted", text.len()),
    );
    fx.push(Effect::Paste { worker, text });
}

/// The worker `id` if `attempt` is its current attempt and still going: an attempt that
/// ended with a question in its result (the worker waits on it) is over, and what is seen
/// of it again (its exit found by a lead that took over, a late hook line) changes nothing.
pub(super) fn current<'a>(
    state: &'a mut RunState,
    id: &str,
    attempt: u32,
) -> Option<&'a mut WorkerState> {
    state
        .worker_mut(id)
        .filter(|w| w.attempt == attempt && !w.waits_on_its_result())
}

/// The attempt a pending worker's cancel ends: the one it never started. A retry waiting
/// for its back-off or a parked worker has ended attempt `attempt` already (its own final
/// event said how), so its cancel is the next attempt's; a worker that never ran has 0.
pub(super) fn not_started(w: &crate::domain::WorkerState) -> u32 {
    if w.attempt == 0 {
        0
    } else {
        w.attempt + 1
    }
}
