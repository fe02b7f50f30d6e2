//! Talking to agents over MCP: the server each attempt's agent starts (`server`, the
//! `crewmux mcp-serve` subcommand), the files it and the lead exchange (`exchange`), the
//! per-attempt configuration that makes each CLI start it (`config`), what the lead
//! reads of an attempt's exchange each turn (`watch`), and what an approval request acts on
//! (`targets`). docs/mcp.md says how it fits.

pub mod config;
pub mod exchange;
pub mod hooks;
pub mod server;
pub mod targets;
pub mod watch;

#[cfg(test)]
mod tests;
