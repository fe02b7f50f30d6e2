//! `crewmux run` and `crewmux demo`.
#![allow(
    clippy::expect_used,
    reason = "built-in assets embedded at compile time; their tests parse them"
)]

use std::io::IsTerminal;

use crate::cli::{DemoArgs, RunArgs, RunOptions};
use crate::domain::RunState;
use crate::error::{Error, Result};
use crate::lead::DriverOptions;
use crate::store::RunStore;
use crate::team::{check, resolve, route, Mode, ResolveOptions};

use super::plan::{choose_backend, create_run, create_run_with, project_dir, NewRun};
use super::planning::Planning;
use super::precheck::{precheck, ready_to_drive};

/// The demo's problem, embedded from `assets/demo/problem.md`.
pub const DEMO_PROBLEM: &str = include_str!("../../assets/demo/problem.md");
const DEMO_SCRIPT: &str = include_str!("../../assets/demo/script.toml");

#[derive(serde::Deserialize)]
struct DemoScript {
    workers: std::collections::BTreeMap<String, Vec<String>>,
}

/// The problem text: the argument, or standard input when it is `-` (for long texts:
/// argv is limited to 128 KiB per argument on Linux).
fn problem_text(arg: &str) -> Result<String> {
    if arg != "-" {
        return Ok(arg.to_string());
    }
    let mut text = String::new();
    std::io::Read::read_to_string(&mut std::io::stdin(), &mut text).map_err(|e| {
        Error::Usage(format!(
            "reading the problem from stdin: {e} (it must be UTF-8 text)"
        ))
    })?;
    Ok(text)
}

/// `crewmux run`.
///
/// # Errors
/// Bad options, team or problem ([`Error::Usage`], exit 2), no usable provider, a run directory
/// or worktree that cannot be made, or the errors of driving the run.
#[allow(
    clippy::needless_pass_by_value,
    reason = "a command handler owns the flags clap parsed for it"
)]
pub fn run(args: RunArgs) -> Result<i32> {
    let project = project_dir(args.options.common.project.as_deref())?;
    let problem = problem_text(&args.problem)?;
    let mut opts = ResolveOptions::new(problem.clone(), project.clone());
    opts.mode = args.mode.map(Into::into);
    opts.team_file = args.team.clone();
    opts.target = args.target.clone();
    opts.provider = args.provider.clone();
    crate::config::apply_defaults(&mut opts, &crate::config::load()?);
    opts.role = args.role.clone();
    opts.allow_sim_fallback = args.allow_sim_fallback;
    opts.parallel = args.options.parallel;
    opts.max_fix_rounds = args.options.max_fix_rounds;
    opts.max_attempts = args.options.max_attempts;
    opts.limits = args.options.limits.into();
    opts.cwd_base = crate::team::cwd::CwdBase {
        base: args.base.clone(),
        include_uncommitted: args.include_uncommitted,
    };
    opts.hosts = args.hosts.clone();
    opts.sandbox = args.sandbox.map(Into::into);
    opts.only = args.only.clone();
    opts.race = args.race;
    opts.budget = crate::domain::Budget {
        usd: args.options.budget_usd,
        tokens: args.options.budget_tokens,
    };
    // Bad input is refused before anything is printed or made; then the run's folder and
    // id come first, before routing probes the agent CLIs (seconds).
    let inputs = run_inputs(&args, &project)?;
    let checked = check(&opts)?;
    let backend = choose_backend(args.options.backend)?;
    let ws_opts = crate::workspace::WorkspaceOptions {
        base: args.base.clone(),
        include_uncommitted: args.include_uncommitted,
    };
    precheck(&project, backend, &problem, &checked, &opts.hosts, &ws_opts)?;
    ready_to_drive()?;
    let planning = Planning::begin(&project)?;
    let team = route(&opts, checked)?;
    let (store, state) = create_run_with(
        &project,
        &args.options,
        backend,
        &problem,
        &team,
        &NewRun {
            clarify: !args.no_clarify,
            workspace: &ws_opts,
            early: Some(&planning),
            asked: super::plan::Asked {
                provider: args.provider.as_deref(),
                hosts: &opts.hosts,
            },
            inputs: &inputs,
        },
    )?;
    planning.done()?;
    let ran = start(
        store.clone(),
        state,
        &args.options,
        args.prompt_max_chars as usize,
    );
    ran.inspect_err(|e| super::planning::not_started(&store, e))
}

