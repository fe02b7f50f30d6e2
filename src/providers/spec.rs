//! Provider specs as data: what one provider is ([`ProviderSpec`], as written in
//! `assets/providers.toml` and the override files), and the TOML helpers that name a
//! mistake's place. The merged, validated set of them is the [`Registry`](super::Registry).

use std::collections::BTreeMap;
use std::path::Path;

use regex::{Regex, RegexBuilder};
use serde::{Deserialize, Serialize};

use crate::error::Error;

/// The built-in providers, embedded at build time.
pub const BUILTIN_PROVIDERS: &str = include_str!("../../assets/providers.toml");

/// Model roles a provider maps to models (`--role`, `CREWMUX_ROLE`, `role_model`).
pub const MODEL_ROLES: [&str; 5] = ["default", "smol", "slow", "plan", "commit"];

/// What kind of program a provider starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum ProviderKind {
    /// A real agent CLI looked up on PATH.
    #[default]
    Agent,
    /// Any argv given by the team file.
    Command,
    /// The built-in simulated agent.
    Sim,
}

/// One model's price, US dollars per million tokens, as a vendor's price list gave it on
/// `date` (`source` says where). Every field is required: a price without its date cannot
/// be told stale.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    pub input_usd_per_mtok: f64,
    pub output_usd_per_mtok: f64,
    /// When the price was read (`2026-11-30`).
    pub date: String,
    /// Where it was read (a price list's name or address).
    pub source: String,
}

impl ProviderSpec {
    /// The dollars `input` and `output` tokens cost on `model` (else the `"*"` price);
    /// `None` without a price.
    pub fn cost_of(&self, model: Option<&str>, input: u64, output: u64) -> Option<f64> {
        let p = model
            .and_then(|m| self.prices.get(m))
            .or_else(|| self.prices.get("*"))?;
        Some((input as f64 * p.input_usd_per_mtok + output as f64 * p.output_usd_per_mtok) / 1e6)
    }
}

/// How the packaged prompt reaches the agent. Never as text inlined into argv.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum PromptVia {
    /// The prompt file is fed on stdin.
    #[default]
    Stdin,
    /// The argv names `{prompt_file}`; the CLI reads that path.
    ArgvFile,
    /// Only `$CREWMUX_PROMPT_FILE` names it (the `command` provider).
    EnvFile,
}

/// The state when no probe, variable or file decides the auth state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Unproven {
    #[default]
    Not,
    Unknown,
}

/// How to tell whether a CLI is logged in (see `usable::auth_state` for the order of the
/// rules and `health::classify_probe` for the probe's). In a providers file this is either
/// a table of the fields below or the word `"none"` (a keyless local endpoint: see
/// [`AuthSpec::keyless`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct AuthSpec {
    /// `auth = "none"`: the CLI talks to an endpoint that needs no key (a local model
    /// server). Always usable; doctor warns that nothing was checked.
    #[serde(skip_deserializing)]
    pub keyless: bool,
    /// A set, non-empty variable among these proves auth.
    pub env_any: Vec<String>,
    /// Args (after the binary) of a status command, run with `timeout_ms`.
    pub probe: Vec<String>,
    /// A file among these (leading `~` is `$HOME`) proves a stored login.
    pub files_any: Vec<String>,
    /// Regexes over the lower-cased probe output meaning "not authenticated".
    pub not_patterns: Vec<String>,
    /// Regexes over the lower-cased probe output meaning "authenticated".
    pub ok_patterns: Vec<String>,
    /// Probe timeout, ms; default 10 000.
    pub timeout_ms: Option<u64>,
    pub unproven: Unproven,
}

