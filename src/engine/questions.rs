//! Questions that reach the person through a worker's MCP server (`ask`, `approve`), the
//! agent's `progress` lines, and the question timeout that ends every kind of worker
//! question (docs/mcp.md): an `ask` gets its default, an approval is denied, a question
//! read from the screen ends the attempt `failed`. While a worker waits, its idle and stall
//! clocks do not run (`kills::check_timeouts` counts only running workers); the answer
//! starts them again.

use chrono::Duration;

use super::approvals::Decision;
use super::{Effect, Effects, KillReason, RunMemory};
use crate::domain::clarification::{Approval, PendingQuestion, ScreenAsk, ToolReply, WorkerAnswer};
use crate::domain::{EventKind, RunState, WorkerStatus};

/// A question that came through the worker's MCP server (`Input::ToolAsked`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolQuestion {
    /// The call's id in the attempt's exchange.
    pub call: String,
    pub question: String,
    pub choices: Vec<String>,
    pub default: Option<String>,
    pub approval: Option<Approval>,
    /// For an approval: where its paths lie against the worker's worktree (the driver
    /// resolves them, `mcp::targets::reach`); read by `policy = "auto"`.
    pub reach: crate::domain::clarification::Reach,
}

/// `w` waits on its own hook notification that nobody has answered yet: the tool call
/// that comes while it waits is the actionable form of the same request (Claude Code
/// announces a permission prompt and calls its permission tool) and takes its place.
pub(super) fn hook_question_unanswered(w: &crate::domain::WorkerState, mem: &RunMemory) -> bool {
    w.pending.as_ref().is_some_and(|p| p.from_hooks) && !mem.answered.contains_key(&w.id)
}

/// The record `report.md` keeps of a question whose timeout ran out.
pub(super) fn unanswered_text(after_s: u64, default: Option<&str>) -> String {
    match default {
        Some(d) => format!("(not answered within {after_s}s: the agent's default `{d}` applied)"),
        None => format!("(not answered within {after_s}s, no default: the agent decided alone)"),
    }
}

/// The deadline of a question asked now by a worker whose limit is `timeout_s`.
fn deadline(fx: &Effects, timeout_s: Option<u64>) -> Option<chrono::DateTime<chrono::Utc>> {
    timeout_s.map(|s| fx.now + Duration::seconds(s as i64))
}

fn reply(fx: &mut Effects, worker: &str, attempt: u32, call: String, reply: ToolReply) {
    fx.push(Effect::Reply {
        worker: worker.to_string(),
        attempt,
        call,
        reply,
    });
}

