//! `crewmux doctor [--json]`: (`--hosts`: the SSH hosts instead, `super::doctor_hosts`) tmux (present, version ≥ 3.2, the check `run` follows) and every provider (on PATH,
//! version, auth state, install hint), then one readiness line.
//!
//! The project whose `.crewmux/providers.toml` is read is `--project`, else the current
//! directory (as for `dispatch`). Exit code: 0 when at least one real agent CLI is usable
//! (installed and not known to be logged out), 1 otherwise. tmux is reported but does not decide the exit code: without it
//! (or below 3.2) workers run on the process backend. Every probe runs in its own thread
//! with its own timeout (`auth.timeout_ms` of the provider, 5 s for versions), so a hanging
//! CLI delays doctor by at most its timeout.
#![allow(
    clippy::expect_used,
    reason = "a probe thread that panicked passes its panic on"
)]

use std::path::PathBuf;

use serde::Serialize;

use crate::cli::DoctorArgs;
use crate::error::Result;
use crate::providers::health::{probe_many, probe_tmux};
use crate::providers::{EnvSnapshot, ProbeOptions, ProviderHealth, Registry, TmuxHealth};

/// The doctor report (`--json` prints it as one object).
#[derive(Debug, Clone, Serialize)]
pub struct DoctorReport {
    pub tmux: TmuxHealth,
    pub providers: Vec<ProviderHealth>,
    /// Usable agent CLIs.
    pub ready: Vec<String>,
    /// At least one agent CLI is usable.
    pub ok: bool,
    /// Provider override files that were read.
    pub config_files: Vec<PathBuf>,
    /// Whether each fence (`[sandbox] mode`) can start here.
    pub sandbox: Vec<SandboxHealth>,
    /// How each provider fared in this project's earlier runs (`providers::history`, what
    /// routing leans on); empty with no project or no finished worker.
    pub history: Vec<ProviderPast>,
}

/// One provider's record over the project's earlier runs.
#[derive(Debug, Clone, Serialize)]
pub struct ProviderPast {
    pub provider: String,
    /// Workers that ended completed, failed, crashed or timeout.
    pub finished: u32,
    /// Of them, failed, crashed or timeout.
    pub failed: u32,
    /// The newest failure: `timeout: wall timeout of 900s` (its status and reason).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_failure: Option<String>,
}

/// The project's history per provider, newest failure first within each.
fn history_of(project: &std::path::Path) -> Vec<ProviderPast> {
    let h = crate::providers::history::History::load(project);
    h.by_provider
        .iter()
        .map(|(p, rec)| ProviderPast {
            provider: p.clone(),
            finished: rec.finished,
            failed: rec.failed,
            last_failure: h
                .failures
                .iter()
                .find(|f| &f.provider == p)
                .map(|f| match &f.reason {
                    Some(r) => format!("{}: {r}", f.status),
                    None => f.status.clone(),
                }),
        })
        .collect()
}

/// One sandbox mode on this machine (README "Sandbox").
#[derive(Debug, Clone, Serialize)]
pub struct SandboxHealth {
    /// `bwrap` or `container`.
    pub mode: crate::domain::SandboxMode,
    /// It can start here.
    pub ready: bool,
    /// What runs it (`bubblewrap 0.8.0`), or why it cannot and the fix.
    pub detail: String,
}

/// Each fence mode asked once (`sandbox::preflight`) with `PATH` from `env`.
pub fn sandbox_health(env: &EnvSnapshot) -> Vec<SandboxHealth> {
    let path = env.get("PATH").map(std::ffi::OsString::from);
    [
        crate::domain::SandboxMode::Bwrap,
        crate::domain::SandboxMode::Container,
    ]
    .into_iter()
    .map(
        |mode| match crate::sandbox::preflight(mode, path.as_deref()) {
            crate::sandbox::Readiness::Ready(detail) => SandboxHealth {
                mode,
                ready: true,
                detail,
            },
            crate::sandbox::Readiness::Refused(detail) => SandboxHealth {
                mode,
                ready: false,
                detail,
            },
        },
    )
    .collect()
}

