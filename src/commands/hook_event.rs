//! `crewmux hook-event` (hidden): what an attempt's agent CLI runs from its hooks (Claude
//! Code's and Gemini CLI's `command` hooks with the event on stdin, Codex's `notify` with
//! it as the last argument). It keeps what the lead reads of the event in
//! `<dir>/hooks.jsonl` (`mcp::hooks`) and always exits 0 with nothing on stdout: a hook
//! must never stop, block or steer the agent (Claude Code 2.1.197 reads a hook's stdout
//! as its decision and exit 2 as a block).

use std::path::PathBuf;

use clap::Args;

use crate::error::Result;

#[derive(Debug, Args, Clone)]
pub struct HookEventArgs {
    /// The attempt's exchange folder (`<attempt>/mcp`).
    #[arg(long)]
    pub dir: PathBuf,
    /// The attempt's nonce: the lead takes only events that carry it.
    #[arg(long)]
    pub nonce: String,
    /// The event as JSON (Codex's `notify` passes it here); absent: read from stdin.
    pub event: Option<String>,
}

/// Keep one event; a failure is said on stderr and the exit is still 0.
///
/// # Errors
/// None: every failure is reported on stderr only.
pub fn run(args: &HookEventArgs) -> Result<i32> {
    let stdin = std::io::stdin().lock();
    if let Err(e) = crate::mcp::hooks::record(&args.dir, &args.nonce, args.event.as_deref(), stdin)
    {
        eprintln!("crewmux hook-event: {e}");
    }
    Ok(0)
}