/// One provider (docs/design.md). Every field has a default so that an override file may give only
/// the fields it changes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct ProviderSpec {
    pub kind: ProviderKind,
    /// Program on PATH; `{self_exe}` is the running crewmux.
    pub binary: String,
    /// argv after the binary, with placeholders (see `launch::expand`).
    pub args: Vec<String>,
    pub prompt: PromptVia,
    /// Added where `{model_args}` stands (or at the end) when a model is chosen.
    pub model_args: Vec<String>,
    /// Arguments that make the CLI print its version (empty: no version is asked). An
    /// npm-installed CLI's version is read from its package first (`npm_version`).
    pub version_args: Vec<String>,
    #[serde(deserialize_with = "auth_table_or_none")]
    pub auth: AuthSpec,
    pub install_hint: String,
    /// Environment set for every attempt.
    pub env: BTreeMap<String, String>,
    /// Arguments that make the CLI start the attempt's MCP server (`mcp::config`), placed
    /// where `{mcp_args}` stands in `args` (or at the end); placeholders `{mcp_config}`,
    /// `{mcp_settings}`, `{mcp_opencode}`, `{mcp_command_toml}`, `{mcp_args_toml}`,
    /// `{mcp_tool_timeout_s}`. Empty (with `mcp_env`): the CLI is not wired, and only
    /// `CREWMUX_MCP_CONFIG` tells it of the server.
    pub mcp_args: Vec<String>,
    /// Variables (same placeholders) that make the CLI start the attempt's MCP server.
    pub mcp_env: BTreeMap<String, String>,
    /// Arguments that install the attempt's hooks (`mcp::hooks`: the CLI runs `crewmux
    /// hook-event` at points of its turn), placed where `{hook_args}` stands in `args` (or
    /// after the MCP arguments); placeholders `{hook_claude_settings}` (Claude Code's
    /// settings file), `{hook_gemini_settings}` (Gemini CLI's system-defaults file: the
    /// MCP server and the hooks), `{hook_notify_toml}` (Codex's `notify` argv as a TOML
    /// value). Only attempts that get an MCP server get hooks (this machine's).
    pub hook_args: Vec<String>,
    /// Variables (same placeholders) that install the attempt's hooks; a variable also set
    /// by `mcp_env` takes this value.
    pub hook_env: BTreeMap<String, String>,
    /// The argv after the binary (instead of `args`, same placeholders and markers) that
    /// continues the conversation `{session}` of the worker's earlier attempt with this
    /// attempt's prompt; empty: the CLI cannot continue a conversation by id and every
    /// attempt starts a new one (docs/design.md "Conversations that continue").
    pub resume_args: Vec<String>,
    /// The variable the CLI reads its API key from.
    pub api_key_env: Option<String>,
    /// Model role → model.
    pub models: BTreeMap<String, String>,
    /// Model → its price, for a CLI that reports tokens but no cost (`[providers.codex.
    /// prices."gpt-5"]`; `"*"` for any model); budgets count dollars from it. The built-in
    /// file ships none (no vendor's price list could be checked where it was written): add
    /// yours with its date and source.
    pub prices: BTreeMap<String, Price>,
    pub domains: Vec<String>,
    /// 0 (free) .. 3 (expensive).
    pub cost_tier: u8,
    pub rate_limit_patterns: Vec<String>,
    pub waiting_patterns: Vec<String>,
    /// How the CLI prints its work: `text`, or a structured format the result and usage
    /// are read from (`providers::output`).
    pub output: super::output::OutputFormat,
    /// How the CLI retries a failing API without printing anything, and what bounds it
    /// ("" when it does not); doctor shows it.
    pub silent_retries: String,
    /// The CLI exits 0 when its API failed (aider 0.86.2 with `--message-file` returns 0
    /// whatever its request did): its `exit_output` rules are read on exit 0 too, and a
    /// match fails the attempt with the line as the reason.
    pub exit_zero_on_failure: bool,
    /// Regexes (case-insensitive) over one output line of the CLI's known chatter, dropped
    /// from a result taken from text output (never from `output.log`).
    pub noise_patterns: Vec<String>,
    /// Regexes (case-insensitive) over one output line meaning "the CLI is stuck retrying
    /// its connection" (reconnect, network and overload lines): output made only of these
    /// for `stall_after_s` ends the attempt `failed`, reason `stalled: <line>`.
    pub stall_patterns: Vec<String>,
    /// Seconds of stall-only output before the attempt is ended; `team::limits` says which
    /// value wins (for an agent a team or worker value, default `DEFAULT_STALL_AFTER_S`; for
    /// a `command` provider with `stall_patterns` its worker's own, default none).
    pub stall_after_s: Option<u64>,
    /// Exit code (as a TOML key, e.g. `"41"`) → its meaning and fix; such an exit is not
    /// retried on this provider (`engine::exits`).
    pub exit_codes: BTreeMap<String, crate::domain::ExitMeaning>,
    /// Output lines that give a non-zero exit a meaning (`providers::exit_output`).
    pub exit_output: Vec<super::exit_output::ExitOutputRule>,
    /// What of the user's home a fenced agent sees (`[sandbox] mode = "bwrap"`): paths
    /// relative to `$HOME` (`.codex`, `.claude.json`), bound read-only into the fence's
    /// otherwise empty home; a missing one is skipped (`crate::sandbox`).
    pub sandbox_home: Vec<String>,
}

