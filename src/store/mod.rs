//! The run directory on disk (docs/design.md "The run directory"): `manifest.json`, `state.json`,
//! `events.jsonl` and per-attempt folders, written atomically under an advisory lock.
#![allow(
    clippy::expect_used,
    reason = "lookups of ids the surrounding code has just checked"
)]

mod atomic;
mod json;
pub mod planning;
mod state_writer;

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use fs4::fs_std::FileExt;
use serde::Serialize;

pub use atomic::{write_atomic, write_replace};
pub use json::{load_json, write_json_atomic};
pub use state_writer::{Aside, StateWriter};

/// The name of the file next to `state.json` that a driver saves the run's state to while
/// `state.json` is a file it did not write and cannot read: the broken file is never
/// overwritten (docs/design.md "The run directory").
pub const STATE_ASIDE: &str = "state.json.crewmux-saved";

use crate::domain::{RunEvent, RunState};
use crate::error::{Error, IoContext, Result};

/// `<project>/.crewmux/runs`.
pub fn runs_root(project: &Path) -> PathBuf {
    project.join(".crewmux").join("runs")
}

/// One run directory: `<project>/.crewmux/runs/<run id>/`.
#[derive(Debug, Clone)]
pub struct RunStore {
    dir: PathBuf,
}

/// An exclusive advisory lock on a run (`<run dir>/.lock`); released on drop.
#[derive(Debug)]
pub struct RunLock {
    _file: File,
}

impl RunStore {
    /// Create a new run directory. Errors if it already exists.
    ///
    /// # Errors
    /// [`Error::Other`] when the run directory already exists; [`Error::Io`] with the path when
    /// it cannot be created.
    pub fn create(project: &Path, run_id: &str) -> Result<Self> {
        let dir = runs_root(project).join(run_id);
        if dir.exists() {
            return Err(Error::Other(format!(
                "{}: run directory already exists",
                dir.display()
            )));
        }
        fs::create_dir_all(dir.join("workers")).at(dir.join("workers"))?;
        Ok(RunStore { dir })
    }

