//! Settling attempts: an exit from its evidence (`settle`, pure), what the attempt left
//! (`exit_input`, `result`, `retake`), nothing it started outliving it (`reap`, `release`),
//! and the council and report over the results (`council`).

pub(in crate::lead) mod council;
pub(in crate::lead) mod exit_input;
pub(in crate::lead) mod reap;
pub(in crate::lead) mod release;
pub(in crate::lead) mod result;
pub(in crate::lead) mod retake;
pub mod settle;
