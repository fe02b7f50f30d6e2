//! `crewmux mcp-serve` (hidden): the MCP server an attempt's agent starts over stdio, as
//! that attempt's `CREWMUX_MCP_CONFIG` (and each CLI's own per-attempt config) says. Its
//! stdout is the MCP session: nothing else may be printed there.

use std::path::PathBuf;

use clap::Args;

use crate::error::Result;
use crate::mcp::server::{serve, ServeOptions};

#[derive(Debug, Args, Clone)]
pub struct McpServeArgs {
    /// The attempt's exchange folder (`<attempt>/mcp`).
    #[arg(long)]
    pub dir: PathBuf,
    /// The worker it serves.
    #[arg(long)]
    pub worker: String,
    /// The attempt it serves (1-based).
    #[arg(long)]
    pub attempt: u32,
    /// The attempt's nonce: what it writes carries it; the lead refuses any other.
    #[arg(long)]
    pub nonce: String,
    /// The worker's `question_timeout_s` (absent: questions wait with no limit).
    #[arg(long)]
    pub question_timeout_s: Option<u64>,
}

/// Serve until the agent closes stdin; exit 0.
///
/// # Errors
/// As [`serve`]; an empty worker or nonce is a usage error.
pub fn run(args: McpServeArgs) -> Result<i32> {
    let caller = crate::mcp::config::caller(&args.worker, args.attempt, &args.nonce)?;
    serve(ServeOptions {
        dir: args.dir,
        caller,
        question_timeout_s: args.question_timeout_s.filter(|s| *s > 0),
    })?;
    Ok(0)
}
