//! The resolved team a run launches: workers with provider, model and task, plus the
//! helpers a run needs per attempt (launch command, packaged prompt, initial state row).

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::domain::{CheckSpec, Stage, WorkerKind, WorkerState, WorkerStatus};
use crate::error::Result;
use crate::providers::prompt::{self, PackageOptions};
use crate::providers::{LaunchCommand, LaunchRequest, ProviderHealth, Registry};

/// One worker, routed and ready to package and launch.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResolvedWorker {
    pub id: String,
    pub role: String,
    pub provider: String,
    /// None: the provider's own default model.
    pub model: Option<String>,
    /// The worker's prompt with `{problem}` substituted (before packaging).
    pub task: String,
    pub order: u32,
    /// Wall timeout, seconds.
    pub timeout_s: Option<u64>,
    /// Idle timeout, seconds.
    pub idle_timeout_s: Option<u64>,
    /// Seconds of only stall lines before an attempt is ended; `None`: off.
    pub stall_after_s: Option<u64>,
    /// How long its question waits for the person, seconds; `None`: no limit.
    pub question_timeout_s: Option<u64>,
    pub max_attempts: u32,
    pub artifacts: Vec<String>,
    pub cwd: Option<PathBuf>,
    /// argv for the `command` provider.
    pub command: Option<Vec<String>>,
    /// `worktree` or `shared`; `None`: the team's `[workspace] mode`.
    pub workspace: Option<crate::domain::WorkspaceMode>,
    /// The SSH host it runs on (a `hosts.toml` name); `None`: this machine (`"local"` in
    /// JSON, as `crewmux dispatch --json` prints it).
    #[serde(serialize_with = "host_or_local")]
    pub host: Option<String>,
    /// Why this provider.
    pub reason: String,
    /// Other usable providers, best first.
    pub fallbacks: Vec<String>,
    /// ready, not-installed, not-authenticated, auth-unknown (or `forced`, `built-in`).
    pub health: String,
    /// Worker ids this one waits for.
    pub after: Vec<String>,
    /// What happens when one of `after` does not complete.
    pub on_upstream_failure: crate::domain::UpstreamPolicy,
    /// What happens to an action its agent asks permission for (worker's, else team's).
    #[serde(skip_serializing_if = "crate::domain::clarification::ApprovalPolicy::is_ask")]
    pub approvals: crate::domain::clarification::ApprovalPolicy,
    /// The fence its agent runs in (worker's `sandbox`, else the team's `[sandbox]`, with
    /// `run --sandbox` over both).
    #[serde(skip_serializing_if = "crate::domain::Sandbox::is_none")]
    pub sandbox: crate::domain::Sandbox,
    /// Its next attempt continues its agent CLI's conversation where the provider can
    /// (worker's `resume`, else the team's, default true).
    pub resume: bool,
    /// A candidate of a race (`team::race`): which task, which one of how many.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub candidate: Option<crate::domain::Candidate>,
    /// Its role's persona, as the run's `agents.toml` files left it.
    #[serde(skip)]
    pub persona: Option<String>,
}

/// A worker's host for JSON: its name, or `local`.
fn host_or_local<S: serde::Serializer>(host: &Option<String>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(host.as_deref().unwrap_or(crate::hosts::LOCAL))
}

impl ResolvedWorker {
    /// The worker's initial `state.json` row (pending, attempt 0) for `stage`.
    pub fn to_worker_state(&self, stage: Stage) -> WorkerState {
        WorkerState {
            id: self.id.clone(),
            role: self.role.clone(),
            provider: self.provider.clone(),
            model: self.model.clone(),
            kind: WorkerKind::Worker,
            stage,
            round: 0,
            status: WorkerStatus::Pending,
            reason: None,
            attempt: 0,
            max_attempts: self.max_attempts,
            exit_code: None,
            started_at: None,
            ended_at: None,
            pane_id: None,
            pid: None,
            result: None,
            question: None,
            pending: None,
            progress: None,
            signal: None,
            timeout_s: self.timeout_s,
            idle_timeout_s: self.idle_timeout_s,
            artifacts: self.artifacts.clone(),
            task: self.task.clone(),
            command: self.command.clone(),
            cwd: self.cwd.clone(),
            order: self.order,
            host: self.host.clone(),
            moved_from: None,
            flow: crate::domain::FlowState {
                after: self.after.clone(),
                on_upstream_failure: self.on_upstream_failure,
                stall_after_s: self.stall_after_s,
                question_timeout_s: self.question_timeout_s,
                approvals: self.approvals,
                sandbox: self.sandbox.clone(),
                no_resume: !self.resume,
                candidate: self.candidate.clone(),
                persona: self.persona.clone(),
                ..Default::default()
            },
        }
    }
}