    /// Open an existing run by id or unique id prefix; `None` opens the newest run.
    ///
    /// # Errors
    /// [`Error::Usage`]: no runs, no match, or an ambiguous prefix (the message lists the
    /// matches); [`Error::Io`] when the runs directory cannot be listed.
    pub fn open(project: &Path, run: Option<&str>) -> Result<Self> {
        let root = runs_root(project);
        let mut ids = list_run_ids(project)?;
        if ids.is_empty() {
            return Err(Error::Usage(format!(
                "no runs under {}: start one with `crewmux run` or `crewmux demo`",
                root.display()
            )));
        }
        let id = match run {
            None => {
                // Run ids start with a sortable timestamp: the last is the newest.
                ids.sort();
                ids.pop().expect("non-empty")
            }
            Some(want) => {
                let matches: Vec<&String> = ids.iter().filter(|i| i.starts_with(want)).collect();
                match matches.as_slice() {
                    [one] => (*one).clone(),
                    [] => {
                        return Err(Error::Usage(format!(
                            "no run `{want}` under {}: `crewmux status` lists the runs",
                            root.display()
                        )))
                    }
                    many => {
                        return Err(Error::Usage(format!(
                            "run prefix `{want}` is ambiguous ({} runs: {}): give more characters",
                            many.len(),
                            many.iter()
                                .map(|s| s.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        )))
                    }
                }
            }
        };
        Ok(RunStore { dir: root.join(id) })
    }

    /// Open a run directory by path.
    pub fn at(dir: PathBuf) -> Self {
        RunStore { dir }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn state_path(&self) -> PathBuf {
        self.dir.join("state.json")
    }

    /// Where a driver saves the run's state while `state.json` is a file it did not write
    /// and cannot read ([`STATE_ASIDE`], see [`StateWriter`]).
    pub fn aside_path(&self) -> PathBuf {
        self.dir.join(STATE_ASIDE)
    }

    pub fn manifest_path(&self) -> PathBuf {
        self.dir.join("manifest.json")
    }

    pub fn events_path(&self) -> PathBuf {
        self.dir.join("events.jsonl")
    }

    /// `workers/<id>/attempt-<n>/`.
    pub fn attempt_dir(&self, worker: &str, attempt: u32) -> PathBuf {
        self.dir
            .join("workers")
            .join(worker)
            .join(format!("attempt-{attempt}"))
    }

    /// Take the run's exclusive lock, waiting for another crewmux process to release it.
    ///
    /// # Errors
    /// [`Error::Io`] on `<run dir>/.lock` when it cannot be opened or locked.
    pub fn lock(&self) -> Result<RunLock> {
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(self.dir.join(".lock"))
            .at(self.dir.join(".lock"))?;
        file.lock_exclusive().at(self.dir.join(".lock"))?;
        Ok(RunLock { _file: file })
    }

    /// Write `state.json` atomically (temp, fsync, rename, dir fsync) under the run lock.
    /// Refuses to replace a file that does not parse or has a newer schema.
    ///
    /// # Errors
    /// As [`lock`](Self::lock) and [`save_state_locked`](Self::save_state_locked).
    pub fn save_state(&self, state: &RunState) -> Result<()> {
        let _lock = self.lock()?;
        self.save_state_locked(state)
    }

    /// As [`save_state`](Self::save_state) for a caller that already holds the lock.
    ///
    /// # Errors
    /// [`Error::CorruptState`] when the existing file does not parse or is newer (it is kept);
    /// [`Error::Io`] when the atomic write fails.
    pub fn save_state_locked(&self, state: &RunState) -> Result<()> {
        let path = self.state_path();
        if path.exists() {
            // Never overwrite what we cannot read: a corrupt or newer file is kept as it is.
            let _: RunState = load_json(&path)?;
        }
        write_json_atomic(&path, state)
    }

    /// Load, change and save `state.json` under the lock, so two crewmux processes on one
    /// run never interleave their changes.
    ///
    /// # Errors
    /// As [`lock`](Self::lock), [`load_state`](Self::load_state) and the atomic write
    /// ([`Error::Io`]); `state.json` is unchanged on error.
    pub fn update_state<F>(&self, change: F) -> Result<RunState>
    where
        F: FnOnce(&mut RunState),
    {
        let _lock = self.lock()?;
        let mut state = self.load_state()?;
        change(&mut state);
        state.updated_at = chrono::Utc::now();
        write_json_atomic(&self.state_path(), &state)?;
        Ok(state)
    }

    /// Write `manifest.json` (the resolved team) atomically.
    ///
    /// # Errors
    /// [`Error::Other`] when the manifest does not serialise; [`Error::Io`] when the write fails.
    pub fn write_manifest<T: Serialize>(&self, manifest: &T) -> Result<()> {
        write_json_atomic(&self.manifest_path(), manifest)
    }

    /// Append one line to `events.jsonl` (O_APPEND, one `write` per line).
    ///
    /// # Errors
    /// [`Error::Io`] on `events.jsonl` when it cannot be opened or written.
    pub fn append_event(&self, event: &RunEvent) -> Result<()> {
        let mut line = serde_json::to_vec(event).map_err(|e| Error::Other(e.to_string()))?;
        line.push(b'\n');
        let path = self.events_path();
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .at(&path)?;
        file.write_all(&line).at(&path)?;
        Ok(())
    }

    /// Read every event; a line that does not parse is an error naming the file and line.
    ///
    /// # Errors
    /// [`Error::Io`] when `events.jsonl` exists but cannot be read; [`Error::CorruptState`] with
    /// the line number of a line that does not parse. A missing file is no events.
    pub fn read_events(&self) -> Result<Vec<RunEvent>> {
        let path = self.events_path();
        let text = match fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(vec![]),
            Err(e) => return Err(Error::io(path, e)),
        };
        text.lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(n, l)| {
                serde_json::from_str(l).map_err(|e| Error::CorruptState {
                    path: path.clone(),
                    reason: format!("line {}: {e}", n + 1),
                })
            })
            .collect()
    }
}

