//! crewmux: run a team of AI coding agents in tmux panes; watch, steer and judge them from
//! one ratatui screen.
//!
//! Layers: `domain` (pure types) ← `engine` (pure state machine) ← adapters
//! (`tmux`, `process`, `store`, `providers`, `creds`) ← `driver` (async glue) ← `tui` and
//! `commands` (the binary's edge).

pub mod backend;
pub mod clarification;
pub mod cli;
pub mod cli_error;
pub mod cli_limits;
pub mod cli_values;
pub mod commands;
pub mod config;
pub mod council;
pub mod creds;
pub mod dashboard;
pub mod domain;
pub mod engine;
pub mod error;
pub mod hosts;
pub mod launch;
pub mod lead;
pub mod logging;
pub mod mcp;
pub mod notify;
pub mod process;
pub mod providers;
pub mod sandbox;
pub mod sim;
pub mod store;
pub mod team;
pub mod text;
pub mod tmux;
pub mod tui;
pub mod workspace;
