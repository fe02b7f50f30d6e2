//! Taking a run's result into the user's branch (`crewmux merge` and the dashboard's `m`),
//! and the record of what was taken (`<run dir>/merges.json`).
//!
//! The record lets `crewmux clean` see a squash merge: `git merge --squash` makes a commit
//! that has none of the run's commits as ancestors, so the branches look unmerged to git.
//! A branch counts as taken when its tip is part of a recorded merge's tip and the merge's
//! commit is still in the history of the user's `HEAD` (a reset drops it again).

use std::path::Path;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::git::{first_lines, Git};
use crate::domain::{RunState, RunWorkspace};
use crate::error::{Error, Result};

/// The record file in the run directory.
pub const RECORD_FILE: &str = "merges.json";

/// One merge crewmux made into the user's branch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Taken {
    /// The branch taken (`crewmux/<run>/integration` or a worker's).
    pub branch: String,
    /// Its tip when taken (full SHA).
    pub tip: String,
    /// The user's branch it went into.
    pub into: String,
    /// The commit the merge made on `into` (full SHA).
    pub commit: String,
    /// `--squash`.
    pub squash: bool,
    pub at: DateTime<Utc>,
}

/// The merges recorded for the run in `run_dir` (none when the file is absent).
///
/// # Errors
/// The file exists but cannot be read or parsed (named, never overwritten).
pub fn records(run_dir: &Path) -> Result<Vec<Taken>> {
    let path = run_dir.join(RECORD_FILE);
    match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| Error::CorruptState {
            path,
            reason: e.to_string(),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(Error::io(path, e)),
    }
}

/// Add `t` to the run's record.
///
/// # Errors
/// The record cannot be read (corrupt: left as it is) or written.
pub fn record(run_dir: &Path, t: Taken) -> Result<()> {
    let mut all = records(run_dir)?;
    all.push(t);
    crate::store::write_json_atomic(&run_dir.join(RECORD_FILE), &all)
}

/// Whether `branch` was taken by one of `records` whose commit is still in `HEAD`'s
/// history (see the module comment).
///
/// # Errors
/// A git call fails.
pub fn taken_by_record(git: &Git, branch: &str, records: &[Taken]) -> Result<bool> {
    for r in records {
        if git
            .output(&["merge-base", "--is-ancestor", branch, &r.tip])?
            .ok()
            && git
                .output(&["merge-base", "--is-ancestor", &r.commit, "HEAD"])?
                .ok()
        {
            return Ok(true);
        }
    }
    Ok(false)
}

/// What to take and how.
#[derive(Debug, Clone, Default)]
pub struct TakeOptions {
    /// One worker's branch instead of the integration branch.
    pub worker: Option<String>,
    pub squash: bool,
    /// Take an integration branch that is not the whole result.
    pub force: bool,
    /// Only say what would be merged.
    pub dry_run: bool,
}

/// What taking did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TakeOutcome {
    /// `--dry-run`: the diffstat of what would be merged.
    WouldMerge {
        branch: String,
        into: String,
        stat: String,
    },
    AlreadyMerged {
        branch: String,
        into: String,
    },
    Merged {
        branch: String,
        into: String,
        stat: String,
        /// Set when `force` took a partial result: what is missing.
        forced: Option<String>,
    },
}

impl TakeOutcome {
    /// The lines `crewmux merge` prints (the diffstat last).
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        match self {
            TakeOutcome::WouldMerge { branch, into, stat } => {
                out.push(format!("would merge {branch} into {into}:"));
                out.extend(stat.lines().map(str::to_string));
            }
            TakeOutcome::AlreadyMerged { branch, into } => {
                out.push(format!("{branch} is already merged into {into}"));
            }
            TakeOutcome::Merged {
                branch,
                into,
                stat,
                forced,
            } => {
                if let Some(f) = forced {
                    out.push(format!("--force: {f}"));
                }
                out.push(format!("merged {branch} into {into}"));
                out.extend(stat.lines().map(str::to_string));
            }
        }
        out
    }
}

/// The branch to take: one worker's, or the integration branch.
///
/// # Errors
/// The worker has no worktree, or the run has no integration branch yet (exit 2).
pub fn source_branch(state: &RunState, ws: &RunWorkspace, worker: Option<&str>) -> Result<String> {
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
                    "run {id} has no integration branch yet (it is made before the checks run): wait for the run (`crewmux attach {id}` when nothing drives it), or take one worker with --worker ID",
                    id = state.run_id
                ))
            }),
    }
}

