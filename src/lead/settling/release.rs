//! Letting the wrappers of ended attempts go (see `launch::marker_wait`): a wrapper on this
//! machine stays after its marker until the driver has read the marker in `output.log`.
//! An attempt settles from `exit.json`, which the wrapper writes before it prints the
//! marker, so the marker is often not in `output.log` yet when the watch ends: such an
//! attempt's log is looked at again every [`LOOK_EVERY`] until the marker is there (the
//! wrapper then goes at once) or the wrapper's own bound is over.

use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How often the log of an ended attempt whose marker is not in it yet is looked at.
pub(in crate::lead) const LOOK_EVERY: Duration = Duration::from_millis(10);

/// How much of the end of `output.log` is read to find the marker, bytes (the wrapper
/// prints it last).
const MARKER_TAIL_BYTES: u64 = 4096;

/// An ended attempt whose wrapper waits for the driver.
struct Waiting {
    dir: PathBuf,
    nonce: String,
    /// `output.log`'s length when last read, bytes.
    len: Option<u64>,
    /// The wrapper leaves by itself then.
    until: Instant,
}

/// The wrappers waiting to be let go.
#[derive(Default)]
pub(in crate::lead) struct Releases {
    waiting: Vec<Waiting>,
}

impl Releases {
    /// The attempt in `dir` ended: its wrapper goes now when its marker was read already
    /// (`marker_read`), else once the marker is in `output.log`.
    pub(in crate::lead) fn ended(
        &mut self,
        dir: &Path,
        nonce: &str,
        marker_read: bool,
        now: Instant,
    ) {
        if marker_read {
            crate::launch::release(dir);
            return;
        }
        let bound = Duration::from_secs(crate::launch::MARKER_WAIT_S.into());
        self.waiting.push(Waiting {
            dir: dir.to_path_buf(),
            nonce: nonce.to_string(),
            len: None,
            until: now + bound,
        });
    }

    /// Let go the wrappers whose marker is in `output.log` now; forget those past their
    /// bound (gone by themselves).
    pub(in crate::lead) fn turn(&mut self, now: Instant) {
        self.waiting.retain_mut(|w| {
            if marker_now(w) {
                crate::launch::release(&w.dir);
                return false;
            }
            now < w.until
        });
    }

    /// How soon the loop is to look again: while a wrapper waits, [`LOOK_EVERY`].
    pub(in crate::lead) fn wait(&self) -> Option<Duration> {
        (!self.waiting.is_empty()).then_some(LOOK_EVERY)
    }
}

/// True when the end of the waiting attempt's `output.log` holds its marker (read only
/// when the log grew since the last look).
fn marker_now(w: &mut Waiting) -> bool {
    let log = w.dir.join("output.log");
    let Ok(mut f) = std::fs::File::open(&log) else {
        return false;
    };
    let len = f.metadata().map_or(0, |m| m.size());
    if w.len == Some(len) {
        return false;
    }
    w.len = Some(len);
    let from = len.saturating_sub(MARKER_TAIL_BYTES);
    let mut end = Vec::new();
    if let Err(e) = f
        .seek(SeekFrom::Start(from))
        .and_then(|_| f.take(MARKER_TAIL_BYTES).read_to_end(&mut end))
    {
        tracing::debug!("{}: {e}", log.display());
        return false;
    }
    crate::launch::find_marker(&String::from_utf8_lossy(&end), &w.nonce).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::OpenOptionsExt;

    /// The attempt's FIFO opened for reading as its wrapper holds it; what it got so far.
    fn wrapper_end(dir: &Path) -> std::fs::File {
        crate::launch::make_release_fifo(dir).unwrap();
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits())
            .open(dir.join(crate::launch::RELEASE_FIFO))
            .unwrap()
    }

    fn got(fifo: &mut std::fs::File) -> Vec<u8> {
        let mut buf = [0u8; 16];
        match fifo.read(&mut buf) {
            Ok(n) => buf[..n].to_vec(),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => vec![],
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn a_wrapper_is_let_go_once_its_marker_is_in_output_log() {
        let tmp = tempfile::tempdir().unwrap();
        let mut fifo = wrapper_end(tmp.path());
        let log = tmp.path().join("output.log");
        std::fs::write(&log, "the last line\n").unwrap();
        let mut r = Releases::default();
        let t0 = Instant::now();
        r.ended(tmp.path(), "abc123", false, t0);
        r.turn(t0);
        assert!(got(&mut fifo).is_empty(), "no marker yet");
        assert_eq!(r.wait(), Some(LOOK_EVERY));
        // Another attempt's marker is not this one's.
        std::fs::write(&log, "the last line\n\n__CREWMUX_EXIT_other__:0\n").unwrap();
        r.turn(t0);
        assert!(got(&mut fifo).is_empty(), "another nonce");
        std::fs::write(&log, "the last line\n\n__CREWMUX_EXIT_abc123__:4\n").unwrap();
        r.turn(t0);
        assert_eq!(got(&mut fifo), b"\n");
        assert_eq!(r.wait(), None, "nothing waits any more");
    }

    #[test]
    fn a_marker_read_already_lets_it_go_at_once_and_a_wait_past_its_bound_is_forgotten() {
        let tmp = tempfile::tempdir().unwrap();
        let mut fifo = wrapper_end(tmp.path());
        let mut r = Releases::default();
        let t0 = Instant::now();
        r.ended(tmp.path(), "abc123", true, t0);
        assert_eq!(got(&mut fifo), b"\n");
        assert_eq!(r.wait(), None);
        r.ended(tmp.path(), "abc123", false, t0);
        r.turn(t0 + Duration::from_secs(crate::launch::MARKER_WAIT_S.into()));
        assert_eq!(r.wait(), None, "the wrapper left by itself");
        // No reader (the wrapper is gone), no FIFO (an SSH host's attempt): nothing blocks.
        drop(fifo);
        crate::launch::release(tmp.path());
        crate::launch::release(&tmp.path().join("nowhere"));
    }
}
