//! Planning a run: resolve the team, pick the backend, create the run directory and its
//! first `state.json` (stage `team-plan`).

use std::path::{Path, PathBuf};

use chrono::Utc;

use crate::cli::{BackendArg, RunOptions};
use crate::domain::{
    BackendKind, ClarificationState, Council, RunState, RunStatus, Stage, SCHEMA_VERSION,
};
use crate::error::{Error, IoContext, Result};
use crate::store::RunStore;
use crate::team::ResolvedTeam;

/// The project directory: `--project` or the current directory, made absolute.
///
/// # Errors
/// The directory does not exist.
pub fn project_dir(arg: Option<&Path>) -> Result<PathBuf> {
    let dir = match arg {
        Some(p) => p.to_path_buf(),
        None => std::env::current_dir().on("the current directory")?,
    };
    match dir.canonicalize() {
        Ok(d) if d.is_dir() => Ok(d),
        _ => Err(no_project(&dir)),
    }
}

fn no_project(dir: &Path) -> Error {
    let what = if dir.exists() {
        "a file, not a directory"
    } else {
        "no such directory"
    };
    Error::Usage(format!(
        "--project {}: {what}; give an existing project folder",
        dir.display()
    ))
}

/// `--project` as given (not made canonical), else the current directory.
///
/// # Errors
/// As [`project_dir`]: a `--project` that is no directory.
pub fn given_project_dir(arg: Option<&Path>) -> Result<PathBuf> {
    match arg {
        Some(p) if p.is_dir() => Ok(p.to_path_buf()),
        Some(p) => Err(no_project(p)),
        None => std::env::current_dir().on("the current directory"),
    }
}

/// The backend: `--backend`, else tmux when it is usable, else the process backend (said in
/// one line on stderr). tmux is judged by the check `doctor` reports
/// ([`crate::providers::health::probe_tmux`]): on PATH and at least tmux 3.2.
///
/// # Errors
/// `--backend tmux` when tmux is missing or too old (a usage error, exit 2).
pub fn choose_backend(arg: Option<BackendArg>) -> Result<BackendKind> {
    if arg == Some(BackendArg::Process) {
        return Ok(BackendKind::Process);
    }
    let tmux = crate::providers::health::probe_tmux(&crate::providers::EnvSnapshot::current());
    match (arg, tmux.problem.clone()) {
        (_, None) => Ok(BackendKind::Tmux),
        (Some(_), Some(problem)) => Err(Error::Usage(format!(
            "--backend tmux: {problem}; {} or use --backend process",
            tmux_fix_text(&tmux)
        ))),
        (None, Some(problem)) => {
            crate::errln!(
                "crewmux: {problem}; running workers as child processes (--backend process)"
            );
            Ok(BackendKind::Process)
        }
    }
}

/// The fix of an unusable tmux for a person who runs here: a UTF-8 locale, or a tmux at
/// the minimum with the usual way to get one.
pub(crate) fn tmux_fix_text(tmux: &crate::providers::TmuxHealth) -> String {
    match tmux.fix.as_deref() {
        Some(fix) if !fix.starts_with("install tmux") => fix.to_string(),
        _ => format!(
            "install tmux {} or newer (e.g. `apt-get install tmux`)",
            tmux.minimum
        ),
    }
}

/// A new run id: `YYYYMMDD-HHMMSS-xxxx` (sortable by start time, 4 random hex digits).
pub fn new_run_id() -> String {
    format!(
        "{}-{}",
        Utc::now().format("%Y%m%d-%H%M%S"),
        &uuid::Uuid::new_v4().simple().to_string()[..4]
    )
}

/// Longest problem text accepted, bytes (it is copied into every prompt and the state).
pub const MAX_PROBLEM_BYTES: usize = 1024 * 1024;

/// How [`create_run_with`] makes a run, besides its team and problem.
#[derive(Debug, Clone, Copy)]
pub struct NewRun<'a> {
    /// Start at the clarification gate (no `--no-clarify`).
    pub clarify: bool,
    /// `--base`, `--include-uncommitted`.
    pub workspace: &'a crate::workspace::WorkspaceOptions,
    /// The id and folder [`Planning`](super::planning::Planning) made for the run, if any.
    pub early: Option<&'a super::planning::Planning>,
    /// `--provider` and `--hosts` as asked, kept in `manifest.json` so the home screen's
    /// "run again" can ask the same (`crate::tui::home::origin`).
    pub asked: Asked<'a>,
    /// `--context`, `--files`, `--expected-outcome`, checked ([`super::run::run_inputs`]).
    pub inputs: &'a crate::domain::RunInputs,
}

