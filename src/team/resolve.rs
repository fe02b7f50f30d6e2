//! Resolving a team for a run: load the mode or team file, route every worker to a provider
//! and model, fill the task text, and fail fast (listing what to install) when no agent CLI
//! can run it and the simulated agent is not allowed.
#![allow(
    clippy::expect_used,
    reason = "lookups of ids the surrounding code has just checked"
)]

use std::path::PathBuf;

use super::file::{load_file, load_mode, LoadedTeam, Mode, TARGET_WORDS};
use super::limits::LimitFlags;
pub use super::resolved::{ResolvedTeam, ResolvedWorker};
use super::routing::infer_target;
use crate::error::{Error, Result};
use crate::providers::{EnvSnapshot, ProbeOptions, ProviderKind, Registry, MODEL_ROLES};

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
    /// `run --sandbox MODE`: every worker's fence mode, over the team file's.
    pub sandbox: Option<crate::domain::SandboxMode>,
    /// `--only`: run just these workers of the team (the others are `not-run`); empty: all.
    pub only: Vec<String>,
    /// `--budget-usd`, `--budget-tokens`: each limit given wins over the team's `[budget]`.
    pub budget: crate::domain::Budget,
    /// `run --race N`: every worker that sets no `race` of its own runs as N candidates.
    pub race: Option<u32>,
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
            budget: crate::domain::Budget::default(),
            env: EnvSnapshot::current(),
            probe: ProbeOptions {
                skip_version: true,
                ..ProbeOptions::default()
            },
            cwd_base: super::cwd::CwdBase::default(),
            hosts: vec![],
            sandbox: None,
            only: Vec::new(),
            race: None,
        }
    }
}

/// Resolve the team of a run; see the module doc: [`check`], then
/// [`route`](super::route::route).
///
/// # Errors
/// As [`check`] (bad input, usage, exit 2) and [`route`](super::route::route) (no usable
/// provider).
pub fn resolve(opts: &ResolveOptions) -> Result<ResolvedTeam> {
    super::route::route(opts, check(opts)?)
}

/// A team checked against the run's options, before any provider is probed: every mistake
/// in the input (flags, team file, prompt files, `cwd`s, providers named) is found by
/// [`check`], which runs no agent CLI; [`route`](super::route::route) then probes and
/// routes.
#[derive(Debug)]
pub struct CheckedTeam {
    pub(super) registry: Registry,
    /// `--role`, checked.
    pub(super) role: Option<String>,
    /// `--target` as given (lowercase): `auto`, `ccg` or a provider.
    pub(super) target_arg: String,
    /// The target routing leans to, and why.
    pub(super) target: String,
    pub(super) target_reason: String,
    pub(super) loaded: LoadedTeam,
    pub(super) parallel: usize,
    /// Each worker's task template (its `prompt`, its `prompt_file` read, or `{problem}`),
    /// in file order.
    pub(super) templates: Vec<String>,
    /// The workers `--only` leaves out (id, role), in file order: `not-run` in the run.
    pub(super) left_out: Vec<(String, String)>,
}

impl CheckedTeam {
    /// The team as loaded from its file or mode.
    pub fn spec(&self) -> &crate::domain::TeamSpec {
        &self.loaded.spec
    }

    /// `mode:ccg` or the team file's path.
    pub fn source(&self) -> &str {
        &self.loaded.source
    }

    /// The run's `parallel` (`--parallel`, the team file's, or the default).
    pub fn parallel(&self) -> usize {
        self.parallel
    }
}

/// Every `fallback` of the team file names an agent provider (not `command`, which runs a
/// team file's argv), and no `command` worker has one.
///
/// # Errors
/// One line naming the team file, the worker (or the top level) and the value.
fn check_fallbacks(loaded: &LoadedTeam, registry: &Registry) -> Result<()> {
    let file = &loaded.source;
    let bad = |f: &str| match registry.get(f) {
        None => Some(format!(
            "fallback `{f}` is no provider: use one of {} (or define it in providers.toml)",
            registry.names().collect::<Vec<_>>().join(", ")
        )),
        Some(s) if s.kind == crate::providers::ProviderKind::Command => Some(format!(
            "fallback `{f}` runs a team file's argv, not an agent's task: name an agent provider"
        )),
        Some(_) => None,
    };
    if let Some(why) = loaded.spec.fallback.iter().find_map(|f| bad(f)) {
        return Err(Error::Usage(format!("{file}: top-level {why}")));
    }
    for w in &loaded.spec.workers {
        if let Some(why) = w.fallback.iter().find_map(|f| bad(f)) {
            return Err(Error::Usage(format!("{file}: worker `{}`: {why}", w.id)));
        }
        if w.provider.as_deref() == Some("command") && !w.fallback.is_empty() {
            return Err(Error::Usage(format!(
                "{file}: worker `{}` runs a command, which has no fallback: remove its `fallback`",
                w.id
            )));
        }
    }
    Ok(())
}

