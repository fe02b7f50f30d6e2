//! `crewmux dispatch ... [--json]`: the routing decision for a problem (target, and per
//! worker: provider, model, host, health, limits, reason) without launching anything.
//! `--hosts` spreads the workers as `crewmux run --hosts` would (`crate::hosts::spread`), and
//! each listed host that got no worker is said with why (`box: no workers (<reason>)`). The limit
//! flags (`--timeout`, `--idle-timeout`, `--stall-after`, `--check-timeout`) are those of
//! `crewmux run`, so dispatch shows the limits a run with the same flags would get.
#![allow(
    clippy::expect_used,
    reason = "lookups of ids the surrounding code has just checked"
)]

use crate::cli::DispatchArgs;
use crate::error::{Error, Result};
use crate::team::{resolve, ResolveOptions, ResolvedTeam};

/// Run the command; returns the exit code: 0 when every worker has a provider, 2 when a
/// program a `command` worker, check or critic names cannot be found (as `run` refuses it).
///
/// # Errors
/// As [`resolve`]: a bad team file or options ([`Error::Usage`]), or no provider for a worker;
/// a host no `hosts.toml` defines or a `hosts.toml` mistake, a worker on a host without a
/// worktree there (as `crewmux run`);
/// [`crate::error::Error::System`] when the current directory cannot be read.
#[allow(
    clippy::needless_pass_by_value,
    reason = "a command handler owns the flags clap parsed for it"
)]
pub fn run(args: DispatchArgs) -> Result<i32> {
    let project = super::plan::given_project_dir(args.common.project.as_deref())?;
    let mut opts = ResolveOptions::new(args.problem.clone(), project);
    opts.target = args.target.clone();
    opts.mode = args.mode.map(Into::into);
    opts.team_file = args.team.clone();
    opts.provider = args.provider.clone();
    crate::config::apply_defaults(&mut opts, &crate::config::load()?);
    opts.role = args.role.clone();
    opts.allow_sim_fallback = args.allow_sim_fallback;
    opts.limits = args.limits.into();
    opts.parallel = args.parallel;
    opts.hosts = args.hosts.clone();
    opts.race = args.race;
    let team = resolve(&opts)?;
    // The hosts the workers name are checked as `run` checks them, so a dispatch that
    // shows a plan is one `run` would accept.
    let used = crate::hosts::hosts_for(
        &opts.project_dir,
        &team.source,
        team.workers
            .iter()
            .map(|w| (w.id.as_str(), w.host.as_deref())),
    )?;
    // A plan without SSH hosts is shown past a broken `hosts.toml`, which is said.
    if used.is_empty() {
        let env = crate::providers::EnvSnapshot::current();
        if let Some(w) = crate::hosts::config::unused_file_warning(&opts.project_dir, &env) {
            crate::errln!("crewmux: {w}");
        }
    }
    // And, when a worker runs on a host, the workspaces: it needs a worktree there.
    let hosts: Vec<Option<String>> = team
        .workers
        .iter()
        .map(|w| crate::hosts::worker_host(w.host.as_deref(), None))
        .collect();
    let placed: Vec<super::plan::Placed<'_>> = team
        .workers
        .iter()
        .zip(&hosts)
        .map(|(w, host)| super::plan::Placed {
            id: &w.id,
            workspace: w.workspace,
            host: host.as_deref(),
        })
        .collect();
    // Only then: the plan asks git, which a dispatch of local workers does not need.
    if hosts.iter().any(Option::is_some) {
        super::plan::plan_workspace(
            &opts.project_dir,
            &team.workspace,
            &placed,
            &crate::workspace::WorkspaceOptions::default(),
        )?;
    }
    // A program a `command` worker, check or critic names that cannot be found: shown in
    // the plan (health `not-found`) and said after it, with the exit `run` gives (2).
    let missing = crate::team::programs::missing_programs(
        &team,
        std::env::var_os("PATH").as_deref(),
        &opts.project_dir,
    );
    let mut team = team;
    for m in &missing {
        if let Some(w) = team
            .workers
            .iter_mut()
            .find(|w| m.who == format!("worker `{}`", w.id))
        {
            w.health = "not-found".into();
        }
    }
    print_plan(&team, args.json)?;
    for m in &missing {
        crate::errln!("crewmux: {}", m.message());
    }
    Ok(if missing.is_empty() { 0 } else { 2 })
}

