//! Build output a worker or a check leaves in a worktree is never committed.
//!
//! `git add -A` already leaves out what the repository ignores (`.gitignore`, the user's
//! excludes). A project that ignores nothing still gets build folders in its worktrees the
//! moment a check runs `cargo test` or `npm install` there, and the next per-attempt or
//! fix-round commit would take them. So the commits crewmux makes also leave out, by an
//! exclude pathspec, every untracked directory named in [`BUILD_DIRS`] that holds no tracked
//! file. `info/exclude` is not used for this: it is shared by every worktree of the
//! repository, the user's own checkout included, and crewmux does not change what the
//! user's `git status` shows beyond its own `.crewmux/`.

use std::collections::BTreeSet;

use super::git::Git;
use crate::error::Result;

/// Directory names that only ever hold generated files: cargo (`target`), npm/yarn/pnpm
/// (`node_modules`), Python (`__pycache__`, `.pytest_cache`, `.mypy_cache`, `.ruff_cache`,
/// `.tox`, `.venv`), Gradle (`.gradle`), Next.js (`.next`), Turborepo (`.turbo`), Zig
/// (`zig-cache`, `.zig-cache`, `zig-out`), cabal (`dist-newstyle`) and Stack
/// (`.stack-work`). Names such as `build` or `dist`, which projects also use for sources,
/// are left to the repository's own ignore rules.
pub const BUILD_DIRS: [&str; 16] = [
    "target",
    "node_modules",
    "__pycache__",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    ".tox",
    ".venv",
    ".gradle",
    ".next",
    ".turbo",
    "zig-cache",
    ".zig-cache",
    "zig-out",
    "dist-newstyle",
    ".stack-work",
];

/// The build directories among untracked, not ignored `files` (paths relative to the tree's
/// top, `/`-separated, as `git ls-files --others` prints them): for each file under a
/// directory named in [`BUILD_DIRS`], the outermost such directory (`crate/target`).
pub fn candidates<'a>(files: impl IntoIterator<Item = &'a str>) -> BTreeSet<String> {
    let mut dirs = BTreeSet::new();
    for f in files {
        let parts: Vec<&str> = f.split('/').collect();
        let dirs_only = &parts[..parts.len().saturating_sub(1)];
        if let Some(i) = dirs_only.iter().position(|p| BUILD_DIRS.contains(p)) {
            dirs.insert(parts[..=i].join("/"));
        }
    }
    dirs
}

/// The untracked build directories of the tree at `git`'s directory: [`candidates`] of its
/// untracked, not ignored files that hold no tracked file (a project that commits files
/// under `target/` keeps its own rules). Relative to the tree's top. Two git calls.
///
/// # Errors
/// A git call fails.
pub fn untracked_build_dirs(git: &Git) -> Result<Vec<String>> {
    let others = git.run(&["ls-files", "--others", "--exclude-standard", "-z"])?;
    build_dirs_of(git, &others)
}

/// [`untracked_build_dirs`] for an `ls-files --others --exclude-standard -z` listing the
/// caller already has: one git call (none without candidates).
///
/// # Errors
/// A git call fails.
pub fn build_dirs_of(git: &Git, others: &str) -> Result<Vec<String>> {
    let dirs = candidates(others.split('\0').filter(|f| !f.is_empty()));
    if dirs.is_empty() {
        return Ok(Vec::new());
    }
    let mut args = vec!["ls-files", "-z", "--"];
    args.extend(dirs.iter().map(String::as_str));
    let tracked = git.run(&args)?;
    let tracked: Vec<&str> = tracked.split('\0').filter(|f| !f.is_empty()).collect();
    Ok(dirs
        .into_iter()
        .filter(|d| !tracked.iter().any(|t| t.starts_with(&format!("{d}/"))))
        .collect())
}

/// `git add` pathspecs that take everything under the tree but `dirs`: `.` then one
/// `:(exclude)DIR` each.
pub fn add_pathspecs(dirs: &[String]) -> Vec<String> {
    let mut specs = vec![".".to_string()];
    specs.extend(dirs.iter().map(|d| format!(":(exclude){d}")));
    specs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_outermost_build_directory_of_each_file_is_a_candidate() {
        let got = candidates([
            "target/debug/app",
            "target/release/app",
            "web/node_modules/react/index.js",
            "newcrate/target/debug/x",
            "src/target.rs",
            "docs/target",
            "node_modules",
            "py/__pycache__/a.cpython-312.pyc",
        ]);
        let want: Vec<&str> = vec![
            "newcrate/target",
            "py/__pycache__",
            "target",
            "web/node_modules",
        ];
        assert_eq!(got.iter().map(String::as_str).collect::<Vec<_>>(), want);
    }
}
