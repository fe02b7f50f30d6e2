//! `crewmux doctor --hosts [--team FILE] [--json]`: every SSH host of `hosts.toml` checked
//! as `crate::hosts::doctor` describes, one line per check.
//!
//! Exit code: 1 when a host that counts is unusable, else 0. With `--team`, the hosts its
//! workers name (their own `host` or the team's) count, and such a host is also unusable
//! when an agent CLI one of its workers names (`provider`) is not usable there, or when a
//! worker routed to an agent finds none usable there. Without `--team`, every host of
//! `hosts.toml` counts (each is there to be used) by its ssh, tmux, git and workdir checks.
//! The `helper` check (crewmux there) counts only for a host where a team's worker runs
//! crewmux itself (`sim`); elsewhere a host that cannot run it is a warning.
//! A host a team names that no `hosts.toml` defines is a usage error (exit 2).

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::hosts::doctor::{check_hosts, HostReport};
use crate::hosts::{Hosts, LOCAL};
use crate::providers::{EnvSnapshot, ProviderKind, Registry};

/// The check that says whether crewmux runs on a host (`crate::hosts::helper`).
const HELPER: &str = "helper";

/// What a team needs of one host.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Needs {
    /// Agent CLIs its workers name.
    agents: Vec<String>,
    /// A worker there is routed to whichever agent CLI is usable.
    any_agent: bool,
    /// A worker there runs crewmux itself (`sim`): the `helper` check counts.
    crewmux: bool,
}

/// `doctor --hosts --json`.
#[derive(Debug, Serialize)]
struct Report<'a> {
    hosts: &'a [HostReport],
    /// Per host that counts and is unusable: why.
    problems: BTreeMap<String, Vec<String>>,
    ok: bool,
}

/// Run `doctor --hosts`; returns the exit code.
///
/// # Errors
/// A `hosts.toml` or providers mistake, a team file that cannot be read or names an
/// unknown host ([`Error::Usage`]), or the SSH control directory cannot be made.
pub fn run(project: &Path, team: Option<&Path>, json: bool) -> Result<i32> {
    let env = EnvSnapshot::current();
    let hosts = Hosts::load(project, &env)?;
    let registry = Registry::load(Some(project), &env)?;
    let needs = match team {
        Some(file) => Some(team_needs(file, &hosts, &registry)?),
        None => None,
    };
    if hosts.hosts.is_empty() {
        let line = format!(
            "no SSH hosts: add a [hosts.NAME] table to {} in your config dir or {} (see docs/hosts.md)",
            crate::hosts::config::HOSTS_FILE,
            project.join(".crewmux").join(crate::hosts::config::HOSTS_FILE).display()
        );
        if json {
            crate::outln!("{{\"hosts\": [], \"problems\": {{}}, \"ok\": true}}");
            crate::errln!("crewmux: {line}");
        } else {
            crate::outln!("{line}");
        }
        return Ok(0);
    }
    let specs: Vec<_> = hosts.hosts.values().collect();
    let reports = check_hosts(&specs, &registry, &env)?;
    let mut problems = BTreeMap::new();
    for r in &reports {
        let counts = needs
            .as_ref()
            .map_or(Some(Needs::default()), |n| n.get(&r.host).cloned());
        if let Some(need) = counts {
            let p = host_problems(r, &need);
            if !p.is_empty() {
                problems.insert(r.host.clone(), p);
            }
        }
    }
    let ok = problems.is_empty();
    if json {
        let text = serde_json::to_string_pretty(&Report {
            hosts: &reports,
            problems: problems.clone(),
            ok,
        })
        .map_err(|e| Error::Other(e.to_string()))?;
        crate::outln!("{text}");
    } else {
        crate::out!("{}", render(&reports, &problems, needs.as_ref()));
    }
    Ok(if ok { 0 } else { 1 })
}

/// The hosts `file`'s workers name and what each needs there.
fn team_needs(file: &Path, hosts: &Hosts, registry: &Registry) -> Result<BTreeMap<String, Needs>> {
    let loaded = crate::team::load_file(file, registry)?;
    let spec = &loaded.spec;
    let mut needs: BTreeMap<String, Needs> = BTreeMap::new();
    for w in &spec.workers {
        let Some(host) = w.host.as_deref().or(spec.host.as_deref()) else {
            continue;
        };
        if host == LOCAL {
            continue;
        }
        hosts
            .get(host)
            .map_err(|e| Error::Usage(format!("{}: worker `{}`: {e}", file.display(), w.id)))?;
        let need = needs.entry(host.to_string()).or_default();
        need.crewmux |= w
            .provider
            .as_deref()
            .and_then(|p| registry.get(p))
            .is_some_and(|s| crate::hosts::helper::runs_crewmux(s, w.command.as_deref()));
        match w.provider.as_deref() {
            _ if w.command.is_some() => {}
            Some(p) => {
                if registry
                    .get(p)
                    .is_some_and(|s| s.kind == ProviderKind::Agent)
                    && !need.agents.iter().any(|a| a == p)
                {
                    need.agents.push(p.to_string());
                }
            }
            None => need.any_agent = true,
        }
    }
    Ok(needs)
}

