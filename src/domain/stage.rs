//! The stages of a run: `team-plan` → `team-exec` → `team-verify` → `team-fix` (→ `done`).

use serde::{Deserialize, Serialize};

/// One stage of a run, in run order (docs/design.md "Words"). Serialised in kebab case
/// (`team-plan`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum Stage {
    TeamPlan,
    TeamExec,
    TeamVerify,
    TeamFix,
    Done,
}

impl Stage {
    /// The stages in flow order, for the header's stage flow.
    pub const FLOW: [Stage; 5] = [
        Stage::TeamPlan,
        Stage::TeamExec,
        Stage::TeamVerify,
        Stage::TeamFix,
        Stage::Done,
    ];

    /// The stage's wire name, e.g. `team-exec`.
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::TeamPlan => "team-plan",
            Stage::TeamExec => "team-exec",
            Stage::TeamVerify => "team-verify",
            Stage::TeamFix => "team-fix",
            Stage::Done => "done",
        }
    }
}

impl std::fmt::Display for Stage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
