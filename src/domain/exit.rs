//! What an agent CLI's exit code means, as its provider declares it (`exit_codes` in
//! providers.toml): the kinds below, each a failure that the same provider will repeat, so
//! the engine does not retry it there (see `engine::exits`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The kinds of exit code a provider can name. Each is deterministic: running the same
/// CLI again with the same setup fails the same way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ExitKind {
    /// No usable credential (e.g. gemini's 41).
    Auth,
    /// The CLI refuses to work in a folder it does not trust (gemini's 55).
    UntrustedDir,
    /// The CLI refused its arguments (codex's 2, from its argument parser).
    Usage,
    /// The CLI's own configuration is broken (gemini's 52).
    Config,
    /// The CLI refused its input (gemini's 42).
    Input,
    /// The CLI's sandbox could not start (gemini's 44).
    Sandbox,
    /// The CLI stopped at its own turn limit (gemini's 53).
    TurnLimit,
    /// The program was not found (a shell's 127, POSIX `sh` "Exit Status for Commands").
    NotFound,
    /// The program was found but could not be run: not executable, or a folder (a
    /// shell's 126, same source).
    NotExecutable,
    /// The CLI could not reach its API endpoint (connection refused, DNS, TLS, timeout)
    /// after its own retries, e.g. Claude Code's "Unable to connect to API
    /// (ConnectionRefused)". The same endpoint is not tried again in the run.
    Unreachable,
    /// The account behind the key is out of quota, credits or its plan's usage (not a
    /// short rate limit, which the CLIs retry and crewmux backs off from).
    Quota,
    /// The plan's usage limit is reached until a time the CLI names (Claude Code's "You've
    /// hit your session limit · resets 3pm", codex's "You've hit your usage limit. … try
    /// again at 3:04 PM"): the worker is parked until then instead of failed
    /// (`engine::parking`). Without a reset time it reads as [`ExitKind::Quota`].
    Limit,
}

impl ExitKind {
    /// The words after `<provider>: ` in a worker's reason.
    pub fn says(self) -> &'static str {
        match self {
            ExitKind::Auth => "not authenticated",
            ExitKind::UntrustedDir => "folder not trusted",
            ExitKind::Usage => "refused its arguments",
            ExitKind::Config => "configuration error",
            ExitKind::Input => "refused its input",
            ExitKind::Sandbox => "sandbox failed",
            ExitKind::TurnLimit => "turn limit reached",
            ExitKind::NotFound => "command not found",
            ExitKind::NotExecutable => "command cannot be run",
            ExitKind::Unreachable => "endpoint unreachable",
            ExitKind::Quota => "out of quota",
            ExitKind::Limit => "usage limit reached",
        }
    }

    /// The kebab-case name used in providers.toml.
    pub fn as_str(self) -> &'static str {
        match self {
            ExitKind::Auth => "auth",
            ExitKind::UntrustedDir => "untrusted-dir",
            ExitKind::Usage => "usage",
            ExitKind::Config => "config",
            ExitKind::Input => "input",
            ExitKind::Sandbox => "sandbox",
            ExitKind::TurnLimit => "turn-limit",
            ExitKind::NotFound => "not-found",
            ExitKind::NotExecutable => "not-executable",
            ExitKind::Unreachable => "unreachable",
            ExitKind::Quota => "quota",
            ExitKind::Limit => "limit",
        }
    }
}

/// One declared exit code: its kind and what the user should do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExitMeaning {
    pub meaning: ExitKind,
    /// What to do, e.g. "set GEMINI_API_KEY, or run `gemini` once to log in".
    #[serde(default)]
    pub fix: String,
}

impl ExitMeaning {
    /// `gemini: not authenticated (exit 41): set GEMINI_API_KEY or …`.
    pub fn reason(&self, provider: &str, code: i32) -> String {
        let mut r = format!("{provider}: {} (exit {code})", self.meaning.says());
        if !self.fix.is_empty() {
            r.push_str(": ");
            r.push_str(&self.fix);
        }
        r
    }
}

