//! Routing a checked team (the slow half of resolving it): probe the agent CLIs routing
//! may need, give every worker a provider, model, task and limits, and fail fast (listing
//! what to install) when no agent CLI can run a worker and the simulated agent is not
//! allowed.
#![allow(
    clippy::expect_used,
    reason = "lookups of ids the surrounding code has just checked"
)]

use super::limits::{LimitFlags, LimitSources, Limits};
use super::resolve::{CheckedTeam, ResolveOptions, DEFAULT_MAX_ATTEMPTS, DEFAULT_MAX_FIX_ROUNDS};
use super::resolved::{ResolvedTeam, ResolvedWorker};
use super::routing::choose;
use crate::error::{Error, Result};
use crate::providers::health::probe_many;
use crate::providers::history::History;
use crate::providers::{agents, ProviderHealth, ProviderKind, Registry};

/// Probe what routing may need and route every worker of a checked team to a provider and
/// model (the slow half of [`resolve`]: the agent CLIs' auth probes take seconds).
///
/// # Errors
/// A forced agent CLI that is not installed, or workers no agent CLI can run, without
/// `allow_sim_fallback` (one line listing what to install).
#[allow(
    clippy::too_many_lines,
    reason = "routing's context, then the routed team field by field"
)]
pub fn route(opts: &ResolveOptions, team: CheckedTeam) -> Result<ResolvedTeam> {
    let CheckedTeam {
        registry,
        role,
        target_arg,
        target,
        target_reason,
        loaded,
        parallel,
        templates,
        left_out,
    } = team;
    let spec = &loaded.spec;
    // Probe what routing may need, all in parallel: nothing when every worker names a
    // provider that is not an agent CLI (a team of commands starts without waiting for the
    // auth probes of the CLIs installed, seconds for Node CLIs).
    let is_agent = |p: &str| registry.get(p).is_none_or(|s| s.is_agent());
    let needs_probe = match opts.provider.as_deref() {
        Some(p) => registry.get(p).is_some_and(|s| s.is_agent()),
        None => spec
            .workers
            .iter()
            .any(|w| w.provider.as_deref().is_none_or(is_agent)),
    };
    let health: Vec<ProviderHealth> = if needs_probe {
        let names: Vec<&str> = registry.agents().map(|(n, _)| n).collect();
        probe_many(&registry, &names, &opts.env, &opts.probe)
    } else {
        Vec::new()
    };
    let sources = LimitSources {
        flags: opts.limits,
        team: team_limits(spec),
    };
    let ctx = RouteCtx {
        opts,
        registry: &registry,
        health: &health,
        history: History::load(&opts.project_dir),
        role: role.as_deref(),
        target_arg: &target_arg,
        target: &target,
        single: spec.workers.len() == 1,
        sources: &sources,
        team_host: spec.host.as_deref(),
        team_approvals: spec.approvals.and_then(|a| a.policy).unwrap_or_default(),
        team_sandbox: spec.sandbox.as_ref(),
        team_resume: spec.resume.unwrap_or(true),
        team_fallback: &spec.fallback,
    };
    let mut workers = Vec::new();
    let mut unroutable: Vec<String> = Vec::new();
    for (i, (w, template)) in spec.workers.iter().zip(&templates).enumerate() {
        match route_worker(&ctx, i, w, template)? {
            Some(r) => workers.push(r),
            None => unroutable.push(w.id.clone()),
        }
    }
    if !unroutable.is_empty() {
        return Err(Error::Other(no_provider_message(
            &unroutable,
            &registry,
            &health,
        )));
    }
    let mut workers = super::race::expand(workers, spec, opts.race, &registry, &health);
    workers.sort_by_key(|w| w.order);
    let mut spread = crate::hosts::spread::Spread::default();
    if !opts.hosts.is_empty() {
        spread = crate::hosts::spread::spread_team(
            &mut workers,
            spec,
            &opts.hosts,
            parallel,
            &opts.project_dir,
            &opts.env,
            &registry,
        )?;
    }
    let (checks, critics, fixer) = council_limits(
        spec,
        &workers,
        &registry,
        &sources,
        spec.approvals.and_then(|a| a.policy).unwrap_or_default(),
    );
    let (target_used, target_reason) = target_use(opts, spec, target_reason);
    let clarify = reads_the_problem(spec, &workers, &registry);
    let sandbox = team_sandbox(spec, &workers);
    let team_budget = spec.budget.unwrap_or_default();
    Ok(ResolvedTeam {
        budget: crate::domain::Budget {
            usd: opts.budget.usd.or(team_budget.usd),
            tokens: opts.budget.tokens.or(team_budget.tokens),
        },
        name: spec.name.clone().unwrap_or_else(|| loaded.source.clone()),
        source: loaded.source.clone(),
        target,
        target_reason,
        target_used,
        role,
        parallel,
        host_slots: spread.slots,
        hosts_without_workers: spread.unused,
        not_run: left_out,
        max_fix_rounds: opts
            .max_fix_rounds
            .or(spec.max_fix_rounds)
            .unwrap_or(DEFAULT_MAX_FIX_ROUNDS),
        workers,
        checks,
        critics,
        fixer: Some(fixer),
        sandbox,
        workspace: spec.workspace.clone().unwrap_or_default(),
        clarify,
        health,
        registry,
    })
}

