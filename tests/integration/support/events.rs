//! Every run an integration test makes passes the event-once check
//! (`crewmux::lead::once::violations`: per worker and attempt one start, one final
//! status, one waiting event per question). [`run_crewmux`](super::run_crewmux) checks the
//! project after each command, and [`Project`] (the temporary directory every test works
//! in) checks every run under it when the test ends, after ending every process still
//! working in it.

use std::path::{Path, PathBuf};

use crewmux::domain::RunEvent;

/// A temporary directory for a test's project (and anything else it writes): removed at
/// the end like `tempfile::TempDir`, after the event-once check of every run under it.
/// Whatever still works in it then is killed first: a driver the test started and did
/// not wait for (it failed before), workers and the tmux server of a run whose driver the
/// test killed, the shared SSH connection a driver opened.
pub struct Project(tempfile::TempDir);

/// A new [`Project`].
pub fn project() -> Project {
    Project(tempfile::tempdir().expect("a temporary directory"))
}

/// A new [`Project`] inside `dir` (made when missing).
pub fn project_in(dir: &Path) -> Project {
    std::fs::create_dir_all(dir).expect("the folder for temporary projects");
    Project(tempfile::tempdir_in(dir).expect("a temporary directory"))
}

impl Project {
    pub fn path(&self) -> &Path {
        self.0.path()
    }
}

impl Drop for Project {
    fn drop(&mut self) {
        super::procs::kill_all(&super::procs::working_in(self.path()));
        // A test that failed already says why; a second panic would abort.
        if !std::thread::panicking() {
            assert_events_once(self.path());
        }
    }
}

/// Run directories under `root` (`.crewmux/runs/*` at any depth up to four, so a project in
/// a subdirectory of the test's directory counts too).
fn run_dirs(root: &Path, depth: u32, out: &mut Vec<PathBuf>) {
    let runs = root.join(".crewmux").join("runs");
    if let Ok(entries) = std::fs::read_dir(&runs) {
        out.extend(entries.filter_map(|e| e.ok().map(|e| e.path())));
    }
    if depth == 0 {
        return;
    }
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for e in entries.filter_map(Result::ok) {
        let p = e.path();
        let name = e.file_name();
        let skip = name == ".crewmux" || name == ".git" || name == "target";
        if !skip && e.file_type().is_ok_and(|t| t.is_dir()) {
            run_dirs(&p, depth - 1, out);
        }
    }
}

/// The event-once check of every run under `root`; panics naming the run and what broke.
pub fn assert_events_once(root: &Path) {
    let mut dirs = vec![];
    run_dirs(root, 4, &mut dirs);
    for dir in dirs {
        let path = dir.join("events.jsonl");
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let events: Vec<RunEvent> = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                serde_json::from_str(l)
                    .unwrap_or_else(|e| panic!("{}: unreadable event {l:?}: {e}", path.display()))
            })
            .collect();
        let v = crewmux::lead::once::violations(&events);
        assert!(v.is_empty(), "{}: {}", path.display(), v.join("; "));
    }
}