/// A worker asks through its MCP server: it becomes `waiting` with the question, its
/// choices, default and deadline. Refused with an error the agent reads when the run is
/// cancelled, the worker is being ended or not live, or another question of it waits.
pub(super) fn on_tool_asked(
    state: &mut RunState,
    mem: &mut RunMemory,
    worker: &str,
    attempt: u32,
    q: ToolQuestion,
    fx: &mut Effects,
) {
    let decision = match (&q.approval, state.worker(worker)) {
        (Some(a), Some(w)) => super::approvals::decide(
            w.flow.approvals,
            &state.clarification.always_allowed,
            a,
            &q.reach,
        ),
        _ => Decision::Ask,
    };
    let Some(w) = state.worker_mut(worker).filter(|w| w.attempt == attempt) else {
        let why = "refused: this attempt is not the worker's current one".to_string();
        reply(fx, worker, attempt, q.call, ToolReply::Refused { why });
        return;
    };
    if w.pending.as_ref().and_then(|p| p.tool_call.as_deref()) == Some(q.call.as_str()) {
        // The same call seen again (a lead that took over the run): it waits already.
        return;
    }
    let refused = if mem.cancelled {
        Some("refused: the run is cancelled; stop and write what you have".to_string())
    } else if let Some((reason, _)) = mem.kills.get(worker) {
        Some(format!(
            "refused: this worker is being ended ({}); stop and write what you have",
            reason.as_str()
        ))
    } else if !w.status.is_live() {
        Some(format!("refused: this worker is {}", w.status.as_str()))
    } else if w.status == WorkerStatus::Waiting && !hook_question_unanswered(w, mem) {
        Some("refused: another question of yours waits for the person; ask one at a time".into())
    } else {
        None
    };
    if let Some(why) = refused {
        fx.event(
            EventKind::McpRefused,
            Some((worker, attempt)),
            "mcp",
            format!("question refused ({why}): {}", q.question),
        );
        reply(fx, worker, attempt, q.call, ToolReply::Refused { why });
        return;
    }
    if let Decision::Decided { reply: r, said } = decision {
        fx.event(
            EventKind::WorkerAnswered,
            Some((worker, attempt)),
            "policy",
            said,
        );
        reply(fx, worker, attempt, q.call, r);
        return;
    }
    w.status = WorkerStatus::Waiting;
    w.question = Some(q.question.clone());
    w.pending = Some(PendingQuestion {
        tool_call: Some(q.call),
        choices: q.choices,
        default: q.default,
        deadline: deadline(fx, w.flow.question_timeout_s),
        approval: q.approval,
        agent_goes_on_at: None,
        from_hooks: false,
        from_result: false,
    });
    mem.answered.remove(worker);
    fx.event(
        EventKind::WorkerWaiting,
        Some((worker, attempt)),
        "mcp",
        q.question,
    );
}

/// The deadline a question read from the screen or the log gets when it is first seen, and
/// the default and wait an explicit question said of itself (`ask`).
pub(super) fn screen_question(
    timeout_s: Option<u64>,
    ask: &ScreenAsk,
    fx: &Effects,
) -> PendingQuestion {
    PendingQuestion {
        deadline: deadline(fx, timeout_s),
        default: ask.default.clone(),
        agent_goes_on_at: ask.after_s.map(|s| fx.now + Duration::seconds(s as i64)),
        ..PendingQuestion::default()
    }
}

/// The person answered a worker waiting on a tool call: the reply goes to the call, the
/// worker runs again (its idle clock starts now). Returns false when the worker's question
/// is not a tool call (the answer is pasted instead).
pub(super) fn answer_tool_call(
    state: &mut RunState,
    mem: &mut RunMemory,
    worker: &str,
    text: String,
    fx: &mut Effects,
) -> bool {
    let Some(w) = state.worker(worker) else {
        return false;
    };
    let Some(call) = w.pending.as_ref().and_then(|p| p.tool_call.clone()) else {
        return false;
    };
    let attempt = w.attempt;
    let approval = w.pending.as_ref().and_then(|p| p.approval.clone());
    let question = w.question.clone().unwrap_or_default();
    let (r, said) = match approval {
        Some(a) => super::approvals::reply_to(&text, &a, &mut state.clarification.always_allowed),
        None => (
            ToolReply::Answer { text: text.clone() },
            format!("answer of {} bytes sent to its ask", text.len()),
        ),
    };
    let Some(w) = state.worker_mut(worker) else {
        return false;
    };
    resume(w, mem, fx.now);
    state.clarification.worker_answers.push(WorkerAnswer {
        worker: worker.to_string(),
        question,
        answer: text,
    });
    fx.event(
        EventKind::WorkerAnswered,
        Some((worker, attempt)),
        "user",
        said,
    );
    reply(fx, worker, attempt, call, r);
    true
}

/// A waiting worker runs again: question gone, idle clock and stall window start anew.
fn resume(
    w: &mut crate::domain::WorkerState,
    mem: &mut RunMemory,
    now: chrono::DateTime<chrono::Utc>,
) {
    w.status = WorkerStatus::Running;
    w.question = None;
    w.pending = None;
    w.flow.stall = None;
    mem.last_output.insert(w.id.clone(), now);
    mem.answered.remove(&w.id);
}

