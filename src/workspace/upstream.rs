//! A downstream worker's worktree holds its upstreams' work: before a worker with `after`
//! starts, the branches of its completed upstreams are merged into its own branch, in its
//! worktree, so a reviewer sees the code it reviews (the engine asks for this pass; see
//! `engine::upstream_merge`).
//!
//! What was merged is recorded in the worker's workspace (`upstreams`), so the pass is not
//! repeated for a retry, and the commit the pass left is the worker's own base (`start`):
//! its change is what it did on top of its upstreams' work. A merge that conflicts either stops the pass with the conflicted
//! merge left in the worktree for a merge-fixer (when one can be brought in), or is aborted
//! and that upstream left out. The next pass after the fixer commits a resolved merge (no
//! conflict marker left) and goes on; a merge the fixer left unresolved is aborted and left
//! out. Upstreams that did not complete (with `on_upstream_failure = "run"`) are not merged.

use super::commit::{commit_all, with_identity};
use super::git::{first_lines, Git};
use super::integrate::{conclude_merge, fixer_task_in, unmerged, unresolved};
use crate::domain::{MergeConflict, RunState, UpstreamMerges, WorkerState, WorkerStatus};
use crate::engine::upstream_merge::fixer_id;
use crate::engine::IntegrationOutcome;
use crate::error::{Error, Result};

/// Merge the branches of `worker`'s completed upstreams into its worktree and record what
/// became of each in its workspace. With `fixer`, a conflict stops the pass (the merge left
/// in the worktree) and its merge-fixer's task is returned; without, it is aborted and that
/// upstream left out. A worker without a worktree has nothing to merge (`Clean`).
pub fn merge_upstreams(state: &mut RunState, worker: &str, fixer: bool) -> IntegrationOutcome {
    match merge(state, worker, fixer) {
        Ok(None) => IntegrationOutcome::Clean,
        Ok(Some(conflict)) => {
            let top = state
                .workspace
                .as_ref()
                .and_then(|ws| ws.workers.get(worker))
                .map(|w| w.path.clone());
            let place = format!(
                "the worktree of `{worker}`, which waits for its upstreams' work before it starts"
            );
            IntegrationOutcome::Conflict {
                task: fixer_task_in(state, &conflict, top.as_deref(), &place),
                conflict,
            }
        }
        Err(e) => {
            tracing::warn!("{worker}: could not merge the upstreams' branches: {e}");
            let msg = e.to_string();
            if let Some(own) = state
                .workspace
                .as_mut()
                .and_then(|ws| ws.workers.get_mut(worker))
            {
                own.upstreams.failed = Some(msg.clone());
            }
            IntegrationOutcome::Failed(msg)
        }
    }
}

fn merge(state: &mut RunState, worker: &str, fixer: bool) -> Result<Option<MergeConflict>> {
    let run_id = state.run_id.clone();
    let completed: Vec<String> = state
        .worker(worker)
        .map(|w| w.flow.after.clone())
        .unwrap_or_default()
        .into_iter()
        .filter(|id| {
            state
                .worker(id)
                .is_some_and(|u| u.status == WorkerStatus::Completed)
        })
        .collect();
    let Some(ws) = state.workspace.as_mut() else {
        return Ok(None);
    };
    let Some(own) = ws.workers.get(worker).cloned() else {
        return Ok(None);
    };
    let git = with_identity(Git::new(&own.path))?;
    let mut rec = own.upstreams.clone();
    let save = |ws: &mut crate::domain::RunWorkspace, rec: &UpstreamMerges| {
        if let Some(w) = ws.workers.get_mut(worker) {
            w.upstreams = rec.clone();
        }
    };
    if let Some(c) = rec.conflict.take() {
        if unresolved(&git, &own.path)?.is_empty() {
            let subject = format!(
                "crewmux: {worker} takes {}'s work (conflicts resolved by its merge-fixer)",
                c.theirs
            );
            commit_all(
                &own.path,
                ws,
                &run_id,
                &fixer_id(worker, &c.theirs),
                &subject,
            )?;
            conclude_merge(&git, &subject)?;
            rec.merged.push(c.theirs.clone());
            rec.resolved.push(c);
        } else {
            abort(&git);
            rec.left_out.push(c);
        }
        save(ws, &rec);
    }
    for id in completed {
        let Some(up) = ws.workers.get(&id).cloned() else {
            continue;
        };
        if rec.settled(&id) {
            continue;
        }
        let message = format!("crewmux: {worker} takes {id}'s work");
        let out = git.output(&["merge", "--no-ff", "--no-edit", "-m", &message, &up.branch])?;
        if out.ok() {
            rec.merged.push(id);
            save(ws, &rec);
            continue;
        }
        let files = unmerged(&git)?;
        if files.is_empty() {
            abort(&git);
            return Err(Error::Other(format!(
                "git merge {} failed (exit {}): {}",
                up.branch,
                out.code,
                first_lines(&format!("{}\n{}", out.stderr, out.stdout), 3)
            )));
        }
        let merged: Vec<&str> = rec.merged.iter().map(String::as_str).collect();
        let touched = touched(&git, ws, &merged, &files)?;
        let c = MergeConflict {
            ours: if rec.merged.is_empty() {
                worker.to_string()
            } else if touched.is_empty() {
                rec.merged.join(", ")
            } else {
                touched.join(", ")
            },
            files,
            theirs: id,
        };
        if fixer {
            rec.conflict = Some(c.clone());
            save(ws, &rec);
            return Ok(Some(c));
        }
        abort(&git);
        rec.left_out.push(c);
        save(ws, &rec);
    }
    // What the worker is given: its next attempt starts here, and its own change is
    // measured from here (`RunWorkspace::own_base`), not from the run's base.
    let head = git.line(&["rev-parse", "--verify", "HEAD"])?;
    if let Some(w) = ws.workers.get_mut(worker) {
        w.start = Some(head);
    }
    Ok(None)
}

