//! Planning and creating a run's worktrees.
//!
//! Layout: `<project>/.crewmux/worktrees/<run>/<worker>` on branch `crewmux/<run>/<worker>`,
//! and `<project>/.crewmux/worktrees/<run>/integration` on `crewmux/<run>/integration`.
//! The worktrees sit beside the run directory (`.crewmux/runs/<run>`) rather than in it, so
//! that removing a run's record and removing its code are separate decisions (`clean`).
//! `.crewmux/` is kept out of `git status` through the repository's `info/exclude`; the
//! user's `.gitignore`, working tree, index, HEAD and stash are never written.

use std::path::{Path, PathBuf};

use super::git::Git;
use crate::domain::{RunWorkspace, WorkerWorkspace, WorkspaceMode, WorkspaceSpec};
use crate::error::{Error, IoContext, Result};

/// What the user asked for on the command line.
#[derive(Debug, Clone, Default)]
pub struct WorkspaceOptions {
    /// `--base REF`; `None`: HEAD when the run starts.
    pub base: Option<String>,
    /// `--include-uncommitted`: base the workers on the working tree as it is.
    pub include_uncommitted: bool,
}

/// A checked plan: nothing is created until [`start`] (and the worktrees until
/// [`make_pending`]).
#[derive(Debug, Clone)]
pub struct Plan {
    pub repo: PathBuf,
    pub prefix: PathBuf,
    /// The base commit (before any uncommitted snapshot).
    pub base: String,
    pub base_ref: String,
    pub user_branch: Option<String>,
    pub include_uncommitted: bool,
    pub spec: WorkspaceSpec,
    /// Workers that get a worktree, in team order.
    pub workers: Vec<String>,
}

/// The outcome of planning: a plan (or none: every worker shares the project directory)
/// and the one-line notices to show the user.
#[derive(Debug, Clone, Default)]
pub struct Planned {
    pub plan: Option<Plan>,
    pub notices: Vec<String>,
}

/// The branch of a worker (or `integration`) of a run.
pub fn branch_name(run_id: &str, worker: &str) -> String {
    format!("crewmux/{run_id}/{worker}")
}

/// The folder of a run's worktrees.
pub fn worktrees_root(project: &Path, run_id: &str) -> PathBuf {
    project.join(".crewmux").join("worktrees").join(run_id)
}

