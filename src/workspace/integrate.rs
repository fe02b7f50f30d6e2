//! The integration branch: the completed workers' branches merged in order into
//! `crewmux/<run>/integration`, in a worktree of its own, before the team is judged.
#![allow(
    clippy::expect_used,
    reason = "lookups of ids the surrounding code has just checked"
)]

use super::commit::{commit_all, diffstat_between, with_identity};
use super::create::add_worktree;
use super::git::{first_lines, Git};
use crate::domain::{Integration, MergeConflict, RunState, WorkerKind, WorkerStatus};
use crate::error::{Error, Result};

/// Characters of one conflicting file quoted in the merge-fixer's prompt.
pub const HUNK_CHARS: usize = 4000;

/// How an integration pass ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Every completed worker's branch is merged.
    Clean,
    /// A merge stopped on conflicts that a merge-fixer can resolve; the integration
    /// worktree holds the conflicted merge.
    Conflict(MergeConflict),
}

/// Which conflicts go to a merge-fixer: an agent can fix ([`crate::engine::fixer_agent`])
/// and the merging worker's merge-fixer has not been tried yet.
struct Fixable {
    agent: bool,
    tried: Vec<String>,
}

impl Fixable {
    fn of(state: &RunState) -> Self {
        Self {
            agent: crate::engine::fixer_agent(state).is_some(),
            tried: state.workers.iter().map(|w| w.id.clone()).collect(),
        }
    }

    fn conflict_merging(&self, theirs: &str) -> bool {
        self.agent && !self.tried.contains(&format!("merge-fixer-{theirs}"))
    }
}

/// Give up on a conflicted merge: abort it (the worktree is as before the merge, with no
/// merge in progress and no conflict markers) and record it in `left_out`.
fn leave_out(git: &Git, integ: &mut Integration, c: MergeConflict) -> Result<()> {
    git.run(&["merge", "--abort"])?;
    integ.conflict = None;
    integ.left_out.push(c);
    Ok(())
}

