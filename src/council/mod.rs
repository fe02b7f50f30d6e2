//! The council, as pure functions over plain data: the deterministic critics, the evidence
//! they weigh, verdict parsing for critic workers and check commands, and the deterministic
//! `report.md` merge. No tokio, tmux, clock or filesystem here: callers pass what they read.

pub mod critics;
pub mod diff_rules;
pub mod evidence;
pub mod report;
pub mod verdict;
