//! The index of projects crewmux has run in, for `crewmux --all`: one absolute path per
//! line in `$XDG_STATE_HOME/crewmux/projects` (default `~/.local/state/crewmux/projects`,
//! the XDG base directory rule for state that outlives a session).

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The index file, or `None` when no state directory can be found (no `$HOME`).
pub fn index_path() -> Option<PathBuf> {
    dirs::state_dir().map(|d| d.join("crewmux").join("projects"))
}

/// The projects of the index at `path`, in the order they were first seen; missing file:
/// none.
pub fn read(path: &Path) -> Vec<PathBuf> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(PathBuf::from)
        .collect()
}

/// Add `project` to the index at `path` unless it is there already; projects whose
/// directory is gone (a deleted checkout, a temporary directory) leave the index at the same
/// write, so it holds what `--all` can still open.
///
/// # Errors
/// The state directory or the index cannot be written (the path is named).
pub fn record(path: &Path, project: &Path) -> Result<()> {
    let all = read(path);
    if all.iter().any(|p| p == project) {
        return Ok(());
    }
    let mut all: Vec<PathBuf> = all.into_iter().filter(|p| p.is_dir()).collect();
    all.push(project.to_path_buf());
    let io = |e: std::io::Error| Error::Other(format!("{}: {e}", path.display()));
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let text: String = all.iter().map(|p| format!("{}\n", p.display())).collect();
    crate::store::write_replace(path, text.as_bytes())
}

/// Record `project` in the default index; a failure is logged, never fatal (the index only
/// helps `--all`).
pub fn remember(project: &Path) {
    if let Some(path) = index_path() {
        if let Err(e) = record(&path, project) {
            tracing::warn!("could not remember the project for `crewmux --all`: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn projects_are_recorded_once_in_order() {
        let tmp = tempfile::tempdir().unwrap();
        let idx = tmp.path().join("state/crewmux/projects");
        assert!(read(&idx).is_empty());
        let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        record(&idx, &a).unwrap();
        record(&idx, &b).unwrap();
        record(&idx, &a).unwrap();
        assert_eq!(read(&idx), vec![a.clone(), b.clone()]);
    }

    #[test]
    fn projects_whose_directory_is_gone_leave_the_index_at_the_next_record() {
        let tmp = tempfile::tempdir().unwrap();
        let idx = tmp.path().join("state/crewmux/projects");
        let (kept, gone, new) = (
            tmp.path().join("k"),
            tmp.path().join("g"),
            tmp.path().join("n"),
        );
        for d in [&kept, &gone, &new] {
            std::fs::create_dir_all(d).unwrap();
        }
        record(&idx, &kept).unwrap();
        record(&idx, &gone).unwrap();
        std::fs::remove_dir(&gone).unwrap();
        record(&idx, &new).unwrap();
        assert_eq!(read(&idx), vec![kept, new]);
    }
}
