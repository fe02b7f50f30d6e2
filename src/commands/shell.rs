//! Shell conventions: completion scripts (clap_complete) and the man page (clap_mangen),
//! both generated from the one command-line definition in `cli`.

use clap::CommandFactory;

use crate::cli::Cli;
use crate::error::{Error, Result};

/// `crewmux completions SHELL`: the completion script for `shell` on stdout.
///
/// # Errors
/// None in practice (writing to a closed pipe ends the process quietly).
pub fn completions(shell: clap_complete::Shell) -> Result<i32> {
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "crewmux", &mut out);
    crate::out!("{}", String::from_utf8_lossy(&out));
    Ok(0)
}

/// `crewmux man`: the man page (section 1, roff) on stdout.
///
/// # Errors
/// The page cannot be rendered (an I/O error of the in-memory buffer).
pub fn man() -> Result<i32> {
    let mut out = Vec::new();
    clap_mangen::Man::new(Cli::command())
        .render(&mut out)
        .map_err(|e| Error::Other(format!("rendering the man page: {e}")))?;
    crate::out!("{}", String::from_utf8_lossy(&out));
    Ok(0)
}
