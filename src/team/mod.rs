//! Teams: built-in modes and team files (docs/design.md "Team files"), routing of workers to
//! providers and models, and the resolved team a run launches.

pub mod cwd;
pub mod cwd_base;
pub mod file;
pub mod limits;
mod missing;
pub mod place;
pub mod programs;
pub mod race;
pub mod resolve;
pub mod resolved;
pub mod route;
pub mod routing;
pub mod sandbox;

pub use file::{load_file, load_mode, parse_and_validate, LoadedTeam, Mode};
pub use resolve::{check, resolve, CheckedTeam, ResolveOptions, ResolvedTeam, ResolvedWorker};
pub use route::route;
pub use routing::{choose, infer_target, Choice, TargetChoice};

#[cfg(test)]
mod after_tests;
#[cfg(test)]
mod approvals_tests;
#[cfg(test)]
mod probe_tests;
