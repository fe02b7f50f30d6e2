//! Ranking a race (README "Races"). When every candidate of a task has ended, the team's
//! checks run on each completed candidate's own tree (`Effect::RaceChecks`, the lead runs
//! them in parallel, each bounded by its check timeout); with their results in, the
//! candidates are ranked by, in order:
//!
//! 1. completed before not completed;
//! 2. more checks passed;
//! 3. a change before no change (a candidate that changed nothing did not do the task);
//! 4. the smaller change (lines added and removed): the same result with less to review;
//! 5. the lower candidate number.
//!
//! The top-ranked completed candidate is the pick: only its branch goes into the
//! integration branch, where the council judges it as any worker's work; the others stay on
//! their branches for `crewmux merge --worker`. A race whose candidates all failed has no
//! pick. The work stage does not end before every race is ranked.

use std::collections::BTreeMap;

use super::{Effect, Effects, RunMemory};
use crate::domain::{EventKind, RaceCheck, Ranked, RunState, WorkerStatus};

/// Whether every race of the run is ranked; asks for the checks of a race whose candidates
/// have all ended, and ranks one whose checks are in. Called once the stage's workers
/// have all ended.
pub(super) fn all_ranked(state: &mut RunState, mem: &mut RunMemory, fx: &mut Effects) -> bool {
    let tasks: Vec<String> = state
        .races
        .iter()
        .filter(|(_, r)| !r.ranked())
        .map(|(t, _)| t.clone())
        .collect();
    let mut all = true;
    for task in tasks {
        let Some(race) = state.races.get(&task) else {
            continue;
        };
        let ended = race
            .candidates
            .iter()
            .all(|c| state.worker(c).is_none_or(|w| w.status.is_terminal()));
        if !ended {
            all = false;
            continue;
        }
        let completed: Vec<String> = race
            .candidates
            .iter()
            .filter(|c| {
                state
                    .worker(c)
                    .is_some_and(|w| w.status == WorkerStatus::Completed)
            })
            .cloned()
            .collect();
        if !state.checks.is_empty() && !completed.is_empty() {
            // Asked once per driver: a driver that left before the results came asks again.
            if mem.race_checks_asked.insert(task.clone()) {
                fx.event(
                    EventKind::RaceChecking,
                    None,
                    "engine",
                    format!(
                        "{task}: the team's {} check{} run on {}",
                        state.checks.len(),
                        if state.checks.len() == 1 { "" } else { "s" },
                        completed.join(", ")
                    ),
                );
                fx.push(Effect::RaceChecks {
                    task: task.clone(),
                    candidates: completed,
                });
                all = false;
                continue;
            }
            if completed.iter().any(|c| !race.checked.contains_key(c)) {
                all = false;
                continue;
            }
        }
        rank(state, &task, fx);
    }
    all
}

/// The checks of `task`'s candidates came back (`Input::RaceChecked`).
pub(super) fn on_checked(
    state: &mut RunState,
    task: &str,
    results: BTreeMap<String, Vec<RaceCheck>>,
) {
    if let Some(r) = state.races.get_mut(task) {
        r.checked.extend(results);
    }
}

/// What a candidate is ranked by, best first when sorted ascending.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    not_completed: bool,
    checks_failed: usize,
    no_change: bool,
    lines: u64,
    n: u32,
}

/// Rank `task`'s candidates and pick the first that completed.
fn rank(state: &mut RunState, task: &str, fx: &mut Effects) {
    let Some(race) = state.races.get(task).cloned() else {
        return;
    };
    let total = state.checks.len();
    let mut rows: Vec<(Key, String, String)> = race
        .candidates
        .iter()
        .enumerate()
        .filter_map(|(i, id)| row_of(state, &race, (i, id), total))
        .collect();
    rows.sort();
    let ranking: Vec<Ranked> = rows
        .into_iter()
        .enumerate()
        .map(|(i, (_, id, why))| Ranked {
            id,
            rank: u32::try_from(i + 1).unwrap_or(u32::MAX),
            why,
        })
        .collect();
    let pick = ranking
        .iter()
        .find(|r| {
            state
                .worker(&r.id)
                .is_some_and(|w| w.status == WorkerStatus::Completed)
        })
        .map(|r| r.id.clone());
    let line = ranking
        .iter()
        .map(|r| format!("{}. {} ({})", r.rank, r.id, r.why))
        .collect::<Vec<_>>()
        .join("; ");
    let message = match &pick {
        Some(p) => format!("{task}: {p} picked; {line}"),
        None => format!("{task}: no candidate completed, nothing is picked; {line}"),
    };
    fx.event(EventKind::RaceRanked, None, "engine", message);
    if let Some(r) = state.races.get_mut(task) {
        r.ranking = ranking;
        r.pick = pick;
    }
}

/// Candidate `i` (0-based) `id`'s ranking key, id and why; `total`: the team's checks.
fn row_of(
    state: &RunState,
    race: &crate::domain::Race,
    (i, id): (usize, &String),
    total: usize,
) -> Option<(Key, String, String)> {
    let w = state.worker(id)?;
    let completed = w.status == WorkerStatus::Completed;
    let checks = race.checked.get(id);
    let passed = checks.map_or(0, |c| c.iter().filter(|r| r.passed).count());
    let diff = state
        .workspace
        .as_ref()
        .and_then(|ws| ws.workers.get(id))
        .and_then(|x| x.diff);
    let lines = diff.map_or(0, |d| d.added + d.removed);
    let mut why = vec![if completed {
        "completed".to_string()
    } else {
        match w.exit_code {
            Some(c) => format!("{} (exit {c})", w.status.as_str()),
            None => w.status.as_str().to_string(),
        }
    }];
    if completed && total > 0 {
        // The checks that did not pass, by name, with why when it was not their
        // own exit (a timeout, a command that did not start).
        let failed: Vec<String> = checks
            .into_iter()
            .flatten()
            .filter(|r| !r.passed)
            .map(|r| match r.note.as_str() {
                "" => r.check.clone(),
                n => format!("{}: {n}", r.check),
            })
            .collect();
        why.push(if failed.is_empty() {
            format!("checks {passed}/{total}")
        } else {
            format!("checks {passed}/{total} (failed {})", failed.join(", "))
        });
    }
    if completed {
        why.push(match diff {
            Some(d) if lines > 0 => {
                format!(
                    "+{} −{} in {} file{}",
                    d.added,
                    d.removed,
                    d.files,
                    if d.files == 1 { "" } else { "s" }
                )
            }
            _ => "no change".to_string(),
        });
    }
    let key = Key {
        not_completed: !completed,
        checks_failed: if completed {
            total - passed.min(total)
        } else {
            total
        },
        no_change: lines == 0,
        lines,
        n: u32::try_from(i + 1).unwrap_or(u32::MAX),
    };
    Some((key, id.clone(), why.join(" · ")))
}

#[cfg(test)]
#[path = "race_tests.rs"]
mod tests;
