//! `crewmux doctor --hosts`: whether each SSH host of `hosts.toml` can run workers.
//!
//! Per host, in order (a failed SSH check skips the rest):
//! - `ssh`: the host answers `true` over the shared connection within [`SSH_LIMIT`];
//! - `tmux`: `<tmux> -V` there, judged by the same minimum `run` holds this machine to;
//! - `git`: `git --version` there (remote workers get their code by git);
//! - `workdir`: the host's `workdir` exists or can be made, and is writable;
//! - `helper`: whether crewmux (the pane-text filter, `sim`) is there, will be copied on
//!   the first run that needs it, or cannot run there (`super::helper`; nothing is
//!   copied here);
//! - each agent CLI, with the probes `doctor` runs here, run on the host: on the PATH
//!   of a command there (`command -v`), its version, and its auth state by the rules of
//!   `providers::usable` where the host's side is read there: a key variable set in
//!   `[providers.NAME.env]` or in the host's environment, keys of the credential store
//!   (they reach a remote launch in its environment), the CLI's status command run there
//!   (the provider's `env` on top, given on stdin, never in an argv), a stored-login
//!   file under the host's `$HOME`.
//!
//! Every remote check is one `sh -s` over the host's shared SSH connection with its
//! script on stdin, killed at its limit.

use std::time::{Duration, Instant};

use serde::Serialize;

use super::config::HostSpec;
use super::ssh::SshLink;
use super::ssh_said::SshFailed;
use crate::error::Result;
use crate::providers::health::{classify_probe, parse_version, AuthState, VERSION_TIMEOUT_MS};
use crate::providers::spec::{ProviderKind, ProviderSpec, Unproven};
use crate::providers::{EnvSnapshot, ProviderHealth, Registry};

/// Limit of the reachability check (ssh's own `ConnectTimeout` is 10 s).
pub const SSH_LIMIT: Duration = Duration::from_secs(12);
/// Limit of a short check (tmux, git, workdir, `command -v`, a variable, a file).
const SHORT_LIMIT: Duration = Duration::from_secs(10);

/// What one remote script did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteOut {
    /// `None`: killed at its limit (or by a signal).
    pub code: Option<i32>,
    /// stdout and stderr together (the scripts send stderr to stdout).
    pub output: String,
    pub timed_out: bool,
}

/// How a process with exit code `code` ended, for a person: `exited 1`, or `ended on a
/// signal` (no code: killed, or by a signal).
pub fn how_it_ended(code: Option<i32>) -> String {
    code.map_or_else(
        || "ended on a signal".to_string(),
        |c| format!("exited {c}"),
    )
}

/// Runs a `sh` script on one host; [`SshLink`] in the product, a fake in unit tests.
pub trait RemoteSh: Sync {
    /// Run `script` with `sh -s` on the host within `limit`.
    ///
    /// # Errors
    /// ssh cannot be started, or the host cannot be reached (ssh's own exit 255).
    fn sh(&self, script: &str, limit: Duration) -> Result<RemoteOut>;
}

impl RemoteSh for SshLink {
    fn sh(&self, script: &str, limit: Duration) -> Result<RemoteOut> {
        let cmd = self.command("sh -s");
        match crate::tmux::output_within(cmd, Some(script.as_bytes()), limit, &self.host) {
            Ok(out) => {
                let mut output = String::from_utf8_lossy(&out.stdout).into_owned();
                output.push_str(&String::from_utf8_lossy(&out.stderr));
                if out.status.code() == Some(255) {
                    return Err(crate::error::Error::Command {
                        program: format!("ssh to host {}", self.host),
                        message: output.trim().to_string(),
                    });
                }
                Ok(RemoteOut {
                    code: out.status.code(),
                    output,
                    timed_out: false,
                })
            }
            Err(crate::error::Error::Timeout { .. }) => Ok(RemoteOut {
                code: None,
                output: String::new(),
                timed_out: true,
            }),
            Err(e) => Err(e),
        }
    }
}

/// One line of a host's report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HostCheck {
    /// `ssh`, `tmux`, `git`, `workdir` or `helper`.
    pub check: String,
    pub ok: bool,
    /// What was found, or what is wrong and how to fix it.
    pub detail: String,
}

