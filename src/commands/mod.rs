//! Command handlers: one function per subcommand, called by `main`. Each returns the
//! process exit code or a typed error.

pub mod creds;

use crate::cli::{Cli, Command};
use crate::error::{Error, Result};

/// Run the parsed command line; returns the process exit code.
pub fn dispatch(cli: Cli) -> Result<i32> {
    match cli.command {
        Command::Creds(cmd) => creds::run(cmd),
        other => Err(Error::Other(format!(
            "{:?}: not built yet",
            std::mem::discriminant(&other)
        ))),
    }
}
