//! A worktree worker's relative `cwd`, checked in the commit its worktree will be made
//! from (the base: `--base`, else `HEAD`), before anything is created: the worktree does
//! not exist yet, but its tree does. The path is walked in the commit's trees as a checkout
//! would resolve it: `..` within the worktree, a symlink (mode 120000, its target the blob's
//! text) followed relative to its folder; an absolute symlink target, or `..` above the
//! worktree's top, leaves it.

use std::collections::VecDeque;
use std::path::{Component, Path};

use crate::workspace::git::Git;

/// Symlinks followed before a path is called a loop (Linux's `MAXSYMLINKS`).
const MAX_LINKS: usize = 40;

/// What is wrong with a `cwd` in the base commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CwdInBase {
    /// No such entry in the commit (the first missing path, from the repository top).
    Missing(String),
    /// The entry is a file, not a folder.
    NotADirectory(String),
    /// `..` or a symlink leads out of the worktree (the link or path that does).
    Leaves(String),
    /// More than [`MAX_LINKS`] symlinks.
    LinkLoop(String),
}

/// The commit worktree workers of `project` will start from: `base` (else `HEAD`) as a
/// commit id, and the project's folder inside the repository (`git rev-parse
/// --show-prefix`). `None` when it cannot be told now (not a repository, a bad `--base`):
/// the workspace plan reports those.
pub fn base_commit(project: &Path, base: Option<&str>) -> Option<(String, String)> {
    let git = Git::new(project);
    let spec = format!("{}^{{commit}}", base.unwrap_or("HEAD"));
    let commit = git.output(&["rev-parse", "--verify", "-q", &spec]).ok()?;
    let prefix = git.output(&["rev-parse", "--show-prefix"]).ok()?;
    (commit.ok() && prefix.ok()).then(|| {
        (
            commit.stdout.trim().to_string(),
            prefix.stdout.trim().to_string(),
        )
    })
}

/// Check `cwd` (relative to the project folder `prefix` of the repository) in `commit`.
///
/// # Errors
/// What is wrong, as [`CwdInBase`]; a git call that fails counts as a missing entry.
pub fn check_in_commit(
    project: &Path,
    commit: &str,
    prefix: &str,
    cwd: &Path,
) -> std::result::Result<(), CwdInBase> {
    let git = Git::new(project);
    let mut todo: VecDeque<String> = VecDeque::new();
    for part in Path::new(prefix).join(cwd).components() {
        match part {
            Component::Normal(s) => todo.push_back(s.to_string_lossy().into_owned()),
            Component::ParentDir => todo.push_back("..".into()),
            _ => {}
        }
    }
    let mut done: Vec<String> = Vec::new();
    let mut links = 0;
    while let Some(part) = todo.pop_front() {
        if part == ".." {
            if done.pop().is_none() {
                return Err(CwdInBase::Leaves(cwd.display().to_string()));
            }
            continue;
        }
        done.push(part);
        let path = done.join("/");
        match entry(&git, commit, &path) {
            None => return Err(CwdInBase::Missing(path)),
            Some(Entry::Tree) => {}
            Some(Entry::File) => return Err(CwdInBase::NotADirectory(path)),
            Some(Entry::Link(target)) => {
                links += 1;
                if links > MAX_LINKS {
                    return Err(CwdInBase::LinkLoop(path));
                }
                if Path::new(&target).is_absolute() {
                    return Err(CwdInBase::Leaves(format!("{path} -> {target}")));
                }
                done.pop();
                let mut parts: Vec<String> = Path::new(&target)
                    .components()
                    .filter_map(|c| match c {
                        Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
                        Component::ParentDir => Some("..".into()),
                        _ => None,
                    })
                    .collect();
                while let Some(p) = parts.pop() {
                    todo.push_front(p);
                }
                if leaves(&done, &todo) {
                    return Err(CwdInBase::Leaves(format!("{path} -> {target}")));
                }
            }
        }
    }
    Ok(())
}

/// Whether walking `todo` from `done` climbs above the repository top.
fn leaves(done: &[String], todo: &VecDeque<String>) -> bool {
    let mut depth = done.len() as i64;
    for p in todo {
        depth += if p == ".." { -1 } else { 1 };
        if depth < 0 {
            return true;
        }
    }
    false
}

enum Entry {
    Tree,
    File,
    Link(String),
}

