//! Steering a run while it goes: add a worker, retry a finished worker as a new attempt
//! (with an edited task, or as it was), and type a line of text into a live worker's pane.
//!
//! A worker added or retried joins the work stage of the current round. When the run had
//! already moved on (to verify, or to a final status), it goes back to work: the council of
//! the round is forgotten, the round's checks and critics wait to judge again, and a
//! finished run is reopened (`run-reopened`), so the report that ends it again covers the
//! new attempt. Workers that run `after` a retried worker and had ended wait for it again.
//!
//! [`check`] says why a request does not apply (one line for the person); [`on_steer`]
//! ignores such a request, so a stale one from the inbox changes nothing.
//!
//! A check or critic of the round still judging when the run goes back to work is stopped
//! (SIGTERM, grace, SIGKILL) and judges again as a new attempt: its verdict would be on
//! work that has changed.

use serde::{Deserialize, Serialize};

use super::{stages, Effect, Effects, RunMemory};
use crate::domain::{
    Council, EventKind, RunState, RunStatus, Stage, WorkerKind, WorkerState, WorkerStatus,
};

/// A request of the person to change a run while it goes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "steer", rename_all = "kebab-case")]
pub enum Steer {
    /// Add a worker: `id` (lowercase letters, digits and `-`, unused in the run), the role
    /// its prompt is packaged for, its provider and its task. A `command` worker has its
    /// argv in `command` (as a team file's `command = [...]`; never run through a shell)
    /// and may leave `task` empty (it is then told to run that command).
    AddWorker {
        id: String,
        role: String,
        provider: String,
        task: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        command: Option<Vec<String>>,
    },
    /// Start a new attempt of a worker that has ended; `task` (when given) replaces what
    /// it was told.
    Retry {
        worker: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        task: Option<String>,
    },
    /// Type `text` into a live worker's pane, then Enter (the delivery of an answer). For a
    /// worker waiting on a question, this is its answer.
    SendText { worker: String, text: String },
}

impl Steer {
    /// The request in a few words: `add worker tests (reviewer on codex)`, `add a worker`
    /// (its id chosen when it is added), `retry w`, `send 12 bytes to w`.
    pub fn describe(&self) -> String {
        match self {
            Steer::AddWorker {
                id, role, provider, ..
            } if id.is_empty() => format!("add a worker ({role} on {provider})"),
            Steer::AddWorker {
                id, role, provider, ..
            } => format!("add worker {id} ({role} on {provider})"),
            Steer::Retry { worker, task: None } => format!("retry {worker}"),
            Steer::Retry { worker, .. } => format!("retry {worker} with a new task"),
            Steer::SendText { worker, text } => {
                format!("send {} bytes to {worker}", text.len())
            }
        }
    }
}

