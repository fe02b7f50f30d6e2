//! Disk side of the credential store: the lock beside it, reading with a permission check,
//! and atomic replacement (temp file in the same directory, fsync, rename, directory fsync).

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::error::{Error, IoContext, Result};

/// Mode of the store, its lock and its temp files.
pub const FILE_MODE: u32 = 0o600;
/// Mode of a config directory the store creates.
pub const DIR_MODE: u32 = 0o700;

/// An advisory lock (`flock`, via fs4) on `<store>.lock`, released on drop. The store file
/// itself is replaced by rename, so it cannot carry the lock.
pub struct StoreLock {
    file: File,
}

impl Drop for StoreLock {
    fn drop(&mut self) {
        // Err: nothing to do in a drop; closing the file releases the lock anyway.
        let _ = fs4::fs_std::FileExt::unlock(&self.file);
    }
}

fn lock_path(store: &Path) -> PathBuf {
    let mut name = store.file_name().unwrap_or_default().to_os_string();
    name.push(".lock");
    store.with_file_name(name)
}

fn parent_of(store: &Path) -> &Path {
    match store.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Take the lock: shared for reading, exclusive for read-modify-write. Blocks until free.
/// Creates the directory (0700) and the lock file (0600) when missing.
///
/// # Errors
/// [`Error::Io`] naming the directory or the lock file when it cannot be created or locked.
pub fn lock(store: &Path, exclusive: bool) -> Result<StoreLock> {
    let dir = parent_of(store);
    if !dir.exists() {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(DIR_MODE)
            .create(dir)
            .at(dir)?;
    }
    let path = lock_path(store);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(FILE_MODE)
        .open(&path)
        .at(&path)?;
    let locked = if exclusive {
        fs4::fs_std::FileExt::lock_exclusive(&file)
    } else {
        fs4::fs_std::FileExt::lock_shared(&file)
    };
    locked.at(&path)?;
    Ok(StoreLock { file })
}

/// Read the whole store, or `None` when it does not exist.
///
/// # Errors
/// The file is readable or writable by anyone but its owner (the fix, `chmod 600`,
/// is in the message), or it cannot be read.
pub fn read(store: &Path) -> Result<Option<Vec<u8>>> {
    let mut file = match File::open(store) {
        Ok(f) => f,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(store, e)),
    };
    let mode = file.metadata().at(store)?.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(Error::Other(format!(
            "{}: open to other users (mode {mode:o}); run `chmod 600 {}` and check who \
             could have read it",
            store.display(),
            store.display()
        )));
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).at(store)?;
    Ok(Some(bytes))
}

/// Replace the store with `bytes` atomically: a reader sees the old file or the new one,
/// never a mix. Call it with the exclusive lock held.
///
/// # Errors
/// [`Error::Other`] naming the store and the step that failed (temp file, write, fsync,
/// rename); the old store is left as it was.
pub fn write_atomic(store: &Path, bytes: &[u8]) -> Result<()> {
    let dir = parent_of(store);
    let fail = |what: &str, e: std::io::Error| {
        Error::Other(format!("{}: cannot {what}: {e}", store.display()))
    };
    // tempfile creates the file with mode 0600 and a random name (O_EXCL).
    let mut tmp = tempfile::Builder::new()
        .prefix(".credentials-")
        .suffix(".tmp")
        .permissions(fs::Permissions::from_mode(FILE_MODE))
        .tempfile_in(dir)
        .map_err(|e| fail("create a temp file", e))?;
    tmp.write_all(bytes).map_err(|e| fail("write", e))?;
    tmp.as_file().sync_all().map_err(|e| fail("fsync", e))?;
    tmp.persist(store).map_err(|e| fail("rename", e.error))?;
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| fail("fsync its directory", e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_creates_0600_and_replaces() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("sub").join("credentials.enc");
        let _lock = lock(&store, true).unwrap();
        let dir_mode = fs::metadata(store.parent().unwrap())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(dir_mode & 0o777, DIR_MODE);
        write_atomic(&store, b"one").unwrap();
        write_atomic(&store, b"two").unwrap();
        assert_eq!(read(&store).unwrap().unwrap(), b"two");
        let mode = fs::metadata(&store).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, FILE_MODE);
        let leftovers: Vec<_> = fs::read_dir(store.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }

    #[test]
    fn missing_is_none_and_group_readable_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("credentials.enc");
        assert!(read(&store).unwrap().is_none());
        fs::write(&store, b"x").unwrap();
        fs::set_permissions(&store, fs::Permissions::from_mode(0o640)).unwrap();
        let err = read(&store).unwrap_err().to_string();
        assert!(
            err.contains("mode 640") && err.contains("chmod 600"),
            "{err}"
        );
    }
}
