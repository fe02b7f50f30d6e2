//! A worker's `cwd`, checked when the team is loaded: it must stay inside the project
//! (neither `..` nor a symlink may lead out) and, where the worker runs in the project
//! directory itself (a shared workspace, or a project that is not a git repository), it
//! must exist. A worker in a worktree gets its directory from the base commit, so its
//! relative `cwd` is checked there (`cwd_base`), or in the working tree with
//! `--include-uncommitted`. When a `cwd` cannot be checked at load, the wrapper still
//! refuses to start the agent when `cd` fails (`launch::write_wrapper`).

use std::path::{Component, Path};

use serde::Deserialize;
use toml::Spanned;

use super::file::LoadedTeam;
use crate::domain::WorkspaceMode;
use crate::error::{Error, Result};
use crate::providers::spec::line_col;

/// Where worktree workers start from: `--base` (else `HEAD`), or the working tree with
/// `--include-uncommitted`.
#[derive(Debug, Clone, Default)]
pub struct CwdBase {
    pub base: Option<String>,
    pub include_uncommitted: bool,
}

/// Check every worker's `cwd` of `loaded` against `project` (see the module doc).
///
/// # Errors
/// Usage errors, exit 2: one line `FILE:LINE:COL: worker `id`: `cwd` `…` …` naming the
/// fix: a relative `cwd` that leaves the project through `..` or a symlink, a `cwd`
/// (absolute or relative) of a worker in the project directory that does not exist, or a
/// worktree worker's relative `cwd` that its base commit lacks, has as a file, or leaves.
pub fn check_cwds(loaded: &LoadedTeam, project: &Path, from: &CwdBase) -> Result<()> {
    let spec = &loaded.spec;
    let team_mode = spec
        .workspace
        .as_ref()
        .and_then(|w| w.mode)
        .unwrap_or_default();
    let mut in_git: Option<bool> = None;
    let mut commit: Option<Option<(String, String)>> = None;
    for w in &spec.workers {
        let Some(cwd) = &w.cwd else { continue };
        let fail = |what: String| Err(at_cwd(loaded, &w.id, cwd, &what));
        if cwd.is_relative() && leaves_lexically(cwd) {
            return fail(format!(
                "leaves the project: use a directory inside {}",
                project.display()
            ));
        }
        let shared = w.workspace.unwrap_or(team_mode) == WorkspaceMode::Shared
            || !*in_git.get_or_insert_with(|| is_git_work_tree(project));
        if !shared && cwd.is_relative() && !from.include_uncommitted {
            // Relative to the worker's worktree, which does not exist yet: its base does.
            let at = commit
                .get_or_insert_with(|| super::cwd_base::base_commit(project, from.base.as_deref()));
            if let Some((id, prefix)) = at {
                if let Err(wrong) = super::cwd_base::check_in_commit(project, id, prefix, cwd) {
                    return fail(wrong.message(id, from.base.as_deref().unwrap_or("HEAD")));
                }
            }
            continue;
        }
        let full = project.join(cwd);
        if !full.is_dir() {
            return fail(format!(
                "does not exist: {} is not a directory: create it or fix the path",
                full.display()
            ));
        }
        if cwd.is_relative() {
            let (Ok(real), Ok(top)) = (full.canonicalize(), project.canonicalize()) else {
                continue;
            };
            if !real.starts_with(&top) {
                return fail(format!(
                    "leaves the project: it resolves to {} (through a symlink): use a directory inside {}",
                    real.display(),
                    top.display()
                ));
            }
        }
    }
    Ok(())
}

/// Whether `..` components take `path` above where it starts.
fn leaves_lexically(path: &Path) -> bool {
    let mut depth: i64 = 0;
    for c in path.components() {
        match c {
            Component::ParentDir => depth -= 1,
            Component::Normal(_) => depth += 1,
            _ => {}
        }
        if depth < 0 {
            return true;
        }
    }
    false
}

fn is_git_work_tree(project: &Path) -> bool {
    crate::workspace::git::Git::new(project)
        .output(&["rev-parse", "--is-inside-work-tree"])
        .is_ok_and(|o| o.ok() && o.stdout.trim() == "true")
}

#[derive(Deserialize)]
struct Spans {
    #[serde(default)]
    worker: Vec<WorkerCwd>,
}

#[derive(Deserialize)]
struct WorkerCwd {
    id: String,
    #[serde(default)]
    cwd: Option<Spanned<String>>,
}

/// The error for worker `id`'s `cwd`, placed at its value in the team file when the file
/// can be read again (else at the file).
fn at_cwd(loaded: &LoadedTeam, id: &str, cwd: &Path, what: &str) -> Error {
    let msg = format!("worker `{id}`: `cwd` `{}` {what}", cwd.display());
    let place = std::fs::read_to_string(&loaded.source)
        .ok()
        .and_then(|text| {
            let spans: Spans = toml::from_str(&text).ok()?;
            let span = spans.worker.into_iter().find(|w| w.id == id)?.cwd?.span();
            Some(line_col(&text, span.start))
        });
    match place {
        Some((line, col)) => Error::Usage(format!("{}:{line}:{col}: {msg}", loaded.source)),
        None => Error::Usage(format!("{}: {msg}", loaded.source)),
    }
}

#[cfg(test)]
mod tests {
    use super::leaves_lexically;
    use std::path::Path;

    #[test]
    fn dot_dot_that_climbs_above_the_start_leaves() {
        assert!(leaves_lexically(Path::new("../x")));
        assert!(leaves_lexically(Path::new("a/../../x")));
        assert!(!leaves_lexically(Path::new("a/../b")));
        assert!(!leaves_lexically(Path::new("./a/b/..")));
    }
}
