//! Provider specs as data: the built-in `assets/providers.toml`, merged per field with the
//! user's and the project's `providers.toml`, validated once into a [`Registry`].
#![allow(
    clippy::expect_used,
    reason = "built-in assets embedded at compile time; their tests parse them"
)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use regex::{Regex, RegexBuilder};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

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
    pub version_args: Vec<String>,
    #[serde(deserialize_with = "auth_table_or_none")]
    pub auth: AuthSpec,
    pub install_hint: String,
    /// Environment set for every attempt.
    pub env: BTreeMap<String, String>,
    /// The variable the CLI reads its API key from.
    pub api_key_env: Option<String>,
    /// Model role → model.
    pub models: BTreeMap<String, String>,
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
    /// Regexes (case-insensitive) over one output line of the CLI's known chatter, dropped
    /// from a result taken from text output (never from `output.log`).
    pub noise_patterns: Vec<String>,
    /// Regexes (case-insensitive) over one output line meaning "the CLI is stuck retrying
    /// its connection" (reconnect, network and overload lines): output made only of these
    /// for `stall_after_s` ends the attempt `failed`, reason `stalled: <line>`.
    pub stall_patterns: Vec<String>,
    /// Seconds of stall-only output before the attempt is ended (a team or worker value
    /// wins; default `team::limits::DEFAULT_STALL_AFTER_S`).
    pub stall_after_s: Option<u64>,
    /// Exit code (as a TOML key, e.g. `"41"`) → its meaning and fix; such an exit is not
    /// retried on this provider (`engine::exits`).
    pub exit_codes: BTreeMap<String, crate::domain::ExitMeaning>,
    /// Output lines that give a non-zero exit a meaning (`providers::exit_output`).
    pub exit_output: Vec<super::exit_output::ExitOutputRule>,
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
pub(crate) fn compile(pattern: &str) -> std::result::Result<Regex, regex::Error> {
    RegexBuilder::new(pattern).case_insensitive(true).build()
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProvidersFile {
    // Parsed only to report unknown fields and wrong types with their line.
    #[allow(dead_code)]
    #[serde(default)]
    providers: BTreeMap<String, ProviderSpec>,
}

/// All known providers, in name order, after merging the override files.
#[derive(Debug, Clone, PartialEq)]
pub struct Registry {
    providers: BTreeMap<String, ProviderSpec>,
    /// Override files that were read, in the order applied.
    pub sources: Vec<PathBuf>,
}

/// Where the user's config lives: `$CREWMUX_CONFIG_DIR`, else `$XDG_CONFIG_HOME/crewmux`,
/// else `$HOME/.config/crewmux`.
pub fn user_config_dir(env: &crate::providers::EnvSnapshot) -> Option<PathBuf> {
    if let Some(dir) = env.get("CREWMUX_CONFIG_DIR") {
        return Some(PathBuf::from(dir));
    }
    if let Some(dir) = env.get("XDG_CONFIG_HOME") {
        return Some(PathBuf::from(dir).join("crewmux"));
    }
    env.get("HOME")
        .map(|h| PathBuf::from(h).join(".config").join("crewmux"))
}

impl Registry {
    /// The built-in providers only (parsed and validated once per process).
    pub fn builtin() -> Self {
        static BUILTIN: std::sync::LazyLock<Registry> = std::sync::LazyLock::new(|| {
            Registry::from_layers(&[(Path::new("assets/providers.toml"), BUILTIN_PROVIDERS)])
                .expect("assets/providers.toml is valid (checked by tests)")
        });
        BUILTIN.clone()
    }

    /// Built-ins, then `<config dir>/providers.toml`, then `<project>/.crewmux/providers.toml`
    /// when they exist.
    ///
    /// # Errors
    /// A file that cannot be read or parsed, named with its line.
    pub fn load(project: Option<&Path>, env: &crate::providers::EnvSnapshot) -> Result<Self> {
        let mut files: Vec<PathBuf> = Vec::new();
        if let Some(dir) = user_config_dir(env) {
            files.push(dir.join("providers.toml"));
        }
        if let Some(p) = project {
            files.push(p.join(".crewmux").join("providers.toml"));
        }
        let mut texts: Vec<(PathBuf, String)> = Vec::new();
        for f in files {
            match std::fs::read_to_string(&f) {
                Ok(t) => texts.push((f, t)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::Usage(format!("{}: cannot read: {e}", f.display()))),
            }
        }
        let mut layers: Vec<(&Path, &str)> =
            vec![(Path::new("assets/providers.toml"), BUILTIN_PROVIDERS)];
        layers.extend(texts.iter().map(|(p, t)| (p.as_path(), t.as_str())));
        let mut reg = Self::from_layers(&layers)?;
        reg.sources = texts.into_iter().map(|(p, _)| p).collect();
        Ok(reg)
    }

    /// Merge TOML layers (first is the base) field by field and validate the result.
    ///
    /// # Errors
    /// [`Error::Usage`] naming the layer's file and line: TOML that does not parse, or a provider
    /// that fails validation.
    pub fn from_layers(layers: &[(&Path, &str)]) -> Result<Self> {
        let mut merged = toml::Table::new();
        for (path, text) in layers {
            // Typed parse first: unknown fields and wrong types are reported with their line.
            toml::from_str::<ProvidersFile>(text).map_err(|e| toml_error(path, text, &e))?;
            let table: toml::Table =
                toml::from_str(text).map_err(|e| toml_error(path, text, &e))?;
            if let Some(toml::Value::Table(provs)) = table.get("providers") {
                for (name, value) in provs {
                    let toml::Value::Table(fields) = value else {
                        continue;
                    };
                    let entry = merged
                        .entry(name.clone())
                        .or_insert_with(|| toml::Value::Table(toml::Table::new()));
                    let toml::Value::Table(target) = entry else {
                        unreachable!()
                    };
                    for (k, v) in fields {
                        match (k.as_str(), v, target.get_mut(k)) {
                            (
                                "auth" | "models" | "env" | "exit_codes",
                                toml::Value::Table(sub),
                                Some(toml::Value::Table(old)),
                            ) => {
                                for (sk, sv) in sub {
                                    old.insert(sk.clone(), sv.clone());
                                }
                            }
                            _ => {
                                target.insert(k.clone(), v.clone());
                            }
                        }
                    }
                }
            }
        }
        let mut providers = BTreeMap::new();
        for (name, value) in merged {
            let spec: ProviderSpec = value.try_into().map_err(|e: toml::de::Error| {
                Error::Usage(format!("provider `{name}`: {}", e.message()))
            })?;
            validate(&name, &spec)?;
            providers.insert(name, spec);
        }
        Ok(Registry {
            providers,
            sources: Vec::new(),
        })
    }

    pub fn get(&self, name: &str) -> Option<&ProviderSpec> {
        self.providers.get(name)
    }

    /// A provider by name, or a usage error listing the known names.
    ///
    /// # Errors
    /// [`Error::Usage`] when `name` is not a known provider; the message lists the known names.
    pub fn require(&self, name: &str) -> Result<&ProviderSpec> {
        self.get(name).ok_or_else(|| {
            Error::Usage(format!(
                "unknown provider `{name}`: use one of {}",
                self.names().collect::<Vec<_>>().join(", ")
            ))
        })
    }

    /// Provider names in name order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.providers.keys().map(String::as_str)
    }

    /// `(name, spec)` pairs in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &ProviderSpec)> {
        self.providers.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// Real agent CLIs only.
    pub fn agents(&self) -> impl Iterator<Item = (&str, &ProviderSpec)> {
        self.iter().filter(|(_, s)| s.is_agent())
    }
}