/// Print the plan (`--json`: one object, with `sandbox_here`: each fence the team uses and
/// whether it can start here, asked once per mode).
///
/// # Errors
/// The plan does not serialize (a bug).
fn print_plan(team: &ResolvedTeam, json: bool) -> Result<()> {
    // Each fence the team uses, asked once: can it start here?
    let mut asked: Vec<(crate::domain::SandboxMode, crate::sandbox::Readiness)> = Vec::new();
    let path = std::env::var_os("PATH");
    for s in std::iter::once(&team.sandbox).chain(team.workers.iter().map(|w| &w.sandbox)) {
        if !s.is_none() && !asked.iter().any(|(m, _)| *m == s.mode) {
            asked.push((s.mode, crate::sandbox::preflight(s.mode, path.as_deref())));
        }
    }
    let ready = |m: crate::domain::SandboxMode| {
        asked.iter().find(|(a, _)| *a == m).map_or(
            crate::sandbox::Readiness::Ready("no fence".into()),
            |(_, r)| r.clone(),
        )
    };
    if json {
        let mut value = serde_json::to_value(team).map_err(|e| Error::Other(e.to_string()))?;
        let can: serde_json::Map<String, serde_json::Value> = asked
            .iter()
            .map(|(m, r)| {
                let v = match r {
                    crate::sandbox::Readiness::Ready(d) => {
                        serde_json::json!({"ready": true, "detail": d})
                    }
                    crate::sandbox::Readiness::Refused(d) => {
                        serde_json::json!({"ready": false, "detail": d})
                    }
                };
                (m.as_str().to_string(), v)
            })
            .collect();
        value["sandbox_here"] = serde_json::Value::Object(can);
        let text = serde_json::to_string_pretty(&value).map_err(|e| Error::Other(e.to_string()))?;
        crate::outln!("{text}");
    } else {
        crate::out!("{}", render(team));
        crate::out!("{}", sandbox_lines(team, &ready));
    }
    Ok(())
}

/// `budget: $5.00 · 2000000 tokens; worst case 12 agent attempts before it stops (4
/// workers × their max_attempts, + up to 2 fix rounds' fixers and critics)`: what the
/// run may spend and how many attempts could spend it (no CLI takes a token limit per
/// attempt, so the worst case is counted in attempts; the budget is what bounds it).
fn budget_line(t: &ResolvedTeam) -> String {
    let mut limits = Vec::new();
    if let Some(u) = t.budget.usd {
        limits.push(format!("${u:.2}"));
    }
    if let Some(n) = t.budget.tokens {
        limits.push(format!("{n} tokens"));
    }
    let agents: Vec<&crate::team::resolved::ResolvedWorker> = t
        .workers
        .iter()
        .filter(|w| w.provider != "command")
        .collect();
    let attempts: u32 = agents.iter().map(|w| w.max_attempts).sum();
    format!(
        "budget: {}; worst case {attempts} agent attempts ({} workers × their max_attempts), + up to {} fix rounds' fixers and {} critics each; it warns at 80 % and stops at 100 %\n\n",
        limits.join(" · "),
        agents.len(),
        t.max_fix_rounds,
        t.critics.len()
    )
}

/// The human-readable decision.
pub fn render(t: &ResolvedTeam) -> String {
    let mut out = format!(
        "target: {} ({})\nteam:   {} [{}], parallel {}{}, max fix rounds {}, model role {}\n\n",
        if t.target_used {
            t.target.as_str()
        } else {
            "-"
        },
        t.target_reason,
        t.name,
        t.source,
        t.parallel,
        // With `--hosts`, `--parallel` is local's share only.
        if t.host_slots.is_empty() {
            ""
        } else {
            " on local"
        },
        t.max_fix_rounds,
        t.role.as_deref().unwrap_or("per agent")
    );
    if t.budget.is_set() {
        out.push_str(&budget_line(t));
    }
    if !t.host_slots.is_empty() {
        let shares: Vec<String> = t.placed_slots().map(|(h, n)| format!("{h} {n}")).collect();
        out.push_str(&format!(
            "hosts:  {} at once ({} at once in all)\n",
            shares.join(", "),
            t.at_once()
        ));
        for u in &t.hosts_without_workers {
            out.push_str(&format!("        {}: no workers ({})\n", u.host, u.reason));
        }
        out.push('\n');
    }
    let host = |w: &crate::team::ResolvedWorker| {
        w.host.clone().unwrap_or_else(|| crate::hosts::LOCAL.into())
    };
    let hw = t
        .workers
        .iter()
        .map(|w| host(w).len())
        .max()
        .unwrap_or(0)
        .max(5);
    out.push_str(&format!(
        "{:<12} {:<18} {:<9} {:<22} {:<hw$} {:<18} {:<30} {}\n",
        "worker", "role", "provider", "model", "host", "health", "limits", "reason"
    ));
    for w in &t.workers {
        out.push_str(&format!(
            "{:<12} {:<18} {:<9} {:<22} {:<hw$} {:<18} {:<30} {}\n",
            w.id,
            w.role,
            w.provider,
            w.model.as_deref().unwrap_or("-"),
            host(w),
            w.health,
            limits(w.timeout_s, w.idle_timeout_s, w.stall_after_s),
            w.reason
        ));
    }
    for c in &t.checks {
        out.push_str(&format!(
            "check {:<12} {} ({})\n",
            c.id,
            c.command.join(" "),
            limits(c.timeout_s, None, None)
        ));
    }
    out.push_str(&levels(t));
    out
}

