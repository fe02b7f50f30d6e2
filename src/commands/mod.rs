//! Command handlers: one function per subcommand, called by `main`. Each returns the
//! process exit code or a typed error.

pub mod dispatch;
pub mod doctor;

use crate::cli::{Cli, Command};
use crate::error::{Error, Result};

/// Run the parsed command line; returns the process exit code.
pub fn dispatch(cli: Cli) -> Result<i32> {
    match cli.command {
        Command::Doctor(args) => doctor::run(args),
        Command::Dispatch(args) => dispatch::run(args),
        other => Err(Error::Other(format!(
            "{:?}: not built yet",
            std::mem::discriminant(&other)
        ))),
    }
}