/// Refuse (exit 2) the integration branch of a run whose council blocked or whose
/// integration left a completed worker out, unless `force`; with `force`, what is missing.
fn check_whole(
    state: &RunState,
    ws: &RunWorkspace,
    branch: &str,
    force: bool,
) -> Result<Option<String>> {
    let short = super::guard::shortfall(state, ws);
    if short.is_empty() {
        return Ok(None);
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
        // A blocked council alone: the branch is whole, its work judged wrong.
        let what = if short.left_out.is_empty() {
            format!("{branch} holds work the council failed")
        } else {
            format!("{branch} is not the whole result")
        };
        return Err(Error::Usage(format!(
            "run {}: {}: {what}; take it anyway with crewmux merge {} --force{take}",
            state.run_id,
            short.reason(),
            state.run_id
        )));
    }
    Ok(Some(format!(
        "{}{}",
        short.reason(),
        if short.left_out.is_empty() {
            String::new()
        } else {
            format!("; not in what is merged: {}", short.left_out.join(", "))
        }
    )))
}

/// How `crewmux clean` says the integration branch of `state` is taken, in the words
/// `crewmux merge` would accept: `` `crewmux merge ID` takes it``, or, when the merge
/// refuses it without `--force` (see [`check_whole`]), the reason and the `--force` way.
pub fn integration_hint(state: &RunState, ws: &RunWorkspace) -> String {
    let short = super::guard::shortfall(state, ws);
    if short.is_empty() {
        format!("`crewmux merge {}` takes it", state.run_id)
    } else {
        format!(
            "{}: `crewmux merge {} --force` takes it anyway",
            short.reason(),
            state.run_id
        )
    }
}

/// The command that takes the same thing again, for a refusal's "then run …".
fn again(state: &RunState, opts: &TakeOptions) -> String {
    let mut cmd = format!("crewmux merge {}", state.run_id);
    if let Some(w) = &opts.worker {
        cmd.push_str(&format!(" --worker {w}"));
    }
    for (on, flag) in [
        (opts.squash, " --squash"),
        (opts.force, " --force"),
        (opts.dry_run, " --dry-run"),
    ] {
        if on {
            cmd.push_str(flag);
        }
    }
    cmd
}

/// The user's branch to merge into, checked: the run's starting branch is checked out
/// and, unless it is a dry run (which changes nothing), the tree has no uncommitted changes
/// to tracked files. A refusal names the command with the same flags to run after.
fn target_branch(
    git: &Git,
    state: &RunState,
    ws: &RunWorkspace,
    opts: &TakeOptions,
) -> Result<String> {
    let again = again(state, opts);
    let Some(current) = super::create::current_branch(git)? else {
        return Err(Error::Usage(format!(
            "your HEAD is detached: check out the branch to merge into (git switch {}), then {again}",
            ws.user_branch.as_deref().unwrap_or("<branch>"),
        )));
    };
    if let Some(want) = &ws.user_branch {
        if want != &current {
            return Err(Error::Usage(format!(
                "run {} started on branch {want} but {current} is checked out: git switch {want}, then {again}",
                state.run_id
            )));
        }
    }
    if opts.dry_run {
        return Ok(current);
    }
    let dirty = git.run(&["status", "--porcelain", "--untracked-files=no"])?;
    if !dirty.trim().is_empty() {
        return Err(Error::Usage(format!(
            "your working tree has uncommitted changes: commit or stash them (git stash), then {again}"
        )));
    }
    Ok(current)
}

/// Bring the integration branch (or one worker's) into the user's branch, and record it
/// in `run_dir` (a failed record is logged: the merge itself stands). Refused (exit 2, one
/// line naming what to run) unless the run's starting branch is checked out and the tree
/// has no uncommitted changes to tracked files; the integration branch is also refused
/// (dry run included) when the council blocked or a completed worker is not merged into
/// it, unless `force` (see [`super::guard`]). A branch already in `HEAD`'s history, or
/// taken by a recorded squash merge still there, is [`TakeOutcome::AlreadyMerged`], dry
/// run or not.
///
/// # Errors
/// A refusal above; a conflict with what the user's branch gained since the base (nothing
/// is changed: the merge is aborted); a git call fails.
pub fn take(state: &RunState, run_dir: &Path, opts: &TakeOptions) -> Result<TakeOutcome> {
    take_with(state, run_dir, opts, &mut |line| tracing::info!("{line}"))
}