/// Why host report `r` cannot run what `need` asks of it (empty: it can).
fn host_problems(r: &HostReport, need: &Needs) -> Vec<String> {
    let mut out: Vec<String> = r
        .checks
        .iter()
        .filter(|c| !c.ok && (c.check != HELPER || need.crewmux))
        .map(|c| c.check.clone())
        .collect();
    if !out.is_empty() {
        return out;
    }
    for a in &need.agents {
        let usable = r.providers.iter().any(|p| &p.provider == a && p.usable());
        if !usable {
            out.push(format!("{a} is not usable there"));
        }
    }
    if need.any_agent && r.ready().is_empty() {
        out.push("no agent CLI is usable there".into());
    }
    out
}

/// The human-readable report: per host, one line per check and per agent CLI, then
/// whether it can be used.
fn render(
    reports: &[HostReport],
    problems: &BTreeMap<String, Vec<String>>,
    needs: Option<&BTreeMap<String, Needs>>,
) -> String {
    let mut out = String::new();
    for r in reports {
        out.push_str(&format!("host {} ({})\n", r.host, r.ssh));
        let problem = problems.get(&r.host);
        for c in &r.checks {
            let mark = match c.ok {
                true => "ok",
                // crewmux missing there matters only to `sim` workers.
                false if c.check == HELPER && !problem.is_some_and(|p| p.contains(&c.check)) => {
                    "warn"
                }
                false => "FAIL",
            };
            let detail = c.detail.strip_prefix("ok ").unwrap_or(&c.detail);
            out.push_str(&format!("  {:<10} {:<4} {detail}\n", c.check, mark));
        }
        for h in &r.providers {
            let detail = if h.installed {
                h.auth_detail.clone()
            } else {
                format!("{} (install: {})", h.auth_detail, h.install_hint)
            };
            out.push_str(&format!(
                "  {:<10} {:<18} {:<10} {}\n",
                h.provider,
                h.summary(),
                h.version.as_deref().unwrap_or("-"),
                detail
            ));
        }
        let counts = needs.is_none_or(|n| n.contains_key(&r.host));
        let verdict = match problems.get(&r.host) {
            Some(p) => format!("unusable: {}", p.join(", ")),
            None if r.usable => {
                let ready = r.ready();
                // `sim` workers run crewmux's own helper there.
                let sim = r.checks.iter().any(|c| c.check == HELPER && c.ok);
                match (ready.is_empty(), sim) {
                    (true, true) => {
                        "usable for command and sim workers; no agent CLI is usable there".into()
                    }
                    (true, false) => {
                        "usable for command workers; no agent CLI is usable there".to_string()
                    }
                    (false, true) => format!(
                        "usable; agent CLIs there: {}; sim workers too",
                        ready.join(", ")
                    ),
                    (false, false) => format!("usable; agent CLIs there: {}", ready.join(", ")),
                }
            }
            None => "unusable".to_string(),
        };
        let note = if counts {
            ""
        } else {
            " (the team does not use it)"
        };
        out.push_str(&format!("  => {}: {verdict}{note}\n\n", r.host));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hosts::doctor::{HostCheck, HostReport};

    #[test]
    fn a_host_that_runs_the_helper_is_said_usable_for_sim_workers() {
        let check = |check: &str, ok| HostCheck {
            check: check.into(),
            ok,
            detail: "ok".into(),
        };
        let mut r = HostReport {
            host: "box".into(),
            ssh: "box".into(),
            checks: vec![check("ssh", true), check(HELPER, true)],
            providers: vec![],
            usable: true,
        };
        let said = render(std::slice::from_ref(&r), &BTreeMap::new(), None);
        assert!(
            said.contains(
                "=> box: usable for command and sim workers; no agent CLI is usable there"
            ),
            "{said}"
        );
        r.checks[1].ok = false;
        let said = render(&[r], &BTreeMap::new(), None);
        assert!(
            said.contains("=> box: usable for command workers; no agent CLI"),
            "{said}"
        );
    }
}
