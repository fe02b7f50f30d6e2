//! The wrapper's wait for its marker in `output.log`, and the driver's end of it.
//!
//! tmux discards what it has not read of a pane's output once the pane's process is gone
//! and its pty looks drained (a busy server lags behind a fast writer), so the wrapper
//! stays after printing its marker until the marker is in `output.log`: everything printed
//! before it is there too. The wait lasts 5 s at most (a stopped server, or no driver,
//! does not hold the pane longer).
//!
//! The FIFO is removed when the wait ends, so an ended attempt's directory holds regular
//! files only: a program that reads every file of a run (a backup, a search, a test that
//! looks for secrets) would otherwise block opening it, waiting for a writer that never
//! comes.
//!
//! Locally the wait forks one process and runs nothing while it waits: the wrapper blocks
//! reading the attempt's FIFO [`RELEASE_FIFO`] (made with the attempt's files), and the
//! driver, which reads every `output.log` anyway, writes a line into it once it has read
//! the marker there ([`release`]). The bound is a `sleep 5` that holds the FIFO's write
//! end: when it ends, the read sees end of file. Looking for the marker with `tail | grep`
//! every 100 ms instead forked two processes per ending pane ten times a second, which
//! kept the tmux server and the machine from the launches and polls of a busy run.
//!
//! On an SSH host the driver reads a copy of `output.log` brought back, so the wrapper
//! there looks for the marker itself, every 100 ms.

use std::io::Write;
use std::path::Path;

use crate::error::{Error, Result};

/// The FIFO in an attempt's directory the driver lets the wrapper go through.
pub const RELEASE_FIFO: &str = ".marker-seen";

/// The longest wait for the marker, seconds.
pub const MARKER_WAIT_S: u32 = 5;

/// Make the attempt directory's [`RELEASE_FIFO`] (replacing one left by an earlier
/// launch of the same attempt).
///
/// # Errors
/// [`Error::Io`] when it cannot be made (a file system without FIFOs).
pub fn make_release_fifo(dir: &Path) -> Result<()> {
    let path = dir.join(RELEASE_FIFO);
    match std::fs::remove_file(&path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(Error::io(&path, e)),
    }
    nix::unistd::mkfifo(
        &path,
        nix::sys::stat::Mode::S_IRUSR | nix::sys::stat::Mode::S_IWUSR,
    )
    .map_err(|e| Error::io(&path, e.into()))
}

/// Let the wrapper of the attempt in `dir` go: its marker is in `output.log`. Nothing
/// happens when no wrapper waits (it is gone, or the attempt has no FIFO): the write end
/// is opened without blocking.
pub fn release(dir: &Path) {
    use std::os::unix::fs::OpenOptionsExt;
    let path = dir.join(RELEASE_FIFO);
    let opened = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits())
        .open(&path);
    match opened {
        Ok(mut fifo) => {
            if let Err(e) = fifo.write_all(b"\n") {
                tracing::debug!("{}: {e}", path.display());
            }
        }
        // ENXIO: no reader (the wrapper left, by its bound or before the FIFO was opened);
        // NotFound: an attempt without one (an SSH host's, or an older crewmux's).
        Err(e) => tracing::trace!("{}: {e}", path.display()),
    }
}

/// The wrapper's lines that print the marker (the `printf` of `marker`) and wait for it
/// to be in `output.log`: on the FIFO when `fifo`, else by looking every 100 ms. `nonce`
/// is quoted for `sh`. The helpers of the wait do not carry the attempt's nonce: they are
/// not the attempt's, and are not reaped (a reaped `sleep` would end the wait early).
pub(super) fn print_and_wait(marker: &str, nonce: &str, fifo: bool) -> String {
    let unset = format!("unset {}\n", super::ATTEMPT_ENV);
    if fifo {
        return format!(
            "{unset}\
             f=\"$dir/{RELEASE_FIFO}\"\n\
             if [ -p \"$f\" ]; then\n\
             sleep {MARKER_WAIT_S} > \"$f\" &\n\
             exec 3< \"$f\"\n\
             {marker}\
             read -r _ <&3\n\
             kill $! 2>/dev/null\n\
             exec 3<&-\n\
             rm -f \"$f\"\n\
             else\n\
             {marker}\
             fi\n"
        );
    }
    format!(
        "{marker}\
         {unset}\
         m='__CREWMUX_''EXIT_'{nonce}'__'\n\
         i=0\n\
         while [ \"$i\" -lt {tries} ] && ! tail -c 1024 \"$dir/output.log\" 2>/dev/null | grep -qF \"$m\"; do sleep 0.1; i=$((i+1)); done\n",
        tries = MARKER_WAIT_S * 10,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launch::test_wrapper::started_until_marker;
    use std::time::{Duration, Instant};

    /// The processes whose parent is `pid` (from `/proc/<pid>/stat`).
    fn children(pid: u32) -> Vec<(u32, String)> {
        let mut found = vec![];
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(p) = entry.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
                continue;
            };
            // pid (comm) state ppid …: the comm may hold spaces, the last ')' ends it.
            let Some((head, rest)) = stat.rsplit_once(')') else {
                continue;
            };
            let ppid = rest.split_whitespace().nth(1).and_then(|v| v.parse().ok());
            if ppid == Some(pid) {
                let comm = head.split_once('(').map_or("", |(_, c)| c).to_string();
                found.push((p, comm));
            }
        }
        found
    }

    #[test]
    fn here_the_wrapper_waits_on_its_fifo_forking_nothing_until_the_driver_lets_it_go() {
        let tmp = tempfile::tempdir().unwrap();
        let (mut child, _) = started_until_marker(tmp.path(), true);
        std::thread::sleep(Duration::from_millis(300));
        assert!(
            child.try_wait().unwrap().is_none(),
            "it waits for the driver"
        );
        let first = children(child.id());
        assert_eq!(first.len(), 1, "one helper while it waits: {first:?}");
        assert_eq!(first[0].1, "sleep", "{first:?}");
        std::thread::sleep(Duration::from_millis(500));
        assert_eq!(children(child.id()), first, "nothing else was forked");
        let start = Instant::now();
        release(tmp.path());
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(4));
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "{:?}",
            start.elapsed()
        );
        // Its helper went with it.
        let helper = first[0].0;
        let gone = || {
            let state = std::fs::read_to_string(format!("/proc/{helper}/stat"));
            state.map_or(true, |s| s.contains(") Z ") || s.contains(") X "))
        };
        let end = Instant::now() + Duration::from_secs(3);
        while !gone() && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(gone(), "the sleep outlived the wait");
        assert!(
            !tmp.path().join(RELEASE_FIFO).exists(),
            "the FIFO outlived the wait"
        );
    }

    #[test]
    fn with_no_driver_the_wrapper_leaves_by_itself_within_its_bound() {
        let tmp = tempfile::tempdir().unwrap();
        let start = Instant::now();
        let (mut child, _) = started_until_marker(tmp.path(), true);
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(4));
        let took = start.elapsed();
        let bound = Duration::from_secs(MARKER_WAIT_S.into());
        assert!(
            took >= bound - Duration::from_millis(500) && took < bound * 2,
            "left after {took:?}"
        );
        // Nothing is left that would block a reader of every file of the run.
        assert!(!tmp.path().join(RELEASE_FIFO).exists());
    }
}
