//! `crewmux dispatch ... [--json]`: the routing decision for a problem (target, and per
//! worker: provider, model, reason, health) without launching anything.
#![allow(
    clippy::expect_used,
    reason = "lookups of ids the surrounding code has just checked"
)]

use crate::cli::DispatchArgs;
use crate::error::{Error, IoContext, Result};
use crate::team::{resolve, ResolveOptions, ResolvedTeam};

/// Run the command; returns the exit code (0 when every worker has a provider).
#[allow(
    clippy::needless_pass_by_value,
    reason = "a command handler owns the flags clap parsed for it"
)]
pub fn run(args: DispatchArgs) -> Result<i32> {
    let project = match args.common.project.clone() {
        Some(p) => p,
        None => std::env::current_dir().on("the current directory")?,
    };
    let mut opts = ResolveOptions::new(args.problem.clone(), project);
    opts.target = args.target.clone();
    opts.mode = args.mode.map(Into::into);
    opts.team_file = args.team.clone();
    opts.provider = args.provider.clone();
    opts.role = args.role.clone();
    opts.allow_sim_fallback = args.allow_sim_fallback;
    let team = resolve(&opts)?;
    if args.json {
        let text = serde_json::to_string_pretty(&team).map_err(|e| Error::Other(e.to_string()))?;
        crate::outln!("{text}");
    } else {
        crate::out!("{}", render(&team));
    }
    Ok(0)
}

/// The human-readable decision.
pub fn render(t: &ResolvedTeam) -> String {
    let mut out = format!(
        "target: {} ({})\nteam:   {} [{}], parallel {}, max fix rounds {}, model role {}\n\n",
        t.target,
        t.target_reason,
        t.name,
        t.source,
        t.parallel,
        t.max_fix_rounds,
        t.role.as_deref().unwrap_or("per agent")
    );
    out.push_str(&format!(
        "{:<12} {:<18} {:<9} {:<22} {:<18} {}\n",
        "worker", "role", "provider", "model", "health", "reason"
    ));
    for w in &t.workers {
        out.push_str(&format!(
            "{:<12} {:<18} {:<9} {:<22} {:<18} {}\n",
            w.id,
            w.role,
            w.provider,
            w.model.as_deref().unwrap_or("-"),
            w.health,
            w.reason
        ));
    }
    for c in &t.checks {
        out.push_str(&format!("check {:<12} {}\n", c.id, c.command.join(" ")));
    }
    out.push_str(&levels(t));
    out
}

/// The levels of the team's graph: which workers start together (at most `parallel` at
/// once) and whom each waiting one waits for.
pub fn levels(t: &ResolvedTeam) -> String {
    let nodes: Vec<(&str, Vec<&str>)> = t
        .workers
        .iter()
        .map(|w| (w.id.as_str(), w.after.iter().map(String::as_str).collect()))
        .collect();
    let levels = crate::engine::graph::levels(&nodes);
    let mut out = format!(
        "\nflow ({} level{}, parallel {}):\n",
        levels.len(),
        if levels.len() == 1 { "" } else { "s" },
        t.parallel
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