/// The fences of the team, when it has any: the team's (its checks, critics and fixers)
/// and each worker's that differs, each with whether it can start here (`ready`).
pub fn sandbox_lines(
    t: &ResolvedTeam,
    ready: &dyn Fn(crate::domain::SandboxMode) -> crate::sandbox::Readiness,
) -> String {
    if t.sandbox.is_none() && t.workers.iter().all(|w| w.sandbox.is_none()) {
        return String::new();
    }
    let mut out = format!(
        "\nsandbox: {}\n",
        crate::sandbox::describe(&t.sandbox, &ready(t.sandbox.mode))
    );
    for w in t.workers.iter().filter(|w| w.sandbox != t.sandbox) {
        out.push_str(&format!(
            "  {}: {}\n",
            w.id,
            crate::sandbox::describe(&w.sandbox, &ready(w.sandbox.mode))
        ));
    }
    out
}

/// The levels of the team's graph: which workers start together (at most
/// [`ResolvedTeam::at_once`]) and whom each waiting one waits for.
pub fn levels(t: &ResolvedTeam) -> String {
    let nodes: Vec<(&str, Vec<&str>)> = t
        .workers
        .iter()
        .map(|w| (w.id.as_str(), w.after.iter().map(String::as_str).collect()))
        .collect();
    let levels = crate::engine::graph::levels(&nodes);
    let bound = if t.host_slots.is_empty() {
        format!("parallel {}", t.parallel)
    } else {
        // The hosts a worker was placed on: a listed host that got none is not counted.
        let used: std::collections::BTreeSet<&str> = t
            .workers
            .iter()
            .map(|w| w.host.as_deref().unwrap_or(crate::hosts::LOCAL))
            .collect();
        let n = used.len();
        format!(
            "{} at once over {n} host{}",
            t.at_once(),
            if n == 1 { "" } else { "s" }
        )
    };
    let mut out = format!(
        "\nflow ({} level{}, {bound}):\n",
        levels.len(),
        if levels.len() == 1 { "" } else { "s" },
    );
    for (n, ids) in levels.iter().enumerate() {
        let names: Vec<String> = ids
            .iter()
            .map(|id| {
                let w = t.workers.iter().find(|w| &w.id == id).expect("a worker");
                if w.after.is_empty() {
                    id.clone()
                } else {
                    let run = match w.on_upstream_failure {
                        crate::domain::UpstreamPolicy::Run => ", runs if one fails",
                        crate::domain::UpstreamPolicy::Skip => "",
                    };
                    format!("{id} (after {}{run})", w.after.join(", "))
                }
            })
            .collect();
        out.push_str(&format!("  {}. {}\n", n + 1, names.join(", ")));
    }
    out
}

/// A duration in seconds the way a person reads it: `45m`, `90s`, `1h`, `1h30m`.
fn human_s(s: u64) -> String {
    match (s / 3600, (s % 3600) / 60, s % 60) {
        (0, 0, sec) => format!("{sec}s"),
        (0, m, 0) => format!("{m}m"),
        (h, 0, 0) => format!("{h}h"),
        (h, m, 0) => format!("{h}h{m}m"),
        _ => format!("{s}s"),
    }
}

/// A worker's limits: `wall 45m · idle 10m · stall 2m`; a limit that is off reads `off`,
/// one a kind of worker never has (idle and stall for a check) is left out.
pub fn limits(wall: Option<u64>, idle: Option<u64>, stall: Option<u64>) -> String {
    let one = |name: &str, v: Option<u64>| match v {
        Some(s) => format!("{name} {}", human_s(s)),
        None => format!("{name} off"),
    };
    let mut parts = vec![one("wall", wall)];
    if idle.is_some() || stall.is_some() {
        parts.push(one("idle", idle));
        parts.push(one("stall", stall));
    }
    parts.join(" · ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_read_as_durations_and_off() {
        assert_eq!(
            limits(Some(2700), Some(600), Some(120)),
            "wall 45m · idle 10m · stall 2m"
        );
        assert_eq!(
            limits(Some(5400), None, Some(90)),
            "wall 1h30m · idle off · stall 90s"
        );
        assert_eq!(limits(Some(1200), None, None), "wall 20m");
        assert_eq!(limits(None, None, None), "wall off");
        assert_eq!(human_s(3601), "3601s");
    }
}