/// The tool call `call` is gone (its server died): the worker runs again, the question is
/// kept as unanswered.
pub(super) fn on_call_gone(
    state: &mut RunState,
    mem: &mut RunMemory,
    worker: &str,
    attempt: u32,
    call: &str,
    fx: &mut Effects,
) {
    let Some(w) = state.worker_mut(worker).filter(|w| w.attempt == attempt) else {
        return;
    };
    if w.pending.as_ref().and_then(|p| p.tool_call.as_deref()) != Some(call) {
        return;
    }
    let question = w.question.clone().unwrap_or_default();
    resume(w, mem, fx.now);
    state.clarification.worker_answers.push(WorkerAnswer {
        worker: worker.to_string(),
        question: question.clone(),
        answer: "(not answered: the worker's MCP server ended while it waited)".into(),
    });
    fx.event(
        EventKind::WorkerUnanswered,
        Some((worker, attempt)),
        "mcp",
        question,
    );
}

/// A `progress` line: shown, never read as a status.
pub(super) fn on_progress(
    state: &mut RunState,
    worker: &str,
    attempt: u32,
    text: String,
    fx: &mut Effects,
) {
    let Some(w) = state.worker_mut(worker).filter(|w| w.attempt == attempt) else {
        return;
    };
    if !w.status.is_live() || w.progress.as_deref() == Some(text.as_str()) {
        return;
    }
    w.progress = Some(text.clone());
    fx.event(
        EventKind::WorkerProgress,
        Some((worker, attempt)),
        "mcp",
        text,
    );
}

/// Attempt `attempt` of `worker` completed with a result whose last paragraph asks the
/// person `question` (docs/design.md "A question in a result"): a worker of the team's
/// work (a worker or fixer on an agent CLI, not a `command`, check, critic or
/// synthesizer) waits on it with the worker's question timeout; its result is kept and
/// stands if nobody answers. Nothing when the run is cancelled.
pub(super) fn ask_in_result(
    state: &mut RunState,
    mem: &mut RunMemory,
    worker: &str,
    attempt: u32,
    question: String,
    fx: &mut Effects,
) {
    use crate::domain::WorkerKind;
    if mem.cancelled {
        return;
    }
    let Some(w) = state.worker_mut(worker).filter(|w| w.attempt == attempt) else {
        return;
    };
    let asks = matches!(w.kind, WorkerKind::Worker | WorkerKind::Fixer)
        && w.provider != "command"
        && w.status == WorkerStatus::Completed;
    if !asks {
        return;
    }
    w.status = WorkerStatus::Waiting;
    w.question = Some(question.clone());
    w.pending = Some(PendingQuestion {
        deadline: deadline(fx, w.flow.question_timeout_s),
        from_result: true,
        ..PendingQuestion::default()
    });
    mem.answered.remove(worker);
    fx.event(
        EventKind::WorkerWaiting,
        Some((worker, attempt)),
        "result",
        question,
    );
}

/// The person answered the question `worker`'s result ended with: the answer is recorded
/// (the next attempt's prompt carries it) and the worker starts its next attempt, which
/// continues the conversation where its CLI can (`lead::launching::resume`).
pub(super) fn answer_in_result(state: &mut RunState, worker: &str, text: String, fx: &mut Effects) {
    let Some(w) = state.worker_mut(worker).filter(|w| w.waits_on_its_result()) else {
        return;
    };
    let question = w.question.take().unwrap_or_default();
    let attempt = w.attempt;
    w.pending = None;
    w.status = WorkerStatus::Pending;
    w.reason = Some(format!(
        "{} answer",
        crate::domain::clarification::GOES_ON_WITH
    ));
    w.max_attempts = w.max_attempts.max(attempt + 1);
    w.flow.retry_at = None;
    w.ended_at = None;
    fx.event(
        EventKind::WorkerAnswered,
        Some((worker, attempt)),
        "user",
        format!(
            "answer of {} bytes: attempt {} goes on with it",
            text.len(),
            attempt + 1
        ),
    );
    state.clarification.worker_answers.push(WorkerAnswer {
        worker: worker.to_string(),
        question,
        answer: text,
    });
}