impl ProviderSpec {
    /// True for real agent CLIs (not `command`, not `sim`).
    pub fn is_agent(&self) -> bool {
        self.kind == ProviderKind::Agent
    }

    /// The model for a role: the role's row, else the `default` row, else none (the CLI's
    /// own default).
    pub fn model_for_role(&self, role: &str) -> Option<&str> {
        self.models
            .get(role)
            .or_else(|| self.models.get("default"))
            .map(String::as_str)
            .filter(|m| !m.is_empty())
    }

    /// `exit_codes` keyed by number (keys are checked at load).
    pub fn exit_meanings(&self) -> BTreeMap<i32, crate::domain::ExitMeaning> {
        self.exit_codes
            .iter()
            .filter_map(|(k, v)| Some((k.trim().parse().ok()?, v.clone())))
            .collect()
    }

    /// Compiled `noise_patterns` (case-insensitive).
    pub fn noise_regexes(&self) -> Vec<Regex> {
        compile_all(&self.noise_patterns)
    }

    /// Compiled `rate_limit_patterns` (case-insensitive).
    pub fn rate_limit_regexes(&self) -> Vec<Regex> {
        compile_all(&self.rate_limit_patterns)
    }

    /// Compiled `stall_patterns` (case-insensitive).
    pub fn stall_regexes(&self) -> Vec<Regex> {
        compile_all(&self.stall_patterns)
    }

    /// Compiled `waiting_patterns` (case-insensitive).
    pub fn waiting_regexes(&self) -> Vec<Regex> {
        compile_all(&self.waiting_patterns)
    }
}

/// `auth` is a table of [`AuthSpec`] fields or the word `"none"`.
fn auth_table_or_none<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<AuthSpec, D::Error> {
    use serde::de::{self, MapAccess, Visitor};
    struct TableOrNone;
    impl<'de> Visitor<'de> for TableOrNone {
        type Value = AuthSpec;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a table of auth fields, or \"none\" for a keyless endpoint")
        }
        fn visit_str<E: de::Error>(self, s: &str) -> std::result::Result<AuthSpec, E> {
            if s == "none" {
                Ok(AuthSpec {
                    keyless: true,
                    ..AuthSpec::default()
                })
            } else {
                Err(E::invalid_value(de::Unexpected::Str(s), &self))
            }
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> std::result::Result<AuthSpec, A::Error> {
            AuthSpec::deserialize(de::value::MapAccessDeserializer::new(map))
        }
    }
    d.deserialize_any(TableOrNone)
}

fn compile_all(patterns: &[String]) -> Vec<Regex> {
    patterns.iter().filter_map(|p| compile(p).ok()).collect()
}

/// Compile one case-insensitive pattern.
///
/// # Errors
/// The `regex` crate's error for a pattern that does not compile.
pub(crate) fn compile(pattern: &str) -> std::result::Result<Regex, regex::Error> {
    RegexBuilder::new(pattern).case_insensitive(true).build()
}

/// One line: `FILE:LINE:COL: message` from a toml error's span.
pub(crate) fn toml_error(path: &Path, text: &str, e: &toml::de::Error) -> Error {
    super::toml_hint::toml_error_with(path, text, e, &[])
}

/// 1-based line and column of a byte offset.
pub(crate) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_from_one() {
        assert_eq!(line_col("ab\ncd", 0), (1, 1));
        assert_eq!(line_col("ab\ncd", 4), (2, 2));
    }
}