/// Probe everything with `env` (PATH, HOME, key variables, CREWMUX_CONFIG_DIR).
///
/// # Errors
/// As [`Registry::load`]: a providers file that cannot be read or parsed.
pub fn report(project: Option<&std::path::Path>, env: &EnvSnapshot) -> Result<DoctorReport> {
    let registry = Registry::load(project, env)?;
    let names: Vec<&str> = registry.names().collect();
    let opts = ProbeOptions::default();
    let (tmux, providers, sandbox) = std::thread::scope(|s| {
        let t = s.spawn(|| probe_tmux(env));
        let f = s.spawn(|| sandbox_health(env));
        let p = probe_many(&registry, &names, env, &opts);
        (
            t.join().expect("tmux probe thread"),
            p,
            f.join().expect("sandbox probe thread"),
        )
    });
    let ready: Vec<String> = providers
        .iter()
        .filter(|h| h.kind == crate::providers::ProviderKind::Agent && h.usable())
        .map(|h| h.provider.clone())
        .collect();
    Ok(DoctorReport {
        tmux,
        ok: !ready.is_empty(),
        ready,
        providers,
        config_files: registry.sources.clone(),
        sandbox,
        history: project.map(history_of).unwrap_or_default(),
    })
}

/// Run the command; returns the exit code.
///
/// # Errors
/// As [`report`]; [`Error::System`](crate::error::Error::System) when the current directory
/// cannot be read.
#[allow(
    clippy::needless_pass_by_value,
    reason = "a command handler owns the flags clap parsed for it"
)]
pub fn run(args: DoctorArgs) -> Result<i32> {
    // Like `dispatch` and `run`: the project is the current directory unless given.
    let project = super::plan::given_project_dir(args.common.project.as_deref())?;
    if args.hosts {
        return super::doctor_hosts::run(&project, args.team.as_deref(), args.json);
    }
    let r = report(Some(&project), &EnvSnapshot::current())?;
    if args.json {
        crate::outln!(
            "{}",
            serde_json::to_string_pretty(&r)
                .map_err(|e| crate::error::Error::Other(e.to_string()))?
        );
    } else {
        crate::out!("{}", render(&r));
    }
    for line in credential_notes() {
        if args.json {
            crate::errln!("crewmux: {line}");
        } else {
            crate::outln!("{line}");
        }
    }
    Ok(if r.ok { 0 } else { 1 })
}

/// Key expiry warnings from the credential store (14 days ahead, `creds::EXPIRY_WARNING_DAYS`).
/// doctor never prompts: without `CREWMUX_CREDENTIAL_PASSPHRASE` it only says where the
/// store is; a store it cannot open is one line, never a failure of doctor.
fn credential_notes() -> Vec<String> {
    use crate::creds::{Store, EXPIRY_WARNING_DAYS, PASSPHRASE_ENV};
    let Ok(path) = Store::default_path() else {
        return vec![];
    };
    if !path.exists() {
        return vec![];
    }
    let Ok(pass) = std::env::var(PASSPHRASE_ENV) else {
        return vec![format!(
            "credentials: store at {} (set {PASSPHRASE_ENV} to check key expiry)",
            path.display()
        )];
    };
    match Store::open(&path, crate::creds::SecretString::from(pass)) {
        Ok(store) => {
            let notices = store.expiring_soon(EXPIRY_WARNING_DAYS);
            if notices.is_empty() {
                return vec![format!(
                    "credentials: no key expires within {EXPIRY_WARNING_DAYS} days"
                )];
            }
            notices
                .into_iter()
                .map(|n| {
                    if n.days_left < 0 {
                        format!(
                            "credentials: {} key `{}` expired on {}",
                            n.provider, n.label, n.expires
                        )
                    } else {
                        format!(
                            "credentials: {} key `{}` expires on {} (in {} days)",
                            n.provider, n.label, n.expires, n.days_left
                        )
                    }
                })
                .collect()
        }
        Err(e) => vec![format!("credentials: {e}")],
    }
}

/// The `history` lines of [`render`]: none without a finished worker in the project.
fn render_history(history: &[ProviderPast]) -> String {
    let mut out = String::new();
    if !history.is_empty() {
        out.push_str("history    this project's earlier runs (routing prefers what worked):\n");
        for p in history {
            out.push_str(&format!(
                "  {:<10} {} of {} workers failed{}\n",
                p.provider,
                p.failed,
                p.finished,
                p.last_failure
                    .as_deref()
                    .map(|l| {
                        let short: String = l.chars().take(90).collect();
                        let more = if short.len() < l.len() { "…" } else { "" };
                        format!(" · last: {short}{more}")
                    })
                    .unwrap_or_default()
            ));
        }
    }
    out
}

