//! Reading and writing the run directory's JSON files, and loading `state.json` with the
//! fix that works for this run when it is missing or cannot be read.

use std::fs;
use std::path::Path;

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::{planning, write_atomic, RunStore};
use crate::domain::{RunState, SCHEMA_VERSION};
use crate::error::{Error, Result};

impl RunStore {
    /// Load `state.json`. Errors name the file: missing, unreadable, not JSON, or a newer
    /// `schema_version` than this build knows ([`SCHEMA_VERSION`]); all but the last also
    /// name the fix that works for this run ([`RunStore::state_fix`]).
    ///
    /// # Errors
    /// [`Error::CorruptState`] naming `state.json` (see [`load_json`]); [`Error::Usage`]
    /// saying so when the run was stopped while it was planned ([`planning::interrupted`]).
    pub fn load_state(&self) -> Result<RunState> {
        let path = self.state_path();
        if !path.exists() {
            if let Some(why) = planning::interrupted(&self.dir) {
                return Err(Error::Usage(why));
            }
        }
        let broken = |reason: String| Error::CorruptState {
            path: path.clone(),
            reason: format!("{reason}; {}", self.state_fix()),
        };
        let raw = match fs::read(&path) {
            Ok(bytes) => json_value(&bytes).map_err(broken)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(broken("missing".into()))
            }
            Err(e) => return Err(broken(format!("cannot read: {e}"))),
        };
        check_schema(&path, &raw)?;
        serde_json::from_value(raw).map_err(|e| {
            broken(format!(
                "unexpected content ({e}); the file is left as it is"
            ))
        })
    }

    /// What to do about a `state.json` that is missing or cannot be read: take the state a
    /// driver saved aside when there is one ([`super::STATE_ASIDE`]; once that driver has
    /// ended, when one still drives the run), else restore the file or
    /// remove the run (`clean --purge --force`, the only clean that takes a run whose
    /// state is lost).
    pub fn state_fix(&self) -> String {
        let id = self
            .dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let remove = format!("`crewmux clean --run {id} --purge --force` removes the run");
        let aside = self.aside_path();
        if aside.exists() {
            // While a driver still saves there, moving the file now would be undone.
            let when = if self.is_driven().unwrap_or(false) {
                "once the crewmux process that drives the run (and saves there) ends, "
            } else {
                ""
            };
            format!(
                "crewmux saved the run's state to {} instead: {when}check it, then `mv {} {}`; or {remove}",
                aside.display(),
                aside.display(),
                self.state_path().display()
            )
        } else {
            format!("restore it from a copy, or {remove}")
        }
    }
}

/// Serialise `value` as pretty JSON and write it atomically.
///
/// # Errors
/// [`Error::Other`] when `value` does not serialise; [`Error::Io`] from the atomic write.
pub fn write_json_atomic<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    let mut bytes = serde_json::to_vec_pretty(value).map_err(|e| Error::Other(e.to_string()))?;
    bytes.push(b'\n');
    write_atomic(path, &bytes)
}

/// Read a JSON file with a `schema_version` field. Errors name the file and say what is
/// wrong: truncated or corrupt JSON, or a schema newer than [`SCHEMA_VERSION`].
///
/// # Errors
/// [`Error::CorruptState`] naming `path`: unreadable, not JSON, a newer `schema_version`, or
/// content of the wrong shape.
pub fn load_json<T: DeserializeOwned>(path: &Path) -> Result<T> {
    let corrupt = |reason: String| Error::CorruptState {
        path: path.to_path_buf(),
        reason,
    };
    let bytes = fs::read(path).map_err(|e| corrupt(format!("cannot read: {e}")))?;
    let raw = json_value(&bytes).map_err(corrupt)?;
    check_schema(path, &raw)?;
    serde_json::from_value(raw).map_err(|e| {
        corrupt(format!(
            "unexpected content ({e}); the file is left as it is"
        ))
    })
}

/// `bytes` as JSON, or why not (the reason of a [`Error::CorruptState`]).
fn json_value(bytes: &[u8]) -> std::result::Result<serde_json::Value, String> {
    serde_json::from_slice(bytes)
        .map_err(|e| format!("not valid JSON ({e}); the file is left as it is"))
}

/// Refuse a `schema_version` newer than [`SCHEMA_VERSION`] (a newer crewmux's file).
///
/// # Errors
/// [`Error::CorruptState`] naming `path` and the fix (upgrade crewmux).
fn check_schema(path: &Path, raw: &serde_json::Value) -> Result<()> {
    if let Some(v) = raw.get("schema_version").and_then(|v| v.as_u64()) {
        if v > u64::from(SCHEMA_VERSION) {
            return Err(Error::CorruptState {
                path: path.to_path_buf(),
                reason: format!(
                    "schema_version {v} is newer than this crewmux understands ({SCHEMA_VERSION}); upgrade crewmux"
                ),
            });
        }
    }
    Ok(())
}
