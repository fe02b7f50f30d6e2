//! Command handlers: one function per subcommand, called by `main`. Each returns the
//! process exit code or a typed error.

pub mod creds;
pub mod dashboard;
pub mod dispatch;
pub mod doctor;
pub mod drive;
pub mod manage;
pub mod plan;
pub mod run;
pub mod summary;

use crate::cli::{Cli, Command};
use crate::error::Result;

/// Run the parsed command line; returns the process exit code.
pub fn dispatch(cli: Cli) -> Result<i32> {
    match cli.command {
        Command::Creds(cmd) => creds::run(cmd),
        Command::Run(args) => run::run(args),
        Command::Demo(args) => run::demo(args),
        Command::SimAgent(args) => crate::sim::run(&args),
        Command::Status(args) => manage::status(args),
        Command::Answer(args) => manage::answer(args),
        Command::Cancel(args) => manage::cancel(args),
        Command::Attach(args) => manage::attach(args, false),
        Command::Resume(args) => manage::attach(args, true),
        Command::Clean(args) => manage::clean(args),
        Command::Doctor(args) => doctor::run(args),
        Command::Dispatch(args) => dispatch::run(args),
    }
}
