//! `crewmux merge`, `crewmux diff` and the worktree half of `crewmux clean`.

use std::io::IsTerminal;

use crate::cli::{DiffArgs, MergeArgs};
use crate::domain::{RunState, RunWorkspace};
use crate::error::{Error, Result};
use crate::store::RunStore;
use crate::workspace::git::{first_lines, Git};

use super::plan::project_dir;

fn load(common: &crate::cli::CommonArgs, run: Option<&str>) -> Result<(RunState, RunWorkspace)> {
    let project = project_dir(common.project.as_deref())?;
    let store = RunStore::open(&project, run)?;
    let state = store.load_state()?;
    let ws = state.workspace.clone().ok_or_else(|| {
        Error::Usage(format!(
            "run {} ran in the shared project directory: its changes are already in your tree (no branches to merge or diff)",
            state.run_id
        ))
    })?;
    Ok((state, ws))
}

/// The branch to take: one worker's, or the integration branch.
fn source_branch(state: &RunState, ws: &RunWorkspace, worker: Option<&str>) -> Result<String> {
    match worker {
        Some(id) => ws.workers.get(id).map(|w| w.branch.clone()).ok_or_else(|| {
            Error::Usage(format!(
                "--worker {id}: run {} has no worktree for `{id}`; workers with one: {}",
                state.run_id,
                ws.workers.keys().cloned().collect::<Vec<_>>().join(", ")
            ))
        }),
        None => ws
            .integration
            .as_ref()
            .map(|i| i.branch.clone())
            .ok_or_else(|| {
                Error::Usage(format!(
                    "run {} has no integration branch yet (it is made before the checks run): wait for the run, or take one worker with --worker ID",
                    state.run_id
                ))
            }),
    }
}

/// Refuse (exit 2) the integration branch of a run whose council blocked or whose
/// integration left a completed worker out, unless `force` (then say who is not in it).
fn check_whole(state: &RunState, ws: &RunWorkspace, branch: &str, force: bool) -> Result<()> {
    let short = crate::workspace::guard::shortfall(state, ws);
    if short.is_empty() {
        return Ok(());
    }
    if !force {
        let take = short
            .left_out
            .first()
            .map(|w| {
                format!(
                    " or take one worker's branch with crewmux merge {} --worker {w}",
                    state.run_id
                )
            })
            .unwrap_or_default();
        return Err(Error::Usage(format!(
            "run {}: {}: {branch} is not the whole result; take it anyway with crewmux merge {} --force{take}",
            state.run_id,
            short.reason(),
            state.run_id
        )));
    }
    crate::outln!(
        "--force: {}{}",
        short.reason(),
        if short.left_out.is_empty() {
            String::new()
        } else {
            format!("; not in what is merged: {}", short.left_out.join(", "))
        }
    );
    Ok(())
}