/// The flags of `run` that the resolved team does not show as they were asked.
#[derive(Debug, Clone, Copy, Default)]
pub struct Asked<'a> {
    pub provider: Option<&'a str>,
    pub hosts: &'a [String],
}

/// A worker as the run's input checks see it: its id, its own workspace mode and its SSH
/// host (`None`: this machine).
#[derive(Debug, Clone, Copy)]
pub struct Placed<'a> {
    pub id: &'a str,
    pub workspace: Option<crate::domain::WorkspaceMode>,
    pub host: Option<&'a str>,
}

/// Create the run directory, `manifest.json` and the first `state.json` for a resolved
/// team (stage `team-plan`), with worktrees based on HEAD (see [`create_run_with`]).
///
/// # Errors
/// As [`create_run_with`].
pub fn create_run(
    project: &Path,
    opts: &RunOptions,
    backend: BackendKind,
    problem: &str,
    team: &ResolvedTeam,
    clarify: bool,
) -> Result<(RunStore, RunState)> {
    create_run_with(
        project,
        opts,
        backend,
        problem,
        team,
        &NewRun {
            clarify,
            workspace: &crate::workspace::WorkspaceOptions::default(),
            early: None,
            asked: Asked::default(),
            inputs: &crate::domain::RunInputs::default(),
        },
    )
}

/// `parallel` (workers launched at once) when it is between 1 and 256.
///
/// # Errors
/// [`Error::Usage`] naming the value otherwise.
fn checked_parallel(parallel: usize) -> Result<usize> {
    if (1..=256).contains(&parallel) {
        Ok(parallel)
    } else {
        Err(Error::Usage(format!(
            "--parallel {parallel}: must be between 1 and 256"
        )))
    }
}

/// Create the run directory, `manifest.json` and the first `state.json` for a resolved
/// team (stage `team-plan`); in a git project, a worktree per worker from the base
/// (`crate::workspace`), its SHA in `manifest.json` (`workspace.base`). Workspace, host and
/// helper notices (a dirty tree, a project without git, a `--hosts` host that got no
/// worker, crewmux copied to a host) go to
/// the run's `events.jsonl` as `plan-notice` events, one each ([`plan_notices`]). See
/// [`NewRun`].
///
/// # Errors
/// An empty or too long problem, an unknown host, a bad `--parallel`, a refused workspace (`--base`
/// not a commit, a bare repository: nothing is created), git or I/O.
#[allow(
    clippy::too_many_lines,
    reason = "the checks in the order run makes them, then the run's state field by field"
)]
pub fn create_run_with(
    project: &Path,
    opts: &RunOptions,
    backend: BackendKind,
    problem: &str,
    team: &ResolvedTeam,
    how: &NewRun<'_>,
) -> Result<(RunStore, RunState)> {
    let NewRun {
        clarify,
        workspace: ws_opts,
        early,
        asked,
        inputs,
    } = *how;
    let problem = checked_problem(problem)?;
    if team.workers.is_empty() {
        return Err(no_worker(&team.name));
    }
    checked_parallel(team.parallel)?;
    crate::team::programs::refuse_missing(team, project)?;
    let placed: Vec<Placed<'_>> = team
        .workers
        .iter()
        .map(|w| Placed {
            id: &w.id,
            workspace: w.workspace,
            host: w.host.as_deref(),
        })
        .collect();
    let hosts = hosts_of(project, &team.source, &placed, backend)?;
    // With `--hosts`, each host runs its own share at once and the run all of them.
    let parallel = team.at_once();
    let workers = worker_states(team);
    let mut planned = plan_workspace(project, &team.workspace, &placed, ws_opts)?;
    hosts_file_warning(project, &hosts, &mut planned.notices);
    let helpers = helpers_of(project, team, &hosts)?;
    let run_id = early.map_or_else(new_run_id, |p| p.run_id().to_string());
    let workspace = match &planned.plan {
        // Worktrees and branches are made when the first worker launches (a run halted at
        // the clarification gate leaves none).
        Some(p) => Some(crate::workspace::create::start(p, project, &run_id)?),
        None => None,
    };
    let store = match early {
        Some(p) => p.store(),
        None => RunStore::create(project, &run_id)?,
    };
    crate::hosts::save_run_hosts(store.dir(), &hosts)?;
    crate::hosts::helper::save(store.dir(), &helpers.states)?;
    let unused = unused_hosts(team);
    let notices: Vec<&String> = planned
        .notices
        .iter()
        .chain(&helpers.notices)
        .chain(&unused)
        .collect();
    record_notices(&store, &notices)?;
    // For the home screen's `--all` list.
    crate::tui::home::index::remember(project);
    let now = Utc::now();
    let races = crate::domain::race::races_of(&workers);
    let state = RunState {
        schema_version: SCHEMA_VERSION,
        run_id: run_id.clone(),
        problem: problem.clone(),
        team: team.name.clone(),
        project_dir: project.to_path_buf(),
        run_dir: store.dir().to_path_buf(),
        stage: Stage::TeamPlan,
        status: RunStatus::Running,
        reason: None,
        backend,
        tmux_socket: opts.common.tmux_socket.clone(),
        session: format!("crewmux-{run_id}"),
        parallel,
        host_slots: team.host_slots.clone(),
        fix_round: 0,
        max_fix_rounds: team.max_fix_rounds,
        workers,
        dispatches: vec![],
        council: Council::default(),
        council_history: vec![],
        workspace: workspace.clone(),
        routing: crate::team::routing::run_routing(team),
        hosts_not_answering: Default::default(),
        inbox_read: Some(0),
        inputs: inputs.clone(),
        budget: team.budget.is_set().then(|| crate::domain::BudgetState {
            limit: team.budget,
            ..Default::default()
        }),
        clarification: ClarificationState::default(),
        clarify: clarify && team.clarify,
        checks: team.checks.clone(),
        critics: team.critics.clone(),
        fixer: team.fixer.clone(),
        sandbox: team.sandbox.clone(),
        report: None,
        races,
        created_at: now,
        updated_at: now,
    };
    write_manifest(&store, &state, team, asked)?;
    store.save_state(&state)?;
    Ok((store, state))
}

