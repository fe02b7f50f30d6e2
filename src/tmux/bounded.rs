//! Every tmux client process runs with a time limit: a server that does not answer (stopped
//! with SIGSTOP, wedged) must not hang `status`, `cancel` or the driver. The client is
//! killed at the limit and the caller gets [`Error::Timeout`] naming the socket.

use std::io::{Read, Write};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use wait_timeout::ChildExt;

use crate::error::{Error, Result};

/// Limit of one tmux call (a listing, a capture, a paste), seconds.
pub const CALL_LIMIT: Duration = Duration::from_secs(3);
/// Limit of one tmux script (a batch of up to 16 new windows), seconds.
pub const SCRIPT_LIMIT: Duration = Duration::from_secs(10);

/// Run `cmd` with `stdin` fed to it, stdout and stderr collected, for at most `limit`.
///
/// # Errors
/// The program cannot start (`Io`), or it did not end within `limit` (`Timeout`,
/// naming `socket`); a non-zero exit is not an error here (see `Output::status`).
pub fn output_within(
    mut cmd: Command,
    stdin: Option<&[u8]>,
    limit: Duration,
    socket: &str,
) -> Result<Output> {
    super::locale::give_utf8(&mut cmd);
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .map_err(|e| Error::Other(format!("tmux -L {socket}: {e}")))?;
    if let (Some(bytes), Some(mut pipe)) = (stdin, child.stdin.take()) {
        // A stopped server may not read its client's stdin: write from a thread so the
        // limit still holds; the pipe closes when the thread ends.
        let bytes = bytes.to_vec();
        std::thread::spawn(move || {
            if let Err(e) = pipe.write_all(&bytes) {
                tracing::debug!("tmux stdin: {e}");
            }
        });
    }
    let out = child.stdout.take().map(reader);
    let err = child.stderr.take().map(reader);
    let status = match child
        .wait_timeout(limit)
        .map_err(|e| Error::system(format!("waiting for tmux -L {socket}"), e))?
    {
        Some(status) => status,
        None => {
            // Killing our own client is all we can do; it may have ended meanwhile.
            if let Err(e) = child.kill() {
                tracing::debug!("kill tmux client: {e}");
            }
            if let Err(e) = child.wait() {
                tracing::debug!("reap tmux client: {e}");
            }
            return Err(Error::Timeout {
                program: format!("the tmux server on socket {socket}"),
                secs: limit.as_secs(),
                hint: format!(
                    "is it stopped? (`tmux -L {socket} list-sessions` hangs too); crewmux tries again"
                ),
            });
        }
    };
    let join = |h: Option<std::thread::JoinHandle<Vec<u8>>>| {
        h.and_then(|h| h.join().ok()).unwrap_or_default()
    };
    Ok(Output {
        status,
        stdout: join(out),
        stderr: join(err),
    })
}

/// Read a pipe to its end on a thread (a full pipe must not block the child).
fn reader<R: Read + Send + 'static>(mut pipe: R) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Err(e) = pipe.read_to_end(&mut buf) {
            tracing::debug!("tmux output: {e}");
        }
        buf
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_past_the_limit_is_killed_and_named() {
        let mut cmd = Command::new("sleep");
        cmd.arg("30");
        let started = std::time::Instant::now();
        let err = output_within(cmd, None, Duration::from_millis(300), "sock").unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(matches!(err, Error::Timeout { .. }));
        assert!(err.to_string().contains("socket sock"), "{err}");
    }

    #[test]
    fn output_and_stdin_pass_through_within_the_limit() {
        let mut cmd = Command::new("cat");
        cmd.arg("-");
        let out = output_within(cmd, Some(b"hello"), Duration::from_secs(5), "s").unwrap();
        assert!(out.status.success());
        assert_eq!(out.stdout, b"hello");
    }
}
