//! Typed errors of the library. The binary turns them into one-line messages.

use std::path::PathBuf;

/// An error a user can act on: the message names the bad value and the fix.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad input on the command line or in a file: exit code 2.
    #[error("{0}")]
    Usage(String),
    /// A state file that cannot be trusted; it is never overwritten.
    #[error("{path}: {reason}")]
    CorruptState { path: PathBuf, reason: String },
    /// Another program did not answer in time (a stopped tmux server).
    #[error("{program} did not answer within {secs} s: {hint}")]
    Timeout {
        program: String,
        secs: u64,
        hint: String,
    },
    /// Anything else, with context.
    #[error("{0}")]
    Other(String),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

impl Error {
    /// The process exit code for this error (SPEC §3: 2 for usage errors).
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Usage(_) => 2,
            _ => 1,
        }
    }
}

/// Result with the library's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
