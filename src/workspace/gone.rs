//! What is left of a run whose branches `crewmux clean` removed: `crewmux diff` and the
//! Diff tab say the run was cleaned and, when `crewmux merge` took it, name the merge
//! commit that still holds its change (from `<run dir>/merges.json`, see [`super::take`]).
//! Without this, git's own error reached the person (`fatal: ambiguous argument …`,
//! `fatal: cannot change to …`).

use std::path::Path;

use super::git::Git;
use super::take::Taken;
use crate::error::Result;

/// A cleaned run's recorded merge that is still in the history of the user's `HEAD`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    /// The merge commit (full SHA).
    pub commit: String,
    /// The user's branch it went into.
    pub into: String,
    /// `crewmux merge --squash` made it.
    pub squash: bool,
}

/// Whether `branch` is gone from the repository at `repo` (removed by `crewmux clean`).
///
/// # Errors
/// A git call fails.
pub fn is_gone(repo: &Path, branch: &str) -> Result<bool> {
    Ok(!Git::new(repo).has_branch(branch)?)
}

/// The merge of `branch` that is still in `HEAD`'s history: the newest record of that
/// branch, else (a worker's branch, taken with the integration branch) the newest record
/// of the run; `None` when the run was never merged or the merge was undone (a reset).
///
/// # Errors
/// The run's `merges.json` cannot be read; a git call fails.
pub fn kept_merge(repo: &Path, run_dir: &Path, branch: &str) -> Result<Option<Kept>> {
    let git = Git::new(repo);
    let records = super::take::records(run_dir)?;
    let live = |r: &&Taken| {
        git.output(&["merge-base", "--is-ancestor", &r.commit, "HEAD"])
            .is_ok_and(|o| o.ok())
    };
    let found = records
        .iter()
        .rev()
        .filter(|r| r.branch == branch)
        .find(live)
        .or_else(|| records.iter().rev().find(live));
    Ok(found.map(|r| Kept {
        commit: r.commit.clone(),
        into: r.into.clone(),
        squash: r.squash,
    }))
}

/// The one line that says run `run_id` was cleaned and what is still there: the merge
/// commit (short SHA, and the command that shows it) or that nothing of its change is left.
pub fn cleaned_line(run_id: &str, branch: &str, kept: Option<&Kept>) -> String {
    match kept {
        Some(k) => {
            let short: String = k.commit.chars().take(12).collect();
            format!(
                "run {run_id} was cleaned (`crewmux clean` removed {branch} and its worktree); its change is in {} as {} commit {short}: `git show --stat {short}` shows it",
                k.into,
                if k.squash { "squash" } else { "merge" }
            )
        }
        None => format!(
            "run {run_id} was cleaned (`crewmux clean` removed {branch} and its worktree) and was never merged: nothing of its change is left"
        ),
    }
}
