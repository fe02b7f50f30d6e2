//! The pure state machine of a run: `update(state, memory, now, input) -> effects`.
//! No tokio, tmux, clock or filesystem here: the driver feeds inputs (observed exits,
//! output activity, user answers, timer ticks) and carries out the effects.

pub mod approvals;
mod breaker;
mod budget;
mod ending;
mod exits;
#[cfg(test)]
mod exits_tests;
pub mod graph;
#[cfg(test)]
mod graph_tests;
mod hosts;
mod integrate;
#[cfg(test)]
mod integrate_tests;
mod kills;
mod late_result;
mod lifecycle;
mod panes;
pub mod parking;
pub mod questions;
#[cfg(test)]
mod questions_tests;
mod race;
#[cfg(test)]
mod result_question_tests;
#[cfg(test)]
mod sandbox_tests;
mod signals;
#[cfg(test)]
mod signals_tests;
mod stages;
pub mod stall;
#[cfg(test)]
mod stall_tests;
pub mod steer;
#[cfg(test)]
mod steer_tests;
#[cfg(test)]
pub(crate) mod tests;
#[cfg(test)]
mod tests_resume;
pub mod upstream_merge;
#[cfg(test)]
mod upstream_merge_tests;

use std::collections::HashMap;
use std::path::PathBuf;

use chrono::{DateTime, Utc};

pub use integrate::{fixer_agent, IntegrationOutcome, INTEGRATION_CRITIC};

use crate::domain::{
    ClarificationGate, CriticVerdict, EventKind, ExitSource, RunEvent, RunState, RunStatus,
    WorkerStatus,
};

/// Why the engine asked for a worker's process group to be ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KillReason {
    /// Wall-clock timeout.
    Timeout,
    /// No new output for the idle timeout.
    IdleTimeout,
    /// The user cancelled.
    Cancel,
    /// Output has been only the provider's stall lines for `stall_after_s`.
    Stalled,
    /// A question (seen on the worker's screen) waited past its `question_timeout_s`.
    QuestionTimeout,
    /// A check or critic was still judging work that a steer has since changed (a worker
    /// added or retried): it ends, then judges the new work as a new attempt.
    Rejudge,
    /// The run's budget is spent (`budget::on_spent`).
    Budget,
}

impl KillReason {
    /// Why, in words for the log: `wall timeout`, `idle timeout`, `cancel`, `stalled`,
    /// `rejudge`.
    pub fn as_str(self) -> &'static str {
        match self {
            KillReason::Timeout => "wall timeout",
            KillReason::IdleTimeout => "idle timeout",
            KillReason::Cancel => "cancel",
            KillReason::Stalled => "stalled",
            KillReason::Rejudge => "rejudge",
            KillReason::QuestionTimeout => "question timeout",
            KillReason::Budget => "budget",
        }
    }
}

