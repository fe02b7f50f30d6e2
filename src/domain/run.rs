//! The persisted run state (`state.json`) and the events of `events.jsonl`.

use std::path::PathBuf;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::{
    AgentSpec, CheckSpec, ClarificationState, Council, CriticSpec, DispatchRecord, Stage,
    WorkerState,
};

/// Schema of `state.json`, `manifest.json` and `events.jsonl` lines. A file with a newer
/// version is refused, never overwritten.
pub const SCHEMA_VERSION: u32 = 1;

/// A run's overall status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum RunStatus {
    #[default]
    Running,
    /// Halted at a run-level clarification.
    Halted,
    Done,
    Failed,
    Cancelled,
    /// The process driving the run went away (quit or killed); `attach`/`resume` continue it.
    Detached,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Halted => "halted",
            RunStatus::Done => "done",
            RunStatus::Failed => "failed",
            RunStatus::Cancelled => "cancelled",
            RunStatus::Detached => "detached",
        }
    }

    pub fn is_final(self) -> bool {
        matches!(
            self,
            RunStatus::Done | RunStatus::Failed | RunStatus::Cancelled
        )
    }
}

/// Where workers run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    #[default]
    Tmux,
    Process,
}

impl BackendKind {
    pub fn as_str(self) -> &'static str {
        match self {
            BackendKind::Tmux => "tmux",
            BackendKind::Process => "process",
        }
    }
}

/// The name of this machine among a run's hosts (`host_slots`, `hosts.toml`).
pub const LOCAL_HOST: &str = "local";

/// `state.json`: everything needed to show, resume or attach to a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunState {
    pub schema_version: u32,
    pub run_id: String,
    pub problem: String,
    /// Team name or mode (`crazy`, `ccg`, `solo`, or the team file's name).
    pub team: String,
    pub project_dir: PathBuf,
    pub run_dir: PathBuf,
    pub stage: Stage,
    pub status: RunStatus,
    #[serde(default)]
    pub reason: Option<String>,
    pub backend: BackendKind,
    pub tmux_socket: String,
    /// tmux session of the run, `crewmux-<run id>`.
    pub session: String,
    /// Workers launched at once, over every host.
    pub parallel: usize,
    /// With `--hosts`: the workers each listed host runs at once (`local`: `--parallel`;
    /// an SSH host: its `max_workers`); `parallel` is then their sum. Empty: only
    /// `parallel` bounds the run.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub host_slots: std::collections::BTreeMap<String, usize>,
    pub fix_round: u32,
    pub max_fix_rounds: u32,
    pub workers: Vec<WorkerState>,
    pub dispatches: Vec<DispatchRecord>,
    pub council: Council,
    /// The council of every verify pass, in order (index n = after fix round n).
    #[serde(default)]
    pub council_history: Vec<Council>,
    pub clarification: ClarificationState,
    /// Run the run-level clarification gate before dispatch (`--no-clarify` clears it).
    #[serde(default = "default_true")]
    pub clarify: bool,
    /// Council checks of the team file, run as workers at every verify stage.
    #[serde(default)]
    pub checks: Vec<CheckSpec>,
    /// Critic workers of the team file, run at every verify stage.
    #[serde(default)]
    pub critics: Vec<CriticSpec>,
    /// The fixer of a blocked council (team file `[fixer]`).
    #[serde(default)]
    pub fixer: Option<AgentSpec>,
    /// The fence of the run's checks, critics, fixers and added workers: the team's
    /// `[sandbox]`, else the first fenced worker's (they judge or continue its work).
    #[serde(default, skip_serializing_if = "super::Sandbox::is_none")]
    pub sandbox: super::Sandbox,
    #[serde(default)]
    pub report: Option<PathBuf>,
    /// Worktrees and branches of a run in a git project; `None`: every worker shared the
    /// project directory.
    #[serde(default)]
    pub workspace: Option<super::RunWorkspace>,
    /// Exit-code meanings, fallback providers and providers failed in this run.
    #[serde(default)]
    pub routing: super::RunRouting,
    /// The SSH hosts the process driving the run finds not answering now (host name →
    /// when it first found so), the same hosts its dashboard's roster shows `?` for. Saved
    /// when the set changes, not every turn; a host goes when it answers again or is lost,
    /// and the whole map when a driver starts or leaves. `status` reads it for a driven run
    /// (docs/hosts.md). Absent (empty) in files an older driver wrote.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub hosts_not_answering: std::collections::BTreeMap<String, DateTime<Utc>>,
    /// Bytes of the run's `inbox.jsonl` its drivers have read and carried out (or refused),
    /// saved with the state those requests changed: a request that was sent while no
    /// process drove the run, or that the driver left before reading, is carried out by
    /// the next one. Absent in files an older driver wrote: a driver then starts at the
    /// inbox's end, as those did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inbox_read: Option<u64>,
    /// `--context`, `--files`, `--expected-outcome` (sections of every agent's prompt).
    #[serde(default, skip_serializing_if = "super::RunInputs::is_empty")]
    pub inputs: super::RunInputs,
    /// `--budget-usd`, `--budget-tokens`, `[budget]`: what the run may spend and has spent;
    /// `None`: no budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<super::BudgetState>,
    /// The run's races by task id (`race = N`, `--race N`): candidates, checks, ranking
    /// and pick.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub races: std::collections::BTreeMap<String, super::Race>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl RunState {
    /// A candidate of a race that is not (or not yet) its pick: its work stays on its own
    /// branch, out of the integration branch (`crewmux merge --worker` takes it).
    pub fn left_out_by_race(&self, id: &str) -> bool {
        let Some(c) = self.worker(id).and_then(|w| w.flow.candidate.as_ref()) else {
            return false;
        };
        self.races
            .get(&c.task)
            .is_none_or(|r| r.pick.as_deref() != Some(id))
    }

    pub fn worker(&self, id: &str) -> Option<&WorkerState> {
        self.workers.iter().find(|w| w.id == id)
    }

    pub fn worker_mut(&mut self, id: &str) -> Option<&mut WorkerState> {
        self.workers.iter_mut().find(|w| w.id == id)
    }
}

/// One line of `events.jsonl`: `kind` is kebab case (`worker-exited`, `stage-changed`, ...);
/// `source` says who observed it (`exit-file`, `marker`, `pane-status`, `timer`, `user`,
/// `engine`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunEvent {
    pub ts: DateTime<Utc>,
    pub kind: super::EventKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    pub source: String,
    pub message: String,
}

fn default_true() -> bool {
    true
}