/// The entry at `path` (from the top) in `commit`, from `git ls-tree`.
fn entry(git: &Git, commit: &str, path: &str) -> Option<Entry> {
    let out = git
        .output(&["ls-tree", "-z", "--full-tree", commit, "--", path])
        .ok()?;
    let line = out
        .stdout
        .split('\0')
        .find(|l| l.split_once('\t').is_some_and(|(_, name)| name == path))?;
    let mode = line.split_whitespace().next()?;
    match mode {
        "040000" => Some(Entry::Tree),
        "120000" => {
            let target = git
                .output(&["cat-file", "-p", &format!("{commit}:{path}")])
                .ok()?;
            target.ok().then_some(Entry::Link(target.stdout))
        }
        _ => Some(Entry::File),
    }
}

impl CwdInBase {
    /// The message after "worker `id`: `cwd` `…`", naming the commit and the fix.
    pub fn message(&self, commit: &str, base: &str) -> String {
        let at = format!("{base} ({})", &commit[..commit.len().min(12)]);
        match self {
            CwdInBase::Missing(p) => format!(
                "does not exist in the base commit {at}: {p} is not there; commit it, use --base with a commit that has it, or fix the path"
            ),
            CwdInBase::NotADirectory(p) => format!(
                "is not a directory in the base commit {at}: {p} is a file; fix the path"
            ),
            CwdInBase::Leaves(p) => format!(
                "leaves the worker's worktree in the base commit {at} ({p}): use a directory inside the repository"
            ),
            CwdInBase::LinkLoop(p) => {
                format!("has too many symlinks in the base commit {at} (at {p}): fix the path")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) {
        let ok = std::process::Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .output()
            .unwrap();
        assert!(
            ok.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&ok.stderr)
        );
    }

    fn repo() -> tempfile::TempDir {
        let tmp = tempfile::tempdir().unwrap();
        let r = tmp.path();
        git(r, &["init", "-q", "-b", "main"]);
        git(r, &["config", "user.email", "t@example.com"]);
        git(r, &["config", "user.name", "t"]);
        std::fs::create_dir_all(r.join("app/src")).unwrap();
        std::fs::write(r.join("app/src/lib.rs"), "").unwrap();
        std::fs::write(r.join("README"), "").unwrap();
        std::os::unix::fs::symlink("app/src", r.join("code")).unwrap();
        std::os::unix::fs::symlink("../..", r.join("app/up")).unwrap();
        std::os::unix::fs::symlink("/tmp", r.join("abs")).unwrap();
        std::os::unix::fs::symlink("loop", r.join("loop")).unwrap();
        git(r, &["add", "-A"]);
        git(r, &["commit", "-q", "-m", "base"]);
        tmp
    }

    #[test]
    fn a_cwd_is_walked_in_the_base_commit_as_a_checkout_would() {
        let tmp = repo();
        let r = tmp.path();
        let (commit, prefix) = base_commit(r, None).unwrap();
        let check = |cwd: &str| check_in_commit(r, &commit, &prefix, Path::new(cwd));
        assert_eq!(check("app/src"), Ok(()));
        assert_eq!(check("app/../app/src"), Ok(()));
        assert_eq!(check("code"), Ok(()), "a symlink inside the repository");
        assert_eq!(
            check("app/nope"),
            Err(CwdInBase::Missing("app/nope".into()))
        );
        assert_eq!(
            check("README"),
            Err(CwdInBase::NotADirectory("README".into()))
        );
        assert!(
            matches!(check("app/up"), Err(CwdInBase::Leaves(_))),
            "{:?}",
            check("app/up")
        );
        assert!(matches!(check("abs"), Err(CwdInBase::Leaves(_))));
        assert!(matches!(check("loop"), Err(CwdInBase::LinkLoop(_))));
        // Made after the commit: the worktree will not have it.
        std::fs::create_dir_all(r.join("later")).unwrap();
        assert_eq!(check("later"), Err(CwdInBase::Missing("later".into())));
        // From a project folder inside the repository.
        let (c2, p2) = base_commit(&r.join("app"), None).unwrap();
        assert_eq!(p2, "app/");
        assert_eq!(
            check_in_commit(&r.join("app"), &c2, &p2, Path::new("src")),
            Ok(())
        );
        assert!(base_commit(r, Some("no-such-ref")).is_none());
    }
}