/// Something that happened, fed to [`update`].
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    /// Start (or continue) the run: gate, then launch what can be launched.
    Start,
    /// What the run's workers have spent so far (the driver sums every attempt's usage,
    /// `lead::budget`): checked against the run's budget.
    Spent(crate::domain::Spend),
    /// Periodic: timeouts and scheduling.
    Tick,
    /// The attempt's process is up.
    Launched {
        worker: String,
        attempt: u32,
        nonce: String,
        prompt_path: PathBuf,
        backend: String,
        pane_id: Option<String>,
        pid: Option<u32>,
        credential_label: Option<String>,
    },
    /// The attempt could not be started.
    LaunchFailed {
        worker: String,
        attempt: u32,
        error: String,
    },
    /// The process that was starting the attempt ended (a killed or quit driver) before the
    /// attempt was recorded as started: it ran no agent the run knows of, so it costs no
    /// attempt and is launched again under the same number (that launch ends whatever the
    /// cut-short one left running: `crate::launch::wrapper_nonce`).
    LaunchInterrupted { worker: String, attempt: u32 },
    /// The attempt exited with `code` (the order of trust in docs/design.md "Exit evidence"
    /// decides `source`).
    Exited {
        worker: String,
        attempt: u32,
        code: i32,
        source: ExitSource,
        /// Required artifacts that do not exist.
        missing_artifacts: Vec<String>,
        /// The result file, if it exists.
        result: Option<PathBuf>,
        /// What the CLI's output says a non-zero exit means (its provider's `exit_output`
        /// rules), when a rule matched.
        said: Option<crate::domain::ExitSaid>,
        /// When it ended, as its `exit.json` says (the attempt's `ended_at`); `None`: the
        /// record has no time (or there is none), and the time it was noticed counts.
        ended_at: Option<chrono::DateTime<chrono::Utc>>,
        /// The question the result's last paragraph asks the person
        /// (`clarification::in_result::closing_question`), read for an agent's attempt
        /// that exited 0: a worker of the team's work waits on it instead of completing.
        question: Option<String>,
    },
    /// The agent CLI named its conversation `id` in an attempt's output (sent before the
    /// attempt's end): kept in its dispatch record and for the worker's next attempt.
    Session {
        worker: String,
        attempt: u32,
        id: String,
    },
    /// The pane or process is gone and no exit code can be found.
    Vanished {
        worker: String,
        attempt: u32,
        detail: String,
    },
    /// New output from the attempt (other than stall lines).
    Output { worker: String, attempt: u32 },
    /// A line matching the provider's `stall_patterns` (see `stall`).
    StallLine {
        worker: String,
        attempt: u32,
        line: String,
    },
    /// A line matching the provider's rate-limit patterns: the `rate-limited` mark.
    RateLimited {
        worker: String,
        attempt: u32,
        line: String,
    },
    /// The attempt waits for input with this question.
    Asked {
        worker: String,
        attempt: u32,
        question: String,
    },
    /// The attempt asked through its MCP server (`ask`, or `approve` with `approval`).
    ToolAsked {
        worker: String,
        attempt: u32,
        question: questions::ToolQuestion,
    },
    /// The attempt's MCP server ended while the tool call `call` waited.
    ToolCallGone {
        worker: String,
        attempt: u32,
        call: String,
    },
    /// What the attempt's own hooks said (`mcp::hooks`): working, waiting, turn ended.
    Signal {
        worker: String,
        attempt: u32,
        signal: crate::domain::AgentSignal,
    },
    /// A line the attempt sent through its MCP server's `progress` tool.
    Progress {
        worker: String,
        attempt: u32,
        text: String,
    },
    /// The user answered a waiting worker.
    AnswerWorker { worker: String, text: String },
    /// The user answered the run-level question.
    AnswerRun { text: String },
    /// The gate's decision (after `Effect::EvaluateGate`).
    Gate(ClarificationGate),
    /// The council's verdicts (after `Effect::RunCouncil`).
    CouncilReady(Vec<CriticVerdict>),
    /// `report.md` was written (after `Effect::WriteReport`).
    ReportWritten { path: PathBuf, bytes: u64 },
    /// Cancel one worker, or all of them and the run.
    Cancel { worker: Option<String> },
    /// The integration pass ended (after `Effect::Integrate`).
    Integrated(IntegrationOutcome),
    /// The team's checks on the candidates of race `task` ended (after
    /// `Effect::RaceChecks`): each candidate's results, by its id.
    RaceChecked {
        task: String,
        results: std::collections::BTreeMap<String, Vec<crate::domain::RaceCheck>>,
    },
    /// A worker's upstreams' branches were merged into its worktree (after
    /// `Effect::MergeUpstreams`; see `upstream_merge`).
    UpstreamsMerged {
        worker: String,
        outcome: IntegrationOutcome,
    },
    /// The attempt's wrapper could not enter its working directory `dir` and ended with
    /// `code` before starting the agent.
    CwdFailed {
        worker: String,
        attempt: u32,
        code: i32,
        dir: PathBuf,
    },
    /// The attempt's fence (`[sandbox]`) could not start, so its agent never ran: bwrap
    /// ended with `code` and said `detail`.
    SandboxFailed {
        worker: String,
        attempt: u32,
        code: i32,
        detail: String,
    },
    /// The attempt's `[workspace] setup` exited non-zero with `code`.
    SetupFailed {
        worker: String,
        attempt: u32,
        code: i32,
    },
    /// The person steers the run: add a worker, retry one, send text (see `steer`). A
    /// finished run is reopened by an added or retried worker.
    Steer(steer::Steer),
    /// The attempt's pane is not there any more (see `panes`).
    PaneGone { worker: String, attempt: u32 },
    /// An SSH host did not answer for longer than its limit (see `hosts`).
    HostLost { host: String, detail: String },
    /// A completed attempt's result, taken from its output after its exit was settled
    /// (see `late_result`).
    ResultTaken {
        worker: String,
        attempt: u32,
        result: PathBuf,
    },
}