/// The budgets (flags and `[budget]`), the fallbacks and the races the run asks for.
///
/// # Errors
/// As `Budget::check`, [`check_fallbacks`] and `race::check`: one line, naming the flag or
/// the team file.
fn check_spending_and_routes(
    opts: &ResolveOptions,
    loaded: &LoadedTeam,
    registry: &Registry,
) -> Result<()> {
    opts.budget
        .check("--budget-usd", "--budget-tokens")
        .map_err(Error::Usage)?;
    if let Some(b) = &loaded.spec.budget {
        b.check("[budget] usd", "[budget] tokens")
            .map_err(|e| Error::Usage(format!("{}: {e}", loaded.source)))?;
    }
    check_fallbacks(loaded, registry)?;
    super::race::check(
        &loaded.spec,
        (opts.race, opts.sandbox),
        registry,
        &loaded.source,
    )
}

/// Check the options and load the team (the fast half of [`resolve`]).
///
/// # Errors
/// [`Error::Usage`] (exit 2): an unknown `--role`, `--target` or provider, an empty
/// problem, a team file or mode that does not load, a `cwd` outside the project, a bad
/// `--parallel`, a `prompt_file` that cannot be read, a `command` provider on a worker
/// without `command`; [`Error::Io`] when the providers' files cannot be read.
pub fn check(opts: &ResolveOptions) -> Result<CheckedTeam> {
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
    let mut loaded = loaded;
    if let Some(mode) = opts.sandbox {
        super::sandbox::force_mode(&mut loaded.spec, mode);
        let spec = &loaded.spec;
        if let Some(msg) = spec
            .workers
            .iter()
            .find_map(|w| super::sandbox::problem(spec.sandbox.as_ref(), w.sandbox.as_ref()))
        {
            return Err(Error::Usage(format!(
                "--sandbox {mode}: {msg} in the team file"
            )));
        }
    }
    super::cwd::check_cwds(&loaded, &opts.project_dir, &opts.cwd_base)?;
    let parallel = opts
        .parallel
        .or(loaded.spec.parallel)
        .unwrap_or(DEFAULT_PARALLEL);
    if !(1..=256).contains(&parallel) {
        return Err(Error::Usage(format!("--parallel {parallel}: use 1..=256")));
    }
    check_spending_and_routes(opts, &loaded, &registry)?;
    let left_out = only(&mut loaded.spec, &opts.only, &loaded.source)?;
    let mut templates = Vec::with_capacity(loaded.spec.workers.len());
    for w in &loaded.spec.workers {
        check_provider(opts, &registry, w)?;
        templates.push(template(&loaded, w)?);
    }
    Ok(CheckedTeam {
        registry,
        role,
        target_arg,
        target,
        target_reason,
        loaded,
        parallel,
        templates,
        left_out,
    })
}

/// `--only ID,ID`: keep just those workers in `spec`; returns the others (id, role).
///
/// # Errors
/// [`Error::Usage`] (exit 2), one line: an id the team does not have (naming its workers),
/// or a kept worker that runs `after` one left out (naming both and the fix).
fn only(
    spec: &mut crate::domain::TeamSpec,
    only: &[String],
    source: &str,
) -> Result<Vec<(String, String)>> {
    if only.is_empty() {
        return Ok(Vec::new());
    }
    let ids: Vec<&str> = spec.workers.iter().map(|w| w.id.as_str()).collect();
    for id in only {
        if !ids.contains(&id.as_str()) {
            return Err(Error::Usage(format!(
                "--only {id}: team {source} has no such worker; its workers: {}",
                ids.join(", ")
            )));
        }
    }
    for w in spec.workers.iter().filter(|w| only.contains(&w.id)) {
        if let Some(up) = w.after.iter().find(|a| !only.contains(a)) {
            return Err(Error::Usage(format!(
                "--only: worker `{}` runs after `{up}`, which --only leaves out: add {up} to --only, or leave {} out too",
                w.id, w.id
            )));
        }
    }
    let (kept, out): (Vec<_>, Vec<_>) = std::mem::take(&mut spec.workers)
        .into_iter()
        .partition(|w| only.contains(&w.id));
    spec.workers = kept;
    Ok(out.into_iter().map(|w| (w.id, w.role)).collect())
}

/// The provider a worker is given (`--provider`, else its own) exists, and a `command`
/// provider has an argv to run.
fn check_provider(
    opts: &ResolveOptions,
    registry: &Registry,
    w: &crate::domain::WorkerSpec,
) -> Result<()> {
    let Some(p) = opts.provider.as_deref().or(w.provider.as_deref()) else {
        return Ok(());
    };
    if registry.require(p)?.kind == ProviderKind::Command && w.command.is_none() {
        return Err(Error::Usage(format!(
            "worker `{}` has no `command`: provider `{p}` needs `command = [argv...]` on every worker it runs",
            w.id
        )));
    }
    Ok(())
}

/// A worker's task template: its `prompt`, its `prompt_file` (relative to the team file),
/// or the problem alone.
fn template(loaded: &LoadedTeam, w: &crate::domain::WorkerSpec) -> Result<String> {
    Ok(match (&w.prompt, &w.prompt_file) {
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
    })
}
