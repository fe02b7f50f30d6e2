//! Team specs: the resolved team of a run (docs/design.md "Team files"), from a built-in mode or a
//! TOML file.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// A team as written in a team file (docs/design.md "Team files"). Unknown fields are errors.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct TeamSpec {
    #[serde(default)]
    pub name: Option<String>,
    /// Workers launched at once; default 5.
    #[serde(default)]
    pub parallel: Option<usize>,
    /// Fix rounds after a blocked council; default 1.
    #[serde(default)]
    pub max_fix_rounds: Option<u32>,
    /// Wall timeout of every agent worker, seconds (0: none); a worker's own wins.
    #[serde(default)]
    pub timeout_s: Option<u64>,
    /// Idle timeout of every agent worker, seconds (0: none); a worker's own wins.
    #[serde(default)]
    pub idle_timeout_s: Option<u64>,
    /// Stall detection of every agent worker, seconds (0: off); a worker's own wins.
    #[serde(default)]
    pub stall_after_s: Option<u64>,
    /// Wall timeout of every check and `command` worker, seconds (0: none).
    #[serde(default)]
    pub check_timeout_s: Option<u64>,
    /// How long every worker's question waits for the person, seconds (0: no limit); a
    /// worker's own wins. Default `team::limits::DEFAULT_QUESTION_TIMEOUT_S`.
    #[serde(default)]
    pub question_timeout_s: Option<u64>,
    #[serde(default, rename = "worker")]
    pub workers: Vec<WorkerSpec>,
    #[serde(default, rename = "check")]
    pub checks: Vec<CheckSpec>,
    /// Critic workers: agents asked to review the team's results at every verify stage.
    #[serde(default, rename = "critic")]
    pub critics: Vec<CriticSpec>,
    /// Who fixes what a blocked council found; default: the first worker's provider.
    #[serde(default)]
    pub fixer: Option<AgentSpec>,
    /// `[workspace]`: worktree or shared, files to copy and a setup command.
    #[serde(default)]
    pub workspace: Option<super::WorkspaceSpec>,
    /// The host every worker runs on unless it names its own (a `hosts.toml` name or
    /// `local`); default `local`.
    #[serde(default)]
    pub host: Option<String>,
    /// Whether the clarification gate reads the problem before any worker starts. Default:
    /// yes, unless every worker is a `command` worker (a script reads no problem, so a
    /// vague one cannot hold it up); `--no-clarify` turns it off in any case.
    #[serde(default)]
    pub clarify: Option<bool>,
    /// `[approvals]`: what happens to an action a worker's agent asks permission for
    /// (`policy = "ask"`, the default; `"auto"`; `"deny"`); a worker's own wins.
    #[serde(default)]
    pub approvals: Option<super::clarification::ApprovalsSpec>,
    /// `[sandbox]`: the fence every worker (and the checks, critics and fixers that judge
    /// them) runs in (`mode = "none" | "bwrap" | "container"`, `network`, `image`); a
    /// worker's own fields win. Default: no fence.
    #[serde(default)]
    pub sandbox: Option<super::SandboxSpec>,
    /// `resume = false`: a worker's next attempt (a retry, an edited task) starts a new
    /// conversation instead of continuing its agent CLI's session; default:
    /// continue where the provider can (`resume_args` in providers.toml). A worker's own wins.
    #[serde(default)]
    pub resume: Option<bool>,
    /// `fallback = ["claude", "gemini"]`: the providers every worker that names none of its
    /// own moves to, in order, when its provider is opened by the circuit breaker or fails
    /// with a declared exit code (docs/failures.md "Circuit breaker"); default: routing's
    /// for a routed worker, none for a worker that names its provider.
    #[serde(default)]
    pub fallback: Vec<String>,
    /// `[budget]`: what the run may spend (`usd`, `tokens`); `--budget-usd` and
    /// `--budget-tokens` win. Default: no budget.
    #[serde(default)]
    pub budget: Option<super::Budget>,
    /// `[race]`: the providers a raced worker's candidates run on (`agents`).
    #[serde(default)]
    pub race: Option<super::RaceSpec>,
}

/// One `[[critic]]`: an agent that reviews the team's results; its verdict is the last
/// fenced JSON block of its output (`{"verdict": "pass|warn|fail", "confidence": 0.8,
/// "findings": [...]}`), and `warn` when it gives none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct CriticSpec {
    pub id: String,
    /// Persona; default `reviewer`.
    #[serde(default)]
    pub role: Option<String>,
    #[serde(default)]
    pub provider: Option<String>,
    #[serde(default)]
    pub command: Option<Vec<String>>,
    #[serde(default)]
    pub model: Option<String>,
    /// Extra instructions for the review.
    #[serde(default)]
    pub prompt: Option<String>,
    #[serde(default)]
    pub timeout_s: Option<u64>,
    /// Idle timeout (no new output), seconds; 0: none.
    #[serde(default)]
    pub idle_timeout_s: Option<u64>,
    /// Seconds of only stall lines before the attempt is ended; 0: off.
    #[serde(default)]
    pub stall_after_s: Option<u64>,
    /// Critic (or worker) ids this critic waits for: it starts only when every one of them has
    /// ended.
    #[serde(default)]
    pub after: Vec<String>,
    /// What happens when one of `after` ends other than `completed`; default `skip`.
    #[serde(default)]
    pub on_upstream_failure: Option<super::UpstreamPolicy>,
    /// `approvals = { policy = "…" }`: what happens to an action this critic's agent asks
    /// permission for; default: the team's `[approvals]`.
    #[serde(default)]
    pub approvals: Option<super::clarification::ApprovalsSpec>,
}

