//! Workspaces: a git worktree per worker, the integration branch, and taking the result.
//!
//! In a git project every worker that may change code runs in its own worktree
//! (`<project>/.crewmux/worktrees/<run>/<worker>`, branch `crewmux/<run>/<worker>`) made
//! from one base commit recorded in `manifest.json`. When an attempt ends, what the worker
//! left is committed with `Crewmux-Run:`/`Crewmux-Worker:` trailers; before the team is
//! judged the completed branches are merged in order into `crewmux/<run>/integration`,
//! where checks, critics and fixers work. `crewmux merge` brings that branch into the
//! user's own; nothing before it writes the user's tree, index, HEAD or stash.

pub mod build_output;
pub mod clean;
pub mod commit;
pub mod create;
pub mod git;
pub mod gone;
pub mod guard;
pub mod integrate;
pub mod judge;
pub mod live;
pub mod merge_lock;
pub mod report;
pub mod setup;
pub mod take;
pub mod upstream;

use std::path::PathBuf;

use crate::domain::{RunState, WorkerKind, WorkerState};

pub use create::{branch_name, plan, worktrees_root, Plan, Planned, WorkspaceOptions};

/// The working directory a worker of a run with worktrees starts in, or `None` for the
/// project directory: a team worker in its own worktree; checks, critics and fixers in the
/// integration worktree (they judge and fix what the user would get). A `cwd` of the team
/// file stays relative to it.
pub fn cwd_for(state: &RunState, w: &WorkerState) -> Option<PathBuf> {
    let ws = state.workspace.as_ref()?;
    if w.cwd.as_ref().is_some_and(|c| c.is_absolute()) {
        return None;
    }
    let top = match w.kind {
        WorkerKind::Worker => ws.workers.get(&w.id)?.path.clone(),
        WorkerKind::Check | WorkerKind::Critic | WorkerKind::Fixer => {
            ws.integration.as_ref()?.path.clone()
        }
        WorkerKind::Synthesizer => return None,
    };
    let dir = ws.cwd_in(&top);
    Some(match &w.cwd {
        Some(rel) => dir.join(rel),
        None => dir,
    })
}

/// Before a batch of workers (`launching`) launches: make the run's pending worktrees (all
/// at once, the first time any worker of the run launches), then bring the worktree on its
/// host of each launching worker that runs on an SSH host up to its branch here
/// (`crate::hosts::git`). Returns why each worker whose worktree could not be made cannot
/// start, by worker id, each with its own reason (its own `git worktree add`); empty for a
/// run without worktrees or when every one was made. Those workers stay pending in the
/// workspace, so their next attempt tries again.
pub fn make_worktrees(
    state: &mut RunState,
    launching: &[String],
) -> std::collections::BTreeMap<String, String> {
    let mut failed = make_local(state);
    let remote: Vec<String> = launching
        .iter()
        .filter(|id| !failed.contains_key(*id))
        .cloned()
        .collect();
    failed.extend(crate::hosts::git::send_branches(state, &remote));
    failed
}

/// The local half of [`make_worktrees`].
fn make_local(state: &mut RunState) -> std::collections::BTreeMap<String, String> {
    let (project, run_id) = (state.project_dir.clone(), state.run_id.clone());
    let Some(ws) = state.workspace.as_mut() else {
        return Default::default();
    };
    match create::make_pending(ws, &project, &run_id) {
        Ok(failed) => failed
            .into_iter()
            .map(|(id, e)| (id, format!("cannot make its worktree: {e}")))
            .collect(),
        // Nothing was made (the worktrees folder itself): the same reason for every worker
        // still waiting for its worktree.
        Err(e) => ws
            .pending
            .iter()
            .map(|id| (id.clone(), format!("cannot make its worktree: {e}")))
            .collect(),
    }
}

/// The driver's integration pass: [`integrate::integrate`] turned into the engine's input.
pub fn run_integration(state: &mut RunState) -> crate::engine::IntegrationOutcome {
    use crate::engine::IntegrationOutcome;
    match integrate::integrate(state) {
        Ok(integrate::Outcome::Clean) => IntegrationOutcome::Clean,
        Ok(integrate::Outcome::Conflict(conflict)) => IntegrationOutcome::Conflict {
            task: integrate::fixer_task(state, &conflict),
            conflict,
        },
        Err(e) => IntegrationOutcome::Failed(e.to_string()),
    }
}

/// When an attempt's exit is seen: commit what a worker left in its worktree and record
/// its diffstat (a worker on an SSH host: its work was committed there and its branch
/// fetched back into its worktree here already, on its host's thread,
/// `crate::hosts::work_back`); a failed `[workspace] setup` becomes `Input::SetupFailed`
/// (returned, to be fed instead of the exit). A git failure is logged and the exit goes on
/// as usual (the work stays in the worktree).
pub fn on_attempt_end(
    state: &mut RunState,
    worker: &str,
    attempt: u32,
    attempt_dir: &std::path::Path,
) -> Option<crate::engine::Input> {
    let run_id = state.run_id.clone();
    if let Some(ws) = state.workspace.as_mut() {
        if let Err(e) = commit::on_attempt_end(ws, &run_id, worker, attempt) {
            tracing::warn!("{worker}#{attempt}: could not commit the attempt's work: {e}");
        }
    }
    setup::failed_code(attempt_dir).map(|code| crate::engine::Input::SetupFailed {
        worker: worker.to_string(),
        attempt,
        code,
    })
}
