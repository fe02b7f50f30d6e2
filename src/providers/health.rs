//! Provider health: on PATH, version, auth state; probes run in parallel, each killed (its
//! whole process group) at its timeout so that a hanging CLI never hangs the caller.
#![allow(
    clippy::expect_used,
    reason = "regex literals compiled once; a bad one fails every test of this module"
)]

use std::path::PathBuf;
use std::sync::LazyLock;
use std::time::Duration;

use regex::Regex;
use serde::Serialize;

pub use super::auth::classify_probe;
pub use super::run::{run_with_timeout, ProbeOutput};
use super::spec::{ProviderKind, ProviderSpec};
use super::EnvSnapshot;
use super::Registry;

/// Default auth probe timeout, ms.
pub const DEFAULT_AUTH_TIMEOUT_MS: u64 = 10_000;
/// Timeout of `--version`, ms: Node CLIs take 1-3 s alone and several times that when
/// doctor starts them all at once on a small machine.
pub const VERSION_TIMEOUT_MS: u64 = 15_000;

/// Whether a CLI can make authenticated calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum AuthState {
    Authenticated,
    NotAuthenticated,
    Unknown,
    /// `auth = "none"`: a keyless endpoint, nothing checked (usable, with a warning).
    Keyless,
}

impl AuthState {
    pub fn as_str(self) -> &'static str {
        match self {
            AuthState::Authenticated => "authenticated",
            AuthState::NotAuthenticated => "not-authenticated",
            AuthState::Unknown => "unknown",
            AuthState::Keyless => "keyless",
        }
    }
}

/// What doctor and routing know about one provider.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProviderHealth {
    pub provider: String,
    pub kind: ProviderKind,
    pub installed: bool,
    pub path: Option<PathBuf>,
    pub version: Option<String>,
    pub auth: AuthState,
    /// Why: which variable, file or probe output decided the auth state.
    pub auth_detail: String,
    pub install_hint: String,
    /// How the CLI retries silently, from the provider's `silent_retries` ("" when not).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub silent_retries: String,
}

impl ProviderHealth {
    /// Whether a launch may go to this provider: installed and not known to be logged out
    /// (an `unknown` auth may still work). The auth state comes from
    /// [`super::usable::auth_state`], which sees every source a launch gives the CLI; doctor
    /// and routing both decide with this one function.
    pub fn usable(&self) -> bool {
        self.installed && self.auth != AuthState::NotAuthenticated
    }

    /// One word for tables: ready, not-installed, not-authenticated, auth-unknown.
    pub fn summary(&self) -> &'static str {
        if self.kind != ProviderKind::Agent {
            "ready"
        } else if !self.installed {
            "not-installed"
        } else {
            match self.auth {
                AuthState::Authenticated => "ready",
                AuthState::NotAuthenticated => "not-authenticated",
                AuthState::Unknown => "auth-unknown",
                AuthState::Keyless => "ready-keyless",
            }
        }
    }
}

/// Options of a health check.
#[derive(Debug, Clone, Default)]
pub struct ProbeOptions {
    /// Overrides every provider's auth probe timeout (tests use a short one).
    pub auth_timeout: Option<Duration>,
    /// Skip the `--version` call (routing needs no version).
    pub skip_version: bool,
}

/// Check one provider: find the binary on `env`'s PATH, read its version, decide its auth
/// state (a key variable, then the probe command, then a stored-login file, then `unproven`).
pub fn probe(
    name: &str,
    spec: &ProviderSpec,
    env: &EnvSnapshot,
    opts: &ProbeOptions,
) -> ProviderHealth {
    let mut h = ProviderHealth {
        provider: name.to_string(),
        kind: spec.kind,
        installed: false,
        path: None,
        version: None,
        auth: AuthState::Unknown,
        auth_detail: String::new(),
        install_hint: spec.install_hint.clone(),
        silent_retries: spec.silent_retries.clone(),
    };
    match spec.kind {
        ProviderKind::Command => {
            h.installed = true;
            h.auth_detail = "runs the team file's argv".into();
            return h;
        }
        ProviderKind::Sim => {
            h.installed = true;
            h.auth = AuthState::Authenticated;
            h.auth_detail = "built in, no key needed".into();
            h.version = Some(env!("CARGO_PKG_VERSION").to_string());
            return h;
        }
        ProviderKind::Agent => {}
    }
    let cwd = env
        .get("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/"));
    let Ok(path) = which::which_in(&spec.binary, env.get("PATH"), cwd) else {
        h.auth_detail = format!("`{}` is not on PATH", spec.binary);
        return h;
    };
    h.installed = true;
    h.path = Some(path.clone());
    if !opts.skip_version && !spec.version_args.is_empty() {
        // An npm package says its version without starting Node.
        h.version = super::npm_version::npm_package_version(&path);
        if h.version.is_none() {
            if let Ok(out) = run_with_timeout(
                &path,
                &spec.version_args,
                env,
                Duration::from_millis(VERSION_TIMEOUT_MS),
            ) {
                h.version = parse_version(&out.output);
            }
        }
    }
    let (auth, detail) = super::usable::auth_state(name, spec, &path, env, opts);
    h.auth = auth;
    h.auth_detail = detail;
    h
}

