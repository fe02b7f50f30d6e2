//! Command handlers: one function per subcommand, called by `main`. Each returns the
//! process exit code or a typed error.

pub mod dashboard;
pub mod drive;
pub mod plan;
pub mod run;
pub mod summary;

use crate::cli::{Cli, Command};
use crate::error::{Error, Result};

/// Run the parsed command line; returns the process exit code.
pub fn dispatch(cli: Cli) -> Result<i32> {
    match cli.command {
        Command::Run(args) => run::run(args),
        Command::Demo(args) => run::demo(args),
        Command::SimAgent(args) => crate::sim::run(&args),
        other => Err(Error::Other(format!(
            "{:?}: not built yet",
            std::mem::discriminant(&other)
        ))),
    }
}