/// Merge the branches of the run's completed workers (in team order) into the integration
/// branch, creating its worktree on the first pass: a branch not merged yet, and a merged
/// (or left out) one that moved since (a later attempt: a retry, a downstream run again
/// after its upstream, a resumed run), so the integration branch holds each worker's last
/// attempt. A merge the
/// merge-fixer resolved is committed first, as is anything a fixer left in the tree. A
/// conflict no merge-fixer can take (none configured, or its fixer left markers) is aborted
/// and recorded in `left_out`, and the remaining branches are merged still: one conflict
/// never keeps an unrelated worker's work out of integration.
///
/// # Errors
/// A git call that fails other than by a conflict ([`Error::Command`] with git's stderr), or a
/// seed that cannot be copied ([`Error::Io`]).
#[allow(
    clippy::too_many_lines,
    reason = "one merge sequence read top to bottom"
)]
pub fn integrate(state: &mut RunState) -> Result<Outcome> {
    let run_id = state.run_id.clone();
    let fixable = Fixable::of(state);
    // A race's candidates that are not its pick stay on their own branches.
    let not_picked: Vec<String> = state
        .workers
        .iter()
        .filter(|w| state.left_out_by_race(&w.id))
        .map(|w| w.id.clone())
        .collect();
    let Some(ws) = state.workspace.as_mut() else {
        return Ok(Outcome::Clean);
    };
    if ws.integration.is_none() {
        let repo = Git::new(&ws.repo);
        let w = match add_worktree(&repo, ws, &run_id, "integration") {
            Ok(w) => w,
            Err(first) => {
                // A driver killed after it made the integration worktree but before it
                // saved it leaves the branch (`git worktree add -b` then refuses). The state
                // records no merge into it, so the pass starts again from the base.
                tracing::warn!("integration worktree made again after: {first}");
                super::create::remove_leftover(&repo, ws, &run_id, "integration");
                add_worktree(&repo, ws, &run_id, "integration")?
            }
        };
        // Checks run here: they get the same seeds as the workers.
        super::create::copy_seeds(&state.project_dir, ws, &w.path)?;
        ws.integration = Some(Integration {
            path: w.path,
            branch: w.branch,
            merged: vec![],
            conflict: None,
            left_out: vec![],
            diff: None,
            tips: Default::default(),
        });
    }
    let integ = ws.integration.clone().expect("set above");
    let git = with_identity(Git::new(&integ.path))?;
    if let Some(c) = &integ.conflict {
        let left = unresolved(&git, &integ.path)?;
        if !left.is_empty() {
            let c = MergeConflict {
                files: left,
                ..c.clone()
            };
            if fixable.conflict_merging(&c.theirs) {
                ws.integration.as_mut().expect("set").conflict = Some(c.clone());
                return Ok(Outcome::Conflict(c));
            }
            leave_out(&git, ws.integration.as_mut().expect("set"), c)?;
        } else {
            let theirs = c.theirs.clone();
            let subject = format!("crewmux: merge {theirs} (conflicts resolved)");
            commit_all(&integ.path, ws, &run_id, "merge-fixer", &subject)?;
            conclude_merge(&git, &subject)?;
            let tip = ws.workers.get(&theirs).map(|w| tip_of(&git, &w.branch));
            let i = ws.integration.as_mut().expect("set");
            i.conflict = None;
            if let Some(Ok(tip)) = tip {
                i.tips.insert(theirs.clone(), tip);
            }
            if !i.merged.contains(&theirs) {
                i.merged.push(theirs);
            }
        }
    } else {
        commit_all(
            &integ.path,
            ws,
            &run_id,
            "fixer",
            &format!("crewmux: fix round {}", state.fix_round),
        )?;
    }
    // Downstream workers first: their branches already hold their upstreams' work, with
    // any conflict between those resolved by their merge-fixer, so the upstreams' own
    // merges that follow find nothing new.
    let completed: Vec<(String, Vec<String>)> = state
        .workers
        .iter()
        .filter(|w| w.kind == WorkerKind::Worker && w.status == WorkerStatus::Completed)
        .filter(|w| !not_picked.contains(&w.id))
        .map(|w| (w.id.clone(), w.flow.after.clone()))
        .collect();
    let order: Vec<String> = crate::engine::graph::levels(&completed)
        .into_iter()
        .rev()
        .flatten()
        .collect();
    for id in order {
        let (Some(w), Some(i)) = (ws.workers.get(&id).cloned(), ws.integration.clone()) else {
            continue;
        };
        let tip = tip_of(&git, &w.branch)?;
        if taken_already(&git, &i, &id, &tip)? {
            ws.integration.as_mut().expect("set").tips.insert(id, tip);
            continue;
        }
        let out = git.output(&[
            "merge",
            "--no-ff",
            "--no-verify",
            "-m",
            &format!(
                "crewmux: merge {id}\n\n{}: {run_id}\n{}: {id}\n",
                super::commit::RUN_TRAILER,
                super::commit::WORKER_TRAILER
            ),
            &w.branch,
        ])?;
        let i = ws.integration.as_mut().expect("set");
        // A later attempt is tried afresh: an earlier one's conflict no longer stands.
        i.left_out.retain(|c| c.theirs != id);
        i.tips.insert(id.clone(), tip);
        if out.ok() {
            if !i.merged.contains(&id) {
                i.merged.push(id);
            }
            continue;
        }
        let files = unmerged(&git)?;
        if files.is_empty() {
            return Err(Error::Other(format!(
                "git merge {} failed (exit {}): {}",
                w.branch,
                out.code,
                first_lines(&format!("{}\n{}", out.stderr, out.stdout), 3)
            )));
        }
        let before: Vec<String> = i.merged.iter().filter(|m| **m != id).cloned().collect();
        let before: Vec<&str> = before.iter().map(String::as_str).collect();
        let touched = super::upstream::touched(&git, ws, &before, &files)?;
        let ours = if before.is_empty() {
            "base".to_string()
        } else if touched.is_empty() {
            before.join(", ")
        } else {
            touched.join(", ")
        };
        let c = MergeConflict {
            files,
            ours,
            theirs: id,
        };
        let i = ws.integration.as_mut().expect("set");
        if !fixable.conflict_merging(&c.theirs) {
            leave_out(&git, i, c)?;
            continue;
        }
        i.conflict = Some(c.clone());
        return Ok(Outcome::Conflict(c));
    }
    let i = ws.integration.as_mut().expect("set");
    i.diff = Some(diffstat_between(&ws.repo, &ws.base, &i.branch)?);
    Ok(Outcome::Clean)
}

/// The commit `branch` points at (full SHA).
fn tip_of(git: &Git, branch: &str) -> Result<String> {
    git.line(&["rev-parse", "--verify", &format!("{branch}^{{commit}}")])
}

