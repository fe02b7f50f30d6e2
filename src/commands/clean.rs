//! Parts of `crewmux clean` (the loop over runs is `manage::clean`): ending a run's tmux
//! session and what its attempts left, and removing a run whose `state.json` is missing or
//! cannot be read, which only `--purge --force` does.
//!
//! Such a run is kept by any other clean, with a line naming the `--force` way: its state
//! is what lists its workers, worktrees and session, so nothing of it is removed on a
//! guess. Forced, what the run's side file (`state.json.crewmux-saved`, the state a driver
//! saved while `state.json` could not be read) lists is cleaned as for any run; without
//! it, the run's tmux session by its name (`crewmux-<run id>`) and its run directory go,
//! and worktrees found under `.crewmux/worktrees/<run id>` are named for the person.

use crate::cli::CleanArgs;
use crate::domain::RunState;
use crate::error::{Error, IoContext, Result};
use crate::store::{load_json, RunStore};

/// What cleaning one run came to, for the summary line and the exit code.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Cleaned {
    /// Lines printed.
    pub said: usize,
    /// The run (or some of it) was kept on purpose.
    pub kept: bool,
    /// Something of the run could not be removed or reached.
    pub failed: bool,
}

/// End what attempts of `state` left behind and its tmux session (a tmux run whose tmux is
/// no longer installed has none left); returns the lines printed.
///
/// # Errors
/// The session exists and cannot be killed.
pub(super) fn end_session(state: &RunState, store: &RunStore, id: &str) -> Result<usize> {
    let Ok(mut backend) = super::drive::backend_to_clean(state, store) else {
        return Ok(0);
    };
    // Anything an attempt left behind (a daemon, a `nohup … &`) goes with the run.
    for r in &state.dispatches {
        let left = backend.end_stale_attempt(&r.nonce);
        if !left.is_empty() {
            crate::errln!(
                "crewmux: {id}: processes of {}#{} survive SIGKILL: {left:?}",
                r.worker_id,
                r.attempt
            );
        }
    }
    Ok(match backend.remove_run()? {
        Some(what) => {
            crate::errln!("crewmux: removed {what}");
            1
        }
        None => 0,
    })
}

/// Clean run `id`, whose state could not be loaded (`why`, which names the fix): kept
/// unless `--purge --force` both ask, and kept while a crewmux process drives it.
///
/// # Errors
/// A session, worktree or the run directory that cannot be removed.
pub(super) fn clean_broken(
    store: &RunStore,
    id: &str,
    why: &Error,
    args: &CleanArgs,
) -> Result<Cleaned> {
    let kept = |line: String| {
        crate::errln!("crewmux: kept {id}: {line}");
        Cleaned {
            said: 1,
            kept: true,
            failed: false,
        }
    };
    if !(args.purge && args.force) {
        return Ok(kept(why.to_string()));
    }
    if store.is_driven()? {
        return Ok(kept(format!(
            "{why}; a crewmux process drives it: quit its dashboard (or let its headless run \
             end), then clean again"
        )));
    }
    let mut said = 0;
    // Without its hosts.json nothing of the run on its hosts can be found: keep all.
    let (lines, all) = match crate::hosts::purge::purge_remote(store.dir(), id, args.force) {
        Ok(done) => done,
        Err(e) => {
            let mut c = kept(format!(
                "{e}; restore that file, or delete it to clean this machine's side only"
            ));
            c.failed = true;
            return Ok(c);
        }
    };
    for l in &lines {
        crate::errln!("crewmux: {l}");
    }
    said += lines.len();
    if !all {
        return Ok(Cleaned {
            said,
            kept: false,
            failed: true,
        });
    }
    match load_json::<RunState>(&store.aside_path()) {
        Ok(side) => {
            said += end_session(&side, store, id)?;
            said += super::workspace::clean_worktrees(&side, true)?.1;
        }
        Err(_) => {
            said += end_session_by_name(&args.common.tmux_socket, id)?;
            said += name_worktrees(&args.common, id)?;
        }
    }
    std::fs::remove_dir_all(store.dir()).at(store.dir())?;
    crate::errln!("crewmux: removed {}", store.dir().display());
    Ok(Cleaned {
        said: said + 1,
        kept: false,
        failed: false,
    })
}

/// Kill the session `crewmux-<id>` (the name every run's session has) on `socket`, when
/// tmux is there; returns the lines printed.
///
/// # Errors
/// The session exists and cannot be killed.
fn end_session_by_name(socket: &str, id: &str) -> Result<usize> {
    let Some(mut tmux) = super::drive::session_backend(socket, id) else {
        return Ok(0);
    };
    Ok(match tmux.remove_run()? {
        Some(what) => {
            crate::errln!("crewmux: removed {what}");
            1
        }
        None => 0,
    })
}

/// Name the worktrees left under `<project>/.crewmux/worktrees/<id>` (the run's state,
/// which says whose they are and whether they are merged, is lost): git removes them.
///
/// # Errors
/// The folder exists and cannot be listed.
fn name_worktrees(common: &crate::cli::CommonArgs, id: &str) -> Result<usize> {
    let project = super::plan::project_dir(common.project.as_deref())?;
    let dir = project.join(".crewmux").join("worktrees").join(id);
    if !dir.is_dir() {
        return Ok(0);
    }
    let trees: Vec<String> = std::fs::read_dir(&dir)
        .at(&dir)?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .map(|p| p.display().to_string())
        .collect();
    if trees.is_empty() {
        return Ok(0);
    }
    crate::errln!(
        "crewmux: kept {} worktree(s) of {id} under {}: the run's state that lists them is \
         lost; `git worktree remove --force <dir>` removes each ({})",
        trees.len(),
        dir.display(),
        trees.join(", ")
    );
    Ok(1)
}
