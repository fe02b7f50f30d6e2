//! The one support module of the integration tests.
//!
//! - [`tmux`]: a private tmux server per test and the skip contract (loud skip without
//!   tmux, failure under `CREWMUX_REQUIRE_TMUX=1`).
//! - [`bounded`]: waits on child processes that end the child past a limit.
//! - [`run`]: the crewmux binary (bounded runs, background runs, summaries, team files).
//! - [`team`]: [`TeamProject`], a temporary project with a team file, and a headless run
//!   of it on a chosen [`Backend`] — the set-up most tests share.
//! - [`git`]: real git repositories in temporary folders.
//! - [`viewer`]: the dashboard in a tmux pane, read with `capture-pane`.
//! - [`wait`]: waits on parsed state, events and conditions, never on fixed sleeps.
//! - [`standins`]: stand-in agent CLIs on a private PATH.
//! - [`creds`]: a private credential store for the `creds` commands.
//! - [`model_server`]: a loopback model server speaking the agent CLIs' APIs.
//! - [`on_host`]: crewmux runs that reach the test's SSH host ([`sshd`]).
//! - [`events`]: the event-once check of every run a test makes, and [`Project`], the
//!   temporary directory that runs it when the test ends.
//! - [`procs`]: the processes a test started, found in `/proc` to be ended with the test.

pub mod bounded;
pub mod creds;
pub mod events;
pub mod git;
pub mod model_server;
pub mod on_host;
pub mod procs;
pub mod run;
pub mod sshd;
pub mod standins;
pub mod team;
pub mod tmux;
pub mod viewer;
pub mod wait;

pub use events::{assert_events_once, project, project_in, Project};
pub use git::*;
pub use run::*;
pub use team::*;
pub use tmux::*;
pub use viewer::*;
pub use wait::*;
