//! The live diffstat of the roster: each worker's `+added −removed · N files` while it
//! works, at a bounded cost.
//!
//! At most every [`LIVE_DIFF_EVERY`], at most [`LIVE_DIFF_PER_TURN`] workers are measured
//! (two git calls each: `git diff --numstat base` and `git ls-files --others`), chosen among
//! the live workers with a worktree that printed output since they were last measured
//! (output is how a worker's tree changes), least recently measured first. So the cost
//! does not grow with the team: never one git process per worker per tick. At each exit
//! the figure is recomputed from the committed branch (`commit::on_attempt_end`).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};

use crate::domain::RunState;

/// Shortest time between two live measurements.
pub const LIVE_DIFF_EVERY: Duration = Duration::from_secs(2);
/// Workers measured per turn at most.
pub const LIVE_DIFF_PER_TURN: usize = 4;

/// When each worker was last measured.
#[derive(Debug)]
pub struct LiveDiff {
    measured: HashMap<String, DateTime<Utc>>,
    next: Instant,
}

impl Default for LiveDiff {
    fn default() -> Self {
        LiveDiff {
            measured: HashMap::new(),
            next: Instant::now(),
        }
    }
}

impl LiveDiff {
    /// Measure the workers due (see the module docs); `last_output` is when each worker
    /// last printed. Returns true when a figure changed.
    pub fn tick(
        &mut self,
        state: &mut RunState,
        last_output: &HashMap<String, DateTime<Utc>>,
    ) -> bool {
        if Instant::now() < self.next {
            return false;
        }
        self.next = Instant::now() + LIVE_DIFF_EVERY;
        let Some(ws) = state.workspace.as_mut() else {
            return false;
        };
        let mut due: Vec<(Option<DateTime<Utc>>, String)> = state
            .workers
            .iter()
            .filter(|w| w.status.is_live() && ws.workers.contains_key(&w.id))
            .filter_map(|w| {
                let out = last_output.get(&w.id)?;
                let seen = self.measured.get(&w.id).copied();
                (seen.is_none_or(|s| *out > s)).then(|| (seen, w.id.clone()))
            })
            .collect();
        due.sort();
        let mut changed = false;
        for (_, id) in due.into_iter().take(LIVE_DIFF_PER_TURN) {
            self.measured.insert(id.clone(), Utc::now());
            let Some(w) = ws.workers.get(&id) else {
                continue;
            };
            match super::commit::diffstat_live(&w.path, ws.own_base(&id)) {
                Ok(d) if w.diff != Some(d) => {
                    if let Some(w) = ws.workers.get_mut(&id) {
                        w.diff = Some(d);
                        changed = true;
                    }
                }
                Ok(_) => {}
                Err(e) => tracing::debug!(worker = %id, "live diffstat: {e}"),
            }
        }
        changed
    }
}
