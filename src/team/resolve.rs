//! Resolving a team for a run: load the mode or team file, route every worker to a provider
//! and model, fill the task text, and fail fast (listing what to install) when no agent CLI
//! can run it and the simulated agent is not allowed.
#![allow(
    clippy::expect_used,
    reason = "lookups of ids the surrounding code has just checked"
)]

use std::path::PathBuf;

use super::file::{load_file, load_mode, LoadedTeam, Mode, TARGET_WORDS};
use super::limits::{LimitFlags, LimitSources, Limits};
pub use super::resolved::{ResolvedTeam, ResolvedWorker};
use super::routing::{choose, infer_target};
use crate::error::{Error, Result};
use crate::providers::health::probe_many;
use crate::providers::history::History;
use crate::providers::{
    agents, EnvSnapshot, ProbeOptions, ProviderHealth, ProviderKind, Registry, MODEL_ROLES,
};

/// Attempts per worker when neither the team file nor `--max-attempts` says.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 2;
/// Workers at once when neither the team file nor `--parallel` says (docs/design.md "Team files").
pub const DEFAULT_PARALLEL: usize = 5;
/// Fix rounds when neither the team file nor `--max-fix-rounds` says (docs/design.md "The run").
pub const DEFAULT_MAX_FIX_ROUNDS: u32 = 1;

/// What `run` and `dispatch` ask for.
#[derive(Debug, Clone)]
pub struct ResolveOptions {
    pub problem: String,
    /// Built-in team; with neither mode nor team file: `ccg` when the target is ccg, else `solo`.
    pub mode: Option<Mode>,
    pub team_file: Option<PathBuf>,
    /// `auto`, `ccg` or a provider name.
    pub target: String,
    /// Force every worker onto this provider.
    pub provider: Option<String>,
    /// Model role: default, smol, slow, plan, commit (`--role`, `CREWMUX_ROLE`).
    pub role: Option<String>,
    pub allow_sim_fallback: bool,
    pub project_dir: PathBuf,
    pub parallel: Option<usize>,
    pub max_fix_rounds: Option<u32>,
    pub max_attempts: Option<u32>,
    /// `--timeout`, `--idle-timeout`, `--stall-after`, `--check-timeout`.
    pub limits: LimitFlags,
    /// PATH, HOME, key variables and CREWMUX_CONFIG_DIR are read from here.
    pub env: EnvSnapshot,
    pub probe: ProbeOptions,
    /// Where worktree workers start from, to check their `cwd` in (`--base`,
    /// `--include-uncommitted`).
    pub cwd_base: super::cwd::CwdBase,
    /// `--hosts`: spread the workers that name no host over these (`crate::hosts::spread`);
    /// empty: every worker stays where its team file puts it.
    pub hosts: Vec<String>,
}

impl ResolveOptions {
    /// Defaults: target auto, no forced provider, the process environment.
    pub fn new(problem: impl Into<String>, project_dir: impl Into<PathBuf>) -> Self {
        Self {
            problem: problem.into(),
            mode: None,
            team_file: None,
            target: "auto".into(),
            provider: None,
            role: None,
            allow_sim_fallback: false,
            project_dir: project_dir.into(),
            parallel: None,
            max_fix_rounds: None,
            max_attempts: None,
            limits: LimitFlags::default(),
            env: EnvSnapshot::current(),
            probe: ProbeOptions {
                skip_version: true,
                ..ProbeOptions::default()
            },
            cwd_base: super::cwd::CwdBase::default(),
            hosts: vec![],
        }
    }
}