/// What the driver must do.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Prepare the attempt (prompt, wrapper) and start it.
    Launch { worker: String, attempt: u32 },
    /// End the attempt's process group: SIGTERM, grace, SIGKILL.
    Kill {
        worker: String,
        attempt: u32,
        reason: KillReason,
    },
    /// Paste `text` into the worker (bracketed paste, then Enter).
    Paste { worker: String, text: String },
    /// Write `reply` for the MCP tool call `call` of the attempt (its `reply-<call>.json`).
    Reply {
        worker: String,
        attempt: u32,
        call: String,
        reply: crate::domain::clarification::ToolReply,
    },
    /// Run the gate over the problem and answers, then feed `Input::Gate`.
    EvaluateGate,
    /// Run the critics over the workers' results, then feed `Input::CouncilReady`.
    RunCouncil,
    /// Write `report.md`, then feed `Input::ReportWritten`.
    WriteReport,
    /// Merge the completed workers' branches into the integration branch, then feed
    /// `Input::Integrated`.
    Integrate,
    /// Merge the completed upstreams' branches of `worker` into its worktree, then feed
    /// `Input::UpstreamsMerged`. With `fixer` a conflict stops the pass and waits for a
    /// merge-fixer; without, it is aborted and that upstream left out.
    MergeUpstreams { worker: String, fixer: bool },
    /// Run the team's checks on each of `candidates` (their worktrees) of race `task`,
    /// then feed `Input::RaceChecked`.
    RaceChecks {
        task: String,
        candidates: Vec<String>,
    },
    /// Append to `events.jsonl` (and log it).
    Event(RunEvent),
    /// The run reached a final status.
    Finished,
}

/// Per-run facts that are not saved: timers, pending kills and what was already asked for.
/// A new process (`resume`) starts with an empty one (`RunMemory::default()`).
#[derive(Debug, Default, Clone)]
pub struct RunMemory {
    /// Races whose candidates' checks this driver asked for (`Effect::RaceChecks`).
    pub race_checks_asked: std::collections::HashSet<String>,
    /// An attempt ended in a run with a budget: nothing new starts until the driver has
    /// summed the spend again (`Input::Spent`), so the attempt that spent the rest cannot
    /// hand its slot to one the budget no longer allows.
    pub spend_pending: bool,
    /// Last time each worker produced output.
    pub last_output: HashMap<String, DateTime<Utc>>,
    /// Kills asked for, by worker, and when.
    pub kills: HashMap<String, (KillReason, DateTime<Utc>)>,
    /// Workers answered but not yet seen producing output again.
    pub answered: HashMap<String, DateTime<Utc>>,
    /// The run was cancelled by the user.
    pub cancelled: bool,
    /// `RunCouncil` was asked for the current verify stage.
    pub council_requested: bool,
    /// Some worker produced output since the driver last looked (for its back-off).
    pub last_output_moved: bool,
    /// `Integrate` was asked for and its outcome has not arrived.
    pub integrate_requested: bool,
    /// Workers whose `MergeUpstreams` was asked for and has not come back.
    pub merging: std::collections::HashSet<String>,
    /// Workers whose upstream conflict no merge-fixer can take (tried, or no agent): their
    /// next merge pass leaves it out.
    pub no_fixer: std::collections::HashSet<String>,
    /// Workers whose attempt just ended with a declared exit code and no other provider to
    /// move to: not retried (see `exits`).
    pub no_retry: std::collections::HashSet<String>,
    /// `WriteReport` was asked for the current verify stage.
    pub report_requested: bool,
    /// No process drives the run (`status`, `cancel`, `answer` on a detached run): inputs
    /// are recorded, nothing new is launched and the gate is left for the next `resume`.
    pub offline: bool,
}