fn validate(name: &str, spec: &ProviderSpec) -> Result<()> {
    let bad = |what: String| Err(Error::Usage(format!("provider `{name}`: {what}")));
    if spec.kind != ProviderKind::Command && spec.binary.trim().is_empty() {
        return bad("`binary` is empty: name the program to run".into());
    }
    if spec.prompt == PromptVia::ArgvFile && !spec.args.iter().any(|a| a.contains("{prompt_file}"))
    {
        return bad("`prompt = \"argv-file\"` needs `{prompt_file}` in `args`".into());
    }
    for code in spec.exit_codes.keys() {
        if !code
            .trim()
            .parse::<i32>()
            .is_ok_and(|c| (1..=255).contains(&c))
        {
            return bad(format!(
                "`exit_codes` key `{code}` is not an exit code: use 1..=255"
            ));
        }
    }
    for role in spec.models.keys() {
        if !MODEL_ROLES.contains(&role.as_str()) {
            return bad(format!(
                "unknown model role `{role}` in `models`: use {}",
                MODEL_ROLES.join(", ")
            ));
        }
    }
    for p in spec
        .rate_limit_patterns
        .iter()
        .chain(&spec.waiting_patterns)
        .chain(&spec.noise_patterns)
        .chain(&spec.stall_patterns)
        .chain(&spec.auth.not_patterns)
        .chain(&spec.auth.ok_patterns)
        .chain(spec.exit_output.iter().map(|r| &r.pattern))
    {
        if let Err(e) = compile(p) {
            let first = e.to_string().lines().last().unwrap_or_default().to_string();
            return bad(format!("bad pattern `{p}`: {first}"));
        }
    }
    Ok(())
}

