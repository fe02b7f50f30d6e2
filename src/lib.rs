//! crewmux: run a team of AI coding agents in tmux panes; watch, steer and judge them from
//! one ratatui screen.
//!
//! Layers (STYLE.md): `domain` (pure types) ← `engine` (pure state machine) ← adapters
//! (`tmux`, `process`, `store`, `providers`, `creds`) ← `driver` (async glue) ← `tui` and
//! `commands` (the binary's edge).

pub mod cli;
pub mod commands;
pub mod domain;
pub mod error;
pub mod providers;
pub mod team;
