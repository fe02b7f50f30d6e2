//! Commits per attempt and diffstats.

use std::path::Path;

use super::git::Git;
use crate::domain::{DiffStat, RunWorkspace};
use crate::error::Result;

/// Trailer naming the run in every commit crewmux makes.
pub const RUN_TRAILER: &str = "Crewmux-Run";
/// Trailer naming the worker in every commit crewmux makes.
pub const WORKER_TRAILER: &str = "Crewmux-Worker";

/// The runner with a fallback identity (`crewmux <crewmux@localhost>`) when the user has
/// none configured, so that a machine without `user.email` still gets its commits; the
/// user's own identity is used whenever it exists.
///
/// # Errors
/// [`Error::Command`](crate::error::Error::Command) when git cannot be asked for the configured
/// identity.
pub fn with_identity(git: Git) -> Result<Git> {
    let has = git.output(&["config", "--get", "user.email"])?.ok()
        && git.output(&["config", "--get", "user.name"])?.ok();
    if has {
        return Ok(git);
    }
    Ok(git
        .with_env("GIT_AUTHOR_NAME", "crewmux")
        .with_env("GIT_AUTHOR_EMAIL", "crewmux@localhost")
        .with_env("GIT_COMMITTER_NAME", "crewmux")
        .with_env("GIT_COMMITTER_EMAIL", "crewmux@localhost"))
}

