//! A remote attempt's output while it runs. On the host the pane's output goes to
//! `output.log` in the attempt folder there (`pipe-pane`, as locally); here each running
//! remote attempt has one `ssh … tail` on the host's shared connection whose stdout is
//! appended to the local `output.log`, so the driver's readers (output panel, stall and
//! rate-limit lines, idle time) see it as they see a local attempt's, and read it the
//! same bounded way (from its end).
//!
//! - The stream starts at the local file's length (`tail -c +<len + 1> -F`), so a stream
//!   started again after the connection died, or by a reattached driver, goes on where
//!   the last one stopped. `-F` follows a file that does not exist yet (GNU and BusyBox).
//! - One ssh process per running remote attempt for its whole life, none per poll. One
//!   that ended (the connection died) is started again at the next poll, at most every
//!   [`RESTART_EVERY`].
//! - On the host, `tail` ends when the stream's stdin closes (`cat` there reads it until
//!   end of file, then ends `tail`): when the attempt ends here, or when the connection
//!   goes, nothing is left following the file there.
//! - When the attempt ends its stream is stopped and its files come back whole (the
//!   local `output.log` replaced by the host's), so the final output is the host's
//!   exactly, whatever the stream missed.
//! - Lines that start with the exit marker (`__CREWMUX_EXIT_`) are left out of the
//!   stream ([`MarkerGate`]): an exit must be settled from the files that come back with
//!   it (`exit.json`, the result), never from a marker that arrived before them.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Stdio};
use std::time::{Duration, Instant};

use super::ssh::{remote_line, SshLink};
use crate::backend::Liveness;
use crate::error::{Error, Result};

/// Least time between two starts of one attempt's stream.
const RESTART_EVERY: Duration = Duration::from_secs(2);
/// How long a stopped stream gets to end by itself before it is killed.
const STOP_LIMIT: Duration = Duration::from_secs(2);

/// One attempt's stream: the ssh process, the stdin that keeps `tail` alive there, and
/// the thread that copies its stdout into the local file.
struct Stream {
    child: Child,
    stdin: Option<ChildStdin>,
    copier: Option<std::thread::JoinHandle<()>>,
    started: Instant,
}

/// Holds back the lines of a byte stream that start with the exit marker: the bytes at
/// the start of a line wait while they could still be the marker's prefix, and a line
/// that is a marker is dropped up to its newline.
#[derive(Debug, Default)]
pub struct MarkerGate {
    /// Bytes of the current line held back (a prefix of the marker).
    held: Vec<u8>,
    /// Inside a line that is not at its start (its bytes pass).
    mid_line: bool,
    /// Inside a marker line (its bytes are dropped).
    dropping: bool,
}

impl MarkerGate {
    /// The bytes of `chunk` that may go out now.
    pub fn pass(&mut self, chunk: &[u8]) -> Vec<u8> {
        let marker = crate::launch::MARKER_PREFIX.as_bytes();
        let mut out = Vec::with_capacity(chunk.len());
        for &b in chunk {
            if self.dropping {
                self.dropping = b != b'\n';
                continue;
            }
            if self.mid_line {
                out.push(b);
                self.mid_line = b != b'\n';
                continue;
            }
            self.held.push(b);
            if self.held.len() == marker.len() && self.held == marker {
                self.held.clear();
                self.dropping = true;
            } else if !marker.starts_with(&self.held) {
                out.append(&mut self.held);
                self.mid_line = b != b'\n';
            }
        }
        out
    }
}

/// Copy `from` into `to` through a [`MarkerGate`] until end of file.
fn copy_gated(mut from: impl std::io::Read, mut to: std::fs::File) {
    use std::io::Write;
    let mut gate = MarkerGate::default();
    let mut buf = vec![0u8; 8192];
    loop {
        match from.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => {
                if let Err(e) = to.write_all(&gate.pass(&buf[..n])) {
                    tracing::warn!("output stream: {e}");
                    return;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                tracing::debug!("output stream: {e}");
                return;
            }
        }
    }
}

/// The output streams of one host's running attempts, by local `output.log`.
#[derive(Default)]
pub struct Streams {
    live: HashMap<PathBuf, Stream>,
}

/// The host-side command line that streams `remote_log` from byte `from` (0-based) until
/// its stdin closes.
///
/// # Errors
/// A path with a NUL byte.
pub fn follow_line(remote_log: &Path, from: u64) -> Result<String> {
    let file = remote_line(&[remote_log.display().to_string()])?;
    let script = format!(
        "tail -c +{start} -F -- {file} 2>/dev/null & t=$!; cat >/dev/null; kill $t 2>/dev/null",
        start = from + 1
    );
    remote_line(&["sh", "-c", &script])
}

impl Streams {
    /// Make sure `local_log` follows `remote_log` on `link`'s host (see the module docs).
    pub fn follow(&mut self, link: &SshLink, remote_log: &Path, local_log: &Path) {
        if let Some(s) = self.live.get_mut(local_log) {
            match s.child.try_wait() {
                Ok(None) => return,
                Ok(Some(status)) => {
                    tracing::debug!("output stream of {} ended ({status})", local_log.display());
                }
                Err(e) => tracing::debug!("output stream of {}: {e}", local_log.display()),
            }
            if s.started.elapsed() < RESTART_EVERY {
                return;
            }
            self.stop(local_log);
        }
        match start(link, remote_log, local_log) {
            Ok(s) => {
                self.live.insert(local_log.to_path_buf(), s);
            }
            Err(e) => tracing::warn!(
                "host {}: cannot stream {}: {e}",
                link.host,
                remote_log.display()
            ),
        }
    }