/// An exit explained by the CLI's own output rather than its code: a provider's
/// `exit_output` rule matched one of the last lines the failed attempt printed (claude and
/// qwen exit 1 for a missing login as for any other failure; only their output tells).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExitSaid {
    pub meaning: ExitMeaning,
    /// The line that matched, made readable (at most ~120 characters).
    pub line: String,
    /// For a [`ExitKind::Limit`]: when the limit resets, read from the rule's `reset` group
    /// (`providers::reset_time`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resets_at: Option<chrono::DateTime<chrono::Utc>>,
    /// The lead moved the provider to another key of the credential store for the next
    /// attempt (a limit is the key's, so the next key may have room).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub other_key: bool,
}

impl ExitSaid {
    /// `claude: not authenticated (exit 1: "Not logged in · Please run /login"): set …`.
    pub fn reason(&self, provider: &str, code: i32) -> String {
        let mut r = format!(
            "{provider}: {} (exit {code}: {:?})",
            self.meaning.meaning.says(),
            self.line
        );
        if !self.meaning.fix.is_empty() {
            r.push_str(": ");
            r.push_str(&self.meaning.fix);
        }
        r
    }
}

/// What the engine knows about providers in one run: their declared exit codes (copied from
/// the registry at plan time, so a reattached run needs no providers.toml), each worker's
/// fallback providers (routing's chain, best first) and the providers that failed with a
/// declared exit code in this run (provider → reason).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunRouting {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub exit_codes: BTreeMap<String, BTreeMap<i32, ExitMeaning>>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub fallbacks: BTreeMap<String, Vec<Fallback>>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub failed: BTreeMap<String, String>,
    /// Providers whose latest attempts in this run all ended `stalled` (the CLI stuck
    /// reconnecting to its endpoint), with how many and the last stall line; an attempt
    /// on the provider that ends any other way (except cancelled) takes it off. A fix
    /// round does not go to such a provider (`engine::exits::fixer_route`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub stalled: BTreeMap<String, StalledProvider>,
    /// Per provider, how many of its attempts in a row ended `timeout`, `crashed` or
    /// stalled (a completed attempt sets it back to none); at
    /// `engine::breaker::OPEN_AFTER` the circuit breaker opens the provider (it goes into
    /// `failed` with the reason).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub failing: BTreeMap<String, u32>,
}

/// A provider whose latest attempts all stalled on its connection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StalledProvider {
    /// Attempts in a row, at least 1.
    pub attempts: u32,
    /// The last one's reason (`stalled: <line>`).
    pub reason: String,
}

impl StalledProvider {
    /// `codex: endpoint unreachable (its last 2 attempts stalled: "…"): check …`.
    pub fn reason(&self, provider: &str) -> String {
        let n = self.attempts;
        let line = self
            .reason
            .strip_prefix("stalled: ")
            .unwrap_or(&self.reason);
        let what = if n == 1 {
            "its last attempt stalled".to_string()
        } else {
            format!("its last {n} attempts stalled")
        };
        format!(
            "{provider}: endpoint unreachable ({what}: {line:?}): check the provider's base URL, \
             network and proxy, or choose another provider"
        )
    }
}

/// A provider a worker may move to, with the model routing chose for it there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fallback {
    pub provider: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

impl RunRouting {
    /// The declared meaning of `provider`'s exit `code`.
    pub fn meaning(&self, provider: &str, code: i32) -> Option<&ExitMeaning> {
        self.exit_codes.get(provider)?.get(&code)
    }

    /// Why a new worker (a fixer) should not go to `provider`: it failed with a declared
    /// meaning in this run, or its latest attempts all stalled; `None` when neither.
    pub fn unusable(&self, provider: &str) -> Option<String> {
        self.failed
            .get(provider)
            .cloned()
            .or_else(|| self.stalled.get(provider).map(|s| s.reason(provider)))
    }
}