/// The fence of the run's checks, critics, fixers and added workers: the team's
/// `[sandbox]`, else the first fenced worker's (they judge or continue its work, so they
/// run in no weaker fence than it).
fn team_sandbox(
    spec: &crate::domain::TeamSpec,
    workers: &[ResolvedWorker],
) -> crate::domain::Sandbox {
    let team = crate::domain::Sandbox::resolve(spec.sandbox.as_ref(), None);
    if !team.is_none() {
        return team;
    }
    workers
        .iter()
        .map(|w| &w.sandbox)
        .find(|s| !s.is_none())
        .cloned()
        .unwrap_or(team)
}

/// Whether the clarification gate reads the problem (`TeamSpec::clarify`): the team's
/// own word, else not when every worker is a `command` worker (a script reads no problem).
fn reads_the_problem(
    spec: &crate::domain::TeamSpec,
    workers: &[ResolvedWorker],
    registry: &Registry,
) -> bool {
    spec.clarify.unwrap_or_else(|| {
        !workers
            .iter()
            .all(|w| registry.get(&w.provider).map(|p| p.kind) == Some(ProviderKind::Command))
    })
}

/// What routing one worker reads.
struct RouteCtx<'a> {
    opts: &'a ResolveOptions,
    registry: &'a Registry,
    health: &'a [ProviderHealth],
    history: History,
    role: Option<&'a str>,
    target_arg: &'a str,
    target: &'a str,
    /// The team has one worker (it takes the run's target as it is).
    single: bool,
    sources: &'a LimitSources,
    team_host: Option<&'a str>,
    /// The team's `[approvals] policy` (default `ask`).
    team_approvals: crate::domain::clarification::ApprovalPolicy,
    /// The team's `[sandbox]` table, if any.
    team_sandbox: Option<&'a crate::domain::SandboxSpec>,
    /// The team's `resume` (default true).
    team_resume: bool,
    /// The team's `fallback` providers.
    team_fallback: &'a [String],
}

impl RouteCtx<'_> {
    /// A provider's health as the dispatch record shows it.
    fn health_of(&self, p: &str) -> String {
        match self.registry.get(p).map(|s| s.kind) {
            Some(ProviderKind::Sim) => "built-in".into(),
            Some(ProviderKind::Command) => "command".into(),
            _ => self
                .health
                .iter()
                .find(|h| h.provider == p)
                .map_or("unchecked".into(), |h| h.summary().into()),
        }
    }
}