/// Resolve the team of a run; see the module doc.
///
/// # Errors
/// Bad options or team file (usage, exit 2), a prompt file that cannot be read, or no usable
/// provider for a worker without `allow_sim_fallback` (one line listing what to install).
#[allow(clippy::too_many_lines, reason = "to split into named steps (#15)")]
pub fn resolve(opts: &ResolveOptions) -> Result<ResolvedTeam> {
    let registry = Registry::load(Some(&opts.project_dir), &opts.env)?;
    let role = match opts
        .role
        .as_deref()
        .map(str::trim)
        .filter(|r| !r.is_empty())
    {
        Some(r) if MODEL_ROLES.contains(&r) => Some(r.to_string()),
        Some(r) => {
            return Err(Error::Usage(format!(
                "unknown --role `{r}`: use smol, slow, plan, commit or default"
            )))
        }
        None => None,
    };
    let target_arg = opts.target.trim().to_lowercase();
    if !TARGET_WORDS.contains(&target_arg.as_str()) && registry.get(&target_arg).is_none() {
        return Err(Error::Usage(format!(
            "unknown --target `{}`: use auto, ccg or a provider ({})",
            opts.target,
            registry.names().collect::<Vec<_>>().join(", ")
        )));
    }
    if let Some(p) = &opts.provider {
        registry.require(p)?;
    }
    if opts.problem.trim().is_empty() {
        return Err(Error::Usage(
            "the problem is empty: say what the team should do".into(),
        ));
    }
    let inferred = infer_target(&opts.problem);
    let (target, target_reason) = if target_arg == "auto" {
        (inferred.target.clone(), inferred.reason.clone())
    } else {
        (target_arg.clone(), "given with --target".to_string())
    };

    let loaded: LoadedTeam = match (&opts.team_file, opts.mode) {
        (Some(f), _) => load_file(f, &registry)?,
        (None, Some(m)) => load_mode(m, &registry)?,
        (None, None) => load_mode(
            if target == "ccg" {
                Mode::Ccg
            } else {
                Mode::Solo
            },
            &registry,
        )?,
    };
    super::cwd::check_cwds(&loaded, &opts.project_dir, &opts.cwd_base)?;
    let spec = &loaded.spec;
    let parallel = opts.parallel.or(spec.parallel).unwrap_or(DEFAULT_PARALLEL);
    if !(1..=256).contains(&parallel) {
        return Err(Error::Usage(format!("--parallel {parallel}: use 1..=256")));
    }
    let single = spec.workers.len() == 1;

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
    let history = History::load(&opts.project_dir);
    let health_of = |p: &str| -> String {
        match registry.get(p).map(|s| s.kind) {
            Some(ProviderKind::Sim) => "built-in".into(),
            Some(ProviderKind::Command) => "command".into(),
            _ => health
                .iter()
                .find(|h| h.provider == p)
                .map_or("unchecked".into(), |h| h.summary().into()),
        }
    };

    let sources = LimitSources {
        flags: opts.limits,
        team: LimitFlags {
            timeout_s: spec.timeout_s,
            idle_timeout_s: spec.idle_timeout_s,
            stall_after_s: spec.stall_after_s,
            check_timeout_s: spec.check_timeout_s,
        },
    };
    let mut workers = Vec::new();
    let mut unroutable: Vec<String> = Vec::new();
    for (i, w) in spec.workers.iter().enumerate() {
        let agent = agents::agent(&w.role).expect("validated role");
        // The provider this worker leans to: its own target, else the run's.
        let lean = match w.target.as_deref().filter(|t| *t != "auto") {
            Some(t) => t.to_string(),
            None if w.target.is_none() && !single && target_arg == "auto" => agent.prefers.clone(),
            None => target.clone(),
        };
        let preferred = if lean == "ccg" {
            if single {
                "codex".to_string()
            } else {
                agent.prefers.clone()
            }
        } else {
            lean
        };
        let forced = opts.provider.clone().or_else(|| w.provider.clone());
        let (provider, reason, fallbacks) = match forced {
            Some(p) => {
                let why = if opts.provider.is_some() {
                    "forced with --provider"
                } else {
                    "named in the team file"
                };
                let spec_p = registry.require(&p)?;
                if spec_p.kind == ProviderKind::Command && w.command.is_none() {
                    return Err(Error::Usage(format!(
                        "worker `{}` has no `command`: provider `{p}` needs `command = [argv...]` on every worker it runs",
                        w.id
                    )));
                }
                let h = health.iter().find(|h| h.provider == p);
                match h {
                    Some(h) if spec_p.is_agent() && !h.installed => {
                        if opts.allow_sim_fallback {
                            ("sim".to_string(), format!("{p} is {why} but not installed ({}); sim allowed by --allow-sim-fallback", spec_p.install_hint), vec![])
                        } else {
                            return Err(Error::Other(format!(
                                "worker `{}`: provider `{p}` is {why} but `{}` is not on PATH: install it with `{}`, or pass --allow-sim-fallback",
                                w.id, spec_p.binary, spec_p.install_hint
                            )));
                        }
                    }
                    _ => (p.clone(), format!("{p}: {why}"), vec![]),
                }
            }
            None => match choose(
                &agent.domain,
                Some(&preferred),
                &registry,
                &health,
                &history,
            ) {
                Some(c) => (c.provider, c.reason, c.fallbacks),
                None if opts.allow_sim_fallback => (
                    "sim".to_string(),
                    "no agent CLI is usable; sim allowed by --allow-sim-fallback".to_string(),
                    vec![],
                ),
                None => {
                    unroutable.push(w.id.clone());
                    continue;
                }
            },
        };
        let model_role = w
            .role_model
            .clone()
            .or_else(|| role.clone())
            .unwrap_or_else(|| agent.model_role.clone());
        let model = match &w.model {
            Some(m)
                if registry
                    .get(&provider)
                    .is_some_and(|s| s.kind == ProviderKind::Agent) =>
            {
                Some(m.clone())
            }
            Some(_) => None,
            None => registry
                .get(&provider)
                .and_then(|s| s.model_for_role(&model_role))
                .map(str::to_string),
        };
        let template = match (&w.prompt, &w.prompt_file) {
            (Some(p), _) => p.clone(),
            (None, Some(f)) => {
                let path = match &loaded.base_dir {
                    Some(d) if f.is_relative() => d.join(f),
                    _ => f.clone(),
                };
                std::fs::read_to_string(&path).map_err(|e| {
                    Error::Usage(format!(
                        "{}: worker `{}`: cannot read prompt_file: {e}",
                        loaded.source, w.id
                    ))
                })?
            }
            (None, None) => "{problem}".to_string(),
        };
        let task = if template.contains("{problem}") {
            template.replace("{problem}", &opts.problem)
        } else {
            format!("{}\n\nProblem: {}", template.trim_end(), opts.problem)
        };
        let limits = limits_of(
            &registry,
            &sources,
            &provider,
            Limits {
                timeout_s: w.timeout_s,
                idle_timeout_s: w.idle_timeout_s,
                stall_after_s: w.stall_after_s,
            },
        );
        workers.push(ResolvedWorker {
            id: w.id.clone(),
            role: w.role.clone(),
            health: health_of(&provider),
            provider,
            model,
            task,
            order: w.order.unwrap_or(i as u32 + 1),
            timeout_s: limits.timeout_s,
            idle_timeout_s: limits.idle_timeout_s,
            stall_after_s: limits.stall_after_s,
            max_attempts: w
                .max_attempts
                .or(opts.max_attempts)
                .unwrap_or(DEFAULT_MAX_ATTEMPTS)
                .max(1),
            artifacts: w.artifacts.clone(),
            cwd: w.cwd.clone(),
            command: w.command.clone(),
            workspace: w.workspace,
            host: crate::hosts::worker_host(w.host.as_deref(), spec.host.as_deref()),
            reason,
            fallbacks,
            after: w.after.clone(),
            on_upstream_failure: w.on_upstream_failure.unwrap_or_default(),
        });
    }
    if !unroutable.is_empty() {
        return Err(Error::Other(no_provider_message(
            &unroutable,
            &registry,
            &health,
        )));
    }
    workers.sort_by_key(|w| w.order);
    let mut host_slots = std::collections::BTreeMap::new();
    if !opts.hosts.is_empty() {
        host_slots = crate::hosts::spread::spread_team(
            &mut workers,
            spec,
            &opts.hosts,
            parallel,
            &opts.project_dir,
            &opts.env,
        )?;
    }
    let (checks, critics, fixer) = council_limits(spec, &workers, &registry, &sources);
    Ok(ResolvedTeam {
        name: spec.name.clone().unwrap_or_else(|| loaded.source.clone()),
        source: loaded.source.clone(),
        target,
        target_reason,
        role,
        parallel,
        host_slots,
        max_fix_rounds: opts
            .max_fix_rounds
            .or(spec.max_fix_rounds)
            .unwrap_or(DEFAULT_MAX_FIX_ROUNDS),
        workers,
        checks,
        critics,
        fixer: Some(fixer),
        workspace: spec.workspace.clone().unwrap_or_default(),
        health,
        registry,
    })
}

