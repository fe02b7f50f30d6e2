//! The one rule for "can a launch of this provider authenticate", shared by `doctor` and
//! routing (both go through [`super::health::probe`] and [`super::ProviderHealth::usable`]).
//!
//! It sees every source a launch gives the CLI, in this order (the first that decides wins):
//! 1. `auth = "none"` in the provider: a keyless endpoint (a local model server), usable
//!    with a warning since nothing can be checked;
//! 2. a key variable (`auth.env_any` or `api_key_env`) set in the environment the launch
//!    gives the CLI: crewmux's own environment overlaid with `[providers.NAME.env]`;
//! 3. keys stored for the provider in the credential store, read from the store's plain
//!    index (`creds::CredentialIndex`) so that the passphrase is never asked for;
//! 4. the CLI's own status command (`auth.probe`), run with the launch environment;
//! 5. a stored-login file (`auth.files_any`, `~` is the launch's `$HOME`);
//! 6. `auth.unproven` (`"not"` or `"unknown"`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::health::DEFAULT_AUTH_TIMEOUT_MS;
use super::health::{classify_probe, run_with_timeout, AuthState, ProbeOptions};
use super::spec::{ProviderSpec, Unproven};
use super::EnvSnapshot;
use crate::creds::CredentialIndex;

/// The environment a launch of `spec` gives its CLI: `env` with the provider's `env`
/// overrides on top (the same overlay the launch applies).
pub fn launch_env(spec: &ProviderSpec, env: &EnvSnapshot) -> EnvSnapshot {
    let mut out = env.clone();
    for (k, v) in &spec.env {
        out.set(k.clone(), v.clone());
    }
    out
}

/// Variables whose non-empty value proves a key: `auth.env_any`, then `api_key_env`.
pub fn key_vars(spec: &ProviderSpec) -> Vec<&str> {
    let mut vars: Vec<&str> = spec.auth.env_any.iter().map(String::as_str).collect();
    if let Some(v) = spec.api_key_env.as_deref() {
        if !vars.contains(&v) {
            vars.push(v);
        }
    }
    vars
}

/// The sources that decide without running anything (rules 1–3 above), or `None`.
pub fn key_source(
    name: &str,
    spec: &ProviderSpec,
    env: &EnvSnapshot,
) -> Option<(AuthState, String)> {
    if spec.auth.keyless {
        return Some((
            AuthState::Keyless,
            "auth = \"none\": keyless endpoint, no key checked".into(),
        ));
    }
    let set = |e: &EnvSnapshot, v: &str| e.get(v).is_some_and(|x| !x.is_empty());
    for var in key_vars(spec) {
        if spec.env.get(var).is_some_and(|x| !x.is_empty()) {
            return Some((
                AuthState::Authenticated,
                format!("${var} is set in [providers.{name}.env]"),
            ));
        }
        if set(env, var) {
            return Some((AuthState::Authenticated, format!("${var} is set")));
        }
    }
    let dir = super::user_config_dir(env)?;
    let index = CredentialIndex::read(&dir)?;
    let entry = index.get(name)?;
    let today = chrono::Local::now().date_naive();
    if !entry.usable_on(today) {
        return None;
    }
    let var = spec.api_key_env.as_deref().unwrap_or("its key variable");
    Some((
        AuthState::Authenticated,
        format!(
            "{} key{} in the credential store (reaches ${var})",
            entry.keys,
            if entry.keys == 1 { "" } else { "s" }
        ),
    ))
}

/// Decide the auth state of an installed agent CLI at `path` by the rules of this module.
/// `env` is crewmux's environment; the provider's overrides are applied here.
pub fn auth_state(
    name: &str,
    spec: &ProviderSpec,
    path: &Path,
    env: &EnvSnapshot,
    opts: &ProbeOptions,
) -> (AuthState, String) {
    if let Some(found) = key_source(name, spec, env) {
        return found;
    }
    let env = launch_env(spec, env);
    let a = &spec.auth;
    if !a.probe.is_empty() {
        let timeout = opts.auth_timeout.unwrap_or(Duration::from_millis(
            a.timeout_ms.unwrap_or(DEFAULT_AUTH_TIMEOUT_MS),
        ));
        match run_with_timeout(path, &a.probe, &env, timeout) {
            Ok(out) if out.timed_out => {
                return (
                    AuthState::Unknown,
                    format!(
                        "`{} {}` timed out after {} ms",
                        spec.binary,
                        a.probe.join(" "),
                        timeout.as_millis()
                    ),
                )
            }
            Ok(out) => {
                let (state, detail) =
                    classify_probe(out.exit_code, &out.output, &a.not_patterns, &a.ok_patterns);
                if state != AuthState::NotAuthenticated || a.files_any.is_empty() {
                    return (state, detail);
                }
            }
            Err(e) => {
                return (
                    AuthState::Unknown,
                    format!("auth probe failed to start: {e}"),
                )
            }
        }
    }
    if let Some(f) = login_file(spec, &env) {
        return (AuthState::Authenticated, format!("stored login {f}"));
    }
    let mut proofs: Vec<String> = key_vars(spec).iter().map(|v| format!("${v}")).collect();
    proofs.extend(a.files_any.iter().cloned());
    proofs.push("the credential store".into());
    let detail = format!("none of {}", proofs.join(", "));
    match a.unproven {
        Unproven::Not => (AuthState::NotAuthenticated, detail),
        Unproven::Unknown => (AuthState::Unknown, detail),
    }
}

/// The first of `auth.files_any` that exists, as written in the spec.
fn login_file<'a>(spec: &'a ProviderSpec, env: &EnvSnapshot) -> Option<&'a str> {
    let home = env.get("HOME").unwrap_or("");
    spec.auth
        .files_any
        .iter()
        .find(|f| {
            let p = match f.strip_prefix("~/") {
                Some(rest) => Path::new(home).join(rest),
                None => PathBuf::from(f),
            };
            p.exists()
        })
        .map(String::as_str)
}

#[cfg(test)]
#[path = "usable_tests.rs"]
mod tests;