/// Route the `i`th worker `w` (task template `template`); `None` when no agent CLI can run
/// it and the simulated agent is not allowed.
fn route_worker(
    ctx: &RouteCtx<'_>,
    i: usize,
    w: &crate::domain::WorkerSpec,
    template: &str,
) -> Result<Option<ResolvedWorker>> {
    let opts = ctx.opts;
    let agent = ctx.registry.roles().get(&w.role).expect("validated role");
    let Some((provider, reason, routed)) = choose_provider(ctx, w, agent)? else {
        return Ok(None);
    };
    let fallbacks = fallbacks_of(ctx, w, &provider, routed)?;
    let model_role = w
        .role_model
        .clone()
        .or_else(|| ctx.role.map(str::to_string))
        .unwrap_or_else(|| agent.model_role.clone());
    let model = match &w.model {
        Some(m)
            if ctx
                .registry
                .get(&provider)
                .is_some_and(|s| s.kind == ProviderKind::Agent) =>
        {
            Some(m.clone())
        }
        Some(_) => None,
        None => ctx
            .registry
            .get(&provider)
            .and_then(|s| s.model_for_role(&model_role))
            .map(str::to_string),
    };
    let task = if template.contains("{problem}") {
        template.replace("{problem}", &opts.problem)
    } else {
        format!("{}\n\nProblem: {}", template.trim_end(), opts.problem)
    };
    let limits = limits_of(
        ctx.registry,
        ctx.sources,
        &provider,
        Limits {
            timeout_s: w.timeout_s,
            idle_timeout_s: w.idle_timeout_s,
            stall_after_s: w.stall_after_s,
            question_timeout_s: w.question_timeout_s,
        },
    );
    Ok(Some(ResolvedWorker {
        id: w.id.clone(),
        role: w.role.clone(),
        health: ctx.health_of(&provider),
        provider,
        model,
        task,
        order: w.order.unwrap_or(i as u32 + 1),
        timeout_s: limits.timeout_s,
        idle_timeout_s: limits.idle_timeout_s,
        stall_after_s: limits.stall_after_s,
        question_timeout_s: limits.question_timeout_s,
        max_attempts: w
            .max_attempts
            .or(opts.max_attempts)
            .unwrap_or(DEFAULT_MAX_ATTEMPTS)
            .max(1),
        artifacts: w.artifacts.clone(),
        cwd: w.cwd.clone(),
        command: w.command.clone(),
        workspace: w.workspace,
        host: crate::hosts::worker_host(w.host.as_deref(), ctx.team_host),
        reason,
        fallbacks,
        after: w.after.clone(),
        on_upstream_failure: w.on_upstream_failure.unwrap_or_default(),
        approvals: w
            .approvals
            .and_then(|a| a.policy)
            .unwrap_or(ctx.team_approvals),
        sandbox: crate::domain::Sandbox::resolve(ctx.team_sandbox, w.sandbox.as_ref()),
        resume: w.resume.unwrap_or(ctx.team_resume),
        candidate: None,
        persona: Some(agent.persona.clone()),
    }))
}

/// The providers `w` (on `provider`) moves to, in order: its own `fallback`, else the
/// team's, else `routed` (routing's for a worker that names no provider); the provider
/// itself is left out.
///
/// # Errors
/// A fallback that is no provider of the registry, named with the files that define them.
fn fallbacks_of(
    ctx: &RouteCtx<'_>,
    w: &crate::domain::WorkerSpec,
    provider: &str,
    routed: Vec<String>,
) -> Result<Vec<String>> {
    let given = if w.fallback.is_empty() {
        ctx.team_fallback
    } else {
        &w.fallback
    };
    if given.is_empty() {
        return Ok(routed);
    }
    let mut out: Vec<String> = Vec::new();
    for f in given {
        if ctx
            .registry
            .get(f)
            .is_some_and(|s| s.kind == ProviderKind::Command)
        {
            return Err(Error::Usage(format!(
                "worker `{}`: fallback `{f}` runs a team file's argv, not an agent's task: name an agent provider",
                w.id
            )));
        }
        if ctx.registry.get(f).is_none() {
            return Err(Error::Usage(format!(
                "worker `{}`: fallback `{f}` is no provider: use one of {} (or define it in providers.toml)",
                w.id,
                ctx.registry.names().collect::<Vec<_>>().join(", ")
            )));
        }
        // A fallback whose CLI is not installed here could not run a moved attempt.
        let missing = ctx.health.iter().any(|h| &h.provider == f && !h.installed);
        if missing {
            tracing::info!(
                "worker `{}`: fallback `{f}` is not installed; left out",
                w.id
            );
        } else if f != provider && !out.contains(f) {
            out.push(f.clone());
        }
    }
    Ok(out)
}