/// The limits of a worker on `provider` with its own values `own`: a `command` worker's or
/// an agent's (see `limits`).
fn limits_of(registry: &Registry, sources: &LimitSources, provider: &str, own: Limits) -> Limits {
    match registry.get(provider) {
        Some(s) if s.kind == ProviderKind::Command => sources.command(own),
        s => sources.agent(own, s.and_then(|s| s.stall_after_s)),
    }
}

/// Checks, critics and the fixer with their limits resolved (`None` then means "none"):
/// checks as commands, critics and the fixer on their provider (default: the first
/// worker's, as the engine picks it).
fn council_limits(
    spec: &crate::domain::TeamSpec,
    workers: &[ResolvedWorker],
    registry: &Registry,
    sources: &LimitSources,
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
                .command(Limits {
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
            };
            let l = limits_of(registry, sources, provider, own);
            (c.timeout_s, c.idle_timeout_s, c.stall_after_s) =
                (l.timeout_s, l.idle_timeout_s, l.stall_after_s);
            c
        })
        .collect();
    let mut fixer = spec.fixer.clone().unwrap_or_default();
    let provider = fixer.provider.clone().unwrap_or_else(|| first.to_string());
    let own = Limits {
        timeout_s: fixer.timeout_s,
        idle_timeout_s: fixer.idle_timeout_s,
        stall_after_s: fixer.stall_after_s,
    };
    let l = limits_of(registry, sources, &provider, own);
    (fixer.timeout_s, fixer.idle_timeout_s, fixer.stall_after_s) =
        (l.timeout_s, l.idle_timeout_s, l.stall_after_s);
    (checks, critics, fixer)
}

/// One line: which workers cannot run, the state of each agent CLI, and how to install them.
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
    if !installs.is_empty() {
        msg.push_str(&format!("; install one of: {}", installs.join("; ")));
    }
    if health.iter().any(|h| h.installed && !h.usable()) {
        msg.push_str("; or log in to an installed one");
    }
    msg.push_str("; or pass --allow-sim-fallback (or --provider sim) to use the simulated agent");
    msg
}