    /// Stop following `local_log` (its attempt ended); waits up to [`STOP_LIMIT`] for
    /// the stream to end, then kills it.
    pub fn stop(&mut self, local_log: &Path) {
        let Some(mut s) = self.live.remove(local_log) else {
            return;
        };
        // Closing stdin ends `cat`, then `tail`, on the host; ssh then ends here.
        drop(s.stdin.take());
        let end = Instant::now() + STOP_LIMIT;
        loop {
            match s.child.try_wait() {
                Ok(Some(_)) => return Self::join(&mut s),
                Ok(None) if Instant::now() < end => std::thread::sleep(Duration::from_millis(20)),
                Ok(None) | Err(_) => break,
            }
        }
        if let Err(e) = s.child.kill() {
            tracing::debug!("output stream of {}: {e}", local_log.display());
        }
        if let Err(e) = s.child.wait() {
            tracing::debug!("output stream of {}: {e}", local_log.display());
        }
        Self::join(&mut s);
    }

    /// Wait for the copier (its ssh ended, so its stdout is at its end).
    fn join(s: &mut Stream) {
        if let Some(t) = s.copier.take() {
            if t.join().is_err() {
                tracing::warn!("an output stream's copier panicked");
            }
        }
    }

    /// How many streams run (tests, the benchmark).
    pub fn running(&self) -> usize {
        self.live.len()
    }
}

impl Drop for Streams {
    fn drop(&mut self) {
        let logs: Vec<PathBuf> = self.live.keys().cloned().collect();
        for log in logs {
            self.stop(&log);
        }
    }
}

/// Follow the output of a remote attempt while the poll sees its pane `live` and stop
/// once it ended; `streams` is `None` where the run is not driven, `remote_dir` the
/// attempt folder on the host.
pub fn observe(
    streams: Option<&mut Streams>,
    link: &SshLink,
    remote_dir: Option<PathBuf>,
    local_log: &Path,
    live: Liveness,
) {
    let Some(streams) = streams else { return };
    match (live, remote_dir) {
        (Liveness::Alive, Some(dir)) => streams.follow(link, &dir.join("output.log"), local_log),
        (Liveness::Dead { .. } | Liveness::Gone, _) => streams.stop(local_log),
        _ => {}
    }
}

/// Start the stream of `remote_log` into `local_log` from the local file's length.
fn start(link: &SshLink, remote_log: &Path, local_log: &Path) -> Result<Stream> {
    let out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(local_log)
        .map_err(|e| Error::io(local_log, e))?;
    let from = out.metadata().map_err(|e| Error::io(local_log, e))?.len();
    let mut cmd = link.command(&follow_line(remote_log, from)?);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = cmd
        .spawn()
        .map_err(|e| Error::Other(format!("ssh cannot start: {e}")))?;
    let stdin = child.stdin.take();
    let copier = child.stdout.take().and_then(|stdout| {
        std::thread::Builder::new()
            .name("crewmux-host-output".into())
            .spawn(move || copy_gated(stdout, out))
            .map_err(|e| tracing::warn!("cannot start an output stream's copier: {e}"))
            .ok()
    });
    Ok(Stream {
        child,
        stdin,
        copier,
        started: Instant::now(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// Run the host-side line here with `sh`, as ssh would on the host.
    fn local_stream(line: &str, into: &Path) -> Child {
        let words = shlex::split(line).unwrap();
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(into)
            .unwrap();
        std::process::Command::new(&words[0])
            .args(&words[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::from(out))
            .spawn()
            .unwrap()
    }

    fn wait_until(mut ok: impl FnMut() -> bool) -> bool {
        let end = Instant::now() + Duration::from_secs(10);
        while Instant::now() < end {
            if ok() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    #[test]
    fn the_gate_drops_marker_lines_and_passes_everything_else_whatever_the_chunks() {
        let text = b"one\r\n__CREWMUX_EXIT_ab12__:0\r\n_under_score\n__CREWMUX_x\nsay __CREWMUX_EXIT_ab12__:0\nlast";
        let want: &[u8] = b"one\r\n_under_score\n__CREWMUX_x\nsay __CREWMUX_EXIT_ab12__:0\nlast";
        for size in [1, 2, 5, 16, text.len()] {
            let mut gate = MarkerGate::default();
            let got: Vec<u8> = text.chunks(size).flat_map(|c| gate.pass(c)).collect();
            assert_eq!(
                String::from_utf8_lossy(&got),
                String::from_utf8_lossy(want),
                "{size}"
            );
        }
        // A line that may still become a marker waits for its next bytes.
        let mut gate = MarkerGate::default();
        assert_eq!(gate.pass(b"x\n__CREW"), b"x\n");
        assert_eq!(gate.pass(b"S\n"), b"__CREWS\n");
    }

    #[test]
    fn a_stream_goes_on_from_the_local_length_and_ends_with_its_stdin() {
        let dir = tempfile::tempdir().unwrap();
        let remote = dir.path().join("remote.log");
        let local = dir.path().join("local.log");
        std::fs::write(&remote, "one\ntwo\n").unwrap();
        // What an earlier stream already brought.
        std::fs::write(&local, "one\n").unwrap();
        let mut child = local_stream(&follow_line(&remote, 4).unwrap(), &local);
        assert!(wait_until(
            || std::fs::read_to_string(&local).unwrap() == "one\ntwo\n"
        ));
        std::fs::OpenOptions::new()
            .append(true)
            .open(&remote)
            .unwrap()
            .write_all(b"three\n")
            .unwrap();
        assert!(wait_until(
            || std::fs::read_to_string(&local).unwrap() == "one\ntwo\nthree\n"
        ));
        drop(child.stdin.take());
        assert!(
            wait_until(|| child.try_wait().unwrap().is_some()),
            "the stream ends when its stdin closes"
        );
    }
}