/// A team ready to run: the routing decision `dispatch --json` prints.
#[derive(Debug, Clone, Serialize)]
pub struct ResolvedTeam {
    pub name: String,
    /// What the run may spend: `--budget-usd`/`--budget-tokens`, else the team's `[budget]`.
    pub budget: crate::domain::Budget,
    /// `mode:ccg` or the team file path.
    pub source: String,
    /// The run target: `codex`, `gemini`, `ccg` or a provider name.
    pub target: String,
    pub target_reason: String,
    /// The target decides something: it picks the built-in team (no team file or mode) or
    /// leans the routing of a worker that names no provider. False when every worker's
    /// provider is given (by the team file or `--provider`) and the team is not built in.
    pub target_used: bool,
    pub role: Option<String>,
    pub parallel: usize,
    /// With `--hosts`: the workers each listed host runs at once (see
    /// `crate::hosts::spread`); empty otherwise.
    pub host_slots: std::collections::BTreeMap<String, usize>,
    /// With `--hosts`: the listed hosts that got no worker and why, in the list's order
    /// (`crate::hosts::spread::unused`); empty otherwise.
    pub hosts_without_workers: Vec<crate::hosts::spread::Unused>,
    /// The team's workers `--only` leaves out (id, role), in file order: `not-run` in the
    /// run, with reason `not in --only`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not_run: Vec<(String, String)>,
    pub max_fix_rounds: u32,
    /// In `order`, then file order.
    pub workers: Vec<ResolvedWorker>,
    pub checks: Vec<CheckSpec>,
    /// Critic workers run at every verify stage.
    pub critics: Vec<crate::domain::CriticSpec>,
    /// Who fixes what a blocked council found (`[fixer]`).
    pub fixer: Option<crate::domain::AgentSpec>,
    /// The fence of the checks, critics, fixers and added workers (`RunState::sandbox`).
    pub sandbox: crate::domain::Sandbox,
    /// The clarification gate reads the problem (`TeamSpec::clarify`, resolved: the team's
    /// own word, else false when every worker is a `command` worker).
    pub clarify: bool,
    /// The team's `[workspace]` table (empty when absent).
    pub workspace: crate::domain::WorkspaceSpec,
    /// Health of every provider that was probed.
    pub health: Vec<ProviderHealth>,
    /// The merged providers (built-ins + user + project): build launches with it.
    #[serde(skip)]
    pub registry: Registry,
}

impl ResolvedTeam {
    /// Workers the run has live at once: `parallel`, or with `--hosts` the sum of the
    /// shares of the hosts a worker was placed on (`parallel` is then `local`'s share; a
    /// listed host that got none adds nothing), within 1..=256, as the run's plan sets its
    /// `parallel`.
    #[must_use]
    pub fn at_once(&self) -> usize {
        if self.host_slots.is_empty() {
            self.parallel
        } else {
            self.placed_slots()
                .map(|(_, n)| n)
                .sum::<usize>()
                .clamp(1, 256)
        }
    }

    /// With `--hosts`: each host a worker was placed on, with its share (`host_slots`), in
    /// name order. A listed host that got no worker is left out: its share is never used.
    pub fn placed_slots(&self) -> impl Iterator<Item = (&str, usize)> + '_ {
        self.host_slots
            .iter()
            .filter(|(h, _)| {
                self.workers
                    .iter()
                    .any(|w| w.host.as_deref().unwrap_or(crate::hosts::LOCAL) == h.as_str())
            })
            .map(|(h, n)| (h.as_str(), *n))
    }

    /// The launch command of one attempt of `worker`, with the project's provider overrides.
    ///
    /// # Errors
    /// As [`Registry::build_launch`].
    pub fn build_launch(
        &self,
        worker: &ResolvedWorker,
        prompt_file: &Path,
        result_file: &Path,
        attempt: u32,
        self_exe: &Path,
    ) -> Result<LaunchCommand> {
        self.registry.build_launch(
            &worker.provider,
            &LaunchRequest {
                prompt_file,
                result_file,
                model: worker.model.as_deref(),
                command: worker.command.as_deref(),
                attempt,
                self_exe,
                mcp: None,
                resume: None,
            },
        )
    }
}

impl ResolvedWorker {
    /// The packaged prompt of this worker (docs/design.md "Providers and prompts"), capped at
    /// `max_chars` characters (`--prompt-max-chars`); the model line names the provider and model.
    pub fn package_prompt(&self, project_dir: &Path, max_chars: usize) -> String {
        let model = format!(
            "{} / {}",
            self.provider,
            self.model.as_deref().unwrap_or("provider default")
        );
        prompt::package(
            &self.role,
            &self.task,
            project_dir,
            &PackageOptions {
                max_chars,
                model: Some(model),
                failures: None,
                persona: self.persona.clone(),
                ..PackageOptions::default()
            },
        )
    }
}