/// Everything `doctor --hosts` knows about one host.
#[derive(Debug, Clone, Serialize)]
pub struct HostReport {
    pub host: String,
    /// The `ssh` destination.
    pub ssh: String,
    pub checks: Vec<HostCheck>,
    /// Each agent CLI as probed there (empty when the host was not reached).
    pub providers: Vec<ProviderHealth>,
    /// ssh, tmux, git and workdir passed (`helper` is judged by what a team runs there).
    pub usable: bool,
}

impl HostReport {
    /// Agent CLIs usable there.
    pub fn ready(&self) -> Vec<&str> {
        self.providers
            .iter()
            .filter(|h| h.kind == ProviderKind::Agent && h.usable())
            .map(|h| h.provider.as_str())
            .collect()
    }
}

/// Quote one word for the remote `sh`.
fn q(word: &str) -> String {
    shlex::try_quote(word).map_or_else(|_| "''".into(), |w| w.into_owned())
}

fn first_line(s: &str) -> String {
    s.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
        .chars()
        .take(100)
        .collect()
}

/// Check `host` through `sh` (see the module docs); `env` is this machine's (for the
/// credential store's index only).
pub fn check_host(
    host: &HostSpec,
    sh: &dyn RemoteSh,
    registry: &Registry,
    env: &EnvSnapshot,
) -> HostReport {
    let mut report = HostReport {
        host: host.name.clone(),
        ssh: host.ssh.clone(),
        checks: vec![],
        providers: vec![],
        usable: false,
    };
    let started = Instant::now();
    let failed = match sh.sh("exec true\n", SSH_LIMIT) {
        Ok(o) if o.timed_out => Some(SshFailed::NoAnswer(format!(
            "no answer within {} s",
            SSH_LIMIT.as_secs()
        ))),
        Ok(o) if o.code == Some(0) => None,
        Ok(o) => Some(SshFailed::NoAnswer(format!(
            "`true` {}: {}",
            how_it_ended(o.code),
            first_line(&o.output)
        ))),
        // ssh's own exit 255: what it said tells a refused login, a host key or its
        // configuration from a host that does not answer.
        Err(crate::error::Error::Command { message, .. }) => Some(SshFailed::read(&message)),
        Err(e) => Some(SshFailed::NoAnswer(e.to_string())),
    };
    if let Some(failed) = failed {
        report.checks.push(HostCheck {
            check: "ssh".into(),
            ok: false,
            detail: failed.phrase(host),
        });
        return report;
    }
    report.checks.push(HostCheck {
        check: "ssh".into(),
        ok: true,
        detail: format!("ok ({} ms)", started.elapsed().as_millis()),
    });
    let (tools, providers, helper) = std::thread::scope(|s| {
        let tools = s.spawn(|| vec![tmux_check(host, sh), git_check(sh), workdir_check(host, sh)]);
        let helper = s.spawn(|| super::helper::doctor_line(host, sh));
        let agents: Vec<_> = registry
            .names()
            .filter_map(|n| registry.get(n).map(|spec| (n, spec)))
            .filter(|(_, spec)| spec.kind == ProviderKind::Agent)
            .map(|(n, spec)| s.spawn(move || probe_agent(n, spec, sh, env)))
            .collect();
        (
            tools.join().unwrap_or_default(),
            agents
                .into_iter()
                .filter_map(|h| h.join().ok())
                .collect::<Vec<_>>(),
            helper.join().ok(),
        )
    });
    report.usable = tools.len() == 3 && tools.iter().all(|c| c.ok);
    report.checks.extend(tools);
    // Not part of `usable`: only `sim` workers need it (see `commands::doctor_hosts`).
    report.checks.extend(helper);
    report.providers = providers;
    report
}

/// What a one-line check printed: its first line, as `Err` when it failed there.
fn ran(out: &Result<RemoteOut>) -> std::result::Result<String, String> {
    match out {
        Ok(o) if o.code == Some(0) => Ok(first_line(&o.output)),
        Ok(o) => Err(first_line(&o.output)),
        Err(e) => Err(e.to_string()),
    }
}

