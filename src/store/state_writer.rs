//! Saving one run's `state.json` again and again without reading it back each time.
//!
//! A save must never replace a file it cannot read (a corrupt or newer `state.json` is
//! reported and kept). Reading and parsing the old file before every save costs as much
//! as the save itself on a large run, so the writer remembers the file it wrote last (size,
//! modification time, inode): while the file on disk is still that one, it is replaced
//! without being read; any other file (the first save, a change by another process) is
//! checked as before.

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::SystemTime;

use super::{load_json, write_json_atomic, RunStore};
use crate::domain::RunState;
use crate::error::Result;

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

/// The writer of one run's `state.json` (one per driving process).
#[derive(Debug)]
pub struct StateWriter {
    store: RunStore,
    /// The file as this writer left it after its last save.
    last: Option<FileId>,
}

impl StateWriter {
    pub fn new(store: RunStore) -> Self {
        StateWriter { store, last: None }
    }

    /// Write `state` atomically under the run lock. The old file is parsed only when it is
    /// not the one this writer wrote last.
    ///
    /// # Errors
    /// The lock or the write failed, or the file on disk (written by someone else) does
    /// not parse or has a newer schema: it is kept as it is.
    pub fn save(&mut self, state: &RunState) -> Result<()> {
        let _lock = self.store.lock()?;
        let path = self.store.state_path();
        let on_disk = file_id(&path);
        if on_disk.is_some() && on_disk != self.last {
            let _: RunState = load_json(&path)?;
        }
        write_json_atomic(&path, state)?;
        self.last = file_id(&path);
        Ok(())
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

        // A file someone else wrote is checked: garbage is refused and kept.
        std::fs::write(&path, b"{ not json").unwrap();
        let err = w.save(&s).unwrap_err();
        assert!(err.to_string().contains("state.json"), "{err}");
        assert_eq!(std::fs::read(&path).unwrap(), b"{ not json");
    }
}
