//! A race (README "Races"): one task run as N candidates, each in its own worktree and on
//! its own provider where enough are usable, ranked when all have ended, and only the pick
//! integrated. The candidates of task `fix` are the workers `fix-c1` … `fix-cN`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The widest race: candidates beyond this cost more than any ranking gains.
pub const MAX_CANDIDATES: u32 = 8;

/// `[race]` of a team file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct RaceSpec {
    /// The providers the candidates run on, in order (candidate 1 on the first); default:
    /// the worker's own provider, then its usable fallbacks.
    #[serde(default)]
    pub agents: Vec<String>,
}

/// Which candidate of which task a worker is (`FlowState::candidate`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Candidate {
    /// The raced worker's id as the team file names it.
    pub task: String,
    /// 1-based; the worker's environment has it as `CREWMUX_CANDIDATE`.
    pub n: u32,
    /// How many candidates the task has.
    pub of: u32,
}

/// The id of candidate `n` of `task`.
pub fn candidate_id(task: &str, n: u32) -> String {
    format!("{task}-c{n}")
}

/// One team check run on one candidate's tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RaceCheck {
    /// The check's id in the team file.
    pub check: String,
    pub passed: bool,
    /// Its exit code; `None`: it ran out of its timeout or could not start (`note`).
    pub code: Option<i32>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
}

/// A candidate's place in its race's ranking.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ranked {
    pub id: String,
    /// 1 is the best.
    pub rank: u32,
    /// Why it stands there: `completed · checks 2/2 · 14 lines changed`.
    pub why: String,
}

/// One raced task in `RunState::races`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Race {
    /// Its candidates' worker ids, candidate 1 first.
    pub candidates: Vec<String>,
    /// Their results, by candidate id.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub checked: BTreeMap<String, Vec<RaceCheck>>,
    /// Best first, once every candidate has ended and been checked.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ranking: Vec<Ranked>,
    /// The candidate whose work goes into the integration branch: the top-ranked one
    /// that completed; `None` while the race runs, or when none completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pick: Option<String>,
}

/// The races of a run's first workers: one per task that has candidates.
pub fn races_of(workers: &[super::WorkerState]) -> BTreeMap<String, Race> {
    let mut races: BTreeMap<String, Race> = BTreeMap::new();
    for w in workers {
        if let Some(c) = &w.flow.candidate {
            races
                .entry(c.task.clone())
                .or_default()
                .candidates
                .push(w.id.clone());
        }
    }
    races
}

impl Race {
    /// Ranked (every candidate ended and was checked).
    pub fn ranked(&self) -> bool {
        !self.ranking.is_empty()
    }

    /// Candidate `id`'s place once ranked, as the roster and `status` say it: `#1 picked`
    /// (`#2` for one that is not the pick), and its why.
    pub fn place(&self, id: &str) -> Option<(String, &str)> {
        let r = self.ranking.iter().find(|x| x.id == id)?;
        let picked = if self.pick.as_deref() == Some(id) {
            " picked"
        } else {
            ""
        };
        Some((format!("#{}{picked}", r.rank), r.why.as_str()))
    }
}
