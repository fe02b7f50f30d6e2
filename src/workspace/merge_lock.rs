//! One `crewmux merge` at a time per checkout.
//!
//! A merge reads the user's tree (is it clean?), writes its index and HEAD, then records
//! what it took. Two at once (two terminals, or the dashboard's merge and a script's)
//! raced on git's `index.lock`, and one of them ended on git's raw `Unable to write index`
//! half way. The merge holds an exclusive lock on `<git dir>/crewmux-merge.lock` (the
//! git dir of the checkout it merges into, as `git rev-parse --absolute-git-dir` names
//! it, so a worktree of the user's own has its own lock) from its first look at the tree
//! to its record; a second merge says in one line that it waits, and goes on when the
//! first is done (it then sees what the first did: `already merged`, or its own merge on
//! top).

use std::fs::{File, OpenOptions};

use fs4::fs_std::FileExt;

use super::git::Git;
use crate::error::{Error, Result};

/// File name of the lock inside the checkout's git dir.
pub const MERGE_LOCK_FILE: &str = "crewmux-merge.lock";

/// Held while a merge runs; released on drop (and by the kernel if the process dies).
#[derive(Debug)]
pub struct MergeLock {
    _file: File,
}

/// Take the merge lock of the checkout `git` runs in, waiting for a merge that holds it
/// (said once on stderr through `waiting`, with the path).
///
/// # Errors
/// The git dir cannot be asked, or the lock file cannot be opened or locked
/// ([`Error::Io`] with its path).
pub fn lock(git: &Git, waiting: &mut dyn FnMut(String)) -> Result<MergeLock> {
    let dir = git.line(&["rev-parse", "--absolute-git-dir"])?;
    let path = std::path::Path::new(&dir).join(MERGE_LOCK_FILE);
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| Error::io(&path, e))?;
    match file.try_lock_exclusive() {
        Ok(true) => return Ok(MergeLock { _file: file }),
        Ok(false) => {}
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        Err(e) => return Err(Error::io(&path, e)),
    }
    waiting(format!(
        "another crewmux merge is running in {} (it holds {}); waiting for it to finish",
        git.dir().display(),
        path.display()
    ));
    file.lock_exclusive().map_err(|e| Error::io(&path, e))?;
    Ok(MergeLock { _file: file })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_merge_waits_for_the_first_and_says_so_once() {
        let repo = tempfile::tempdir().unwrap();
        let git = Git::new(repo.path());
        git.run(&["init", "-q"]).unwrap();
        let mut said = vec![];
        let first = lock(&git, &mut |l| said.push(l)).unwrap();
        assert!(said.is_empty(), "a free lock is taken without a word");
        let (tx, rx) = std::sync::mpsc::channel();
        let path = repo.path().to_path_buf();
        let second = std::thread::spawn(move || {
            let git = Git::new(&path);
            let lock = lock(&git, &mut |l| tx.send(l).unwrap());
            lock.map(|_| ())
        });
        let line = rx.recv_timeout(std::time::Duration::from_secs(10)).unwrap();
        assert!(
            line.starts_with("another crewmux merge is running in "),
            "{line}"
        );
        assert!(
            !second.is_finished(),
            "the second waits while the first holds it"
        );
        drop(first);
        second.join().unwrap().unwrap();
    }
}
