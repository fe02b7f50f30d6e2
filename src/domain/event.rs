//! What a line of `events.jsonl` records: [`EventKind`], written as its kebab-case name.

use serde::{Deserialize, Serialize};

use super::{RunStatus, WorkerStatus};

/// The kind of a run event, serialised as its name (`worker-started`, `stage-changed`, ...).
/// A name this build does not know (a newer build's file) reads as [`EventKind::Other`]
/// and is written back unchanged.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum EventKind {
    WorkerStarted,
    /// An attempt started again after a restart of the driver (its start is in the log).
    WorkerRelaunched,
    WorkerResumed,
    WorkerWaiting,
    WorkerAnswered,
    /// A worker's attempt ended while its question was still unanswered (the agent went on
    /// with a default of its own, or stopped): the question is kept for the report.
    WorkerUnanswered,
    WorkerStalling,
    WorkerStalled,
    WorkerRateLimited,
    /// A worker's provider said its usage limit is reached until a time: the worker waits
    /// for it (`engine::parking`).
    WorkerParked,
    /// The team's checks run on a race's candidates.
    RaceChecking,
    /// A race is ranked: its ranking and pick.
    RaceRanked,
    WorkerRetryScheduled,
    WorkerCancelRequested,
    WorkerSkipped,
    WorkerCompleted,
    WorkerFailed,
    WorkerTimeout,
    WorkerCrashed,
    WorkerCancelled,
    /// Processes of an ended attempt alive after SIGKILL (named in the message).
    AttemptSurvivors,
    /// The pane of an ended attempt is gone (its server restarted, or it was killed): the
    /// worker has no pane to show or attach to any more.
    PaneGone,
    AnswerIgnored,
    CredentialRotated,
    ProviderSwitched,
    /// A provider's attempts kept ending in timeouts, crashes or stalls: the circuit
    /// breaker opened it for the run (docs/failures.md "Circuit breaker").
    ProviderOpened,
    /// The run has spent `domain::budget::WARN_AT` of its budget.
    BudgetWarning,
    /// The run's budget is spent: nothing more starts, the run ends `failed`.
    BudgetSpent,
    ClarificationAnswered,
    GatePassed,
    StageChanged,
    CriticVerdict,
    FixSkipped,
    Council,
    Integrated,
    IntegrationFailed,
    MergeConflict,
    RunHalted,
    RunResumed,
    RunDone,
    RunFailed,
    RunCancelled,
    /// The person added a worker to the run.
    WorkerAdded,
    /// The person asked for a new attempt of an ended worker (or one downstream of it waits
    /// for it again).
    WorkerRetried,
    /// The person typed a line of text into a live worker's pane.
    TextSent,
    /// A finished run went back to work (a worker was added or retried).
    RunReopened,
    /// Something planning the run found that the person should read (crewmux copied to a
    /// host, a host that cannot run it, uncommitted changes left out of the worktrees).
    PlanNotice,
    /// A completed attempt's result was taken from its output after its exit.
    ResultTaken,
    /// A worker's SSH host was lost: the worker runs on this machine from then on (its
    /// next attempt, or the one held back while the host did not answer).
    WorkerMoved,
    /// `state.json` changed under the driver into a file it cannot read: the file is kept
    /// and the run's state is saved next to it (`state.json.crewmux-saved`) instead.
    StateSavedAside,
    /// A request another process put in the run's inbox that the driver could not carry
    /// out (the message says which and why), so that nothing asked is dropped in silence.
    RequestRefused,
    /// A line the agent sent through its MCP server's `progress` tool.
    WorkerProgress,
    /// Something an attempt's MCP server wrote that does not belong to that attempt (another
    /// run's, worker's or attempt's nonce), refused.
    McpRefused,
    /// An attempt's MCP server ended without saying so (killed, crashed); the worker goes on.
    McpServerDied,
    /// The agent's own hooks said its turn ended (Claude Code `Stop`, Gemini CLI
    /// `AfterAgent`, Codex `agent-turn-complete`), or failed (Claude Code `StopFailure`,
    /// the message names its error); docs/mcp.md "Status from the agents' hooks".
    WorkerTurnEnded,
    /// A hook event that does not belong to the attempt (another nonce, another session),
    /// refused: it changes nothing.
    HookRefused,
    /// `[notify] command` could not be started, failed or ran past its timeout (the
    /// message says which); the run goes on.
    NotifyFailed,
    /// A name this build does not know.
    Other(String),
}