/// A worker's provider, the reason and the fallbacks: the one forced (`--provider`, the
/// worker's own), else routing's choice by the agent's domain and the provider it leans to;
/// `None` when nothing can run it.
fn choose_provider(
    ctx: &RouteCtx<'_>,
    w: &crate::domain::WorkerSpec,
    agent: &agents::AgentSpec,
) -> Result<Option<(String, String, Vec<String>)>> {
    let opts = ctx.opts;
    // The provider this worker leans to: its own target, else the run's.
    let lean = match w.target.as_deref().filter(|t| *t != "auto") {
        Some(t) => t.to_string(),
        None if w.target.is_none() && !ctx.single && ctx.target_arg == "auto" => {
            agent.prefers.clone()
        }
        None => ctx.target.to_string(),
    };
    let preferred = match (lean.as_str(), ctx.single) {
        ("ccg", true) => "codex".to_string(),
        ("ccg", false) => agent.prefers.clone(),
        _ => lean,
    };
    let forced = opts.provider.clone().or_else(|| w.provider.clone());
    let Some(p) = forced else {
        return Ok(
            match choose(
                &agent.domain,
                Some(&preferred),
                ctx.registry,
                ctx.health,
                &ctx.history,
            ) {
                Some(c) => Some((c.provider, c.reason, c.fallbacks)),
                None if opts.allow_sim_fallback => Some((
                    "sim".to_string(),
                    "no agent CLI is usable; sim allowed by --allow-sim-fallback".to_string(),
                    vec![],
                )),
                None => None,
            },
        );
    };
    let why = if opts.provider.is_some() {
        "forced with --provider"
    } else {
        "named in the team file"
    };
    let spec_p = ctx.registry.require(&p)?;
    match ctx.health.iter().find(|h| h.provider == p) {
        Some(h) if spec_p.is_agent() && !h.installed => {
            if opts.allow_sim_fallback {
                Ok(Some((
                    "sim".to_string(),
                    format!(
                        "{p} is {why} but not installed ({}); sim allowed by --allow-sim-fallback",
                        spec_p.install_hint
                    ),
                    vec![],
                )))
            } else {
                Err(Error::Other(format!(
                    "worker `{}`: provider `{p}` is {why} but `{}` is not on PATH: install it with `{}`, or pass --allow-sim-fallback",
                    w.id, spec_p.binary, spec_p.install_hint
                )))
            }
        }
        _ => Ok(Some((p.clone(), format!("{p}: {why}"), vec![]))),
    }
}

/// Whether the target decides anything (it picks the built-in team when no team file or
/// mode is given, and leans the routing of a worker that names no provider), and its
/// reason: `reason`, or why it is unused.
fn target_use(
    opts: &ResolveOptions,
    spec: &crate::domain::TeamSpec,
    reason: String,
) -> (bool, String) {
    let used = (opts.team_file.is_none() && opts.mode.is_none())
        || (opts.provider.is_none() && spec.workers.iter().any(|w| w.provider.is_none()));
    let reason = match (used, opts.provider.is_some()) {
        (true, _) => reason,
        (false, true) => "unused: --provider gives every worker its provider".into(),
        (false, false) => "unused: every worker names its provider".into(),
    };
    (used, reason)
}

/// The team file's top-level limits.
fn team_limits(spec: &crate::domain::TeamSpec) -> LimitFlags {
    LimitFlags {
        timeout_s: spec.timeout_s,
        idle_timeout_s: spec.idle_timeout_s,
        stall_after_s: spec.stall_after_s,
        check_timeout_s: spec.check_timeout_s,
        question_timeout_s: spec.question_timeout_s,
    }
}

/// The limits of a worker on `provider` with its own values `own`: a `command` worker's or
/// an agent's (see `limits`).
fn limits_of(registry: &Registry, sources: &LimitSources, provider: &str, own: Limits) -> Limits {
    match registry.get(provider) {
        Some(s) if s.kind == ProviderKind::Command => {
            sources.command(own, s.stall_after_s, !s.stall_patterns.is_empty())
        }
        s => sources.agent(own, s.and_then(|s| s.stall_after_s)),
    }
}