/// Check the project and the options without creating anything.
///
/// `workers` are `(id, the worker's own workspace mode)`.
///
/// # Errors
/// Usage errors (exit 2): `--base` is not a commit, a bare repository, a repository without a
/// commit, `--base`/`--include-uncommitted` outside a git repository or with only shared
/// workers.
pub fn plan(
    project: &Path,
    spec: &WorkspaceSpec,
    workers: &[(String, Option<WorkspaceMode>)],
    opts: &WorkspaceOptions,
) -> Result<Planned> {
    let team_mode = spec.mode.unwrap_or_default();
    let wanted: Vec<String> = workers
        .iter()
        .filter(|(_, m)| m.unwrap_or(team_mode) == WorkspaceMode::Worktree)
        .map(|(id, _)| id.clone())
        .collect();
    let asked = opts.base.is_some() || opts.include_uncommitted;
    let flag = if opts.base.is_some() {
        "--base"
    } else {
        "--include-uncommitted"
    };
    if wanted.is_empty() {
        if asked {
            return Err(Error::Usage(format!(
                "{flag}: every worker runs in the shared project directory; drop {flag} or set [workspace] mode = \"worktree\""
            )));
        }
        return Ok(Planned::default());
    }
    let git = Git::new(project);
    let inside = git.output(&["rev-parse", "--is-inside-work-tree"])?;
    if !inside.ok() {
        if asked {
            return Err(Error::Usage(format!(
                "{flag}: {} is not in a git repository; drop {flag} (workers then share the project directory)",
                project.display()
            )));
        }
        return Ok(Planned {
            plan: None,
            notices: vec![format!(
                "{} is not a git repository: workers share the project directory (workspace = \"shared\")",
                project.display()
            )],
        });
    }
    if inside.stdout.trim() != "true" {
        return Err(Error::Usage(format!(
            "{} is a bare git repository or inside a .git folder: run crewmux in a checkout (git clone {} <dir>) or set [workspace] mode = \"shared\"",
            project.display(),
            project.display()
        )));
    }
    let repo = PathBuf::from(git.line(&["rev-parse", "--show-toplevel"])?);
    let prefix = PathBuf::from(git.line(&["rev-parse", "--show-prefix"])?);
    let base_ref = opts.base.clone().unwrap_or_else(|| "HEAD".into());
    let base = resolve_commit(&git, &base_ref, opts.base.is_some())?;
    if !in_base(&git, &base, &prefix, opts.include_uncommitted)? {
        return untracked_folder(project, &repo, asked.then_some(flag));
    }
    if opts.include_uncommitted && opts.base.is_some() {
        let head = resolve_commit(&git, "HEAD", false)?;
        if head != base {
            return Err(Error::Usage(format!(
                "--include-uncommitted bases the workers on your working tree (HEAD with its changes), not on --base {base_ref}: drop one of the two"
            )));
        }
    }
    let mut notices = vec![];
    if !opts.include_uncommitted && is_dirty(&git)? {
        notices.push(
            "your working tree has uncommitted changes: they are not in the workers' trees (add --include-uncommitted to include them)".into(),
        );
    }
    // A seed that is not there is said at the start, not only in the log of each launch.
    for entry in &spec.copy {
        if !project.join(entry).exists() {
            notices.push(format!(
                "[workspace] copy: {entry} is not in the project ({}): nothing of it is copied into the workers' trees",
                project.display()
            ));
        }
    }
    if repo.join(".gitmodules").exists() {
        notices.push(
            "this repository has submodules: worktrees start without them; add setup = [\"git\", \"submodule\", \"update\", \"--init\"] to [workspace] to fetch them".into(),
        );
    }
    Ok(Planned {
        plan: Some(Plan {
            repo,
            prefix,
            base,
            base_ref,
            user_branch: current_branch(&git)?,
            include_uncommitted: opts.include_uncommitted,
            spec: spec.clone(),
            workers: wanted,
        }),
        notices,
    })
}

/// True when the project folder (`prefix` inside the repository, `""` at its top) is in
/// commit `base`, or `--include-uncommitted` brings it (it has untracked, not ignored
/// files, which the snapshot adds). A worktree of a commit without it has no such folder,
/// and every worker's wrapper would fail to enter it (exit 126).
///
/// # Errors
/// [`Error::Command`] when git cannot be asked.
fn in_base(git: &Git, base: &str, prefix: &Path, include_uncommitted: bool) -> Result<bool> {
    let folder = prefix.to_string_lossy();
    let folder = folder.trim_end_matches('/');
    if folder.is_empty() {
        return Ok(true);
    }
    if git
        .output(&["cat-file", "-e", &format!("{base}:{folder}")])?
        .ok()
    {
        return Ok(true);
    }
    Ok(include_uncommitted
        && !git
            .run(&[
                "ls-files",
                "--others",
                "--exclude-standard",
                "-z",
                "--",
                ".",
            ])?
            .is_empty())
}

/// The plan of a project folder that no commit of its repository `repo` has (see
/// [`in_base`]): its workers share it, said in a notice, or the refusal of `flag`
/// (`--base`, `--include-uncommitted`), which asks for worktrees.
///
/// # Errors
/// [`Error::Usage`] when `flag` is given.
fn untracked_folder(project: &Path, repo: &Path, flag: Option<&str>) -> Result<Planned> {
    let what = format!(
        "{} is a folder git does not track in the repository at {}",
        project.display(),
        repo.display()
    );
    if let Some(flag) = flag {
        return Err(Error::Usage(format!(
            "{flag}: {what}, so the workers' worktrees would not have it; commit it (git add), or drop {flag} (workers then share the folder)"
        )));
    }
    Ok(Planned {
        plan: None,
        notices: vec![format!(
            "{what}: workers share it (workspace = \"shared\"); commit it (or add --include-uncommitted) to give each worker its own worktree"
        )],
    })
}