/// The run's workers as first saved: the team's, then those `--only` left out, `not-run`.
fn worker_states(team: &ResolvedTeam) -> Vec<crate::domain::WorkerState> {
    let mut workers: Vec<crate::domain::WorkerState> = team
        .workers
        .iter()
        .map(|w| w.to_worker_state(Stage::TeamExec))
        .collect();
    // `--only` left these out: listed, never started.
    workers.extend(team.not_run.iter().map(|(id, role)| {
        let mut w = crate::engine::stages_public::blank_worker(
            id.clone(),
            role.clone(),
            "-".into(),
            crate::domain::WorkerKind::Worker,
            Stage::TeamExec,
            0,
        );
        w.status = crate::domain::WorkerStatus::NotRun;
        w.reason = Some(crate::domain::NOT_IN_ONLY.into());
        w
    }));
    workers
}

/// `manifest.json`: the resolved team, the flags it does not show as asked, and the
/// workspace's base and branches.
///
/// # Errors
/// The file cannot be written.
fn write_manifest(
    store: &RunStore,
    state: &RunState,
    team: &ResolvedTeam,
    asked: Asked<'_>,
) -> Result<()> {
    let workspace = &state.workspace;
    store.write_manifest(&serde_json::json!({
        "schema_version": SCHEMA_VERSION,
        "run_id": state.run_id,
        "problem_bytes": state.problem.len(),
        "team": team,
        "provider": asked.provider,
        "hosts": asked.hosts,
        "workspace": workspace.as_ref().map(|w| serde_json::json!({
            "base": w.base,
            "base_ref": w.base_ref,
            "uncommitted": w.uncommitted,
            "root": w.root,
            "branches": w.workers.values().map(|x| &x.branch).collect::<Vec<_>>(),
        })),
    }))
}

/// `--hosts`: each listed host that got no worker, and why (what dispatch shows), as a
/// planning notice: `host box: no workers (<reason>)`.
fn unused_hosts(team: &ResolvedTeam) -> Vec<String> {
    team.hosts_without_workers
        .iter()
        .map(|u| format!("host {}: no workers ({})", u.host, u.reason))
        .collect()
}

/// Keep what planning found for the person in the run's `events.jsonl` (`plan-notice`,
/// source `plan`): the dashboard, which takes the screen right after, shows them in its
/// log panel; a headless run prints them on stderr ([`plan_notices`]).
///
/// # Errors
/// `events.jsonl` cannot be written.
fn record_notices(store: &RunStore, notices: &[&String]) -> Result<()> {
    for n in notices {
        store.append_event(&crate::domain::RunEvent {
            ts: Utc::now(),
            kind: crate::domain::EventKind::PlanNotice,
            worker: None,
            attempt: None,
            source: "plan".into(),
            message: (*n).clone(),
        })?;
    }
    Ok(())
}

/// What planning the run in `store` found for the person (its `plan-notice` events), in
/// order.
///
/// # Errors
/// `events.jsonl` cannot be read or has a line that does not parse.
pub fn plan_notices(store: &RunStore) -> Result<Vec<String>> {
    Ok(store
        .read_events()?
        .into_iter()
        .filter(|e| e.kind == crate::domain::EventKind::PlanNotice)
        .map(|e| e.message)
        .collect())
}