/// Checks, critics and the fixer with their limits resolved (`None` then means "none"):
/// checks with a wall timeout only, critics and the fixer on their provider (default: the
/// first worker's, as the engine picks it).
fn council_limits(
    spec: &crate::domain::TeamSpec,
    workers: &[ResolvedWorker],
    registry: &Registry,
    sources: &LimitSources,
    team_approvals: crate::domain::clarification::ApprovalPolicy,
) -> (
    Vec<crate::domain::CheckSpec>,
    Vec<crate::domain::CriticSpec>,
    crate::domain::AgentSpec,
) {
    let first = workers
        .first()
        .map(|w| w.provider.as_str())
        .unwrap_or("sim");
    let checks = spec
        .checks
        .iter()
        .map(|c| {
            let mut c = c.clone();
            c.timeout_s = sources
                .check(Limits {
                    timeout_s: c.timeout_s,
                    ..Limits::default()
                })
                .timeout_s;
            c
        })
        .collect();
    let critics = spec
        .critics
        .iter()
        .map(|c| {
            let mut c = c.clone();
            let provider = if c.command.is_some() {
                "command"
            } else {
                c.provider.as_deref().unwrap_or(first)
            };
            let own = Limits {
                timeout_s: c.timeout_s,
                idle_timeout_s: c.idle_timeout_s,
                stall_after_s: c.stall_after_s,
                ..Limits::default()
            };
            let l = limits_of(registry, sources, provider, own);
            (c.timeout_s, c.idle_timeout_s, c.stall_after_s) =
                (l.timeout_s, l.idle_timeout_s, l.stall_after_s);
            c.approvals = approvals_or(c.approvals, team_approvals);
            c
        })
        .collect();
    let mut fixer = spec.fixer.clone().unwrap_or_default();
    fixer.approvals = approvals_or(fixer.approvals, team_approvals);
    let provider = fixer.provider.clone().unwrap_or_else(|| first.to_string());
    let own = Limits {
        timeout_s: fixer.timeout_s,
        idle_timeout_s: fixer.idle_timeout_s,
        stall_after_s: fixer.stall_after_s,
        ..Limits::default()
    };
    let l = limits_of(registry, sources, &provider, own);
    (fixer.timeout_s, fixer.idle_timeout_s, fixer.stall_after_s) =
        (l.timeout_s, l.idle_timeout_s, l.stall_after_s);
    (checks, critics, fixer)
}

/// `own`'s policy, else the team's, as the spec the engine reads (critics and fixers take
/// the team's `[approvals]` as workers do).
fn approvals_or(
    own: Option<crate::domain::clarification::ApprovalsSpec>,
    team: crate::domain::clarification::ApprovalPolicy,
) -> Option<crate::domain::clarification::ApprovalsSpec> {
    Some(crate::domain::clarification::ApprovalsSpec {
        policy: Some(own.and_then(|a| a.policy).unwrap_or(team)),
    })
}

/// Which workers cannot run and the state of each agent CLI on one line, then how to
/// install each missing one, a line each (`  codex: npm install -g @openai/codex`).
fn no_provider_message(
    workers: &[String],
    registry: &Registry,
    health: &[ProviderHealth],
) -> String {
    let states: Vec<String> = health
        .iter()
        .map(|h| format!("{} {}", h.provider, h.summary()))
        .collect();
    let installs: Vec<String> = registry
        .agents()
        .filter(|(n, _)| health.iter().any(|h| &h.provider == n && !h.installed))
        .map(|(n, s)| format!("{n}: {}", s.install_hint))
        .collect();
    let mut msg = format!(
        "no agent CLI can run worker{} `{}` ({})",
        if workers.len() > 1 { "s" } else { "" },
        workers.join("`, `"),
        states.join(", ")
    );
    if health.iter().any(|h| h.installed && !h.usable()) {
        msg.push_str("; or log in to an installed one");
    }
    msg.push_str("; or pass --allow-sim-fallback (or --provider sim) to use the simulated agent");
    // One CLI a line: together they are longer than a terminal is wide, and a line broken
    // by the terminal breaks an install command in the middle.
    if !installs.is_empty() {
        msg.push_str("; or install one of:");
        for i in &installs {
            msg.push_str("\n  ");
            msg.push_str(i);
        }
    }
    msg
}
