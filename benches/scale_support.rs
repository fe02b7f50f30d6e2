//! What the scale bench's remote case borrows from the integration tests' support (their
//! SSH host), with the helpers that host needs from the rest of it.
#![allow(
    dead_code,
    reason = "the bench uses only part of the test host's helpers"
)]

use std::time::{Duration, Instant};

#[path = "../tests/integration/support/sshd.rs"]
pub mod sshd;

#[path = "../tests/integration/support/bounded.rs"]
pub mod bounded;

#[path = "../tests/integration/support/procs.rs"]
pub mod procs;

/// Poll `cond` every 100 ms until it holds (true) or `limit` passes (false).
pub fn wait_for(mut cond: impl FnMut() -> bool, limit: Duration) -> bool {
    let end = Instant::now() + limit;
    while !cond() {
        if Instant::now() >= end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    true
}

/// tmux is on PATH (the bench's `main` checked it before any scenario).
pub fn tmux_ready(_: &str) -> bool {
    true
}