/// As [`take`]; a merge (not a dry run) holds the checkout's merge lock from its first
/// look at the tree to its record ([`super::merge_lock`]), and `waiting` hears the one
/// line that says it waits for another merge holding it.
///
/// # Errors
/// As [`take`], and the lock file cannot be opened or locked.
pub fn take_with(
    state: &RunState,
    run_dir: &Path,
    opts: &TakeOptions,
    waiting: &mut dyn FnMut(String),
) -> Result<TakeOutcome> {
    let (ws, branch, forced) = to_take(state, opts)?;
    let git = Git::new(&ws.repo);
    let _lock = if opts.dry_run {
        None
    } else {
        Some(super::merge_lock::lock(&git, waiting)?)
    };
    let into = target_branch(&git, state, ws, opts)?;
    // Asked before the dry run's answer, so `--dry-run` says what the merge would do; a
    // recorded squash merge counts (git sees no ancestor there).
    if git
        .output(&["merge-base", "--is-ancestor", &branch, "HEAD"])?
        .ok()
        || taken_by_record(&git, &branch, &records(run_dir)?)?
    {
        return Ok(TakeOutcome::AlreadyMerged { branch, into });
    }
    let stat = git.run(&["diff", "--stat", &format!("HEAD...{branch}")])?;
    if opts.dry_run {
        // What the merge would meet: `git merge-tree --write-tree` (git 2.38) merges in
        // memory, exit 1 with the conflicted files listed after the tree's id.
        let probe = git.output(&[
            "merge-tree",
            "--write-tree",
            "--name-only",
            "--no-messages",
            "HEAD",
            &branch,
        ])?;
        if probe.code == 1 {
            let files: Vec<&str> = probe
                .stdout
                .lines()
                .skip(1)
                .filter(|l| !l.is_empty())
                .collect();
            return Err(Error::Other(format!(
                "merging {branch} into {into} would conflict in {} with commits your branch gained since the run's base{}; nothing was changed: run git merge {branch} and resolve by hand",
                files.join(", "),
                worker_taken_note(run_dir)
            )));
        }
        return Ok(TakeOutcome::WouldMerge { branch, into, stat });
    }
    merge_into(
        &git,
        state,
        &branch,
        &into,
        opts,
        worker_taken_note(run_dir),
    )?;
    let taken = Taken {
        tip: git.line(&["rev-parse", &branch])?,
        commit: git.line(&["rev-parse", "HEAD"])?,
        branch: branch.clone(),
        into: into.clone(),
        squash: opts.squash,
        at: Utc::now(),
    };
    if let Err(e) = record(run_dir, taken) {
        tracing::warn!("could not record the merge (crewmux clean will ask for --force): {e}");
    }
    Ok(TakeOutcome::Merged {
        branch,
        into,
        stat,
        forced,
    })
}

/// The run's worktrees, the branch `merge` (or `--push`) takes, and, for a partial
/// integration branch taken with `force`, what is missing from it.
///
/// # Errors
/// [`Error::Usage`]: a run without worktrees, no such worker or branch, or the refusals of
/// [`check_whole`].
fn to_take<'a>(
    state: &'a RunState,
    opts: &TakeOptions,
) -> Result<(&'a RunWorkspace, String, Option<String>)> {
    let ws = state.workspace.as_ref().ok_or_else(|| {
        Error::Usage(format!(
            "run {} ran in the shared project directory: its changes are already in your tree (no branches to merge, push or diff)",
            state.run_id
        ))
    })?;
    let branch = source_branch(state, ws, opts.worker.as_deref())?;
    let forced = match opts.worker {
        None => check_whole(state, ws, &branch, opts.force)?,
        Some(_) => None,
    };
    Ok((ws, branch, forced))
}

