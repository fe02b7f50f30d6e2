//! The dashboard's side of a run: following the run its lead drives from the run's files
//! (`follow`, woken by `follow_watch` when the lead saves) and handing the person's keys to
//! the lead as requests. The screen itself is `crate::tui`.

pub mod follow;
mod follow_watch;