/// The problem without its trailing newlines, refused when empty or over
/// [`MAX_PROBLEM_BYTES`].
///
/// # Errors
/// [`Error::Usage`]: an empty or too long problem.
pub(super) fn checked_problem(problem: &str) -> Result<String> {
    let problem = problem.trim_end_matches(['\n', '\r']).to_string();
    if problem.trim().is_empty() {
        return Err(Error::Usage(
            "the problem is empty: say what the team should work on, e.g. crewmux run \"add a health endpoint\"".into(),
        ));
    }
    if problem.len() > MAX_PROBLEM_BYTES {
        return Err(Error::Usage(format!(
            "the problem is {} bytes, over the {MAX_PROBLEM_BYTES}-byte limit: put long material in a file in the project and name it in the problem",
            problem.len()
        )));
    }
    Ok(problem)
}

/// The refusal of a team without workers.
pub(super) fn no_worker(team: &str) -> Error {
    Error::Usage(format!("team `{team}` has no [[worker]]: add at least one"))
}

/// The workspace plan of `workers` (`crate::workspace::plan`, `spec` the team's
/// `[workspace]`), refused when a worker on an SSH host would get no worktree there (code
/// reaches a host by git).
///
/// # Errors
/// As `crate::workspace::plan`, and `crate::hosts::git::refuse_without_worktree`.
pub(super) fn plan_workspace(
    project: &Path,
    spec: &crate::domain::WorkspaceSpec,
    workers: &[Placed<'_>],
    ws_opts: &crate::workspace::WorkspaceOptions,
) -> Result<crate::workspace::Planned> {
    let ws_workers: Vec<_> = workers
        .iter()
        .map(|w| (w.id.to_string(), w.workspace))
        .collect();
    let planned = crate::workspace::plan(project, spec, &ws_workers, ws_opts)?;
    let remote: Vec<(&str, &str)> = workers
        .iter()
        .filter_map(|w| Some((w.id, w.host?)))
        .collect();
    crate::hosts::git::refuse_without_worktree(
        project,
        &remote,
        planned.plan.as_ref().map(|p| p.workers.as_slice()),
    )?;
    Ok(planned)
}

/// crewmux on the hosts whose workers need it (the pane-text filter, `sim`), copied there
/// when missing (`crate::hosts::helper`).
///
/// # Errors
/// A worker whose provider runs crewmux itself on a host that cannot run it; a
/// providers file mistake.
fn helpers_of(
    project: &Path,
    team: &ResolvedTeam,
    hosts: &std::collections::BTreeMap<String, crate::hosts::HostSpec>,
) -> Result<crate::hosts::helper::Planned> {
    if hosts.is_empty() {
        return Ok(crate::hosts::helper::Planned::default());
    }
    let registry =
        crate::providers::Registry::load(Some(project), &crate::providers::EnvSnapshot::current())?;
    let workers: Vec<crate::hosts::helper::WorkerNeed<'_>> = team
        .workers
        .iter()
        .map(|w| crate::hosts::helper::WorkerNeed {
            id: &w.id,
            provider: &w.provider,
            fallbacks: &w.fallbacks,
            command: w.command.as_deref(),
            host: w.host.as_deref(),
        })
        .collect();
    crate::hosts::helper::plan(&workers, hosts, &registry)
}

/// A run without SSH hosts (`hosts` empty) goes on past a broken `hosts.toml`: the
/// warning that says so goes first in `notices`.
fn hosts_file_warning(
    project: &Path,
    hosts: &std::collections::BTreeMap<String, crate::hosts::HostSpec>,
    notices: &mut Vec<String>,
) {
    let env = crate::providers::EnvSnapshot::current();
    if !hosts.is_empty() {
        return;
    }
    if let Some(w) = crate::hosts::config::unused_file_warning(project, &env) {
        notices.insert(0, w);
    }
}

/// The SSH hosts `workers` name, from `hosts.toml`.
///
/// # Errors
/// An unknown host or a `hosts.toml` mistake; remote workers on the process backend.
pub(super) fn hosts_of(
    project: &Path,
    team_source: &str,
    workers: &[Placed<'_>],
    backend: BackendKind,
) -> Result<std::collections::BTreeMap<String, crate::hosts::HostSpec>> {
    let hosts =
        crate::hosts::hosts_for(project, team_source, workers.iter().map(|w| (w.id, w.host)))?;
    if !hosts.is_empty() && backend != BackendKind::Tmux {
        return Err(Error::Usage(
            "workers on SSH hosts run in tmux there: drop `--backend process`, or run those workers on `local`".into(),
        ));
    }
    Ok(hosts)
}