/// Run ids under `<project>/.crewmux/runs`, unsorted.
///
/// # Errors
/// [`Error::Io`] when the runs directory exists but cannot be listed. A missing directory is
/// no runs.
pub fn list_run_ids(project: &Path) -> Result<Vec<String>> {
    let root = runs_root(project);
    let entries = match fs::read_dir(&root) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(vec![]),
        Err(e) => return Err(Error::io(&root, e)),
    };
    let mut ids = vec![];
    for entry in entries {
        let entry = entry.at(&root)?;
        if entry.file_type().at(entry.path())?.is_dir() {
            ids.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    Ok(ids)
}

/// A request from another crewmux process to the one driving a run (`answer`, `cancel`),
/// one JSON line in `<run dir>/inbox.jsonl`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum InboxCommand {
    AnswerRun {
        text: String,
    },
    AnswerWorker {
        worker: String,
        text: String,
    },
    Cancel {
        worker: Option<String>,
        /// `crewmux cancel --grace`: seconds between SIGTERM and SIGKILL for the attempts
        /// this cancel ends (absent: the driving process's own grace, 5 s; absent too in
        /// lines written before the field).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        grace_s: Option<u64>,
    },
    /// Add a worker, retry one or send it text.
    Steer(crate::engine::steer::Steer),
}

/// The exclusive lock a driving process holds on `<run dir>/driver.lock` for its lifetime;
/// other processes use it to tell whether a run is being driven right now.
#[derive(Debug)]
pub struct DriverLock {
    _file: File,
}

impl RunStore {
    /// Take the driver lock without waiting; `Ok(None)` when another process drives the run.
    ///
    /// # Errors
    /// [`Error::Io`] on `driver.lock` when it cannot be opened or the lock call fails for a
    /// reason other than another holder.
    pub fn try_driver_lock(&self) -> Result<Option<DriverLock>> {
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(self.dir.join("driver.lock"))
            .at(self.dir.join("driver.lock"))?;
        match file.try_lock_exclusive() {
            Ok(true) => Ok(Some(DriverLock { _file: file })),
            Ok(false) => Ok(None),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Ok(None),
            Err(e) => Err(Error::io(self.dir.join("driver.lock"), e)),
        }
    }

    /// True when some process holds the driver lock.
    ///
    /// # Errors
    /// As [`try_driver_lock`](Self::try_driver_lock).
    pub fn is_driven(&self) -> Result<bool> {
        Ok(self.try_driver_lock()?.is_none())
    }

    /// Append a command for the driving process.
    ///
    /// # Errors
    /// As [`lock`](Self::lock); [`Error::Io`] on `inbox.jsonl` when it cannot be appended to or
    /// synced.
    pub fn send_command(&self, cmd: &InboxCommand) -> Result<()> {
        let _lock = self.lock()?;
        let mut line = serde_json::to_vec(cmd).map_err(|e| Error::Other(e.to_string()))?;
        line.push(b'\n');
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("inbox.jsonl"))
            .at(self.dir.join("inbox.jsonl"))?;
        file.write_all(&line).at(self.dir.join("inbox.jsonl"))?;
        file.sync_all().at(self.dir.join("inbox.jsonl"))?;
        Ok(())
    }

    /// Commands appended since byte `offset`; returns them and the new offset. A partial
    /// last line is left for the next read; a line that does not parse is skipped.
    ///
    /// # Errors
    /// [`Error::Io`] when `inbox.jsonl` exists but cannot be read. A missing inbox is no commands.
    pub fn read_commands(&self, offset: u64) -> Result<(Vec<InboxCommand>, u64)> {
        let path = self.dir.join("inbox.jsonl");
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((vec![], offset)),
            Err(e) => return Err(Error::io(path, e)),
        };
        let start = (offset as usize).min(bytes.len());
        let chunk = &bytes[start..];
        let Some(end) = chunk.iter().rposition(|&b| b == b'\n') else {
            return Ok((vec![], offset));
        };
        let cmds = chunk[..end]
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .filter_map(|l| serde_json::from_slice(l).ok())
            .collect();
        Ok((cmds, (start + end + 1) as u64))
    }

    /// Size of the inbox now, to skip commands that were handled before.
    pub fn inbox_len(&self) -> u64 {
        fs::metadata(self.dir.join("inbox.jsonl"))
            .map(|m| m.len())
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests;
