//! How the scale scenarios make a run and read it back: a team of command workers in a
//! file, the run planned in process (as `crewmux run` would), and the run's directory and
//! running workers read back from disk. Apart from the scenarios: most of them share it.

use std::path::{Path, PathBuf};

use crewmux::cli::{BackendArg, CommonArgs, RunOptions};
use crewmux::domain::{BackendKind, RunState, WorkerStatus};
use crewmux::store::RunStore;
use crewmux::team::{resolve, ResolveOptions};

pub fn team_file(dir: &Path, workers: usize, command: &dyn Fn(usize) -> String) -> PathBuf {
    let mut t = format!(
        "name = \"bench\"\nparallel = {}\nmax_fix_rounds = 0\n",
        workers.clamp(1, 64)
    );
    for i in 0..workers {
        t.push_str(&format!(
            "\n[[worker]]\nid = \"w{i}\"\nrole = \"backend-engineer\"\nprovider = \"command\"\nmax_attempts = 1\ncommand = [\"sh\", \"-c\", {}]\n",
            toml_string(&command(i))
        ));
    }
    let p = dir.join("bench-team.toml");
    std::fs::write(&p, t).unwrap();
    p
}

pub fn toml_string(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

pub fn plan(project: &Path, socket: &str, team: &Path, parallel: usize) -> (RunStore, RunState) {
    let mut opts = ResolveOptions::new("benchmark the watcher", project);
    opts.team_file = Some(team.to_path_buf());
    opts.parallel = Some(parallel);
    let resolved = resolve(&opts).expect("bench team resolves");
    let run_opts = RunOptions {
        common: CommonArgs {
            tmux_socket: socket.to_string(),
            project: Some(project.to_path_buf()),
        },
        backend: Some(BackendArg::Tmux),
        parallel: Some(parallel),
        headless: true,
        detach: false,
        json: false,
        max_fix_rounds: Some(0),
        max_attempts: Some(1),
        quiet: true,
        limits: Default::default(),
        budget_usd: None,
        budget_tokens: None,
    };
    crewmux::commands::plan::create_run(
        project,
        &run_opts,
        BackendKind::Tmux,
        "benchmark the watcher",
        &resolved,
        false,
    )
    .expect("bench run is created")
}

/// The run directory of the only run under `project`.
pub fn run_dir(project: &Path) -> Option<PathBuf> {
    std::fs::read_dir(project.join(".crewmux/runs"))
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| p.is_dir())
}

/// How many workers of the only run under `project` are running (0 while it has no
/// readable state).
pub fn running(project: &Path) -> usize {
    let Some(run) = std::fs::read_dir(project.join(".crewmux/runs"))
        .ok()
        .and_then(|mut d| d.next())
        .and_then(|e| e.ok())
    else {
        return 0;
    };
    RunStore::at(run.path())
        .load_state()
        .map(|s| {
            s.workers
                .iter()
                .filter(|w| w.status == WorkerStatus::Running)
                .count()
        })
        .unwrap_or(0)
}