/// A check's line from its detail (`Err`: failed, with the fix).
fn check_line(check: &str, detail: std::result::Result<String, String>) -> HostCheck {
    HostCheck {
        check: check.into(),
        ok: detail.is_ok(),
        detail: detail.unwrap_or_else(|e| e),
    }
}

fn tmux_check(host: &HostSpec, sh: &dyn RemoteSh) -> HostCheck {
    let out = sh.sh(&format!("exec {} -V 2>&1\n", q(&host.tmux)), SHORT_LIMIT);
    check_line("tmux", super::preflight::tmux_detail(host, &ran(&out)))
}

fn git_check(sh: &dyn RemoteSh) -> HostCheck {
    let out = sh.sh("exec git --version 2>&1\n", SHORT_LIMIT);
    check_line("git", super::preflight::git_detail(&ran(&out)))
}

fn workdir_check(host: &HostSpec, sh: &dyn RemoteSh) -> HostCheck {
    let dir = q(&host.workdir.display().to_string());
    let script =
        format!("mkdir -p -- {dir} 2>&1 && test -w {dir} && exit 0\necho not writable\nexit 1\n");
    match sh.sh(&script, SHORT_LIMIT) {
        Ok(o) if o.code == Some(0) => HostCheck {
            check: "workdir".into(),
            ok: true,
            detail: format!("ok ({})", host.workdir.display()),
        },
        other => HostCheck {
            check: "workdir".into(),
            ok: false,
            detail: format!(
                "{} cannot be used there ({}); make it writable or set `workdir` in {}",
                host.workdir.display(),
                other.map_or_else(|e| e.to_string(), |o| first_line(&o.output)),
                host.source.display()
            ),
        },
    }
}

/// One agent CLI on the host: installed, version, auth (see the module docs).
pub fn probe_agent(
    name: &str,
    spec: &ProviderSpec,
    sh: &dyn RemoteSh,
    env: &EnvSnapshot,
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
    let bin = q(&spec.binary);
    let found = sh.sh(&format!("command -v -- {bin}\n"), SHORT_LIMIT);
    let path = match found {
        Ok(o) if o.code == Some(0) && !o.output.trim().is_empty() => first_line(&o.output),
        _ => {
            h.auth_detail = format!("`{}` is not on PATH there", spec.binary);
            return h;
        }
    };
    h.installed = true;
    h.path = Some(path.clone().into());
    if !spec.version_args.is_empty() {
        // An npm package says its version without starting Node there.
        h.version = super::doctor_version::remote_package_version(&path, sh);
        let args: Vec<String> = spec.version_args.iter().map(|a| q(a)).collect();
        let script = format!("exec {} {} 2>&1 </dev/null\n", q(&path), args.join(" "));
        if h.version.is_none() {
            if let Ok(o) = sh.sh(&script, Duration::from_millis(VERSION_TIMEOUT_MS)) {
                h.version = parse_version(&o.output);
            }
        }
    }
    let (auth, detail) = remote_auth(name, spec, &path, sh, env);
    h.auth = auth;
    h.auth_detail = detail;
    h
}

