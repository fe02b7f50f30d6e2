//! The files an attempt's MCP server and the lead talk through, in `<attempt>/mcp/`: the
//! server never reaches the lead's process (it may be another process, started later, or on
//! its way back after a crash), and every file is written whole (temp file, rename) or as
//! one appended line, so a reader never sees half of one.
//!
//! | file | written by | holds |
//! | --- | --- | --- |
//! | `server-<pid>.json` | the server, at start; removed when it ends | [`ServerFile`] |
//! | `ask-<id>.json` | the server, for each `ask` or `approve` call | [`Ask`] |
//! | `reply-<id>.json` | the lead (or the server itself at its own deadline) | [`Reply`] |
//! | `progress.jsonl` | the server, one line per `progress` call | [`Progress`] |

use std::io::Write;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::error::{Error, IoContext, Result};

/// The folder of an attempt's MCP exchange.
pub fn dir(attempt_dir: &Path) -> PathBuf {
    attempt_dir.join("mcp")
}

/// Who the server says it serves; every file it writes carries the nonce, and the lead
/// refuses what does not match the attempt it watches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Caller {
    pub worker: String,
    pub attempt: u32,
    pub nonce: String,
}

/// `server-<pid>.json`: a running server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerFile {
    pub pid: u32,
    #[serde(flatten)]
    pub caller: Caller,
    pub started_at: DateTime<Utc>,
}

/// `ask-<id>.json`: a question (or an approval request) waiting for a [`Reply`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ask {
    /// `<server pid>-<n>`: unique within the attempt.
    pub id: String,
    #[serde(flatten)]
    pub caller: Caller,
    pub question: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub choices: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// Set for an approval request (the CLI's tool and its input).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<crate::domain::clarification::Approval>,
    pub asked_at: DateTime<Utc>,
}

pub use crate::domain::clarification::ToolReply as Reply;

/// One line of `progress.jsonl`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Progress {
    pub nonce: String,
    pub text: String,
    pub at: DateTime<Utc>,
}

/// Path of the ask file `id`.
pub fn ask_path(dir: &Path, id: &str) -> PathBuf {
    dir.join(format!("ask-{id}.json"))
}

/// Path of the reply file `id`.
pub fn reply_path(dir: &Path, id: &str) -> PathBuf {
    dir.join(format!("reply-{id}.json"))
}

/// Path of the server file of `pid`.
pub fn server_path(dir: &Path, pid: u32) -> PathBuf {
    dir.join(format!("server-{pid}.json"))
}

/// Path of the progress lines.
pub fn progress_path(dir: &Path) -> PathBuf {
    dir.join("progress.jsonl")
}

/// Write `value` as JSON to `path` whole (temp file, rename), without fsync: a reader never
/// sees half of it and a crash of any process loses none of it; only a power cut could, and
/// that ends the agent and its question with it (docs/mcp.md "How fast").
///
/// # Errors
/// I/O, as `store::write_replace`.
pub fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    let bytes = serde_json::to_vec(value).map_err(|e| Error::Other(e.to_string()))?;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).at(parent)?;
    }
    crate::store::write_replace(path, &bytes)
}

/// Read a JSON file; `Ok(None)` when it does not exist.
///
/// # Errors
/// I/O other than a missing file, or a file that is not the expected JSON (the error
/// names the path).
pub fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<Option<T>> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| Error::Other(format!("{}: {e}", path.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).at(path),
    }
}

/// Append one progress line (a single `write` of the whole line with `O_APPEND`).
///
/// # Errors
/// I/O.
pub fn append_progress(dir: &Path, line: &Progress) -> Result<()> {
    append_line(dir, &progress_path(dir), line)
}

/// Append `value` as one JSON line to `path` (in `dir`, made when missing): one `write` of
/// the whole line with `O_APPEND`, so lines of writers running at once do not mix.
///
/// # Errors
/// I/O, naming the path.
pub fn append_line<T: Serialize>(dir: &Path, path: &Path, value: &T) -> Result<()> {
    std::fs::create_dir_all(dir).at(dir)?;
    let mut bytes = serde_json::to_vec(value).map_err(|e| Error::Other(e.to_string()))?;
    bytes.push(b'\n');
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .at(path)?;
    f.write_all(&bytes).at(path)
}

/// The whole lines of `path` past byte `*at` (empty ones dropped), moving `*at` past the
/// last of them; a line still being appended is read next time. A missing or unreadable
/// file is nothing new.
pub fn new_lines(path: &Path, at: &mut u64) -> Vec<Vec<u8>> {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut f) = std::fs::File::open(path) else {
        return vec![];
    };
    if f.seek(SeekFrom::Start(*at)).is_err() {
        return vec![];
    }
    let mut buf = Vec::new();
    if f.read_to_end(&mut buf).is_err() {
        return vec![];
    }
    let Some(end) = buf.iter().rposition(|b| *b == b'\n') else {
        return vec![];
    };
    *at += end as u64 + 1;
    buf[..end]
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(<[u8]>::to_vec)
        .collect()
}
