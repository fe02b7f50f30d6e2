//! A downstream worker's worktree holds its upstreams' work: before each attempt of a
//! worker with `after`, the branches of its completed upstreams are merged into its own
//! branch, in its worktree, so a reviewer sees the code it reviews.
//!
//! The merges are idempotent (an upstream merged before is "already up to date"), so a
//! retry does not merge twice. When two upstreams conflict, the merge that conflicts is
//! aborted and the worker is told which branch it does not have and which files conflict;
//! the integration stage merges every branch later, where the merge-fixer resolves the
//! conflict. Upstreams that did not complete (with `on_upstream_failure = "run"`) are not
//! merged.

use super::commit::with_identity;
use super::git::Git;
use crate::domain::{RunState, WorkerState, WorkerStatus};
use crate::error::Result;

/// Merge the branches of `w`'s completed upstreams into `w`'s worktree; returns the lines
/// to tell the worker (empty when it has no worktree or no upstream with one).
///
/// # Errors
/// A git call other than the merge itself fails (the worktree is left as it was).
pub fn merge_upstreams(state: &RunState, w: &WorkerState) -> Result<Vec<String>> {
    let Some(ws) = state.workspace.as_ref() else {
        return Ok(Vec::new());
    };
    let Some(own) = ws.workers.get(&w.id) else {
        return Ok(Vec::new());
    };
    let git = with_identity(Git::new(&own.path))?;
    let mut merged = Vec::new();
    let mut notes = Vec::new();
    for id in &w.flow.after {
        let completed = state
            .worker(id)
            .is_some_and(|u| u.status == WorkerStatus::Completed);
        let Some(up) = ws.workers.get(id).filter(|_| completed) else {
            continue;
        };
        let message = format!("crewmux: {} takes {id}'s work", w.id);
        let out = git.output(&["merge", "--no-ff", "--no-edit", "-m", &message, &up.branch])?;
        if out.ok() {
            merged.push(format!("{id} ({})", up.branch));
            continue;
        }
        let files = git.run(&["diff", "--name-only", "--diff-filter=U"])?;
        // Err: the merge state stays in the worktree; the conflicting files listed below
        // are what is reported.
        let _ = git.output(&["merge", "--abort"]);
        let files: Vec<&str> = files.lines().collect();
        notes.push(format!(
            "The work of {id} ({}) conflicts with the other upstreams in {} and is NOT in your worktree; the integration stage merges it later.",
            up.branch,
            if files.is_empty() { "some files".to_string() } else { files.join(", ") }
        ));
    }
    if !merged.is_empty() {
        notes.insert(
            0,
            format!(
                "Your worktree already holds the work of: {}.",
                merged.join(", ")
            ),
        );
    }
    Ok(notes)
}