/// The auth state of an installed CLI at `path` on the host.
fn remote_auth(
    name: &str,
    spec: &ProviderSpec,
    path: &str,
    sh: &dyn RemoteSh,
    env: &EnvSnapshot,
) -> (AuthState, String) {
    use crate::providers::usable::{key_source, key_vars};
    // Keyless, `[providers.NAME.env]` and the credential store: decided here. Only the
    // variables that find the store are kept: this machine's key variables do not reach
    // the host.
    let store_only = EnvSnapshot::from_pairs(
        ["CREWMUX_CONFIG_DIR", "XDG_CONFIG_HOME", "HOME"]
            .into_iter()
            .filter_map(|k| env.get(k).map(|v| (k, v.to_string()))),
    );
    if let Some(found) = key_source(name, spec, &store_only) {
        return found;
    }
    for var in key_vars(spec) {
        let script = format!("v=$(printenv {})\ntest -n \"$v\"\n", q(var));
        if matches!(sh.sh(&script, SHORT_LIMIT), Ok(o) if o.code == Some(0)) {
            return (
                AuthState::Authenticated,
                format!("${var} is set on the host"),
            );
        }
    }
    let a = &spec.auth;
    if !a.probe.is_empty() {
        let timeout = Duration::from_millis(
            a.timeout_ms
                .unwrap_or(crate::providers::health::DEFAULT_AUTH_TIMEOUT_MS),
        );
        let mut script = String::new();
        for (k, v) in &spec.env {
            script.push_str(&format!("export {}={}\n", q(k), q(v)));
        }
        let args: Vec<String> = a.probe.iter().map(|w| q(w)).collect();
        script.push_str(&format!(
            "exec {} {} 2>&1 </dev/null\n",
            q(path),
            args.join(" ")
        ));
        match sh.sh(&script, timeout) {
            Ok(o) if o.timed_out => {
                return (
                    AuthState::Unknown,
                    format!(
                        "`{} {}` timed out after {} ms there",
                        spec.binary,
                        a.probe.join(" "),
                        timeout.as_millis()
                    ),
                )
            }
            Ok(o) => {
                let (state, detail) =
                    classify_probe(o.code, &o.output, &a.not_patterns, &a.ok_patterns);
                if state != AuthState::NotAuthenticated || a.files_any.is_empty() {
                    return (state, detail);
                }
            }
            Err(e) => return (AuthState::Unknown, format!("auth probe failed: {e}")),
        }
    }
    for f in &a.files_any {
        let target = match f.strip_prefix("~/") {
            Some(rest) => format!("\"$HOME\"/{}", q(rest)),
            None => q(f),
        };
        if matches!(sh.sh(&format!("test -e {target}\n"), SHORT_LIMIT), Ok(o) if o.code == Some(0))
        {
            return (
                AuthState::Authenticated,
                format!("stored login {f} on the host"),
            );
        }
    }
    let mut proofs: Vec<String> = key_vars(spec).iter().map(|v| format!("${v}")).collect();
    proofs.extend(a.files_any.iter().cloned());
    proofs.push("the credential store".into());
    let detail = format!("none of {} on the host", proofs.join(", "));
    match a.unproven {
        Unproven::Not => (AuthState::NotAuthenticated, detail),
        Unproven::Unknown => (AuthState::Unknown, detail),
    }
}

/// Check every host of `hosts` at once (one thread each).
///
/// # Errors
/// The private directory of SSH control sockets cannot be made.
pub fn check_hosts(
    hosts: &[&HostSpec],
    registry: &Registry,
    env: &EnvSnapshot,
) -> Result<Vec<HostReport>> {
    let links = hosts
        .iter()
        .map(|h| SshLink::new(h))
        .collect::<Result<Vec<_>>>()?;
    Ok(std::thread::scope(|s| {
        let handles: Vec<_> = hosts
            .iter()
            .zip(&links)
            .map(|(h, link)| s.spawn(move || check_host(h, link, registry, env)))
            .collect();
        handles.into_iter().filter_map(|h| h.join().ok()).collect()
    }))
}

/// The ssh command a user can type to try `host` by hand: its `ssh_args` and destination,
/// quoted for a POSIX shell (the `ssh_args` often point at a config of their own with `-F`).
pub(super) fn by_hand(host: &HostSpec) -> String {
    let words = std::iter::once("ssh")
        .chain(host.ssh_args.iter().map(String::as_str))
        .chain(std::iter::once(host.ssh.as_str()));
    shlex::try_join(words).unwrap_or_else(|_| format!("ssh {}", host.ssh))
}

#[cfg(test)]
#[path = "doctor_tests.rs"]
mod tests;

#[cfg(test)]
mod by_hand_tests {
    #[test]
    fn the_command_to_try_by_hand_carries_the_hosts_ssh_args() {
        let hosts = crate::hosts::config::parse(
            std::path::Path::new("h.toml"),
            "[hosts.box]\nssh = \"me@box\"\nssh_args = [\"-F\", \"/tmp/my cfg\"]\nworkdir = \"/w\"\n",
        )
        .unwrap();
        assert_eq!(super::by_hand(&hosts["box"]), "ssh -F '/tmp/my cfg' me@box");
    }
}