/// Apply one input to the run; returns the effects to carry out, in order.
pub fn update(
    state: &mut RunState,
    mem: &mut RunMemory,
    now: DateTime<Utc>,
    input: Input,
) -> Vec<Effect> {
    let mut fx = Effects {
        now,
        out: Vec::new(),
    };
    if let Input::PaneGone { worker, attempt } = &input {
        // Also after the run ended: the dashboard still shows it.
        panes::on_pane_gone(state, worker, *attempt, &mut fx);
        return fx.out;
    }
    if let Input::ResultTaken {
        worker,
        attempt,
        result,
    } = &input
    {
        // Also after the run ended: status and the summary read it.
        late_result::on_result_taken(state, worker, *attempt, result, &mut fx);
        if !fx.out.is_empty() {
            state.updated_at = now;
        }
        return fx.out;
    }
    if let Input::Steer(s) = input {
        steer::on_steer(state, mem, s, &mut fx);
        if !fx.out.is_empty() {
            state.updated_at = now;
        }
        return fx.out;
    }
    if state.status.is_final() {
        return fx.out;
    }
    match input {
        Input::Start => stages::start(state, mem, &mut fx),
        Input::Spent(spend) => {
            mem.spend_pending = false;
            budget::on_spent(state, mem, spend, &mut fx);
            stages::advance(state, mem, &mut fx);
        }
        Input::Tick => {
            kills::check_timeouts(state, mem, &mut fx);
            questions::check_deadlines(state, mem, &mut fx);
            stall::check_stalls(state, mem, &mut fx);
            stages::advance(state, mem, &mut fx);
        }
        Input::StallLine {
            worker,
            attempt,
            line,
        } => {
            lifecycle::moved_after_answer(state, mem, &worker, attempt, &mut fx);
            stall::on_stall_line(state, &worker, attempt, line, &mut fx);
        }
        Input::RateLimited {
            worker,
            attempt,
            line,
        } => stall::on_rate_limited(state, &worker, attempt, line, &mut fx),
        Input::Gate(gate) => stages::on_gate(state, mem, gate, &mut fx),
        Input::AnswerRun { text } => stages::on_run_answer(state, mem, text, &mut fx),
        Input::CouncilReady(verdicts) => stages::on_council(state, mem, verdicts, &mut fx),
        Input::ReportWritten { path, bytes } => stages::on_report(state, path, bytes, &mut fx),
        Input::Integrated(outcome) => {
            integrate::on_outcome(state, mem, outcome, &mut fx);
            stages::advance(state, mem, &mut fx);
        }
        Input::RaceChecked { task, results } => {
            race::on_checked(state, &task, results);
            stages::advance(state, mem, &mut fx);
        }
        Input::UpstreamsMerged { worker, outcome } => {
            upstream_merge::on_outcome(state, mem, &worker, outcome, &mut fx);
            stages::advance(state, mem, &mut fx);
        }
        Input::Cancel { worker } => {
            kills::cancel(state, mem, worker.as_deref(), &mut fx);
            stages::advance(state, mem, &mut fx);
        }
        Input::HostLost { host, detail } => {
            hosts::on_host_lost(state, mem, &host, &detail, &mut fx);
            stages::advance(state, mem, &mut fx);
        }
        Input::Session {
            worker,
            attempt,
            id,
        } => lifecycle::on_session(state, &worker, attempt, id),
        other => {
            if let Input::Output { worker, .. } = &other {
                stall::on_output(state, worker);
            }
            lifecycle::on_worker_input(state, mem, other, &mut fx);
            stages::advance(state, mem, &mut fx);
        }
    }
    if !fx.out.is_empty() {
        state.updated_at = now;
    }
    fx.out
}

/// Collects effects with the current time for event stamps.
pub(crate) struct Effects {
    now: DateTime<Utc>,
    out: Vec<Effect>,
}

impl Effects {
    pub(crate) fn push(&mut self, effect: Effect) {
        self.out.push(effect);
    }

    /// Record an event: `kind` kebab case, `source` who observed it.
    pub(crate) fn event(
        &mut self,
        kind: EventKind,
        worker: Option<(&str, u32)>,
        source: &str,
        message: impl Into<String>,
    ) {
        self.out.push(Effect::Event(RunEvent {
            ts: self.now,
            kind,
            worker: worker.map(|(w, _)| w.to_string()),
            attempt: worker.map(|(_, a)| a),
            source: source.to_string(),
            message: message.into(),
        }));
    }
}

/// True when no worker of the run will change without a new attempt.
pub fn all_terminal(state: &RunState) -> bool {
    state.workers.iter().all(|w| w.status.is_terminal())
}

/// Count of workers with a live attempt.
pub fn live_count(state: &RunState) -> usize {
    state.workers.iter().filter(|w| w.status.is_live()).count()
}

/// The first worker waiting for an answer, if any.
pub fn first_waiting(state: &RunState) -> Option<&str> {
    state
        .workers
        .iter()
        .find(|w| w.status == WorkerStatus::Waiting)
        .map(|w| w.id.as_str())
}

/// True while the run is stopped at a run-level question.
pub fn is_halted(state: &RunState) -> bool {
    state.status == RunStatus::Halted
}

/// Constructors other layers need to build a run's workers.
pub mod stages_public {
    pub use super::stages::blank_worker;
}