/// An agent other than a team worker (the `[fixer]` table).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct AgentSpec {
    #[serde(default)]
    pub role: Option<String>,
    #[serde(default)]
    pub provider: Option<String>,
    #[serde(default)]
    pub command: Option<Vec<String>>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub timeout_s: Option<u64>,
    /// Idle timeout (no new output), seconds; 0: none.
    #[serde(default)]
    pub idle_timeout_s: Option<u64>,
    /// Seconds of only stall lines before the attempt is ended; 0: off.
    #[serde(default)]
    pub stall_after_s: Option<u64>,
    /// `approvals = { policy = "…" }`: what happens to an action the fixer's agent asks
    /// permission for (fix rounds and merge-fixers alike); default: the team's `[approvals]`.
    #[serde(default)]
    pub approvals: Option<super::clarification::ApprovalsSpec>,
}

/// One `[[worker]]` of a team file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct WorkerSpec {
    /// Unique, `[a-z0-9-]+`.
    pub id: String,
    /// Persona from `assets/agents.toml`.
    pub role: String,
    #[serde(default)]
    pub provider: Option<String>,
    #[serde(default)]
    pub target: Option<String>,
    /// argv for the `command` provider.
    #[serde(default)]
    pub command: Option<Vec<String>>,
    #[serde(default)]
    pub model: Option<String>,
    /// `smol|slow|plan|commit`.
    #[serde(default)]
    pub role_model: Option<String>,
    #[serde(default)]
    pub prompt: Option<String>,
    #[serde(default)]
    pub prompt_file: Option<PathBuf>,
    #[serde(default)]
    pub order: Option<u32>,
    /// Wall timeout, seconds.
    #[serde(default)]
    pub timeout_s: Option<u64>,
    /// Idle timeout, seconds.
    #[serde(default)]
    pub idle_timeout_s: Option<u64>,
    /// How long this worker's question waits for the person, seconds (0: no limit).
    #[serde(default)]
    pub question_timeout_s: Option<u64>,
    /// Seconds of only stall lines before the attempt is ended; 0: off.
    #[serde(default)]
    pub stall_after_s: Option<u64>,
    #[serde(default)]
    pub max_attempts: Option<u32>,
    #[serde(default)]
    pub artifacts: Vec<String>,
    #[serde(default)]
    pub cwd: Option<PathBuf>,
    /// Worker ids this worker waits for: it starts only when every one of them has ended.
    #[serde(default)]
    pub after: Vec<String>,
    /// What happens when one of `after` ends other than `completed`; default `skip`.
    #[serde(default)]
    pub on_upstream_failure: Option<super::UpstreamPolicy>,
    /// `worktree` or `shared`; default: the team's `[workspace] mode`.
    #[serde(default)]
    pub workspace: Option<super::WorkspaceMode>,
    /// The host this worker runs on (a `hosts.toml` name or `local`); default: the team's.
    #[serde(default)]
    pub host: Option<String>,
    /// `approvals = { policy = "…" }`: this worker's approval policy; default: the team's.
    #[serde(default)]
    pub approvals: Option<super::clarification::ApprovalsSpec>,
    /// `sandbox = { mode = "…", network = "…" }`: this worker's fence; each field given
    /// wins over the team's `[sandbox]`.
    #[serde(default)]
    pub sandbox: Option<super::SandboxSpec>,
    /// `resume = false`: this worker's attempts never continue a conversation (see
    /// `TeamSpec::resume`); default: the team's.
    #[serde(default)]
    pub resume: Option<bool>,
    /// This worker's fallback providers, in order (see `TeamSpec::fallback`); wins over
    /// the team's.
    #[serde(default)]
    pub fallback: Vec<String>,
    /// `race = N`: run this worker's task as N candidates (2 to `MAX_CANDIDATES`) and keep
    /// the best (README "Races"); `run --race N` sets it for every worker that has none.
    #[serde(default)]
    pub race: Option<u32>,
}

/// One `[[check]]`: a council check command; exit 0 → pass, else fail.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct CheckSpec {
    pub id: String,
    pub command: Vec<String>,
    #[serde(default)]
    pub cwd: Option<PathBuf>,
    #[serde(default)]
    pub timeout_s: Option<u64>,
}