/// One line: `FILE:LINE:COL: message` from a toml error's span.
pub(crate) fn toml_error(path: &Path, text: &str, e: &toml::de::Error) -> Error {
    let (line, col) = e.span().map(|s| line_col(text, s.start)).unwrap_or((1, 1));
    Error::Usage(format!(
        "{}:{line}:{col}: {}",
        path.display(),
        e.message().trim().replace('\n', " ")
    ))
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
    fn builtins_parse_and_have_the_spec_providers() {
        let reg = Registry::builtin();
        for name in [
            "codex", "gemini", "claude", "kimi", "opencode", "qwen", "aider", "command", "sim",
        ] {
            assert!(reg.get(name).is_some(), "missing {name}");
        }
        assert_eq!(reg.agents().count(), 7);
        assert_eq!(
            reg.get("codex").unwrap().model_for_role("smol"),
            Some("gpt-6-luna")
        );
        // A role without a row falls back to `default`.
        assert_eq!(
            reg.get("qwen").unwrap().model_for_role("slow"),
            Some("coder-model")
        );
        assert_eq!(reg.get("kimi").unwrap().model_for_role("slow"), None);
    }

    #[test]
    fn later_layer_wins_per_field_and_merges_tables() {
        let user = "[providers.codex]\ninstall_hint = \"brew install codex\"\n[providers.codex.models]\nsmol = \"tiny\"\n[providers.mine]\nbinary = \"mine\"\n";
        let reg = Registry::from_layers(&[
            (Path::new("builtin"), BUILTIN_PROVIDERS),
            (Path::new("user.toml"), user),
        ])
        .unwrap();
        let codex = reg.get("codex").unwrap();
        assert_eq!(codex.install_hint, "brew install codex");
        assert_eq!(codex.model_for_role("smol"), Some("tiny"));
        // Untouched fields and table rows stay.
        assert_eq!(codex.model_for_role("slow"), Some("gpt-6.2-astra"));
        assert_eq!(codex.binary, "codex");
        assert!(reg.get("mine").unwrap().is_agent());
    }

    #[test]
    fn unknown_field_in_override_names_file_line_and_field() {
        let user = "[providers.codex]\nbinary = \"codex\"\nargz = []\n";
        let err = Registry::from_layers(&[
            (Path::new("builtin"), BUILTIN_PROVIDERS),
            (Path::new("/home/u/.config/crewmux/providers.toml"), user),
        ])
        .unwrap_err()
        .to_string();
        assert!(
            err.starts_with("/home/u/.config/crewmux/providers.toml:3:"),
            "{err}"
        );
        assert!(err.contains("argz"), "{err}");
        assert!(!err.contains('\n'));
    }

    #[test]
    fn argv_file_without_placeholder_is_refused() {
        let user = "[providers.x]\nbinary = \"x\"\nprompt = \"argv-file\"\nargs = [\"run\"]\n";
        let err = Registry::from_layers(&[(Path::new("p.toml"), user)])
            .unwrap_err()
            .to_string();
        assert!(err.contains("{prompt_file}"), "{err}");
    }

    #[test]
    fn line_col_counts_from_one() {
        assert_eq!(line_col("ab\ncd", 0), (1, 1));
        assert_eq!(line_col("ab\ncd", 4), (2, 2));
    }
}