/// Every known kind, for parsing.
const KNOWN: [EventKind; 57] = [
    EventKind::WorkerStarted,
    EventKind::WorkerRelaunched,
    EventKind::WorkerResumed,
    EventKind::WorkerWaiting,
    EventKind::WorkerAnswered,
    EventKind::WorkerUnanswered,
    EventKind::WorkerStalling,
    EventKind::WorkerStalled,
    EventKind::WorkerRateLimited,
    EventKind::WorkerParked,
    EventKind::RaceChecking,
    EventKind::RaceRanked,
    EventKind::WorkerRetryScheduled,
    EventKind::WorkerCancelRequested,
    EventKind::WorkerSkipped,
    EventKind::WorkerCompleted,
    EventKind::WorkerFailed,
    EventKind::WorkerTimeout,
    EventKind::WorkerCrashed,
    EventKind::WorkerCancelled,
    EventKind::AttemptSurvivors,
    EventKind::PaneGone,
    EventKind::AnswerIgnored,
    EventKind::CredentialRotated,
    EventKind::ProviderSwitched,
    EventKind::ProviderOpened,
    EventKind::BudgetWarning,
    EventKind::BudgetSpent,
    EventKind::ClarificationAnswered,
    EventKind::GatePassed,
    EventKind::StageChanged,
    EventKind::CriticVerdict,
    EventKind::FixSkipped,
    EventKind::Council,
    EventKind::Integrated,
    EventKind::IntegrationFailed,
    EventKind::MergeConflict,
    EventKind::RunHalted,
    EventKind::RunResumed,
    EventKind::RunDone,
    EventKind::RunFailed,
    EventKind::RunCancelled,
    EventKind::WorkerAdded,
    EventKind::WorkerRetried,
    EventKind::TextSent,
    EventKind::RunReopened,
    EventKind::PlanNotice,
    EventKind::ResultTaken,
    EventKind::WorkerMoved,
    EventKind::StateSavedAside,
    EventKind::RequestRefused,
    EventKind::WorkerProgress,
    EventKind::McpRefused,
    EventKind::McpServerDied,
    EventKind::WorkerTurnEnded,
    EventKind::HookRefused,
    EventKind::NotifyFailed,
];

impl EventKind {
    /// The name written to `events.jsonl`.
    pub fn as_str(&self) -> &str {
        match self {
            EventKind::WorkerStarted => "worker-started",
            EventKind::WorkerRelaunched => "worker-relaunched",
            EventKind::WorkerResumed => "worker-resumed",
            EventKind::WorkerWaiting => "worker-waiting",
            EventKind::WorkerAnswered => "worker-answered",
            EventKind::WorkerUnanswered => "worker-unanswered",
            EventKind::WorkerStalling => "worker-stalling",
            EventKind::WorkerStalled => "worker-stalled",
            EventKind::WorkerRateLimited => "worker-rate-limited",
            EventKind::WorkerParked => "worker-parked",
            EventKind::RaceChecking => "race-checking",
            EventKind::RaceRanked => "race-ranked",
            EventKind::WorkerRetryScheduled => "worker-retry-scheduled",
            EventKind::WorkerCancelRequested => "worker-cancel-requested",
            EventKind::WorkerSkipped => "worker-skipped",
            EventKind::WorkerCompleted => "worker-completed",
            EventKind::WorkerFailed => "worker-failed",
            EventKind::WorkerTimeout => "worker-timeout",
            EventKind::WorkerCrashed => "worker-crashed",
            EventKind::WorkerCancelled => "worker-cancelled",
            EventKind::AttemptSurvivors => "attempt-survivors",
            EventKind::PaneGone => "pane-gone",
            EventKind::AnswerIgnored => "answer-ignored",
            EventKind::CredentialRotated => "credential-rotated",
            EventKind::ProviderSwitched => "provider-switched",
            EventKind::ProviderOpened => "provider-opened",
            EventKind::BudgetWarning => "budget-warning",
            EventKind::BudgetSpent => "budget-spent",
            EventKind::ClarificationAnswered => "clarification-answered",
            EventKind::GatePassed => "gate-passed",
            EventKind::StageChanged => "stage-changed",
            EventKind::CriticVerdict => "critic-verdict",
            EventKind::FixSkipped => "fix-skipped",
            EventKind::Council => "council",
            EventKind::Integrated => "integrated",
            EventKind::IntegrationFailed => "integration-failed",
            EventKind::MergeConflict => "merge-conflict",
            EventKind::RunHalted => "run-halted",
            EventKind::RunResumed => "run-resumed",
            EventKind::RunDone => "run-done",
            EventKind::RunFailed => "run-failed",
            EventKind::RunCancelled => "run-cancelled",
            EventKind::WorkerAdded => "worker-added",
            EventKind::WorkerRetried => "worker-retried",
            EventKind::TextSent => "text-sent",
            EventKind::RunReopened => "run-reopened",
            EventKind::PlanNotice => "plan-notice",
            EventKind::ResultTaken => "result-taken",
            EventKind::WorkerMoved => "worker-moved",
            EventKind::StateSavedAside => "state-saved-aside",
            EventKind::RequestRefused => "request-refused",
            EventKind::WorkerProgress => "worker-progress",
            EventKind::McpRefused => "mcp-refused",
            EventKind::McpServerDied => "mcp-server-died",
            EventKind::WorkerTurnEnded => "worker-turn-ended",
            EventKind::HookRefused => "hook-refused",
            EventKind::NotifyFailed => "notify-failed",
            EventKind::Other(name) => name,
        }
    }