/// First `N.N[.N][suffix]` in a version output.
pub fn parse_version(output: &str) -> Option<String> {
    static V: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"\d+\.\d+(?:\.\d+)?[0-9A-Za-z.+-]*").expect("valid"));
    V.find(output).map(|m| m.as_str().to_string())
}

/// Probe the named providers in parallel (one thread each); results in the given order.
pub fn probe_many(
    registry: &Registry,
    names: &[&str],
    env: &EnvSnapshot,
    opts: &ProbeOptions,
) -> Vec<ProviderHealth> {
    std::thread::scope(|s| {
        let handles: Vec<_> = names
            .iter()
            .filter_map(|n| registry.get(n).map(|spec| (*n, spec)))
            .map(|(n, spec)| s.spawn(move || probe(n, spec, env, opts)))
            .collect();
        handles.into_iter().filter_map(|h| h.join().ok()).collect()
    })
}

/// tmux on PATH and its version (`tmux -V` prints e.g. `tmux 3.3a`, `tmux next-3.4`), judged
/// by the one check `run` follows too ([`crate::backend::tmux_version::tmux_usable`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TmuxHealth {
    pub installed: bool,
    pub path: Option<PathBuf>,
    pub version: Option<String>,
    /// Parsed `(major, minor)`.
    pub parsed: Option<(u32, u32)>,
    /// Installed and at least [`crate::backend::tmux_version::MIN_TMUX`]: workers run in
    /// tmux panes; otherwise on the process backend.
    pub ok: bool,
    /// The oldest tmux crewmux drives (`3.2`).
    pub minimum: String,
    /// Why tmux cannot be used, when it cannot (one phrase naming the version, or the
    /// locale tmux refused to start in).
    pub problem: Option<String>,
    /// What makes it usable, when it is not (one phrase: `install tmux 3.2 or newer`, or a
    /// UTF-8 locale; [`crate::backend::tmux_version::tmux_fix`]).
    pub fix: Option<String>,
}

/// Parse `tmux -V` output into `(major, minor)`.
pub use crate::backend::tmux_version::parse_tmux_version;

/// Check tmux: the `tmux` on `env`'s PATH and its `tmux -V` (5 s at most).
pub fn probe_tmux(env: &EnvSnapshot) -> TmuxHealth {
    use crate::backend::tmux_version::{min_tmux_text, tmux_fix, tmux_usable};
    let cwd = PathBuf::from("/");
    let mut t = TmuxHealth {
        installed: false,
        path: None,
        version: None,
        parsed: None,
        ok: false,
        minimum: min_tmux_text(),
        problem: None,
        fix: None,
    };
    if let Ok(path) = which::which_in("tmux", env.get("PATH"), cwd) {
        t.installed = true;
        let line = run_with_timeout(&path, &["-V".to_string()], env, Duration::from_secs(5))
            .map(|out| out.output.trim().to_string())
            .unwrap_or_default();
        t.parsed = parse_tmux_version(&line);
        t.version = Some(line);
        t.path = Some(path);
    }
    t.problem = tmux_usable(t.version.as_deref()).err();
    t.ok = t.problem.is_none();
    t.fix = (!t.ok).then(|| tmux_fix(t.version.as_deref()));
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions() {
        assert_eq!(
            parse_version("codex-cli 0.171.0\n").as_deref(),
            Some("0.171.0")
        );
        assert_eq!(
            parse_version("2.1.197 (Claude Code)").as_deref(),
            Some("2.1.197")
        );
        assert_eq!(parse_tmux_version("tmux 3.3a"), Some((3, 3)));
        assert_eq!(parse_tmux_version("tmux next-3.4"), Some((3, 4)));
        assert_eq!(parse_tmux_version("tmux 2.9a"), Some((2, 9)));
        assert_eq!(parse_tmux_version("tmux master"), None);
    }
}
