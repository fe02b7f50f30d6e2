//! Atomic file replacement: write a temp file beside the target, fsync it, rename it over
//! the target, fsync the directory (the agent-of-empires habit; POSIX rename(2) is atomic).

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::Path;

use crate::error::{IoContext, Result};

/// Replace `path` with `bytes` so that a reader sees either the old or the new content,
/// never a mix, even if this process dies mid-write.
///
/// # Errors
/// [`crate::error::Error::Io`] naming the temp file or `path` when the write, fsync or rename
/// fails; the temp file is removed and `path` keeps its old content.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(
        ".{name}.tmp-{}-{}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ));
    let result = (|| -> Result<()> {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .at(&tmp)?;
        file.write_all(bytes).at(&tmp)?;
        file.sync_all().at(&tmp)?;
        fs::rename(&tmp, path).at(path)?;
        // The rename is done: a directory that cannot be synced leaves the new file in
        // place, only less durable against a power cut; say so and go on.
        if let Err(e) = File::open(dir).and_then(|d| d.sync_all()) {
            tracing::warn!(
                "cannot sync directory {} after replacing {}: {e}",
                dir.display(),
                path.display()
            );
        }
        Ok(())
    })();
    if result.is_err() {
        // Best effort: the temp file has a unique name and is never read; the caller gets
        // the write's own error.
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Replace `path` with `bytes` through a temp file and a rename, without fsync: readers
/// never see a half-written file, but a power cut may lose it. For files that are made
/// again when lost (an attempt's prompt and wrapper: a lost attempt is relaunched); state
/// files use [`write_atomic`].
///
/// # Errors
/// [`crate::error::Error::Io`] naming the temp file or `path`; `path` keeps its old content.
pub fn write_replace(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let result = fs::write(&tmp, bytes)
        .at(&tmp)
        .and_then(|()| fs::rename(&tmp, path).at(path));
    if result.is_err() {
        // Best effort: the temp file is named after this process and is never read.
        let _ = fs::remove_file(&tmp);
    }
    result
}