/// The question `w`'s result ended with got no answer in time (or the worker was
/// cancelled while it waited): the attempt's result stands as written, the question is
/// kept as unanswered for the report.
fn result_stands(state: &mut RunState, id: &str, why: &str, by: &str, fx: &mut Effects) {
    let Some(w) = state.worker_mut(id).filter(|w| w.waits_on_its_result()) else {
        return;
    };
    let attempt = w.attempt;
    let question = w.question.take().unwrap_or_default();
    w.pending = None;
    w.status = WorkerStatus::Completed;
    state.clarification.worker_answers.push(WorkerAnswer {
        worker: id.to_string(),
        question: question.clone(),
        answer: format!("(not answered {why}: the result stands as written)"),
    });
    fx.event(
        EventKind::WorkerUnanswered,
        Some((id, attempt)),
        by,
        format!("not answered {why}, its result stands: {question}"),
    );
}

/// Cancel reached `id` while it waited on its result's question: it has no process to
/// end; its result stands.
pub(super) fn cancel_in_result(state: &mut RunState, id: &str, fx: &mut Effects) {
    result_stands(state, id, "before the cancel", "user", fx);
}

/// Every waiting worker whose question's deadline has passed: a tool call gets the
/// timeout's reply and the worker runs on; a screen question ends the attempt.
pub(super) fn check_deadlines(state: &mut RunState, mem: &mut RunMemory, fx: &mut Effects) {
    let now = fx.now;
    let due: Vec<String> = state
        .workers
        .iter()
        // An answered question has no deadline: the worker's idle clock runs instead.
        .filter(|w| {
            w.status == WorkerStatus::Waiting
                && !mem.kills.contains_key(&w.id)
                && !mem.answered.contains_key(&w.id)
        })
        .filter(|w| {
            w.pending
                .as_ref()
                .and_then(|p| p.deadline)
                .is_some_and(|d| d <= now)
        })
        .map(|w| w.id.clone())
        .collect();
    for id in due {
        let Some(w) = state.worker_mut(&id) else {
            continue;
        };
        let attempt = w.attempt;
        let after_s = w.flow.question_timeout_s.unwrap_or(0);
        let pending = w.pending.clone().unwrap_or_default();
        let question = w.question.clone().unwrap_or_default();
        if pending.from_result {
            result_stands(state, &id, &format!("within {after_s}s"), "timer", fx);
            continue;
        }
        let Some(call) = pending.tool_call else {
            mem.kills
                .insert(id.clone(), (KillReason::QuestionTimeout, now));
            fx.event(
                EventKind::WorkerTimeout,
                Some((&id, attempt)),
                "timer",
                format!("no answer to its question within {after_s}s"),
            );
            fx.push(Effect::Kill {
                worker: id.clone(),
                attempt,
                reason: KillReason::QuestionTimeout,
            });
            continue;
        };
        let r = match &pending.approval {
            Some(_) => ToolReply::TimedOut {
                after_s,
                default: None,
            },
            None => ToolReply::TimedOut {
                after_s,
                default: pending.default.clone(),
            },
        };
        resume(w, mem, now);
        state.clarification.worker_answers.push(WorkerAnswer {
            worker: id.clone(),
            question: question.clone(),
            answer: unanswered_text(after_s, pending.default.as_deref()),
        });
        fx.event(
            EventKind::WorkerUnanswered,
            Some((&id, attempt)),
            "timer",
            format!("no answer within {after_s}s: {question}"),
        );
        reply(fx, &id, attempt, call, r);
    }
}