/// The branch checked out in the tree of `git` (`None`: detached HEAD).
///
/// # Errors
/// [`Error::Command`] when git cannot be asked (see [`Git::output`]).
pub fn current_branch(git: &Git) -> Result<Option<String>> {
    let out = git.output(&["symbolic-ref", "--quiet", "--short", "HEAD"])?;
    Ok(out.ok().then(|| out.stdout.trim().to_string()))
}

fn resolve_commit(git: &Git, rev: &str, asked: bool) -> Result<String> {
    if rev.starts_with('-') {
        return Err(Error::Usage(format!(
            "--base {rev}: not a commit; give a branch, tag or SHA (see git log --oneline)"
        )));
    }
    let out = git.output(&[
        "rev-parse",
        "--verify",
        "--quiet",
        &format!("{rev}^{{commit}}"),
    ])?;
    if out.ok() {
        return Ok(out.stdout.trim().to_string());
    }
    Err(Error::Usage(if asked {
        format!(
            "--base {rev}: not a commit in {}; give a branch, tag or SHA (see git log --oneline)",
            git.dir().display()
        )
    } else {
        format!(
            "{}: the repository has no commit yet; commit once, or set [workspace] mode = \"shared\"",
            git.dir().display()
        )
    }))
}

/// True when tracked files differ from HEAD (staged or not), or untracked files exist
/// outside crewmux's own folder.
fn is_dirty(git: &Git) -> Result<bool> {
    let out = git.run(&["status", "--porcelain", "-z"])?;
    Ok(out
        .split('\0')
        .filter(|e| e.len() > 3)
        .any(|e| !e[3..].starts_with(".crewmux/") && !e[3..].contains("/.crewmux/")))
}

/// Create the worktrees of a plan: the exclude line, the base (with the uncommitted
/// snapshot when asked), one worktree and branch per worker, the `copy` files.
///
/// # Errors
/// A git call fails (its stderr is in the message); the first worker whose worktree
/// cannot be made is the error (the others are made).
pub fn create(plan: &Plan, project: &Path, run_id: &str) -> Result<RunWorkspace> {
    let mut ws = start(plan, project, run_id)?;
    if let Some((_, e)) = make_pending(&mut ws, project, run_id)?.into_iter().next() {
        return Err(e);
    }
    Ok(ws)
}

/// The run's workspace as the run starts: the base fixed (the uncommitted snapshot taken
/// now, as an unreferenced commit), every planned worker in `pending`, no worktree or
/// branch made yet ([`make_pending`] makes them).
///
/// # Errors
/// Git fails reading the base or writing the snapshot or `info/exclude`.
pub fn start(plan: &Plan, project: &Path, run_id: &str) -> Result<RunWorkspace> {
    let git = Git::new(&plan.repo);
    ensure_excluded(&git)?;
    let base = if plan.include_uncommitted {
        snapshot_uncommitted(&git, &plan.base)?
    } else {
        plan.base.clone()
    };
    Ok(RunWorkspace {
        repo: plan.repo.clone(),
        prefix: plan.prefix.clone(),
        base,
        base_ref: plan.base_ref.clone(),
        user_branch: plan.user_branch.clone(),
        uncommitted: plan.include_uncommitted,
        root: worktrees_root(project, run_id),
        copy: plan.spec.copy.clone(),
        setup: plan.spec.setup.clone(),
        workers: Default::default(),
        pending: plan.workers.clone(),
        integration: None,
        integrated_round: None,
    })
}

