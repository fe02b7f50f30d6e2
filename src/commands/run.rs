//! `crewmux run` and `crewmux demo`.

use std::io::IsTerminal;

use crate::cli::{DemoArgs, ModeArg, RunArgs, RunOptions};
use crate::domain::{RunState, TeamSpec};
use crate::driver::DriverOptions;
use crate::error::{Error, Result};
use crate::store::RunStore;

use super::plan::{builtin_team, choose_backend, create_run, project_dir, PlanRequest};

/// The demo's problem, embedded from `assets/demo/problem.md`.
pub const DEMO_PROBLEM: &str = include_str!("../../assets/demo/problem.md");
const DEMO_SCRIPT: &str = include_str!("../../assets/demo/script.toml");

#[derive(serde::Deserialize)]
struct DemoScript {
    workers: std::collections::BTreeMap<String, Vec<String>>,
}

/// Load a team file. Errors name the file and, for TOML errors, the line and field.
pub fn load_team_file(path: &std::path::Path) -> Result<TeamSpec> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::Usage(format!("--team {}: cannot read it ({e})", path.display())))?;
    toml::from_str(&text).map_err(|e| {
        let line = e
            .span()
            .map(|s| text[..s.start].lines().count().max(1))
            .unwrap_or(0);
        Error::Usage(format!(
            "{}:{line}: {}",
            path.display(),
            e.message().lines().next().unwrap_or("invalid team file")
        ))
    })
}

/// `crewmux run`.
pub fn run(args: RunArgs) -> Result<i32> {
    let project = project_dir(args.options.common.project.as_deref())?;
    let (team_name, team) = match (&args.team, args.mode) {
        (Some(path), _) => {
            let team = load_team_file(path)?;
            (team.name.clone().unwrap_or_else(|| "team".into()), team)
        }
        (None, mode) => builtin_team(mode.unwrap_or(ModeArg::Solo)),
    };
    let backend = choose_backend(args.options.backend)?;
    let (store, state) = create_run(
        &project,
        &args.options,
        backend,
        PlanRequest {
            problem: args.problem.clone(),
            team,
            team_name,
            provider: args.provider.clone(),
            clarify: !args.no_clarify,
            max_attempts: None,
        },
    )?;
    start(store, state, &args.options, args.prompt_max_chars)
}

/// `crewmux demo`: the `crazy` team on the bundled problem with the simulated agent, each
/// worker scripted by `assets/demo/script.toml` (one fails its first attempt, one asks a
/// question that takes its default after `--question-timeout` seconds).
pub fn demo(args: DemoArgs) -> Result<i32> {
    let project = project_dir(args.options.common.project.as_deref())?;
    let (_, mut team) = builtin_team(ModeArg::Crazy);
    let script: DemoScript = toml::from_str(DEMO_SCRIPT).expect("demo script parses (tested)");
    for w in &mut team.workers {
        if let Some(lines) = script.workers.get(&w.id) {
            let mut prompt = w.prompt.clone().unwrap_or_default();
            for l in lines {
                prompt.push('\n');
                prompt.push_str(l);
            }
            prompt.push_str(&format!("\nsim: ask-timeout={}", args.question_timeout));
            w.prompt = Some(prompt);
        }
    }
    let backend = choose_backend(args.options.backend)?;
    let (store, state) = create_run(
        &project,
        &args.options,
        backend,
        PlanRequest {
            problem: DEMO_PROBLEM.trim().to_string(),
            team,
            team_name: "crazy (demo)".into(),
            provider: Some("sim".into()),
            clarify: true,
            max_attempts: None,
        },
    )?;
    start(store, state, &args.options, 4000)
}

/// Drive a freshly planned run: the dashboard on a terminal, headless otherwise.
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
    if opts.headless || !std::io::stdout().is_terminal() {
        eprintln!(
            "crewmux: run {} in {} ({} backend)",
            state.run_id,
            state.run_dir.display(),
            state.backend.as_str()
        );
        super::drive::drive_headless(store, state, dopts)
    } else {
        super::dashboard::drive_dashboard(store, state, dopts)
    }
}
