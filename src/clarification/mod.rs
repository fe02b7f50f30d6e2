//! Clarification, as pure functions over plain data: the run-level gate that decides
//! whether a problem must be clarified before workers start, and the detection of a worker
//! waiting for input on its pane screen. No tokio, tmux, clock or filesystem here.

pub mod gate;
mod gate_words;
pub mod in_result;
pub mod waiting;