/// Make the worktrees of `ws.pending` (up to [`CREATE_THREADS`] at once) and move the
/// ones made to `ws.workers`; nothing to do when none is pending. Each worker's worktree
/// stands alone: one that cannot be made stays in `ws.pending` (a later launch tries it
/// again) and is returned with its own error, while the others are kept.
///
/// # Errors
/// The run's worktrees folder cannot be made (then no worktree is). A failed `git worktree
/// add` or seed copy is not an `Err`: it is in the returned list, by worker id.
pub fn make_pending(
    ws: &mut RunWorkspace,
    project: &Path,
    run_id: &str,
) -> Result<Vec<(String, Error)>> {
    if ws.pending.is_empty() {
        return Ok(Vec::new());
    }
    let git = Git::new(&ws.repo);
    let root = ws.root.clone();
    std::fs::create_dir_all(&root).at(&root)?;
    let wanted = ws.pending.clone();
    let shared: &RunWorkspace = ws;
    // Up to CREATE_THREADS `git worktree add` at once: each writes its own admin folder,
    // branch ref and index, so they do not contend; checkout is mostly disk work.
    let results: Vec<(String, Result<WorkerWorkspace>)> = std::thread::scope(|scope| {
        let chunks: Vec<Vec<String>> = wanted
            .chunks(wanted.len().div_ceil(CREATE_THREADS).max(1))
            .map(|c| c.to_vec())
            .collect();
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                let git = &git;
                scope.spawn(move || {
                    chunk
                        .into_iter()
                        .map(|id| {
                            let r = add_worktree(git, shared, run_id, &id).and_then(|w| {
                                copy_seeds(project, shared, &w.path)?;
                                Ok(w)
                            });
                            (id, r)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    });
    let mut made = Vec::new();
    let mut failed = Vec::new();
    for (id, r) in results {
        match r {
            Ok(w) => made.push((id, w)),
            // Concurrent `git worktree add`s can trip over each other's half-written admin
            // folder ("failed to read .git/worktrees/<name>/commondir"): what is left of
            // this one goes, and it is made again alone, after the others are done.
            Err(first) => match retry_alone(&git, shared, project, run_id, &id) {
                Ok(w) => {
                    // Recovered: git's own `fatal:` line would read as a failure in the
                    // run's log; it stays at debug level for whoever looks for it.
                    tracing::info!("worktree of {id} made on a second try, alone");
                    tracing::debug!("the first try of {id}'s worktree: {first}");
                    made.push((id, w));
                }
                Err(e) => {
                    tracing::warn!("worktree of {id} could not be made: {e}");
                    failed.push((id, e));
                }
            },
        }
    }
    for id in &wanted {
        let seen = made.iter().any(|(m, _)| m == id) || failed.iter().any(|(f, _)| f == id);
        if !seen {
            failed.push((
                id.clone(),
                Error::Other(format!(
                    "creating the worktree of {id} stopped unexpectedly; see the log"
                )),
            ));
        }
    }
    ws.pending.retain(|id| failed.iter().any(|(f, _)| f == id));
    ws.workers.extend(made);
    Ok(failed)
}

/// Remove what a failed `git worktree add` of `name` left (its folder, its admin entry, the
/// branch it made: all crewmux's own, new with this run) and make it again on its own.
fn retry_alone(
    git: &Git,
    ws: &RunWorkspace,
    project: &Path,
    run_id: &str,
    name: &str,
) -> Result<WorkerWorkspace> {
    remove_leftover(git, ws, run_id, name);
    let w = add_worktree(git, ws, run_id, name)?;
    copy_seeds(project, ws, &w.path)?;
    Ok(w)
}

/// Remove the worktree `<root>/<name>`, its admin entry and its branch
/// `crewmux/<run>/<name>` when the run's state records none of them: what a failed
/// `git worktree add` left, or what a driver made and then ended (killed) before it saved.
/// All of it is crewmux's own and holds no work the run knows of.
pub fn remove_leftover(git: &Git, ws: &RunWorkspace, run_id: &str, name: &str) {
    let path = ws.root.join(name);
    // Each step may find nothing to remove; what matters is the add that follows.
    let _ = git.output(&["worktree", "remove", "--force", &path.to_string_lossy()]);
    let _ = std::fs::remove_dir_all(&path);
    let _ = git.output(&["worktree", "prune"]);
    let _ = git.output(&["branch", "-D", &branch_name(run_id, name)]);
}

/// `git worktree add` calls run at once when the first worker of a run launches.
pub const CREATE_THREADS: usize = 4;

/// `git worktree add -b crewmux/<run>/<name> <root>/<name> <base>`.
///
/// # Errors
/// [`Error::Command`] when `git worktree add` fails (its stderr is in the message);
/// [`Error::Io`] when `info/exclude` cannot be written.
pub fn add_worktree(
    git: &Git,
    ws: &RunWorkspace,
    run_id: &str,
    name: &str,
) -> Result<WorkerWorkspace> {
    let path = ws.root.join(name);
    let branch = branch_name(run_id, name);
    git.run(&[
        "worktree",
        "add",
        "--quiet",
        "-b",
        &branch,
        &path.to_string_lossy(),
        &ws.base,
    ])?;
    Ok(WorkerWorkspace {
        path,
        branch,
        diff: None,
        commits: 0,
        head: None,
        start: None,
        upstreams: Default::default(),
        host: None,
    })
}

/// Add `.crewmux/` to the repository's `info/exclude` (shared by every worktree) once.
fn ensure_excluded(git: &Git) -> Result<()> {
    let rel = git.line(&["rev-parse", "--git-path", "info/exclude"])?;
    let path = if Path::new(&rel).is_absolute() {
        PathBuf::from(rel)
    } else {
        git.dir().join(rel)
    };
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    if text.lines().any(|l| l.trim() == ".crewmux/") {
        return Ok(());
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).at(dir)?;
    }
    let mut new = text;
    if !new.is_empty() && !new.ends_with('\n') {
        new.push('\n');
    }
    new.push_str("# crewmux: runs, logs and worktrees\n.crewmux/\n");
    crate::store::write_replace(&path, new.as_bytes())
}

/// A commit of the working tree as it is (tracked changes and untracked, not ignored files)
/// on top of `head`, made through a temporary index so the user's index is never written.
fn snapshot_uncommitted(git: &Git, head: &str) -> Result<String> {
    let tmp = tempfile::tempdir().on("cannot make a temporary directory")?;
    let index = tmp.path().join("index");
    let g = git
        .clone()
        .with_env("GIT_INDEX_FILE", &index.to_string_lossy());
    g.run(&["read-tree", head])?;
    g.run(&["add", "-A", "--", "."])?;
    let tree = g.line(&["write-tree"])?;
    let head_tree = git.line(&["rev-parse", &format!("{head}^{{tree}}")])?;
    if tree == head_tree {
        return Ok(head.to_string());
    }
    let g = super::commit::with_identity(g)?;
    g.line(&[
        "commit-tree",
        &tree,
        "-p",
        head,
        "-m",
        "crewmux: uncommitted changes at run start",
    ])
}

/// Copy `[workspace] copy` entries (files or folders, relative to the project) into a new
/// worktree. A missing entry is skipped with a warning in the log.
///
/// # Errors
/// An entry that exists but cannot be copied (I/O, with its path).
pub(crate) fn copy_seeds(project: &Path, ws: &RunWorkspace, top: &Path) -> Result<()> {
    for entry in &ws.copy {
        let from = project.join(entry);
        let to = ws.cwd_in(top).join(entry);
        if !from.exists() {
            tracing::warn!(
                "[workspace] copy: {} does not exist; skipped",
                from.display()
            );
            continue;
        }
        copy_tree(&from, &to).map_err(|e| {
            Error::Other(format!(
                "[workspace] copy {entry}: {e} (copying {} to {})",
                from.display(),
                to.display()
            ))
        })?;
    }
    Ok(())
}

fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    if from.is_dir() {
        std::fs::create_dir_all(to).at(to)?;
        for e in std::fs::read_dir(from).at(from)? {
            let e = e.at(from)?;
            copy_tree(&e.path(), &to.join(e.file_name()))?;
        }
        Ok(())
    } else {
        if let Some(dir) = to.parent() {
            std::fs::create_dir_all(dir).at(dir)?;
        }
        std::fs::copy(from, to).at(to).map(|_| ())
    }
}

#[cfg(test)]
#[path = "create_tests.rs"]
mod tests;
