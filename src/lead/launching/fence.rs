//! The fence of one attempt (README "Sandbox"): the worker's resolved `[sandbox]` turned
//! into a `sandbox::Policy` for this machine and its `bwrap` argv, which the launch
//! wrapper puts before the agent's argv.

use std::path::{Path, PathBuf};

use crate::domain::sandbox::fence_of;
use crate::domain::{RunState, SandboxMode, WorkerState};
use crate::error::{Error, Result};
use crate::providers::Registry;
use crate::sandbox::Policy;

/// The top of the tree `cwd` lies in (the nearest folder holding a `.git`), else `cwd`:
/// a worker whose project is a subfolder of its repository still gets its whole worktree.
fn tree_of(cwd: &Path) -> PathBuf {
    cwd.ancestors()
        .find(|d| d.join(".git").exists())
        .unwrap_or(cwd)
        .to_path_buf()
}

/// Where an attempt runs, as its fence needs it.
pub(super) struct At<'a> {
    /// The attempt's folder where it runs.
    pub attempt_dir: &'a Path,
    /// Where the agent starts.
    pub cwd: &'a Path,
    /// The agent's program (its argv's first word).
    pub program: &'a str,
    /// crewmux itself (the MCP server, `sim`), read-only in the fence.
    pub self_exe: &'a Path,
    /// On an SSH host.
    pub remote: bool,
}

/// The fence's argv for attempt `w` (`at`); `None` when `w` runs unfenced.
///
/// # Errors
/// [`Error::Usage`] starting `sandbox: `: a fence this build cannot give on this machine
/// (bwrap missing, a container, an SSH host); the run's preflight refuses these before it
/// starts, so this is a machine that changed since.
pub(super) fn fence_argv(
    state: &RunState,
    w: &WorkerState,
    registry: &Registry,
    at: &At<'_>,
) -> Result<Option<Vec<String>>> {
    let At {
        attempt_dir,
        cwd,
        program,
        self_exe,
        remote,
    } = *at;
    let sandbox = fence_of(state, w);
    match sandbox.mode {
        SandboxMode::None => return Ok(None),
        SandboxMode::Container => {
            return Err(Error::Usage(
                "sandbox: this crewmux does not launch workers in containers yet: use `mode = \"bwrap\"`".into(),
            ))
        }
        SandboxMode::Bwrap if remote => {
            return Err(Error::Usage(format!(
                "sandbox: bwrap on SSH host {} is not supported yet: run `{}` on local",
                w.host.as_deref().unwrap_or("?"),
                w.id
            )))
        }
        SandboxMode::Bwrap => {}
    }
    let path_var = std::env::var_os("PATH");
    let bwrap = crate::sandbox::bwrap_program(path_var.as_deref()).ok_or_else(|| {
        Error::Usage(
            "sandbox: bwrap (bubblewrap) is not installed: apt-get install bubblewrap".into(),
        )
    })?;
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|h| h.is_absolute())
        .unwrap_or_else(|| PathBuf::from("/root"));
    let workdir = tree_of(cwd);
    let mut hidden = vec![home.join(".ssh"), home.join(".gnupg")];
    if let Some(store) = crate::creds::Store::default_path()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
    {
        hidden.push(store);
    }
    // The user's checkout: the repository of a worktree run, else the project.
    hidden.push(
        state
            .workspace
            .as_ref()
            .map_or_else(|| state.project_dir.clone(), |ws| ws.repo.clone()),
    );
    // A worker folder that holds a secret (a project in the home folder itself) would
    // bring it in read-write: refused, not fenced in name only.
    if let Some(secret) = hidden[..hidden.len() - 1]
        .iter()
        .find(|h| h.starts_with(&workdir))
    {
        return Err(Error::Usage(format!(
            "sandbox: the worker's folder {} holds {}: run the project from a folder of its own",
            workdir.display(),
            secret.display()
        )));
    }
    let mut read_only = crate::sandbox::program_paths(program, path_var.as_deref());
    read_only.push(self_exe.to_path_buf());
    let mut home_entries: Vec<String> = registry
        .get(&w.provider)
        .map(|s| s.sandbox_home.clone())
        .unwrap_or_default();
    // The worker's own copy of its CLI's home, outside the project (it may hold the CLI's
    // login, `crate::sandbox::homes_of`), seeded at its first attempt.
    let home_copy = crate::sandbox::homes_of(&state.run_id).map(|d| d.join(&w.id));
    let home_copy = match home_copy {
        Some(copy) => {
            let kept: Vec<String> = home_entries
                .iter()
                .filter(|e| !touches_hidden_entry(&home, e, &hidden))
                .cloned()
                .collect();
            for big in crate::sandbox::seed_home(&home, &kept, &copy)? {
                tracing::info!(
                    "{}: ~/{big} is over {} MiB: bound read-only in the fence, not copied",
                    w.id,
                    crate::sandbox::SEED_MAX_BYTES >> 20
                );
                home_entries.retain(|e| *e != big);
                read_only.push(home.join(&big));
            }
            Some(copy)
        }
        None => None,
    };
    let policy = Policy {
        chdir: cwd.to_path_buf(),
        git_dir: crate::sandbox::git_common_dir(&workdir),
        workdir,
        attempt_dir: attempt_dir.to_path_buf(),
        home,
        home_entries,
        home_copy,
        read_only,
        hidden,
        network: sandbox.network,
    };
    Ok(Some(policy.bwrap_argv(&bwrap)))
}

/// True when `home/entry` is one of `hidden` or holds one (never copied nor bound).
fn touches_hidden_entry(home: &Path, entry: &str, hidden: &[PathBuf]) -> bool {
    let p = home.join(entry);
    hidden.iter().any(|h| p.starts_with(h) || h.starts_with(&p))
}
