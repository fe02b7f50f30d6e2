//! Workers, their statuses and the dispatch records of their attempts.

use std::path::PathBuf;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::Stage;

/// A worker's status (docs/design.md "Exit evidence"). Serialised in kebab case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum WorkerStatus {
    #[default]
    Pending,
    Starting,
    Running,
    /// Waiting for input: a question is shown in the clarification panel.
    Waiting,
    Completed,
    /// Non-zero exit, or a required artifact is missing.
    Failed,
    Timeout,
    Cancelled,
    /// The pane or process vanished with no exit code.
    Crashed,
    /// Skipped, with a reason.
    NotRun,
    /// Not started because a worker it waits for (`after`) did not complete; the reason
    /// says which (`upstream <id> <status>`). Never retried.
    Skipped,
}

/// The reason of a worker `crewmux run --only` left out (`not-run`).
pub const NOT_IN_ONLY: &str = "not in --only";

impl WorkerStatus {
    /// True once the worker will not change again without a new attempt.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            WorkerStatus::Completed
                | WorkerStatus::Failed
                | WorkerStatus::Timeout
                | WorkerStatus::Cancelled
                | WorkerStatus::Crashed
                | WorkerStatus::NotRun
                | WorkerStatus::Skipped
        )
    }

    /// True while an attempt has a live process.
    pub fn is_live(self) -> bool {
        matches!(
            self,
            WorkerStatus::Starting | WorkerStatus::Running | WorkerStatus::Waiting
        )
    }

    pub fn as_str(self) -> &'static str {
        match self {
            WorkerStatus::Pending => "pending",
            WorkerStatus::Starting => "starting",
            WorkerStatus::Running => "running",
            WorkerStatus::Waiting => "waiting",
            WorkerStatus::Completed => "completed",
            WorkerStatus::Failed => "failed",
            WorkerStatus::Timeout => "timeout",
            WorkerStatus::Cancelled => "cancelled",
            WorkerStatus::Crashed => "crashed",
            WorkerStatus::NotRun => "not-run",
            WorkerStatus::Skipped => "skipped",
        }
    }
}

impl std::fmt::Display for WorkerStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a worker is for: a team member, a council check or critic, a fixer or the synthesizer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum WorkerKind {
    #[default]
    Worker,
    Check,
    Critic,
    Fixer,
    Synthesizer,
}

/// Where an exit code came from, in order of trust (docs/design.md "Exit evidence").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ExitSource {
    /// The wrapper's `exit.json`.
    ExitFile,
    /// The `__CREWMUX_EXIT_<nonce>__:<code>` line in `output.log`.
    Marker,
    /// tmux's `#{pane_dead_status}` (or the child's wait status on the process backend).
    PaneStatus,
}

/// One worker of a run as saved in `state.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkerState {
    pub id: String,
    pub role: String,
    pub provider: String,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub kind: WorkerKind,
    /// The stage that launches this worker.
    pub stage: Stage,
    /// Fix round this worker belongs to (0 for the first pass).
    #[serde(default)]
    pub round: u32,
    pub status: WorkerStatus,
    #[serde(default)]
    pub reason: Option<String>,
    /// Current attempt, 1-based; 0 before the first launch.
    pub attempt: u32,
    pub max_attempts: u32,
    #[serde(default)]
    pub exit_code: Option<i32>,
    #[serde(default)]
    pub started_at: Option<DateTime<Utc>>,
    #[serde(default)]
    pub ended_at: Option<DateTime<Utc>>,
    /// The current attempt's pane: tmux `#{pane_id}` with the server instance it belongs to
    /// (`%3@<server pid>.<server start time>`, `box:%3@…` on an SSH host); see [`pane_label`].
    #[serde(default)]
    pub pane_id: Option<String>,
    /// Pid of the current attempt's wrapper (the process group leader).
    #[serde(default)]
    pub pid: Option<u32>,
    /// The result file of the last completed attempt.
    #[serde(default)]
    pub result: Option<PathBuf>,
    /// A worker-level question while `waiting`.
    #[serde(default)]
    pub question: Option<String>,
    /// What else is known of `question` (its tool call, choices, default, deadline).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<super::clarification::PendingQuestion>,
    /// The last line the agent sent through its MCP server's `progress` tool (shown, never
    /// read as a status).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<String>,
    /// What the current attempt's own hooks last said (`working`, `waiting`, `turn
    /// ended`); `None` before its CLI's first hook event, and for a CLI without hooks (its
    /// status then comes from its output and screen). Cleared when an attempt starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<super::AgentSignal>,
    /// Wall timeout, seconds.
    #[serde(default)]
    pub timeout_s: Option<u64>,
    /// Idle timeout (no new output), seconds.
    #[serde(default)]
    pub idle_timeout_s: Option<u64>,
    /// Required artifacts, relative to the attempt directory.
    #[serde(default)]
    pub artifacts: Vec<String>,
    /// The task text the worker was given (before packaging).
    #[serde(default)]
    pub task: String,
    /// For `command` providers and checks: the argv.
    #[serde(default)]
    pub command: Option<Vec<String>>,
    /// Working directory, relative to the project.
    #[serde(default)]
    pub cwd: Option<PathBuf>,
    #[serde(default)]
    pub order: u32,
    /// The SSH host (a `hosts.toml` name) the worker runs on; `None` is this machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The SSH host this worker was moved off when that host was lost: it runs on this
    /// machine since (`host` is `None`). Kept for what the person reads (`status`, the
    /// roster, the report: `attempt 2 on local (box lost)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moved_from: Option<String>,
    /// Dependencies, stall detection, retry back-off and the rate-limit mark.
    #[serde(default)]
    pub flow: super::FlowState,
}