/// `git merge --abort`: the worktree goes back to before the merge.
fn abort(git: &Git) {
    if let Err(e) = git.output(&["merge", "--abort"]) {
        // The conflicted files then stay in the worktree; the worker's prompt says which
        // upstream is left out.
        tracing::warn!("git merge --abort failed: {e}");
    }
}

/// What `w`'s worktree holds of its upstreams' work, for its prompt: the upstreams merged,
/// the conflicts a merge-fixer resolved, the ones left out, a git failure (empty when there
/// is nothing to say).
pub fn notes(state: &RunState, w: &WorkerState) -> Vec<String> {
    let Some(ws) = state.workspace.as_ref() else {
        return Vec::new();
    };
    let Some(rec) = ws.workers.get(&w.id).map(|o| &o.upstreams) else {
        return Vec::new();
    };
    let branch = |id: &str| {
        ws.workers
            .get(id)
            .map(|u| format!("{id} ({})", u.branch))
            .unwrap_or_else(|| id.to_string())
    };
    let mut notes = Vec::new();
    if !rec.merged.is_empty() {
        let merged: Vec<String> = rec.merged.iter().map(|id| branch(id)).collect();
        notes.push(format!(
            "Your worktree already holds the work of: {}.",
            merged.join(", ")
        ));
    }
    for c in &rec.resolved {
        notes.push(format!(
            "The work of {} conflicted with {} in {}; {} resolved it in your worktree (see its result).",
            c.theirs,
            c.ours,
            c.files.join(", "),
            fixer_id(&w.id, &c.theirs)
        ));
    }
    for c in &rec.left_out {
        notes.push(format!(
            "The work of {} conflicts with {} in {} and is NOT in your worktree; the integration stage merges it later.",
            branch(&c.theirs),
            c.ours,
            c.files.join(", ")
        ));
    }
    if let Some(e) = &rec.failed {
        notes.push(format!(
            "The upstreams' branches could not all be merged into your worktree: {e}"
        ));
    }
    notes
}

/// Of the workers `ids` already merged, those whose own change (`own_base..branch`) touches
/// one of `files`: the ones a merge conflict in `files` is with (the others merged before
/// changed other files). Empty when none can be told (the caller then names them all).
///
/// # Errors
/// A git call that cannot run.
pub(crate) fn touched(
    git: &Git,
    ws: &crate::domain::RunWorkspace,
    ids: &[&str],
    files: &[String],
) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for id in ids {
        let Some(w) = ws.workers.get(*id) else {
            continue;
        };
        let range = format!("{}..{}", ws.own_base(id), w.branch);
        let mut args = vec!["diff", "--name-only", range.as_str(), "--"];
        args.extend(files.iter().map(String::as_str));
        let diff = git.output(&args)?;
        if diff.ok() && !diff.stdout.trim().is_empty() {
            out.push((*id).to_string());
        }
    }
    Ok(out)
}
