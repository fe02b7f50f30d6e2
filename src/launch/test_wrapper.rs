//! What the wrapper's tests (`launch` and `launch::marker_wait`) share: the spec they
//! start from, and a wrapper started as tmux starts it, up to its marker.

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use super::{find_marker, read_exit_file, write_wrapper, AttemptPaths, WrapperSpec};

/// The nonce of every test wrapper.
pub const NONCE: &str = "abc123";

/// Worker `w`, attempt 1, nonce [`NONCE`], `argv` run in `cwd`, and nothing else: no
/// stdin file, no waits, no filter (tests change what they need with `..spec(…)`).
pub fn spec<'a>(argv: &'a [String], cwd: &'a Path) -> WrapperSpec<'a> {
    WrapperSpec {
        worker: "w",
        attempt: 1,
        nonce: NONCE,
        argv,
        cwd,
        stdin_file: None,
        wait_for_log: false,
        release_fifo: false,
        render: None,
        fence: None,
    }
}

/// A wrapper in `dir` whose agent prints a line and exits 4, started as tmux starts it
/// (it waits for its marker in `output.log`, and with `release_fifo` on the driver's
/// FIFO): its pane's output on a pipe, stdin at end of file. Returned once it has printed
/// its marker (its `exit.json` says 4), with what its pane showed; `output.log` is empty,
/// as when tmux lags behind the pane.
pub fn started_until_marker(dir: &Path, release_fifo: bool) -> (Child, String) {
    let paths = AttemptPaths::new(dir.to_path_buf());
    std::fs::write(&paths.output, "").unwrap();
    let argv = ["sh", "-c", "echo the last line; exit 4"].map(String::from);
    let spec = WrapperSpec {
        wait_for_log: true,
        release_fifo,
        ..spec(&argv, dir)
    };
    write_wrapper(&paths, &spec).unwrap();
    let mut child = Command::new("sh")
        .arg(&paths.launch)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pane = child.stdout.take().unwrap();
    let mut text = String::new();
    while find_marker(&text, NONCE).is_none() {
        let mut buf = [0u8; 256];
        let n = pane.read(&mut buf).unwrap();
        assert!(n > 0, "the wrapper ended before its marker: {text}");
        text.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    assert_eq!(read_exit_file(&paths.exit, NONCE).unwrap(), Some(4));
    (child, text)
}