/// `crewmux merge`: bring the integration branch (or one worker's) into the user's branch.
/// Refused (exit 2, one line naming what to run) unless the run's starting branch is
/// checked out and the tree has no uncommitted changes to tracked files; the integration
/// branch is also refused (dry run included) when the council blocked or a completed
/// worker is not merged into it, unless `--force` (see [`crate::workspace::guard`]).
#[allow(
    clippy::needless_pass_by_value,
    reason = "a command handler owns the flags clap parsed for it"
)]
pub fn merge(args: MergeArgs) -> Result<i32> {
    let (state, ws) = load(&args.common, args.run.as_deref())?;
    let branch = source_branch(&state, &ws, args.worker.as_deref())?;
    if args.worker.is_none() {
        check_whole(&state, &ws, &branch, args.force)?;
    }
    let git = Git::new(&ws.repo);
    let current = crate::workspace::create::current_branch(&git)?;
    let Some(current) = current else {
        return Err(Error::Usage(format!(
            "your HEAD is detached: check out the branch to merge into (git switch {}), then crewmux merge {}",
            ws.user_branch.as_deref().unwrap_or("<branch>"),
            state.run_id
        )));
    };
    if let Some(want) = &ws.user_branch {
        if want != &current {
            return Err(Error::Usage(format!(
                "run {} started on branch {want} but {current} is checked out: git switch {want}, then crewmux merge {}",
                state.run_id, state.run_id
            )));
        }
    }
    let dirty = git.run(&["status", "--porcelain", "--untracked-files=no"])?;
    if !dirty.trim().is_empty() {
        return Err(Error::Usage(format!(
            "your working tree has uncommitted changes: commit or stash them (git stash), then crewmux merge {}",
            state.run_id
        )));
    }
    let stat = git.run(&["diff", "--stat", &format!("HEAD...{branch}")])?;
    if args.dry_run {
        crate::outln!("would merge {branch} into {current}:");
        crate::out!("{stat}");
        return Ok(0);
    }
    if git
        .output(&["merge-base", "--is-ancestor", &branch, "HEAD"])?
        .ok()
    {
        crate::outln!("{branch} is already merged into {current}");
        return Ok(0);
    }
    let message = format!(
        "crewmux: merge run {}{}\n\n{}: {}\n",
        state.run_id,
        args.worker
            .as_deref()
            .map(|w| format!(" worker {w}"))
            .unwrap_or_default(),
        crate::workspace::commit::RUN_TRAILER,
        state.run_id
    );
    let g = crate::workspace::commit::with_identity(git.clone())?;
    let out = if args.squash {
        g.output(&["merge", "--squash", &branch])?
    } else {
        g.output(&["merge", "--no-ff", "-m", &message, &branch])?
    };
    if !out.ok() {
        let conflicts = git.run(&["diff", "--name-only", "--diff-filter=U"])?;
        let _ = git.output(&["merge", "--abort"]);
        if args.squash {
            let _ = git.output(&["reset", "--merge"]);
        }
        let files: Vec<&str> = conflicts.lines().collect();
        return Err(Error::Other(if files.is_empty() {
            format!("git merge {branch} failed: {}", first_lines(&out.stderr, 2))
        } else {
            format!(
                "merging {branch} into {current} conflicts in {} (your branch moved since the run's base); nothing was changed: run git merge {branch} and resolve by hand",
                files.join(", ")
            )
        }));
    }
    if args.squash {
        g.run(&["commit", "--quiet", "-m", &message])?;
    }
    crate::outln!("merged {branch} into {current}");
    crate::out!("{stat}");
    Ok(0)
}

/// `crewmux diff`: the change of the integration branch (or one worker's) against the
/// run's base; coloured on a terminal, plain when piped. Without an integration branch, each
/// worker's change in turn.
#[allow(
    clippy::needless_pass_by_value,
    reason = "a command handler owns the flags clap parsed for it"
)]
pub fn diff(args: DiffArgs) -> Result<i32> {
    let (state, ws) = load(&args.common, args.run.as_deref())?;
    let branches: Vec<String> = match (&args.worker, &ws.integration) {
        (None, None) => ws.workers.values().map(|w| w.branch.clone()).collect(),
        _ => vec![source_branch(&state, &ws, args.worker.as_deref())?],
    };
    let colour = if std::io::stdout().is_terminal() {
        "--color=always"
    } else {
        "--color=never"
    };
    let git = Git::new(&ws.repo);
    for b in branches {
        let mut a = vec!["diff", colour];
        if args.stat {
            a.push("--stat");
        }
        let range = format!("{}..{b}", ws.base);
        a.push(&range);
        let text = git.run(&a)?;
        if text.is_empty() {
            crate::outln!("{b}: no change");
        } else {
            crate::out!("{text}");
        }
    }
    Ok(0)
}

/// The worktree half of `crewmux clean` for one finished run: print what was removed and
/// kept; returns how many worktrees were kept.
pub fn clean_worktrees(state: &RunState, force: bool) -> Result<usize> {
    let Some(ws) = &state.workspace else {
        return Ok(0);
    };
    let report = crate::workspace::clean::clean_run(ws, &state.run_id, force)?;
    for l in &report.lines {
        eprintln!("crewmux: {l}");
    }
    Ok(report.kept)
}
