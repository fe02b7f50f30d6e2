//! Bounded waits on child processes: a test that waits on a hung process fails instead of
//! wedging the suite. (The scale bench's remote case includes this file too.)

use std::process::{Command, Output};

/// `child`'s end and output (what it piped) when it ends within `limit`; past that it is
/// killed (SIGKILL) and `None` comes back.
pub fn output_within(child: std::process::Child, limit: std::time::Duration) -> Option<Output> {
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        // The receiver is gone only once the limit has passed and the caller gave up.
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => Some(out.expect("wait for a child process")),
        Err(_) => {
            // A child that ended just now is reaped by the reading thread; the kill may miss.
            let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
            None
        }
    }
}