/// The human-readable report.
pub fn render(r: &DoctorReport) -> String {
    let mut out = String::new();
    let tmux = match (&r.tmux.installed, &r.tmux.version) {
        (false, _) => "not installed: workers will use the process backend (apt install tmux / brew install tmux)".to_string(),
        (true, v) if r.tmux.ok => format!("ok ({})", v.as_deref().unwrap_or("?")),
        (true, _) => format!(
            "{}: workers will use the process backend ({})",
            r.tmux.problem.as_deref().unwrap_or("unusable"),
            r.tmux
                .fix
                .clone()
                .unwrap_or_else(|| format!("install tmux >= {}", r.tmux.minimum))
        ),
    };
    out.push_str(&format!("tmux       {tmux}\n"));
    for f in &r.sandbox {
        let state = if f.ready {
            format!("ok ({})", f.detail)
        } else {
            format!("cannot start here: {}", f.detail)
        };
        out.push_str(&format!("{:<10} {state}\n", format!("{}", f.mode)));
    }
    out.push('\n');
    out.push_str(&format!(
        "{:<10} {:<18} {:<10} {:<18} {}\n",
        "provider", "state", "version", "auth", "detail"
    ));
    for h in &r.providers {
        let detail = if !h.installed {
            format!("install: {}", h.install_hint)
        } else {
            h.auth_detail.clone()
        };
        out.push_str(&format!(
            "{:<10} {:<18} {:<10} {:<18} {}\n",
            h.provider,
            h.summary(),
            h.version.as_deref().unwrap_or("-"),
            if h.installed && h.kind == crate::providers::ProviderKind::Agent {
                h.auth.as_str()
            } else {
                "-"
            },
            detail
        ));
    }
    for h in &r.providers {
        if h.auth == crate::providers::AuthState::Keyless && h.installed {
            out.push_str(&format!(
                "warning: {} has auth = \"none\": no key is checked, so it works only against a keyless endpoint (set in [providers.{}])\n",
                h.provider, h.provider
            ));
        }
    }
    for h in r
        .providers
        .iter()
        .filter(|h| h.installed && !h.silent_retries.is_empty())
    {
        out.push_str(&format!(
            "silent retries: {} {}\n",
            h.provider, h.silent_retries
        ));
    }
    out.push_str(&render_history(&r.history));
    let agents = r
        .providers
        .iter()
        .filter(|h| h.kind == crate::providers::ProviderKind::Agent)
        .count();
    out.push('\n');
    if r.ok {
        out.push_str(&format!(
            "ready: {} ({} of {agents} agent CLIs usable)\n",
            r.ready.join(", "),
            r.ready.len()
        ));
        // Usable but unproven (a probe that timed out, no key found): routing still tries
        // them, so they count, but the person is told which ones are a guess.
        for h in r.providers.iter().filter(|h| {
            h.installed
                && h.auth == crate::providers::AuthState::Unknown
                && r.ready.contains(&h.provider)
        }) {
            out.push_str(&format!(
                "unconfirmed: {} may not be logged in ({}); check it by hand before a long run\n",
                h.provider, h.auth_detail
            ));
        }
    } else {
        out.push_str(&format!(
            "not ready: no agent CLI is usable ({agents} checked); install or log in to one above, or run with --provider sim\n"
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_history_counts_each_providers_finished_workers_and_names_its_newest_failure() {
        let tmp = tempfile::tempdir().unwrap();
        let write = |run: &str, body: &str| {
            let dir = tmp.path().join(".crewmux/runs").join(run);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("state.json"), body).unwrap();
        };
        write(
            "r1",
            r#"{"run_id":"r1","workers":[
                {"id":"a","provider":"codex","status":"timeout","reason":"wall timeout of 900s","ended_at":"2026-12-01T10:00:00Z"},
                {"id":"b","provider":"claude","status":"completed"}]}"#,
        );
        write(
            "r2",
            r#"{"run_id":"r2","workers":[
                {"id":"a","provider":"codex","status":"failed","reason":"exit code 1","ended_at":"2026-12-02T10:00:00Z"},
                {"id":"b","provider":"codex","status":"completed"}]}"#,
        );
        write("r3", "{ not json");
        let h = super::history_of(tmp.path());
        let codex = h.iter().find(|p| p.provider == "codex").unwrap();
        assert_eq!((codex.finished, codex.failed), (3, 2));
        assert_eq!(codex.last_failure.as_deref(), Some("failed: exit code 1"));
        let claude = h.iter().find(|p| p.provider == "claude").unwrap();
        assert_eq!(
            (
                claude.finished,
                claude.failed,
                claude.last_failure.as_deref()
            ),
            (1, 0, None)
        );
    }
}