/// True when the pass has nothing to do for worker `id`, whose branch is at `tip`: a pass
/// took that very commit in already (merged, or left out on a conflict). A branch that
/// moved since (a later attempt's commits) is merged again. A state saved before the tips
/// were recorded has none: a merged branch whose tip the integration branch contains is
/// taken, a branch left out stays out.
///
/// # Errors
/// `git merge-base` fails other than by its answer.
fn taken_already(git: &Git, i: &Integration, id: &str, tip: &str) -> Result<bool> {
    let merged = i.merged.iter().any(|m| m == id);
    let left_out = i.left_out.iter().any(|c| c.theirs == id);
    if !merged && !left_out {
        return Ok(false);
    }
    match i.tips.get(id) {
        Some(t) => Ok(t == tip),
        None if left_out => Ok(true),
        None => Ok(git
            .output(&["merge-base", "--is-ancestor", tip, "HEAD"])?
            .ok()),
    }
}

/// Commit a merge still in progress after [`commit_all`] found nothing to commit (the
/// resolution kept the tree as it was): the merge commit records that the branch is in.
///
/// # Errors
/// [`Error::Command`] when `git commit` fails.
pub(super) fn conclude_merge(git: &Git, subject: &str) -> Result<()> {
    if git
        .output(&["rev-parse", "-q", "--verify", "MERGE_HEAD"])?
        .ok()
    {
        git.run(&[
            "commit",
            "--quiet",
            "--no-verify",
            "--allow-empty",
            "-m",
            subject,
        ])?;
    }
    Ok(())
}

/// Files git left unmerged in the index (right after a merge stopped).
///
/// # Errors
/// `git diff` fails.
pub(super) fn unmerged(git: &Git) -> Result<Vec<String>> {
    let listed = git.run(&["diff", "--name-only", "--diff-filter=U"])?;
    Ok(listed.lines().map(str::to_string).collect())
}

/// After a merge-fixer: the merge's files that still hold a conflict marker line
/// (`<<<<<<< `, `=======` alone, `>>>>>>> `). A fixer need not `git add` what it resolved.
///
/// # Errors
/// `git diff` fails (a file that cannot be read counts as resolved).
pub(super) fn unresolved(git: &Git, top: &std::path::Path) -> Result<Vec<String>> {
    let mut files = unmerged(git)?;
    files.extend(
        git.run(&["diff", "--name-only", "HEAD"])?
            .lines()
            .map(str::to_string),
    );
    files.sort();
    files.dedup();
    Ok(files
        .into_iter()
        .filter(|f| {
            std::fs::read_to_string(top.join(f)).is_ok_and(|t| {
                t.lines().any(|l| {
                    l.starts_with("<<<<<<< ") || l.starts_with(">>>>>>> ") || l == "======="
                })
            })
        })
        .collect())
}

/// The integration merge-fixer's task: see [`fixer_task_in`], in the integration worktree.
pub fn fixer_task(state: &RunState, c: &MergeConflict) -> String {
    let top = state
        .workspace
        .as_ref()
        .and_then(|w| w.integration.as_ref())
        .map(|i| i.path.clone());
    fixer_task_in(state, c, top.as_deref(), "the integration worktree")
}

/// A merge-fixer's task for the conflicted merge in the tree at `top` (`place` names it
/// for the fixer): the conflicting files with their hunks (the file as git left it,
/// conflict markers included, at most [`HUNK_CHARS`] characters each) and what each side
/// was for.
pub fn fixer_task_in(
    state: &RunState,
    c: &MergeConflict,
    top: Option<&std::path::Path>,
    place: &str,
) -> String {
    let mut t = format!(
        "Resolve the merge conflict in {place} (your working directory) for: {}\n\n\
         The branch of `{}` conflicts with what is already merged ({}). Edit the conflicting \
         files so that both changes work together, remove every conflict marker, and leave the \
         result in the tree (crewmux commits it). Then say what you kept from each side.\n\n\
         Conflicting files: {}\n",
        state.problem,
        c.theirs,
        c.ours,
        c.files.join(", ")
    );
    for f in &c.files {
        let text = top
            .and_then(|p| std::fs::read_to_string(p.join(f)).ok())
            .unwrap_or_default();
        let cut: String = text.chars().take(HUNK_CHARS).collect();
        t.push_str(&format!(
            "\n### {f}\n```\n{cut}{}\n```\n",
            if cut.len() < text.len() {
                "\n[…]"
            } else {
                ""
            }
        ));
    }
    t
}

#[cfg(test)]
#[path = "integrate_tests.rs"]
mod tests;
