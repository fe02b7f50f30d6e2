//! Provider specs (data) and what is built from them: the registry merged from
//! `assets/providers.toml` and the user's and project's overrides, launch commands, health
//! probes (doctor, routing), past failures, the agent registry and prompt packaging.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub mod agents;
pub mod auth;
pub mod exit_output;
pub mod health;
pub mod history;
pub mod launch;
pub mod npm_version;
pub mod output;
pub mod pane_text;
pub mod prompt;
pub mod rate_limits;
pub mod registry;
pub mod reset_time;
pub mod run;
pub mod spec;
pub(crate) mod toml_hint;
pub mod usable;

pub use health::{AuthState, ProbeOptions, ProviderHealth, TmuxHealth};
pub use registry::{user_config_dir, Registry};
pub use spec::{PromptVia, ProviderKind, ProviderSpec, MODEL_ROLES};

/// What a launch needs to know about an attempt.
#[derive(Debug, Clone)]
pub struct LaunchRequest<'a> {
    /// The packaged prompt file of the attempt.
    pub prompt_file: &'a Path,
    /// Where the agent should write its markdown result (sim and codex do; others are
    /// collected from `output.log`).
    pub result_file: &'a Path,
    /// Model to pass, if the provider has a model flag.
    pub model: Option<&'a str>,
    /// argv for the `command` provider.
    pub command: Option<&'a [String]>,
    /// 1-based attempt number.
    pub attempt: u32,
    /// The running crewmux binary (for `sim`).
    pub self_exe: &'a Path,
    /// The attempt's MCP server (`None`: none, e.g. a worker on an SSH host).
    pub mcp: Option<&'a crate::mcp::config::McpLaunch>,
    /// Continue this conversation of the CLI (its `resume_args`); `None`: a new one.
    pub resume: Option<&'a str>,
}

/// How to start one attempt: an argv (never a shell string), extra environment and an
/// optional file fed on stdin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchCommand {
    pub argv: Vec<String>,
    pub env: Vec<(String, String)>,
    pub stdin_file: Option<PathBuf>,
    /// For a CLI that prints JSON events: the argv of the filter its stdout goes through
    /// to be readable in the pane (`crewmux pane-text --format F`; the wrapper adds
    /// `--raw <attempt>/cli-events.jsonl`).
    pub render: Option<Vec<String>>,
}

/// A copy of the environment variables that health checks and routing read (PATH, HOME,
/// API key variables, CREWMUX_*), so tests can give their own without touching the
/// process environment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnvSnapshot {
    vars: BTreeMap<String, String>,
}

impl EnvSnapshot {
    /// The process environment now (non-UTF-8 values are skipped).
    pub fn current() -> Self {
        Self {
            vars: std::env::vars().collect(),
        }
    }

    pub fn from_pairs<K: Into<String>, V: Into<String>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        Self {
            vars: pairs
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        }
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.vars.get(key).map(String::as_str)
    }

    /// `(name, value)` pairs in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.vars.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    pub fn set(&mut self, key: impl Into<String>, value: impl Into<String>) {
        self.vars.insert(key.into(), value.into());
    }
}