/// One row per attempt in the run state (the okstra seed's `workerDispatches`).
/// A record is identified by `prompt_path` + `attempt`; when two rows match, the newest
/// is the live one and is the one updated (the okstra 0.165 fix).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DispatchRecord {
    pub worker_id: String,
    pub prompt_path: PathBuf,
    pub attempt: u32,
    pub backend: String,
    pub status: WorkerStatus,
    #[serde(default)]
    pub reason: Option<String>,
    pub nonce: String,
    #[serde(default)]
    pub pane_id: Option<String>,
    #[serde(default)]
    pub exit_code: Option<i32>,
    #[serde(default)]
    pub exit_source: Option<ExitSource>,
    pub started_at: DateTime<Utc>,
    #[serde(default)]
    pub ended_at: Option<DateTime<Utc>>,
    /// Label (never the key) of the credential this attempt was given.
    #[serde(default)]
    pub credential_label: Option<String>,
    /// The SSH host (a `hosts.toml` name) this attempt ran on; `None`: this machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The attempt was still running when its host was lost: its processes there are to
    /// be ended (by its nonce) the first time the host answers again, also by a driver
    /// that reattaches later. Cleared once they are.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub left_on_host: bool,
    /// This attempt runs on this machine because its worker's SSH host (named here) was
    /// lost; `None` for every other attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moved_from: Option<String>,
    /// The agent CLI's own id of this attempt's conversation, as its output named it
    /// (`providers::output::session_id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// This attempt continued that conversation of an earlier attempt (its CLI's resume).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumed: Option<String>,
}

impl WorkerState {
    /// The worker waits on the question its last attempt's result ended with
    /// ([`crate::domain::clarification::PendingQuestion::from_result`]): `waiting`, with
    /// no process behind it.
    pub fn waits_on_its_result(&self) -> bool {
        self.status == WorkerStatus::Waiting && self.pending.as_ref().is_some_and(|p| p.from_result)
    }

    /// Where the worker runs, in words, when a host is involved: `on box` (an SSH host),
    /// `attempt 2 on local (box lost)` (moved here when its host was lost; `next attempt
    /// on local (box lost)` while the attempt waits to start); `None` for a worker that
    /// only ever ran on this machine.
    pub fn placement(&self) -> Option<String> {
        let local = super::LOCAL_HOST;
        match (&self.host, &self.moved_from) {
            (Some(h), _) => Some(format!("on {h}")),
            (None, Some(lost)) if self.status == WorkerStatus::Pending || self.attempt == 0 => {
                Some(format!("next attempt on {local} ({lost} lost)"))
            }
            (None, Some(lost)) => {
                Some(format!("attempt {} on {local} ({lost} lost)", self.attempt))
            }
            (None, None) => None,
        }
    }
}

/// The part of a stored pane reference a person reads: `%3` of `%3@4242.1796074715`,
/// `box:%3` of a pane on the SSH host `box`. The server instance after `@` tells panes of a
/// restarted tmux server apart; it means nothing to a reader.
pub fn pane_label(pane_ref: &str) -> &str {
    pane_ref.split_once('@').map_or(pane_ref, |(id, _)| id)
}

#[cfg(test)]
mod tests {
    use super::pane_label;

    #[test]
    fn a_pane_label_drops_the_server_instance_and_keeps_the_host() {
        assert_eq!(pane_label("%6@3002.1796074715"), "%6");
        assert_eq!(pane_label("box:%6@3002.1796074715"), "box:%6");
        assert_eq!(pane_label("%6"), "%6");
    }
}
