//! Saving one run's `state.json` again and again without reading it back each time.
//!
//! A save must never replace a file it cannot read (a corrupt or newer `state.json` is
//! reported and kept). Reading and parsing the old file before every save costs as much
//! as the save itself on a large run, so the writer remembers the file it wrote last (size,
//! modification time, inode): while the file on disk is still that one, it is replaced
//! without being read; any other file (the first save, a change by another process) is
//! checked as before.
//!
//! A file that fails that check is left as it is, and the state goes next to it instead
//! ([`STATE_ASIDE`](super::STATE_ASIDE)), from then on for the life of the writer: the driver's state (every
//! worker and result) is never lost to a broken file, and never replaces it. The first
//! such save returns an [`Aside`] for the driver to tell.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::{load_json, write_json_atomic, RunStore};
use crate::domain::RunState;
use crate::error::{Error, Result};

/// What identifies one version of a file on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FileId {
    len: u64,
    modified: Option<SystemTime>,
    ino: u64,
}

fn file_id(path: &Path) -> Option<FileId> {
    let m = std::fs::metadata(path).ok()?;
    Some(FileId {
        len: m.len(),
        modified: m.modified().ok(),
        ino: m.ino(),
    })
}

/// The state of a run being saved aside: `state.json` changed under the writer into a file
/// it cannot read, which is kept as it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Aside {
    /// The run's `state.json` (left untouched).
    pub state: PathBuf,
    /// Where the state is saved instead ([`STATE_ASIDE`](super::STATE_ASIDE) next to it).
    pub side: PathBuf,
    /// What is wrong with `state`, as loading it says (not JSON, a newer schema, …).
    pub reason: String,
}

impl Aside {
    /// The line that tells the person, once, when saves start going aside.
    pub fn notice(&self) -> String {
        format!(
            "{} was changed by another program: {}; this run's state is saved to {} from now \
             on: once the run ends, check that file, then `mv {} {}`",
            self.state.display(),
            self.reason,
            self.side.display(),
            self.side.display(),
            self.state.display()
        )
    }

    /// The error a driving process ends with when its saves went aside (exit 1): both
    /// files and the fix, on one line.
    pub fn error(&self, run_id: &str) -> Error {
        Error::Other(format!(
            "run {run_id}: {} cannot be read and was left as it is, so the run's last state \
             is in {}: check that file, then `mv {} {}` (or `crewmux clean --run {run_id} \
             --purge --force` removes the run)",
            self.state.display(),
            self.side.display(),
            self.side.display(),
            self.state.display()
        ))
    }
}

/// The writer of one run's `state.json` (one per driving process).
#[derive(Debug)]
pub struct StateWriter {
    store: RunStore,
    /// The file as this writer left it after its last save.
    last: Option<FileId>,
    /// Set once `state.json` could not be read: every save goes aside from then on.
    aside: Option<Aside>,
}

impl StateWriter {
    pub fn new(store: RunStore) -> Self {
        StateWriter {
            store,
            last: None,
            aside: None,
        }
    }

    /// Write `state` atomically under the run lock. The old file is parsed only when it is
    /// not the one this writer wrote last; when it cannot be read, it is kept and `state`
    /// goes to [`STATE_ASIDE`](super::STATE_ASIDE) next to it, now and on every later save. Returns the
    /// [`Aside`] on the first save that went aside (`None` on any other).
    ///
    /// # Errors
    /// The lock or the write (of either file) failed.
    pub fn save(&mut self, state: &RunState) -> Result<Option<Aside>> {
        let _lock = self.store.lock()?;
        if self.aside.is_some() {
            write_json_atomic(&self.store.aside_path(), state)?;
            return Ok(None);
        }
        let path = self.store.state_path();
        let on_disk = file_id(&path);
        if on_disk.is_some() && on_disk != self.last {
            if let Err(e) = load_json::<RunState>(&path) {
                let reason = match e {
                    Error::CorruptState { reason, .. } => reason,
                    other => other.to_string(),
                };
                let side = self.store.aside_path();
                write_json_atomic(&side, state)?;
                let aside = Aside {
                    state: path,
                    side,
                    reason,
                };
                self.aside = Some(aside.clone());
                return Ok(Some(aside));
            }
        }
        write_json_atomic(&path, state)?;
        self.last = file_id(&path);
        Ok(None)
    }

    /// Where saves go instead of `state.json`, once they do.
    pub fn aside(&self) -> Option<&Aside> {
        self.aside.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Seek, Write};

    fn state() -> RunState {
        serde_json::from_value(serde_json::json!({
            "schema_version": 1, "run_id": "r", "problem": "p", "team": "t",
            "project_dir": "/p", "run_dir": "/p/r", "stage": "team-exec", "status": "running",
            "backend": "process", "tmux_socket": "s", "session": "s", "parallel": 1,
            "fix_round": 0, "max_fix_rounds": 1,
            "council": serde_json::to_value(crate::domain::Council::default()).unwrap(),
            "council_history": [],
            "clarification":
                serde_json::to_value(crate::domain::ClarificationState::default()).unwrap(),
            "workers": [], "dispatches": [], "created_at": "2026-01-01T00:00:00Z",
            "updated_at": "2026-01-01T00:00:00Z"
        }))
        .expect("a minimal state")
    }

    #[test]
    fn its_own_file_is_replaced_unread_and_anyone_elses_is_checked() {
        let tmp = tempfile::tempdir().unwrap();
        let store = RunStore::at(tmp.path().to_path_buf());
        let mut w = StateWriter::new(store.clone());
        let s = state();
        w.save(&s).unwrap();
        let path = store.state_path();

        // Bytes changed in place with size and time kept: the writer takes the file for its
        // own and does not read it (a parse would fail on these bytes).
        let meta = std::fs::metadata(&path).unwrap();
        let mut f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.rewind().unwrap();
        f.write_all(&vec![b'#'; meta.len() as usize]).unwrap();
        f.set_modified(meta.modified().unwrap()).unwrap();
        drop(f);
        w.save(&s).unwrap();
        assert!(store.load_state().is_ok());

        // A file someone else wrote is checked: garbage is kept, the state goes aside, and
        // only the first save aside says so.
        std::fs::write(&path, b"{ not json").unwrap();
        let aside = w.save(&s).unwrap().expect("the first save aside is told");
        assert_eq!((&aside.state, &aside.side), (&path, &store.aside_path()));
        assert!(aside.reason.contains("not valid JSON"), "{aside:?}");
        let mut later = s.clone();
        later.problem = "later".into();
        assert_eq!(w.save(&later).unwrap(), None);
        assert_eq!(std::fs::read(&path).unwrap(), b"{ not json");
        let side: RunState = load_json(&store.aside_path()).unwrap();
        assert_eq!(side.problem, "later");
        assert_eq!(w.aside(), Some(&aside));
    }
}