    /// The kind of an attempt that ended with `status` (`worker-completed`, ...).
    pub fn worker_ended(status: WorkerStatus) -> Self {
        match status {
            WorkerStatus::Completed => EventKind::WorkerCompleted,
            WorkerStatus::Failed => EventKind::WorkerFailed,
            WorkerStatus::Timeout => EventKind::WorkerTimeout,
            WorkerStatus::Crashed => EventKind::WorkerCrashed,
            WorkerStatus::Cancelled => EventKind::WorkerCancelled,
            WorkerStatus::Skipped => EventKind::WorkerSkipped,
            other => EventKind::Other(format!("worker-{}", other.as_str())),
        }
    }

    /// The kind of a run that ended with `status` (`run-done`, ...).
    pub fn run_ended(status: RunStatus) -> Self {
        match status {
            RunStatus::Done => EventKind::RunDone,
            RunStatus::Failed => EventKind::RunFailed,
            RunStatus::Cancelled => EventKind::RunCancelled,
            RunStatus::Halted => EventKind::RunHalted,
            other => EventKind::Other(format!("run-{}", other.as_str())),
        }
    }

    /// True for the end of an attempt that did not complete (failed, timed out, crashed).
    pub fn is_worker_failure(&self) -> bool {
        matches!(
            self,
            EventKind::WorkerFailed | EventKind::WorkerTimeout | EventKind::WorkerCrashed
        )
    }
}

impl std::fmt::Display for EventKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<String> for EventKind {
    fn from(name: String) -> Self {
        KNOWN
            .into_iter()
            .find(|k| k.as_str() == name)
            .unwrap_or(EventKind::Other(name))
    }
}

impl From<EventKind> for String {
    fn from(kind: EventKind) -> Self {
        kind.as_str().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_round_trips_through_its_name() {
        for k in KNOWN {
            let json = serde_json::to_string(&k).unwrap();
            assert_eq!(json, format!("\"{}\"", k.as_str()));
            assert_eq!(serde_json::from_str::<EventKind>(&json).unwrap(), k);
        }
    }

    #[test]
    fn an_unknown_name_is_kept() {
        let k: EventKind = serde_json::from_str("\"worker-teleported\"").unwrap();
        assert_eq!(k, EventKind::Other("worker-teleported".into()));
        assert_eq!(serde_json::to_string(&k).unwrap(), "\"worker-teleported\"");
    }

    #[test]
    fn ended_kinds_keep_todays_names() {
        assert_eq!(
            EventKind::worker_ended(WorkerStatus::Crashed).as_str(),
            "worker-crashed"
        );
        assert_eq!(EventKind::run_ended(RunStatus::Done).as_str(), "run-done");
        assert_eq!(
            EventKind::worker_ended(WorkerStatus::NotRun).as_str(),
            "worker-not-run"
        );
    }
}
