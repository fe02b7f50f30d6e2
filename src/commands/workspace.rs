//! `crewmux merge`, `crewmux diff` and the worktree half of `crewmux clean`.

use std::io::IsTerminal;

use crate::cli::{DiffArgs, MergeArgs};
use crate::domain::{RunState, RunWorkspace};
use crate::error::{Error, Result};
use crate::store::RunStore;
use crate::workspace::git::Git;
use crate::workspace::take::{source_branch, take_with, TakeOptions};

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

/// `crewmux merge`: bring the integration branch (or one worker's) into the user's branch
/// ([`crate::workspace::take::take`]: its refusals are one line, exit 2), and record it so
/// `crewmux clean` knows the run was taken, squash merges included; with `--push REMOTE`,
/// push that branch there instead ([`crate::workspace::take::push`]).
///
/// # Errors
/// [`Error::Usage`] (exit 2): no such run or worker, or a refusal of
/// [`crate::workspace::take::take`]; a git call that fails, or `merges.json` that cannot be
/// written.
#[allow(
    clippy::needless_pass_by_value,
    reason = "a command handler owns the flags clap parsed for it"
)]
pub fn merge(args: MergeArgs) -> Result<i32> {
    let project = project_dir(args.common.project.as_deref())?;
    let store = RunStore::open(&project, args.run.as_deref())?;
    let state = store.load_state()?;
    let opts = TakeOptions {
        worker: args.worker.clone(),
        squash: args.squash,
        force: args.force,
        dry_run: args.dry_run,
    };
    if let Some(remote) = &args.push {
        for line in crate::workspace::take::push(&state, remote, &opts)? {
            crate::outln!("{line}");
        }
        return Ok(0);
    }
    let waiting = &mut |line: String| crate::errln!("crewmux: {line}");
    for line in take_with(&state, store.dir(), &opts, waiting)?.lines() {
        crate::outln!("{line}");
    }
    Ok(0)
}

/// `crewmux diff`: the change of the integration branch against the run's base (or one
/// worker's against its own base, `RunWorkspace::own_base`); coloured on a terminal, plain when piped. Without an integration branch, each
/// worker's change in turn. A branch `crewmux clean` removed is said in one line with what
/// is left ([`crate::workspace::gone`]): the merge commit, whose change is shown instead.
///
/// # Errors
/// [`Error::Usage`]: no such run or worker, a run without worktrees, a cleaned run that was
/// never merged; a git call that fails.
#[allow(
    clippy::needless_pass_by_value,
    reason = "a command handler owns the flags clap parsed for it"
)]
pub fn diff(args: DiffArgs) -> Result<i32> {
    let (state, ws) = load(&args.common, args.run.as_deref())?;
    // Each worker's change from its own base (its upstreams' work is theirs); the
    // integration branch's from the run's base.
    let branches: Vec<(String, String)> = match (&args.worker, &ws.integration) {
        (None, None) => ws
            .workers
            .iter()
            .map(|(id, w)| (ws.own_base(id).to_string(), w.branch.clone()))
            .collect(),
        (Some(id), _) => vec![(
            ws.own_base(id).to_string(),
            source_branch(&state, &ws, Some(id))?,
        )],
        (None, Some(_)) => vec![(ws.base.clone(), source_branch(&state, &ws, None)?)],
    };
    let colour = if std::io::stdout().is_terminal() {
        "--color=always"
    } else {
        "--color=never"
    };
    let git = Git::new(&ws.repo);
    let run_dir = crate::store::runs_root(&state.project_dir).join(&state.run_id);
    for (from, b) in branches {
        let mut a = vec!["diff", colour];
        if args.stat {
            a.push("--stat");
        }
        let range = if crate::workspace::gone::is_gone(&ws.repo, &b)? {
            // Cleaned: say so, and show the merge commit that still holds the change.
            let kept = crate::workspace::gone::kept_merge(&ws.repo, &run_dir, &b)?;
            let line = crate::workspace::gone::cleaned_line(&state.run_id, &b, kept.as_ref());
            match kept {
                Some(k) if args.worker.is_none() => {
                    crate::outln!("{line}");
                    format!("{}^..{}", k.commit, k.commit)
                }
                Some(_) => {
                    crate::outln!("{line}");
                    continue;
                }
                None => return Err(Error::Usage(line)),
            }
        } else {
            format!("{from}..{b}")
        };
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
/// kept (nothing for what an earlier clean removed); returns how many worktrees were kept,
/// how many lines were printed, and what could not be removed on the run's hosts (the
/// caller says it: `crate::hosts::purge::left_lines`).
///
/// # Errors
/// A git call that fails (what was removed before stays removed and is reported).
pub fn clean_worktrees(
    state: &RunState,
    force: bool,
) -> Result<(usize, usize, crate::hosts::purge::Left)> {
    let Some(ws) = &state.workspace else {
        return Ok((0, 0, Default::default()));
    };
    let run_dir = crate::store::runs_root(&state.project_dir).join(&state.run_id);
    let taken = crate::workspace::take::records(&run_dir)?;
    let hint = crate::workspace::take::integration_hint(state, ws);
    let report = crate::workspace::clean::clean_run(ws, &state.run_id, &taken, force, &hint)?;
    let workers: Vec<String> = report
        .removed_workers
        .iter()
        .chain(&report.gone_workers)
        .cloned()
        .collect();
    let (remote, left) = crate::hosts::git::clean_remote(state, &workers);
    for l in report.lines.iter().chain(&remote) {
        crate::errln!("crewmux: {l}");
    }
    Ok((report.kept, report.lines.len() + remote.len(), left))
}