/// Why `steer` does not apply to `state` now, as one line for the person; `Ok` when it
/// does. An added worker's empty id is one the engine chooses when it adds it.
///
/// # Errors
/// The message names the worker or value and what to do instead.
pub fn check(state: &RunState, steer: &Steer) -> Result<(), String> {
    match steer {
        Steer::AddWorker {
            id,
            provider,
            task,
            command,
            ..
        } => {
            if !id
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            {
                return Err(format!(
                    "worker id `{id}`: use lowercase letters, digits and `-`"
                ));
            }
            if state.worker(id).is_some() {
                return Err(format!("worker `{id}` exists already: pick another id"));
            }
            if provider.trim().is_empty() {
                return Err(format!("worker `{id}` needs a provider"));
            }
            let argv = command.as_deref().unwrap_or_default();
            if provider == "command" && argv.first().is_none_or(|p| p.trim().is_empty()) {
                return Err(format!(
                    "worker `{id}` runs a command: give it one (e.g. `pytest -q`)"
                ));
            }
            if provider != "command" && !argv.is_empty() {
                return Err(format!(
                    "worker `{id}`: a command is for provider `command`, not `{provider}`"
                ));
            }
            if task.trim().is_empty() && provider != "command" {
                return Err(format!(
                    "worker `{id}` needs a task: type what it should do"
                ));
            }
            if state.status == RunStatus::Cancelled {
                return Err("the run was cancelled: start a new run instead".into());
            }
            Ok(())
        }
        Steer::Retry { worker, task } => {
            let w = known(state, worker)?;
            if matches!(w.kind, WorkerKind::Check | WorkerKind::Critic) {
                return Err(format!(
                    "{worker} is part of the council: it judges again when a worker is retried"
                ));
            }
            if !w.status.is_terminal() {
                return Err(match w.status {
                    WorkerStatus::Pending => format!("{worker} has not started yet"),
                    s => format!("{worker} is still {s}: cancel it first (c, or crewmux cancel --worker {worker}), then retry"),
                });
            }
            if task.as_deref().is_some_and(|t| t.trim().is_empty()) {
                return Err(format!(
                    "the new task of {worker} is empty: nothing retried"
                ));
            }
            if state.status == RunStatus::Cancelled {
                return Err("the run was cancelled: start a new run instead".into());
            }
            Ok(())
        }
        Steer::SendText { worker, text } => {
            let w = known(state, worker)?;
            let goes_on = w.status.is_terminal() && goes_on_with_a_message(w);
            if !matches!(w.status, WorkerStatus::Running | WorkerStatus::Waiting) && !goes_on {
                return Err(match w.status {
                    s if s.is_terminal() && w.provider == "command" => format!(
                        "{worker} is {s} and runs a command, which has no conversation to go on with: retry it instead (r, or crewmux steer RUN retry {worker})"
                    ),
                    s if s.is_terminal() => format!(
                        "{worker} is {s} and part of the council: it judges again when a worker is retried"
                    ),
                    s => format!("{worker} is {s}: text goes only to a started worker"),
                });
            }
            if text.trim().is_empty() {
                return Err("type some text first".into());
            }
            if goes_on && state.status == RunStatus::Cancelled {
                return Err("the run was cancelled: start a new run instead".into());
            }
            Ok(())
        }
    }
}

/// The first `added-N` id no worker of `state` has: what an added worker is called when
/// the person names none.
pub fn next_added_id(state: &RunState) -> String {
    (1..)
        .map(|n| format!("added-{n}"))
        .find(|id| state.worker(id).is_none())
        .unwrap_or_default()
}

/// The provider of an added worker when the person names none, the same for `crewmux steer
/// add` and the dashboard's `+` form: the team's first worker's provider, skipping
/// `command` workers (a team file's argv, which cannot be added without one); `sim` when
/// the team has no other.
pub fn default_added_provider(state: &RunState) -> String {
    state
        .workers
        .iter()
        .filter(|w| w.kind == crate::domain::WorkerKind::Worker)
        .map(|w| w.provider.as_str())
        .find(|p| *p != "command")
        .unwrap_or("sim")
        .to_string()
}

fn known<'a>(state: &'a RunState, id: &str) -> Result<&'a WorkerState, String> {
    state
        .worker(id)
        .ok_or_else(|| format!("there is no worker `{id}` in this run"))
}

/// Apply a steering request (ignored when [`check`] refuses it).
pub(super) fn on_steer(
    state: &mut RunState,
    mem: &mut RunMemory,
    mut steer: Steer,
    fx: &mut Effects,
) {
    // An added worker the person named no id for gets the first free `added-N` now, as
    // it is added: two adds sent at once are two workers.
    if let Steer::AddWorker { id, .. } = &mut steer {
        if id.is_empty() {
            *id = next_added_id(state);
        }
    }
    if let Err(why) = check(state, &steer) {
        // Checked when it was sent, refused now (another request changed the run in
        // between): said, never dropped without a word.
        fx.event(
            EventKind::RequestRefused,
            None,
            "user",
            format!("{} not carried out: {why}", steer.describe()),
        );
        return;
    }
    match steer {
        Steer::AddWorker {
            id,
            role,
            provider,
            task,
            command,
        } => add(state, mem, [&id, &role, &provider], (task, command), fx),
        Steer::Retry { worker, task } => retry(state, mem, &worker, task, fx),
        Steer::SendText { worker, text } => send(state, mem, worker, text, fx),
    }
    stages::advance(state, mem, fx);
}