/// `--context`, `--files` and `--expected-outcome`, checked: `--context @FILE` read (a
/// path relative to the current directory), each `--files` path a file inside `project`
/// (kept relative to it).
///
/// # Errors
/// [`Error::Usage`] (exit 2), one line naming the flag and value: an empty text, a
/// `@FILE` that cannot be read, a path that is not a file of the project.
pub fn run_inputs(args: &RunArgs, project: &std::path::Path) -> Result<crate::domain::RunInputs> {
    let text = |flag: &str, v: &Option<String>| -> Result<Option<String>> {
        match v {
            Some(t) if t.trim().is_empty() => Err(Error::Usage(format!(
                "{flag}: the text is empty: say it, or leave {flag} out"
            ))),
            other => Ok(other.clone()),
        }
    };
    let context = match text("--context", &args.context)? {
        Some(t) => match t.strip_prefix('@') {
            Some(file) => {
                let read = std::fs::read_to_string(file).map_err(|e| {
                    Error::Usage(format!(
                        "--context @{file}: cannot read it ({e}): give a readable text file, or the text itself"
                    ))
                })?;
                if read.trim().is_empty() {
                    return Err(Error::Usage(format!(
                        "--context @{file}: the file is empty"
                    )));
                }
                Some(read)
            }
            None => Some(t),
        },
        None => None,
    };
    let root = project
        .canonicalize()
        .unwrap_or_else(|_| project.to_path_buf());
    let mut files = Vec::new();
    for f in &args.files {
        let full = if f.is_absolute() {
            f.clone()
        } else {
            project.join(f)
        };
        let inside = full
            .canonicalize()
            .ok()
            .filter(|c| c.is_file())
            .and_then(|c| c.strip_prefix(&root).ok().map(std::path::Path::to_path_buf));
        match inside {
            Some(rel) => files.push(rel),
            None => {
                return Err(Error::Usage(format!(
                "--files {}: not a file of the project {}: give paths of its files, relative to it",
                f.display(),
                project.display()
            )))
            }
        }
    }
    Ok(crate::domain::RunInputs {
        context,
        files,
        expected_outcome: text("--expected-outcome", &args.expected_outcome)?,
    })
}

/// `crewmux demo`: the `crazy` team on the bundled problem with the simulated agent, each
/// worker scripted by `assets/demo/script.toml` (one fails its first attempt, one asks a
/// question that takes its default after `--question-timeout` seconds).
///
/// # Errors
/// As [`run`]: the run directory cannot be made, or the errors of driving the run.
#[allow(
    clippy::needless_pass_by_value,
    reason = "a command handler owns the flags clap parsed for it"
)]
pub fn demo(args: DemoArgs) -> Result<i32> {
    let project = project_dir(args.options.common.project.as_deref())?;
    let problem = DEMO_PROBLEM.trim().to_string();
    let mut opts = ResolveOptions::new(problem.clone(), project.clone());
    opts.mode = Some(Mode::Crazy);
    opts.provider = Some("sim".into());
    opts.parallel = args.options.parallel;
    opts.max_fix_rounds = args.options.max_fix_rounds;
    opts.max_attempts = args.options.max_attempts;
    opts.limits = args.options.limits.into();
    let mut team = resolve(&opts)?;
    team.name = "crazy (demo)".into();
    // The simulated agents change no files: the demo needs no worktrees.
    team.workspace.mode = Some(crate::domain::WorkspaceMode::Shared);
    let script: DemoScript = toml::from_str(DEMO_SCRIPT).expect("demo script parses (tested)");
    for w in &mut team.workers {
        if let Some(lines) = script.workers.get(&w.id) {
            for l in lines {
                w.task.push('\n');
                w.task.push_str(l);
            }
            w.task
                .push_str(&format!("\nsim: ask-timeout={}", args.question_timeout));
        }
    }
    let backend = choose_backend(args.options.backend)?;
    ready_to_drive()?;
    let (store, state) = create_run(&project, &args.options, backend, &problem, &team, true)?;
    let ran = start(store.clone(), state, &args.options, 4000);
    ran.inspect_err(|e| super::planning::not_started(&store, e))
}

/// Drive a freshly planned run: headless in this process (`--headless`, or no terminal);
/// otherwise by a lead of its own ([`super::lead`]), followed by the dashboard on this
/// terminal, or (`--detach`) with its id printed at once.
fn start(
    store: RunStore,
    state: RunState,
    opts: &RunOptions,
    prompt_max_chars: usize,
) -> Result<i32> {
    let dopts = DriverOptions {
        quiet: opts.quiet,
        prompt_max_chars,
        ..DriverOptions::default()
    };
    if opts.headless || (!opts.detach && !std::io::stdout().is_terminal()) {
        crate::errln!(
            "crewmux: run {} in {} ({} backend)",
            state.run_id,
            state.run_dir.display(),
            state.backend.as_str()
        );
        // The dashboard shows these in its log panel; headless, stderr is where they are read.
        for n in super::plan::plan_notices(&store)? {
            crate::errln!("crewmux: {n}");
        }
        return super::drive::drive_headless(store, state, dopts);
    }
    let lead = super::lead::LeadOptions {
        quiet: opts.quiet,
        prompt_max_chars,
    };
    super::lead::start(&store, &state, lead)?;
    if opts.detach {
        if opts.json {
            crate::outln!(
                "{}",
                serde_json::json!({
                    "run_id": state.run_id,
                    "run_dir": state.run_dir,
                })
            );
        } else {
            crate::outln!("{}", state.run_id);
        }
        return Ok(0);
    }
    super::dashboard::follow_dashboard(store, state, opts.quiet)
}
