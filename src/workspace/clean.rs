//! Removing a finished run's worktrees without losing work.
//!
//! A worktree goes only when its branch is merged into the user's current branch (its tip
//! is an ancestor of HEAD, or a recorded `crewmux merge` took it, squash merges included:
//! see [`super::take`]) or with `--force`; a worktree with uncommitted changes stays
//! unless `--force`. Kept branches are listed with the command that merges or drops them.
//! A worktree whose folder was deleted by hand is pruned from git's records first (git
//! keeps its branch otherwise), and `git worktree prune` runs after.

use std::path::Path;

use super::git::Git;
use crate::domain::RunWorkspace;
use crate::error::Result;

/// What cleaning one run did, one line per worktree, and whether anything was kept.
#[derive(Debug, Default, Clone)]
pub struct CleanReport {
    pub lines: Vec<String>,
    pub kept: usize,
    pub removed: usize,
    /// Workers whose worktree and branch were removed (their worktrees on SSH hosts go
    /// next: `crate::hosts::git::clean_remote`).
    pub removed_workers: Vec<String>,
    /// Workers whose worktree and branch were already gone here (an earlier clean): no
    /// line, but what is left of them on an SSH host (a host that did not answer then)
    /// goes too.
    pub gone_workers: Vec<String>,
}

/// Uncommitted changes in a worktree, not counting the `copy` seeds nor untracked build
/// output (see [`super::build_output`]: a check's `target/` is not work to keep).
///
/// # Errors
/// A git call fails.
pub fn has_uncommitted(top: &Path, ws: &RunWorkspace) -> Result<bool> {
    let mut args = vec![
        "status".to_string(),
        "--porcelain".into(),
        "--".into(),
        ".".into(),
    ];
    for c in &ws.copy {
        args.push(format!(":(top,exclude){}", ws.prefix.join(c).display()));
    }
    for d in super::build_output::untracked_build_dirs(&Git::new(top))? {
        args.push(format!(":(top,exclude){d}"));
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    Ok(!Git::new(top).run(&args)?.trim().is_empty())
}

/// The worktrees a driver made and was killed before it saved (a worker's still pending in
/// the state, the integration worktree the state does not name yet): the state does not list
/// them, their folder or branch shows they are there. Each is `(name, path, branch)`.
fn unrecorded(
    git: &Git,
    ws: &RunWorkspace,
    run_id: &str,
) -> Result<Vec<(String, std::path::PathBuf, String)>> {
    let names = ws
        .pending
        .iter()
        .cloned()
        .chain(ws.integration.is_none().then(|| "integration".to_string()));
    let mut found = Vec::new();
    for name in names {
        let path = ws.root.join(&name);
        let branch = super::create::branch_name(run_id, &name);
        if path.exists() || git.has_branch(&branch)? {
            found.push((name, path, branch));
        }
    }
    Ok(found)
}

/// The worktrees of the run (under `ws.root`) that git still lists while their folder is
/// gone (deleted by hand, `rm -rf`): git refuses to delete their branches (`cannot delete
/// branch … used by worktree at …`) until its record of them is pruned. Prunes them
/// (`git worktree prune`, which drops only the records whose folder is gone) and says so,
/// one line each, so the clean goes on.
///
/// # Errors
/// A git call fails.
fn prune_deleted(git: &Git, ws: &RunWorkspace, report: &mut CleanReport) -> Result<()> {
    let listing = git.run(&["worktree", "list", "--porcelain"])?;
    let deleted: Vec<std::path::PathBuf> = listing
        .lines()
        .filter_map(|l| l.strip_prefix("worktree "))
        .map(std::path::PathBuf::from)
        .filter(|p| p.starts_with(&ws.root) && !p.exists())
        .collect();
    if deleted.is_empty() {
        return Ok(());
    }
    git.run(&["worktree", "prune"])?;
    for path in deleted {
        report.lines.push(format!(
            "pruned git's record of worktree {}: its folder was deleted",
            path.display()
        ));
    }
    Ok(())
}

/// Clean the worktrees of run `run_id`; `taken` are the run's recorded merges;
/// `integration_take` says how a kept integration branch is taken, as `crewmux merge`
/// accepts it ([`super::take::integration_hint`]).
///
/// # Errors
/// A git call fails (what was removed before stays removed and is reported).
pub fn clean_run(
    ws: &RunWorkspace,
    run_id: &str,
    taken: &[super::take::Taken],
    force: bool,
    integration_take: &str,
) -> Result<CleanReport> {
    let git = Git::new(&ws.repo);
    let mut report = CleanReport::default();
    let mut trees: Vec<(String, std::path::PathBuf, String)> = ws
        .workers
        .iter()
        .map(|(id, w)| (id.clone(), w.path.clone(), w.branch.clone()))
        .collect();
    if let Some(i) = &ws.integration {
        trees.push(("integration".into(), i.path.clone(), i.branch.clone()));
    }
    trees.extend(unrecorded(&git, ws, run_id)?);
    prune_deleted(&git, ws, &mut report)?;
    for (name, path, branch) in trees {
        let exists = path.exists();
        if exists && !force && has_uncommitted(&path, ws)? {
            report.kept += 1;
            report.lines.push(format!(
                "kept {}: uncommitted changes (commit them there, or crewmux clean --run {run_id} --force drops them)",
                path.display()
            ));
            continue;
        }
        let branch_exists = git.has_branch(&branch)?;
        if !exists && !branch_exists {
            // Removed by an earlier clean: nothing to remove, nothing to say.
            report.gone_workers.push(name);
            continue;
        }
        // A branch with no commit of its own holds nothing to keep: its tip is what it
        // started from (with --include-uncommitted, the snapshot of your own changes,
        // which is not the run's work and must not be offered for merging).
        let own_base = if name == "integration" {
            ws.base.as_str()
        } else {
            ws.own_base(&name)
        };
        let merged = !branch_exists
            || git
                .output(&["merge-base", "--is-ancestor", &branch, "HEAD"])?
                .ok()
            || super::take::taken_by_record(&git, &branch, taken)?
            || super::commit::commit_count(&ws.repo, own_base, &branch).is_ok_and(|n| n == 0);
        if !merged && !force {
            report.kept += 1;
            let commits = super::commit::commit_count(&ws.repo, &ws.base, &branch).unwrap_or(0);
            let take = if name == "integration" {
                integration_take.to_string()
            } else {
                format!("`crewmux merge {run_id} --worker {name}` takes it")
            };
            report.lines.push(format!(
                "kept branch {branch} ({commits} commit{}, not merged): {take}, `crewmux clean --run {run_id} --force` drops it",
                if commits == 1 { "" } else { "s" }
            ));
            continue;
        }
        if exists {
            // The guard is ours (above): `--force` lets git also drop the `copy` seeds and
            // build output it would otherwise refuse over.
            git.run(&["worktree", "remove", "--force", &path.to_string_lossy()])?;
        }
        if branch_exists {
            git.run(&["branch", "-D", &branch])?;
        }
        report.removed += 1;
        report.removed_workers.push(name.clone());
        report.lines.push(if !exists {
            format!(
                "removed branch {branch} (its worktree {} was already gone)",
                path.display()
            )
        } else if !branch_exists {
            format!(
                "removed {} (its branch {branch} was already gone)",
                path.display()
            )
        } else {
            format!("removed {} and branch {branch}", path.display())
        });
    }
    git.run(&["worktree", "prune"])?;
    if report.kept == 0 {
        // Err: something else is in the folder; it stays, and nothing was lost.
        let _ = std::fs::remove_dir(&ws.root);
    }
    Ok(report)
}