/// Add worker `id` with `role` on `provider`, told `task` (a `command` worker runs
/// `command`; with no task it is told to run it).
fn add(
    state: &mut RunState,
    mem: &mut RunMemory,
    [id, role, provider]: [&str; 3],
    (task, command): (String, Option<Vec<String>>),
    fx: &mut Effects,
) {
    let stage = work_stage(state);
    let mut w = stages::blank_worker(
        id.to_string(),
        role.to_string(),
        provider.to_string(),
        WorkerKind::Worker,
        stage,
        state.fix_round,
    );
    // Limits as the team's own workers have them (the team file's or the defaults).
    if let Some(like) = state.workers.iter().find(|x| x.kind == WorkerKind::Worker) {
        w.timeout_s = like.timeout_s;
        w.idle_timeout_s = like.idle_timeout_s;
        w.flow.stall_after_s = like.flow.stall_after_s;
        w.flow.question_timeout_s = like.flow.question_timeout_s;
        w.flow.approvals = like.flow.approvals;
        w.max_attempts = like.max_attempts;
    }
    // In the run's fence, as its checks and fixers are.
    w.flow.sandbox = state.sandbox.clone();
    w.order = state.workers.iter().map(|x| x.order).max().unwrap_or(0) + 1;
    // The argv as a shell would read it back (shown, never run through a shell).
    let line = command.as_ref().map(|argv| {
        shlex::try_join(argv.iter().map(String::as_str)).unwrap_or_else(|_| argv.join(" "))
    });
    w.task = match &line {
        Some(l) if task.trim().is_empty() => format!("Run `{l}`."),
        _ => task,
    };
    let what = match &line {
        Some(l) => format!("{role} running {l}"),
        None => format!("{role} on {provider}"),
    };
    w.command = command;
    if let Some(ws) = state.workspace.as_mut() {
        // Its worktree is made with its first launch, as the team's were.
        ws.pending.push(id.to_string());
    }
    state.workers.push(w);
    fx.event(EventKind::WorkerAdded, Some((id, 0)), "user", what);
    reopen(state, mem, &format!("{id} was added"), fx);
}

fn retry(
    state: &mut RunState,
    mem: &mut RunMemory,
    id: &str,
    task: Option<String>,
    fx: &mut Effects,
) {
    let stage = work_stage(state);
    let round = state.fix_round;
    let Some(w) = state.worker_mut(id) else {
        return;
    };
    let edited = task.is_some();
    if let Some(t) = task {
        w.task = t;
    }
    let was = w.status;
    let next = w.attempt + 1;
    w.status = WorkerStatus::Pending;
    w.reason = Some(format!(
        "retry asked after {was}{}",
        if edited { ", task edited" } else { "" }
    ));
    w.stage = stage;
    w.round = round;
    w.max_attempts = w.max_attempts.max(next);
    w.flow.retry_at = None;
    mem.no_retry.remove(id);
    fx.event(
        EventKind::WorkerRetried,
        Some((id, w.attempt)),
        "user",
        format!(
            "attempt {next} after {was}{}",
            if edited { " with an edited task" } else { "" }
        ),
    );
    wait_again_downstream(state, id, fx);
    reopen(state, mem, &format!("{id} was retried"), fx);
}

/// Workers that run after `id` and had ended go back to pending (they will see its new
/// result); and so on down the graph.
fn wait_again_downstream(state: &mut RunState, id: &str, fx: &mut Effects) {
    let (stage, round) = (work_stage(state), state.fix_round);
    let mut changed = vec![id.to_string()];
    let mut again = vec![];
    while let Some(up) = changed.pop() {
        for w in state.workers.iter_mut() {
            let judge = matches!(w.kind, WorkerKind::Check | WorkerKind::Critic);
            if w.flow.after.contains(&up) && w.status.is_terminal() && !judge {
                w.status = WorkerStatus::Pending;
                w.stage = stage;
                w.round = round;
                w.reason = Some(format!("waits for {up} again"));
                w.max_attempts = w.max_attempts.max(w.attempt + 1);
                fx.event(
                    EventKind::WorkerRetried,
                    Some((&w.id, w.attempt)),
                    "engine",
                    format!("attempt {} once {up} ends again", w.attempt + 1),
                );
                again.push((w.id.clone(), up.clone()));
                changed.push(w.id.clone());
            }
        }
    }
    for (downstream, up) in again {
        super::upstream_merge::merge_again(state, &downstream, &up);
    }
}

