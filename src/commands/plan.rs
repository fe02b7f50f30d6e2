//! Planning a run: resolve the team, pick the backend, create the run directory and its
//! first `state.json` (stage `team-plan`).

use std::path::{Path, PathBuf};

use chrono::Utc;

use crate::cli::{BackendArg, ModeArg, RunOptions};
use crate::domain::{
    BackendKind, ClarificationState, Council, RunState, RunStatus, Stage, TeamSpec, WorkerKind,
    SCHEMA_VERSION,
};
use crate::engine::stages_public::blank_worker;
use crate::error::{Error, Result};
use crate::store::RunStore;

/// Where and how a new run starts.
#[derive(Debug, Clone)]
pub struct PlanRequest {
    pub problem: String,
    pub team: TeamSpec,
    pub team_name: String,
    /// Forces every worker onto this provider.
    pub provider: Option<String>,
    pub clarify: bool,
    pub max_attempts: Option<u32>,
}

/// The project directory: `--project` or the current directory, made absolute.
///
/// Errors: the directory does not exist.
pub fn project_dir(arg: Option<&Path>) -> Result<PathBuf> {
    let dir = match arg {
        Some(p) => p.to_path_buf(),
        None => std::env::current_dir()?,
    };
    dir.canonicalize().map_err(|_| {
        Error::Usage(format!(
            "--project {}: no such directory; give an existing project folder",
            dir.display()
        ))
    })
}

/// The backend: `--backend`, else tmux when installed, else the process backend (said once
/// on stderr).
///
/// Errors: `--backend tmux` without tmux on PATH.
pub fn choose_backend(arg: Option<BackendArg>) -> Result<BackendKind> {
    match arg {
        Some(BackendArg::Process) => Ok(BackendKind::Process),
        Some(BackendArg::Tmux) => {
            if crate::tmux::tmux_available() {
                Ok(BackendKind::Tmux)
            } else {
                Err(Error::Usage(
                    "--backend tmux: tmux is not on PATH; install it (e.g. `apt-get install tmux`) or use --backend process".into(),
                ))
            }
        }
        None if crate::tmux::tmux_available() => Ok(BackendKind::Tmux),
        None => {
            eprintln!(
                "crewmux: tmux not found; running workers as child processes (--backend process)"
            );
            Ok(BackendKind::Process)
        }
    }
}

/// A built-in team (`crazy`, `ccg`, `solo`), embedded from `assets/teams/`.
pub fn builtin_team(mode: ModeArg) -> (String, TeamSpec) {
    let (name, text) = match mode {
        ModeArg::Crazy => ("crazy", include_str!("../../assets/teams/crazy.toml")),
        ModeArg::Ccg => ("ccg", include_str!("../../assets/teams/ccg.toml")),
        ModeArg::Solo => ("solo", include_str!("../../assets/teams/solo.toml")),
    };
    let team = toml::from_str(text).expect("built-in team files parse (tested)");
    (name.to_string(), team)
}

/// A new run id: `YYYYMMDD-HHMMSS-xxxx` (sortable by start time, 4 random hex digits).
pub fn new_run_id() -> String {
    format!(
        "{}-{}",
        Utc::now().format("%Y%m%d-%H%M%S"),
        &uuid::Uuid::new_v4().simple().to_string()[..4]
    )
}

/// Create the run directory, `manifest.json` and the first `state.json`.
///
/// Errors: a worker without a provider, a bad `--parallel`, or I/O.
pub fn create_run(
    project: &Path,
    opts: &RunOptions,
    backend: BackendKind,
    req: PlanRequest,
) -> Result<(RunStore, RunState)> {
    let parallel = opts.parallel.or(req.team.parallel).unwrap_or(5);
    if !(1..=256).contains(&parallel) {
        return Err(Error::Usage(format!(
            "--parallel {parallel}: must be between 1 and 256"
        )));
    }
    if req.problem.trim().is_empty() {
        return Err(Error::Usage(
            "the problem is empty: say what the team should work on, e.g. crewmux run \"add a health endpoint\"".into(),
        ));
    }
    let mut workers = vec![];
    for (i, spec) in req.team.workers.iter().enumerate() {
        let provider = req
            .provider
            .clone()
            .or_else(|| spec.provider.clone())
            .ok_or_else(|| {
                Error::Usage(format!(
                    "worker `{}` has no provider: pass --provider NAME (e.g. --provider sim)",
                    spec.id
                ))
            })?;
        let mut w = blank_worker(
            spec.id.clone(),
            spec.role.clone(),
            provider,
            WorkerKind::Worker,
            Stage::TeamExec,
            0,
        );
        w.model = spec.model.clone();
        w.task = spec
            .prompt
            .clone()
            .unwrap_or_else(|| "{problem}".into())
            .replace("{problem}", &req.problem);
        w.order = spec.order.unwrap_or(i as u32 + 1);
        w.timeout_s = spec.timeout_s;
        w.idle_timeout_s = spec.idle_timeout_s;
        w.max_attempts = opts
            .max_attempts
            .or(req.max_attempts)
            .or(spec.max_attempts)
            .unwrap_or(2)
            .max(1);
        w.artifacts = spec.artifacts.clone();
        w.command = spec.command.clone();
        w.cwd = spec.cwd.clone();
        workers.push(w);
    }
    let run_id = new_run_id();
    let store = RunStore::create(project, &run_id)?;
    let now = Utc::now();
    let socket = opts.common.tmux_socket.clone();
    let state = RunState {
        schema_version: SCHEMA_VERSION,
        run_id: run_id.clone(),
        problem: req.problem.clone(),
        team: req.team_name.clone(),
        project_dir: project.to_path_buf(),
        run_dir: store.dir().to_path_buf(),
        stage: Stage::TeamPlan,
        status: RunStatus::Running,
        reason: None,
        backend,
        tmux_socket: socket,
        session: format!("crewmux-{run_id}"),
        parallel,
        fix_round: 0,
        max_fix_rounds: opts.max_fix_rounds.or(req.team.max_fix_rounds).unwrap_or(1),
        workers,
        dispatches: vec![],
        council: Council::default(),
        council_history: vec![],
        clarification: ClarificationState::default(),
        clarify: req.clarify,
        checks: req.team.checks.clone(),
        critics: req.team.critics.clone(),
        fixer: req.team.fixer.clone(),
        report: None,
        created_at: now,
        updated_at: now,
    };
    store.write_manifest(&serde_json::json!({
        "schema_version": SCHEMA_VERSION,
        "run_id": run_id,
        "problem": req.problem,
        "team": req.team_name,
        "spec": req.team,
    }))?;
    store.save_state(&state)?;
    Ok((store, state))
}