/// `git reset -q HEAD -- <seeds>`: after `git add -A`, the `copy` seeds go back to what
/// HEAD has (a new seed is unstaged, a tracked one keeps HEAD's content in the commit).
/// An exclude pathspec on `git add` would fail on a seed the repository ignores.
fn unstage_seeds(git: &Git, copy: &[String], prefix: &Path) -> Result<()> {
    if copy.is_empty() {
        return Ok(());
    }
    let mut args = vec!["reset".to_string(), "-q".into(), "HEAD".into(), "--".into()];
    args.extend(copy.iter().map(|c| prefix.join(c).display().to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    git.run(&args).map(|_| ())
}

/// Commit whatever is uncommitted in the tree at `top` with `subject` and the crewmux
/// trailers. Commits an agent made itself stay as they are. Returns the new commit's SHA,
/// or `None` when there was nothing to commit.
///
/// The commit skips the repository's commit hooks (`--no-verify`): it records what a worker
/// left so nothing is lost; judging it is the checks' job, and a failing hook must not
/// drop the work. Untracked build output (`target/`, `node_modules/`, …) stays out of it,
/// even where the repository does not ignore it (see [`super::build_output`]).
///
/// # Errors
/// [`Error::Command`](crate::error::Error::Command) when `git add`, `git commit` or `git rev-parse`
/// fails (git's stderr in the message).
pub fn commit_all(
    top: &Path,
    ws: &RunWorkspace,
    run_id: &str,
    worker: &str,
    subject: &str,
) -> Result<Option<String>> {
    commit_with(&Git::new(top), ws, run_id, worker, subject)
}

/// [`commit_all`] through `git`, which may run on an SSH host (`Git::over_ssh`): a remote
/// worker's worktree is committed there by the same rules.
///
/// # Errors
/// As [`commit_all`]; over ssh also when the host cannot be reached.
pub fn commit_with(
    git: &Git,
    ws: &RunWorkspace,
    run_id: &str,
    worker: &str,
    subject: &str,
) -> Result<Option<String>> {
    let build = super::build_output::untracked_build_dirs(git)?;
    let specs = super::build_output::add_pathspecs(&build);
    let mut add = vec!["add", "-A", "--"];
    add.extend(specs.iter().map(String::as_str));
    git.run(&add)?;
    unstage_seeds(git, &ws.copy, &ws.prefix)?;
    if git.output(&["diff", "--cached", "--quiet"])?.ok() {
        return Ok(None);
    }
    let message = format!("{subject}\n\n{RUN_TRAILER}: {run_id}\n{WORKER_TRAILER}: {worker}\n");
    with_identity(git.clone())?.run(&["commit", "--quiet", "--no-verify", "-m", &message])?;
    Ok(Some(git.line(&["rev-parse", "HEAD"])?))
}

/// Parse `git diff --numstat` (binary files count as a file with no lines).
pub fn parse_numstat(text: &str) -> DiffStat {
    let mut d = DiffStat::default();
    for line in text.lines() {
        let mut parts = line.splitn(3, '\t');
        let (Some(a), Some(r), Some(_)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        d.added += a.parse::<u64>().unwrap_or(0);
        d.removed += r.parse::<u64>().unwrap_or(0);
        d.files += 1;
    }
    d
}

/// The change of `rev` (a branch or commit) against `base`: `git diff --numstat base rev`.
///
/// # Errors
/// [`Error::Command`](crate::error::Error::Command) when `git diff` fails (an unknown `base` or
/// `rev`).
pub fn diffstat_between(repo: &Path, base: &str, rev: &str) -> Result<DiffStat> {
    let out = Git::new(repo).run(&["diff", "--numstat", "--no-renames", base, rev])?;
    Ok(parse_numstat(&out))
}

/// Largest untracked file read to count its lines for a live diffstat, bytes.
const UNTRACKED_READ_MAX: u64 = 1 << 20;

/// The change of a worktree against `base` as it is now, committed or not: tracked changes
/// through `git diff --numstat base`, plus untracked, not ignored files counted by their
/// lines (files over 1 MiB count as a file without lines), build output left out as in a
/// commit. Two git calls, three when the tree has build output.
///
/// # Errors
/// [`Error::Command`](crate::error::Error::Command) when `git diff` or `git ls-files` fails.
pub fn diffstat_live(top: &Path, base: &str) -> Result<DiffStat> {
    let git = Git::new(top);
    let mut d = parse_numstat(&git.run(&["diff", "--numstat", "--no-renames", base])?);
    let others = git.run(&["ls-files", "--others", "--exclude-standard", "-z"])?;
    let build = super::build_output::build_dirs_of(&git, &others)?;
    let in_build = |f: &str| build.iter().any(|d| f.starts_with(&format!("{d}/")));
    for f in others.split('\0').filter(|f| !f.is_empty() && !in_build(f)) {
        d.files += 1;
        let p = top.join(f);
        if std::fs::metadata(&p).is_ok_and(|m| m.len() <= UNTRACKED_READ_MAX) {
            if let Ok(bytes) = std::fs::read(&p) {
                d.added += bytes.iter().filter(|&&b| b == b'\n').count() as u64;
            }
        }
    }
    Ok(d)
}

/// Commits in `base..rev`.
///
/// # Errors
/// [`Error::Command`](crate::error::Error::Command) when `git rev-list` fails (an unknown `base` or
/// `rev`).
pub fn commit_count(repo: &Path, base: &str, rev: &str) -> Result<u32> {
    let out = Git::new(repo).line(&["rev-list", "--count", &format!("{base}..{rev}")])?;
    Ok(out.parse().unwrap_or(0))
}

/// When an attempt of `worker` ends: commit what it left in its worktree (subject
/// `crewmux: <worker> attempt <n>`) and record the branch's diffstat and commit count
/// since the worker's own base ([`RunWorkspace::own_base`]) and its head commit.
/// A worker without a worktree is left alone.
///
/// # Errors
/// A git call fails.
pub fn on_attempt_end(
    ws: &mut RunWorkspace,
    run_id: &str,
    worker: &str,
    attempt: u32,
) -> Result<()> {
    let Some(w) = ws.workers.get(worker).cloned() else {
        return Ok(());
    };
    commit_all(
        &w.path,
        ws,
        run_id,
        worker,
        &format!("crewmux: {worker} attempt {attempt}"),
    )?;
    let from = ws.own_base(worker);
    let diff = diffstat_between(&ws.repo, from, &w.branch)?;
    let commits = commit_count(&ws.repo, from, &w.branch)?;
    let head = Git::new(&ws.repo).line(&["rev-parse", "--verify", &w.branch])?;
    if let Some(w) = ws.workers.get_mut(worker) {
        w.diff = Some(diff);
        w.commits = commits;
        w.head = Some(head);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numstat_sums_lines_and_counts_files_binary_included() {
        let d = parse_numstat("3\t1\tsrc/a.rs\n0\t4\tb.txt\n-\t-\timg.png\n");
        assert_eq!(
            d,
            DiffStat {
                added: 3,
                removed: 5,
                files: 3
            }
        );
        assert_eq!(d.to_string(), "+3 −5 · 3 files");
    }

    fn sh(dir: &Path, args: &[&str]) -> String {
        Git::new(dir)
            .with_env("GIT_AUTHOR_NAME", "t")
            .with_env("GIT_AUTHOR_EMAIL", "t@t")
            .with_env("GIT_COMMITTER_NAME", "t")
            .with_env("GIT_COMMITTER_EMAIL", "t@t")
            .run(args)
            .unwrap()
    }

    fn write(dir: &Path, rel: &str, text: &str) {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn a_commit_leaves_out_build_output_the_repository_does_not_ignore() {
        let tmp = tempfile::tempdir().unwrap();
        let top = tmp.path();
        sh(top, &["init", "-q", "-b", "main"]);
        write(top, "src/lib.rs", "fn a() {}\n");
        // A project that tracks a file under a build-looking folder keeps it.
        write(top, "tools/target/keep.txt", "kept\n");
        sh(top, &["add", "-A"]);
        sh(top, &["commit", "-q", "-m", "base"]);
        write(top, "src/lib.rs", "fn a() {}\nfn b() {}\n");
        write(top, "target/debug/app", "binary\n");
        write(top, "web/node_modules/left-pad/index.js", "x\n");
        write(top, "newcrate/src/main.rs", "fn main() {}\n");
        write(top, "newcrate/target/debug/newcrate", "binary\n");
        write(top, "tools/target/new.txt", "new\n");
        let ws = RunWorkspace {
            repo: top.to_path_buf(),
            prefix: "".into(),
            base: sh(top, &["rev-parse", "HEAD"]).trim().to_string(),
            base_ref: "HEAD".into(),
            user_branch: None,
            uncommitted: false,
            root: top.join(".crewmux"),
            copy: vec![],
            setup: None,
            workers: Default::default(),
            pending: vec![],
            integration: None,
            integrated_round: None,
        };
        let live = diffstat_live(top, &ws.base).unwrap();
        assert_eq!(
            live.files, 3,
            "lib.rs, newcrate/src/main.rs, tools/target/new.txt: {live:?}"
        );
        commit_all(top, &ws, "r1", "w", "crewmux: w attempt 1")
            .unwrap()
            .unwrap();
        let files = sh(top, &["show", "--name-only", "--format=", "HEAD"]);
        let mut files: Vec<&str> = files.lines().collect();
        files.sort_unstable();
        assert_eq!(
            files,
            ["newcrate/src/main.rs", "src/lib.rs", "tools/target/new.txt"]
        );
        // Left in the tree, untracked, for the next check to reuse.
        assert!(top.join("target/debug/app").exists());
        let status = sh(top, &["status", "--porcelain"]);
        assert!(status.contains("?? target/"), "{status}");
    }
}
