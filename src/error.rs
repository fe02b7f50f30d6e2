//! Typed errors of the library. Each keeps what a person needs to act: the path of a file
//! operation, the arguments and stderr of a tmux command, the program that could not run.
//! The binary prints one line (`crewmux: <error>: <cause>`) and, under `-v`, the whole
//! chain through color-eyre.

use std::path::{Path, PathBuf};

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
    /// A file or directory operation on `path` failed.
    #[error("{}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// An operating-system resource that is not a file failed: `what` names it (the
    /// terminal, the current directory, a thread, a signal handler, a child's stdin).
    #[error("{what}")]
    System {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// A tmux command ran and failed: its arguments (after `tmux`) and what it printed on
    /// stderr (or why it could not run).
    #[error("tmux {}: {stderr}", args.join(" "))]
    Tmux { args: Vec<String>, stderr: String },
    /// An external program (git, an agent CLI) failed: `program` with its arguments, and
    /// its stderr or exit status.
    #[error("{program}: {message}")]
    Command { program: String, message: String },
    /// Anything else, with context.
    #[error("{0}")]
    Other(String),
}

impl Error {
    /// The process exit code for this error (2 for usage errors, 1 otherwise).
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Usage(_) => 2,
            _ => 1,
        }
    }

    /// An I/O error about `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    /// An I/O error about a resource that is not a file (see [`Error::System`]).
    pub fn system(what: impl Into<String>, source: std::io::Error) -> Self {
        Error::System {
            what: what.into(),
            source,
        }
    }

    /// This error and its causes, joined by `": "` on one line.
    pub fn one_line(&self) -> String {
        let mut line = self.to_string();
        let mut cause = std::error::Error::source(self);
        while let Some(c) = cause {
            line.push_str(": ");
            line.push_str(&c.to_string());
            cause = c.source();
        }
        line
    }
}

/// Attach the path (or the resource) an I/O result was about: `fs::read(&p).at(&p)?`.
pub trait IoContext<T> {
    /// The error becomes [`Error::Io`] naming `path`.
    ///
    /// # Errors
    /// The I/O error of `self`, with `path`.
    fn at(self, path: impl AsRef<Path>) -> Result<T>;

    /// The error becomes [`Error::System`] naming `what`.
    ///
    /// # Errors
    /// The I/O error of `self`, with `what`.
    fn on(self, what: &str) -> Result<T>;
}

impl<T> IoContext<T> for std::result::Result<T, std::io::Error> {
    fn at(self, path: impl AsRef<Path>) -> Result<T> {
        self.map_err(|e| Error::io(path.as_ref(), e))
    }

    fn on(self, what: &str) -> Result<T> {
        self.map_err(|e| Error::system(what, e))
    }
}

/// Result with the library's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_io_error_names_its_path_and_cause_on_one_line() {
        let err = std::fs::read("/nonexistent-dir/state.json")
            .at("/nonexistent-dir/state.json")
            .unwrap_err();
        assert_eq!(
            err.one_line(),
            "/nonexistent-dir/state.json: No such file or directory (os error 2)"
        );
        assert_eq!(err.exit_code(), 1);
    }

    #[test]
    fn a_tmux_error_names_its_arguments_and_stderr() {
        let err = Error::Tmux {
            args: vec!["-L".into(), "x".into(), "kill-pane".into()],
            stderr: "can't find pane: %9".into(),
        };
        assert_eq!(err.one_line(), "tmux -L x kill-pane: can't find pane: %9");
    }
}
