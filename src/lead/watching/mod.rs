//! Watching attempts: one backend poll per turn (`observe`, `poller`, `pace`), each
//! attempt's new output and exit evidence (`watch`, `exit_watch`, `observe_attempt`, `lines`,
//! `echo`), its MCP exchange (`mcp`) and the Output tab's fallback screen (`log_screen`).

pub(in crate::lead) mod echo;
pub(in crate::lead) mod exit_watch;
pub(in crate::lead) mod lines;
pub(in crate::lead) mod log_screen;
pub(in crate::lead) mod mcp;
pub(crate) mod observe;
pub(in crate::lead) mod observe_attempt;
pub(in crate::lead) mod pace;
pub(in crate::lead) mod poller;
pub(in crate::lead) mod watch;
#[cfg(test)]
mod watch_tests;
