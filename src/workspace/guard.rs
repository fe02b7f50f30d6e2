//! Whether a run's integration branch is whole enough for `crewmux merge` to take it
//! without `--force`: the council did not block it, and every worker that completed with a
//! worktree is merged into it at its last attempt (a conflict nobody resolved leaves the
//! later worker out; a pass that has not run since a worker's last attempt holds an
//! earlier one).

use crate::domain::{CouncilStatus, RunState, RunWorkspace, WorkerKind, WorkerStatus};

/// What is wrong with taking the integration branch of a run as it is.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Shortfall {
    /// The council's status is `blocked`.
    pub blocked: bool,
    /// Workers with a worktree that completed but whose last attempt is not merged into
    /// integration, in team order.
    pub left_out: Vec<String>,
    /// The files of an unresolved merge conflict, if integration stopped on one.
    pub conflict: Vec<String>,
    /// Why the council blocked, in a few words: the first failing verdict's critic and its
    /// first finding (`skeptic: edit: completed with an empty result`).
    pub blocked_by: Option<String>,
}

impl Shortfall {
    /// Nothing is wrong.
    pub fn is_empty(&self) -> bool {
        !self.blocked && self.left_out.is_empty()
    }

    /// The reason in a few words: `the council is blocked; integration left out x2 (merge
    /// conflict in a.txt)`.
    pub fn reason(&self) -> String {
        let mut parts = Vec::new();
        if self.blocked {
            parts.push(match &self.blocked_by {
                Some(why) => format!("the council is blocked ({why})"),
                None => "the council is blocked".to_string(),
            });
        }
        if !self.left_out.is_empty() {
            let mut s = format!("integration left out {}", self.left_out.join(", "));
            if !self.conflict.is_empty() {
                s.push_str(&format!(
                    " (merge conflict in {})",
                    self.conflict.join(", ")
                ));
            }
            parts.push(s);
        }
        parts.join("; ")
    }
}

/// The shortfall of the run's integration branch (pure: reads the saved state only).
pub fn shortfall(state: &RunState, ws: &RunWorkspace) -> Shortfall {
    let holds = |id: &str| {
        let (Some(i), Some(own)) = (&ws.integration, ws.workers.get(id)) else {
            return false;
        };
        let last = match (&own.head, i.tips.get(id)) {
            (Some(head), Some(tip)) => head == tip,
            _ => true,
        };
        i.merged.iter().any(|m| m == id) && !i.left_out.iter().any(|c| c.theirs == id) && last
    };
    let left_out = state
        .workers
        .iter()
        .filter(|w| w.kind == WorkerKind::Worker && w.status == WorkerStatus::Completed)
        .filter(|w| ws.workers.contains_key(&w.id) && !holds(&w.id))
        // A race's candidate that is not its pick is not meant to be there.
        .filter(|w| !state.left_out_by_race(&w.id))
        .map(|w| w.id.clone())
        .collect();
    let blocked_by = state
        .council
        .verdicts
        .iter()
        .find(|v| v.verdict == crate::domain::Verdict::Fail)
        .map(|v| match v.findings.first() {
            Some(f) => format!("{}: {f}", v.critic),
            None => v.critic.clone(),
        });
    Shortfall {
        blocked: state.council.status == CouncilStatus::Blocked,
        blocked_by,
        left_out,
        conflict: ws
            .integration
            .as_ref()
            .map(|i| {
                let mut files: Vec<String> = i
                    .conflict
                    .iter()
                    .chain(&i.left_out)
                    .flat_map(|c| c.files.clone())
                    .collect();
                files.dedup();
                files
            })
            .unwrap_or_default(),
    }
}