/// `crewmux merge --push REMOTE`: the branch [`take`] would take (the same refusals: a
/// blocked council or a partial integration branch without `force`), pushed to `remote`
/// under its own name (`git push REMOTE refs/heads/B:refs/heads/B`) for a review there,
/// nothing merged here. Returns the lines to print: what was pushed where (`dry_run`: what
/// would be).
///
/// # Errors
/// [`Error::Usage`] (exit 2): a refusal of [`take`], or `remote` is not a remote of the
/// repository; [`Error::Other`]: `git push` failed (git's first lines).
pub fn push(state: &RunState, remote: &str, opts: &TakeOptions) -> Result<Vec<String>> {
    let (ws, branch, forced) = to_take(state, opts)?;
    let git = Git::new(&ws.repo);
    let url = git.output(&["remote", "get-url", remote])?;
    if !url.ok() {
        let remotes = git.run(&["remote"])?;
        let names: Vec<&str> = remotes.lines().collect();
        return Err(Error::Usage(format!(
            "--push {remote}: no such git remote in {}; {}",
            ws.repo.display(),
            if names.is_empty() {
                "add one with git remote add NAME URL".to_string()
            } else {
                format!("use one of {}", names.join(", "))
            }
        )));
    }
    let url = url.stdout.trim().to_string();
    let stat = git.run(&["diff", "--stat", &format!("{}...{branch}", ws.base)])?;
    let mut out: Vec<String> = forced.iter().map(|f| format!("--force: {f}")).collect();
    if opts.dry_run {
        out.push(format!("would push {branch} to {remote} ({url}):"));
        out.extend(stat.lines().map(str::to_string));
        return Ok(out);
    }
    let refspec = format!("refs/heads/{branch}:refs/heads/{branch}");
    let pushed = git.output(&["push", "--quiet", remote, &refspec])?;
    if !pushed.ok() {
        return Err(Error::Other(format!(
            "git push {remote} {branch} failed: {}",
            first_lines(&pushed.stderr, 3)
        )));
    }
    let here = if git
        .output(&["merge-base", "--is-ancestor", &branch, "HEAD"])?
        .ok()
    {
        "it is already merged here".to_string()
    } else {
        format!("crewmux merge {} merges it here", state.run_id)
    };
    out.push(format!(
        "pushed {branch} to {remote} ({url}): open a review from it there; {here}"
    ));
    out.extend(stat.lines().map(str::to_string));
    Ok(out)
}

/// `` (a worker's branch taken before with --worker counts)`` when this run's record has
/// such a merge (its changes are on your branch and may meet the integration branch's),
/// else nothing.
fn worker_taken_note(run_dir: &Path) -> &'static str {
    let worker_taken = records(run_dir)
        .unwrap_or_default()
        .iter()
        .any(|t| !t.branch.ends_with("/integration"));
    if worker_taken {
        " (a worker's branch taken before with --worker counts)"
    } else {
        ""
    }
}

/// `git merge --no-ff` (or `--squash` and a commit) of `branch` into the checked-out
/// `into`; on a conflict the merge is aborted and the error names the files.
fn merge_into(
    git: &Git,
    state: &RunState,
    branch: &str,
    into: &str,
    opts: &TakeOptions,
    taken_note: &str,
) -> Result<()> {
    let message = format!(
        "crewmux: merge run {}{}\n\n{}: {}\n",
        state.run_id,
        opts.worker
            .as_deref()
            .map(|w| format!(" worker {w}"))
            .unwrap_or_default(),
        super::commit::RUN_TRAILER,
        state.run_id
    );
    let g = super::commit::with_identity(git.clone())?;
    let out = if opts.squash {
        g.output(&["merge", "--squash", branch])?
    } else {
        g.output(&["merge", "--no-ff", "-m", &message, branch])?
    };
    if !out.ok() {
        let conflicts = git.run(&["diff", "--name-only", "--diff-filter=U"])?;
        // Best effort: put the tree back; the error below says what happened either way.
        if let Err(e) = git.output(&["merge", "--abort"]) {
            tracing::warn!("git merge --abort: {e}");
        }
        if opts.squash {
            if let Err(e) = git.output(&["reset", "--merge"]) {
                tracing::warn!("git reset --merge: {e}");
            }
        }
        let files: Vec<&str> = conflicts.lines().collect();
        return Err(Error::Other(if files.is_empty() {
            format!("git merge {branch} failed: {}", first_lines(&out.stderr, 2))
        } else {
            format!(
                "merging {branch} into {into} conflicts in {} with commits your branch gained since the run's base{}; nothing was changed: run git merge {branch} and resolve by hand",
                files.join(", "),
                taken_note
            )
        }));
    }
    if opts.squash {
        g.run(&["commit", "--quiet", "-m", &message])?;
    }
    Ok(())
}
