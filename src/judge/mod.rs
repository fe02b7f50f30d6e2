//! Judging and steering a run, as pure functions over plain data: the run-level
//! clarification gate, the deterministic critics, verdict parsing for critic workers and
//! check commands, waiting-for-input detection on a pane screen, and the deterministic
//! `report.md` merge. No tokio, tmux, clock or filesystem here: callers pass what they read.

pub mod critics;
pub mod diff_rules;
pub mod evidence;
pub mod gate;
mod gate_words;
pub mod report;
pub mod verdict;
pub mod waiting;

/// Text as a reader sees it: ANSI escapes removed (`strip-ansi-escapes`, a VT parser),
/// `\r\n` and lone `\r` made `\n`.
pub fn clean_text(output: &str) -> String {
    let stripped = strip_ansi_escapes::strip_str(output);
    stripped.replace("\r\n", "\n").replace('\r', "\n")
}