/// Whether text sent to `w` once it has ended goes to a next attempt that continues its
/// conversation: an agent's worker or fixer (a command has no conversation; checks,
/// critics and the synthesizer judge again when the work changes).
fn goes_on_with_a_message(w: &crate::domain::WorkerState) -> bool {
    matches!(w.kind, WorkerKind::Worker | WorkerKind::Fixer) && w.provider != "command"
}

fn send(state: &mut RunState, mem: &mut RunMemory, worker: String, text: String, fx: &mut Effects) {
    let Some(w) = state.worker(&worker) else {
        return;
    };
    if w.status.is_terminal() {
        // It has ended: the text goes to its next attempt, which continues its
        // conversation where its CLI can and whose prompt carries the message.
        let attempt = w.attempt;
        fx.event(
            EventKind::TextSent,
            Some((&worker, attempt)),
            "user",
            format!(
                "{} bytes for attempt {}, which goes on from where it ended",
                text.len(),
                attempt + 1
            ),
        );
        retry(state, mem, &worker, None, fx);
        if let Some(w) = state.worker_mut(&worker) {
            w.flow.messages.push(text);
            w.reason = Some(format!(
                "{} message",
                crate::domain::clarification::GOES_ON_WITH
            ));
        }
        return;
    }
    if w.status == WorkerStatus::Waiting {
        // The worker asked: the text is its answer (recorded and announced as one).
        super::lifecycle::on_worker_input(
            state,
            mem,
            super::Input::AnswerWorker { worker, text },
            fx,
        );
        return;
    }
    fx.event(
        EventKind::TextSent,
        Some((&worker, w.attempt)),
        "user",
        format!("{} bytes typed into the pane", text.len()),
    );
    fx.push(Effect::Paste { worker, text });
}

/// The stage new work of the current round belongs to.
fn work_stage(state: &RunState) -> Stage {
    if state.fix_round == 0 {
        Stage::TeamExec
    } else {
        Stage::TeamFix
    }
}

/// Bring the run back to work after `why`: a finished run is reopened, a run in verify goes
/// back to its work stage with the round's council forgotten and its checks and critics
/// waiting to judge again. A run still at the gate or at work is left as it is.
fn reopen(state: &mut RunState, mem: &mut RunMemory, why: &str, fx: &mut Effects) {
    let work = work_stage(state);
    if state.status.is_final() {
        state.status = RunStatus::Running;
        state.reason = None;
        state.report = None;
        mem.cancelled = false;
        fx.event(EventKind::RunReopened, None, "user", why.to_string());
    }
    if matches!(state.stage, Stage::TeamPlan) || state.stage == work {
        return;
    }
    let round = state.fix_round;
    for w in state.workers.iter_mut() {
        let judges = matches!(w.kind, WorkerKind::Check | WorkerKind::Critic);
        if judges && w.round == round && w.status.is_terminal() {
            w.status = WorkerStatus::Pending;
            w.reason = Some(format!("judges again: {why}"));
            w.max_attempts = w.max_attempts.max(w.attempt + 1);
        }
        // One still judging the old work ends now and judges again once it has ended.
        if judges && w.round == round && w.status.is_live() && !mem.kills.contains_key(&w.id) {
            mem.kills
                .insert(w.id.clone(), (super::KillReason::Rejudge, fx.now));
            fx.push(Effect::Kill {
                worker: w.id.clone(),
                attempt: w.attempt,
                reason: super::KillReason::Rejudge,
            });
            fx.event(
                EventKind::WorkerCancelRequested,
                Some((&w.id, w.attempt)),
                "engine",
                format!("judges again once it has ended: {why}"),
            );
        }
    }
    if state.council.round == Some(round) {
        state.council = Council::default();
        if state.council_history.len() > round as usize {
            state.council_history.truncate(round as usize);
        }
    }
    if let Some(ws) = state.workspace.as_mut() {
        if ws.integrated_round == Some(round) {
            ws.integrated_round = None;
        }
    }
    mem.council_requested = false;
    mem.report_requested = false;
    mem.integrate_requested = false;
    let from = state.stage;
    state.stage = work;
    fx.event(
        EventKind::StageChanged,
        None,
        "engine",
        format!("{from} → {work} ({why})"),
    );
}
