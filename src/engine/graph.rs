//! The team's dependency graph: `after = ["id", ...]` on workers and critics.
//!
//! A worker starts only when every worker it names has ended. If one of them ended other
//! than `completed` (failed, timeout, crashed, cancelled, skipped…), the worker is `skipped`
//! with the reason `upstream <id> <status>` unless its `on_upstream_failure` is `run`.
//! Among ready workers `order` (then position) breaks ties and `parallel` bounds how many
//! run at once (that part stays in `stages`). Everything here is computed from the saved
//! state, so a reattached run resumes the graph where it stood.
//!
//! The pure graph helpers ([`find_cycle`], [`levels`]) also serve team-file validation and
//! `crewmux dispatch`.
#![allow(
    clippy::expect_used,
    reason = "lookups of ids the surrounding code has just checked"
)]

use std::collections::HashMap;

use chrono::{DateTime, Utc};

use super::Effects;
use crate::domain::EventKind;
use crate::domain::{RunState, UpstreamPolicy, WorkerState, WorkerStatus};

/// Where a pending worker stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Readiness {
    /// Every upstream ended (and completed, or the worker runs anyway): it may start.
    Ready,
    /// Waiting for these upstreams to end.
    Blocked(Vec<String>),
    /// An upstream did not complete: skip it with this reason.
    Skip(String),
    /// A retry waits for its back-off to pass.
    Backoff(DateTime<Utc>),
}

/// Where the pending worker `w` stands at `now`: upstreams first (a worker that will be
/// skipped is never worth a back-off wait), then its retry back-off.
pub fn readiness(state: &RunState, w: &WorkerState, now: DateTime<Utc>) -> Readiness {
    let mut blocked = Vec::new();
    for id in &w.flow.after {
        match state.worker(id) {
            None => return Readiness::Skip(format!("upstream {id} missing")),
            Some(u) if !u.status.is_terminal() => blocked.push(id.clone()),
            Some(u)
                if u.status != WorkerStatus::Completed
                    && w.flow.on_upstream_failure == UpstreamPolicy::Skip =>
            {
                return Readiness::Skip(format!("upstream {id} {}", u.status));
            }
            Some(_) => {}
        }
    }
    if !blocked.is_empty() {
        return Readiness::Blocked(blocked);
    }
    if let Some(fixer) = super::upstream_merge::waiting_for_fixer(state, w) {
        return Readiness::Blocked(vec![fixer]);
    }
    match w.flow.retry_at {
        Some(at) if at > now => Readiness::Backoff(at),
        _ => Readiness::Ready,
    }
}

/// The upstreams a pending worker still waits for, and the merge-fixer resolving a conflict
/// between their branches (empty when it waits for none): what the roster shows as a
/// `queued` worker with `after <ids>` in its note.
pub fn blocked_on(state: &RunState, w: &WorkerState) -> Vec<String> {
    if w.status != WorkerStatus::Pending {
        return Vec::new();
    }
    let mut ids: Vec<String> = w
        .flow
        .after
        .iter()
        .filter(|id| state.worker(id).is_none_or(|u| !u.status.is_terminal()))
        .cloned()
        .collect();
    ids.extend(super::upstream_merge::waiting_for_fixer(state, w));
    ids
}

/// Skip the pending workers of the current stage and round whose upstreams did not complete
/// (repeated until nothing changes, so a skip runs down a chain), then return the indices of
/// those ready to start, in `order`, then position.
pub(super) fn launchable(state: &mut RunState, fx: &mut Effects) -> Vec<usize> {
    let (stage, round) = (state.stage, state.fix_round);
    let in_scope =
        |w: &WorkerState| w.stage == stage && w.round == round && w.status == WorkerStatus::Pending;
    loop {
        let skips: Vec<(usize, String)> = state
            .workers
            .iter()
            .enumerate()
            .filter(|(_, w)| in_scope(w))
            .filter_map(|(i, w)| match readiness(state, w, fx.now) {
                Readiness::Skip(reason) => Some((i, reason)),
                _ => None,
            })
            .collect();
        if skips.is_empty() {
            break;
        }
        for (i, reason) in skips {
            skip(&mut state.workers[i], reason, fx);
        }
    }
    let mut ready: Vec<usize> = state
        .workers
        .iter()
        .enumerate()
        .filter(|(_, w)| in_scope(w) && readiness(state, w, fx.now) == Readiness::Ready)
        .map(|(i, _)| i)
        .collect();
    ready.sort_by_key(|&i| (state.workers[i].order, i));
    ready
}

/// Skip a pending worker that will not start: `skipped` with `reason`, ended now, no retry
/// left waiting, and a `worker-skipped` event. The one place a worker becomes `skipped`
/// (a failed upstream here, an upstream conflict nobody resolved in `upstream_merge`).
pub(super) fn skip(w: &mut WorkerState, reason: String, fx: &mut Effects) {
    w.status = WorkerStatus::Skipped;
    w.reason = Some(reason.clone());
    w.ended_at = Some(fx.now);
    w.flow.retry_at = None;
    fx.event(
        EventKind::WorkerSkipped,
        Some((&w.id, w.attempt)),
        "engine",
        reason,
    );
}

/// A critic's `after` as worker ids of this verify round: a critic's id becomes its worker's
/// (`critic-<id><suffix>`), a team worker's stays as it is (it has ended by then).
pub(super) fn critic_after(state: &RunState, after: &[String], suffix: &str) -> Vec<String> {
    after
        .iter()
        .map(|id| {
            if state.critics.iter().any(|c| &c.id == id) {
                format!("critic-{id}{suffix}")
            } else {
                id.clone()
            }
        })
        .collect()
}

/// The first cycle among `nodes` (id, ids it waits for), spelled out from its first node
/// back to it: `["a", "b", "a"]`. Ids that name no node are ignored (validation reports
/// them on their own). Nodes are visited in the order given, so the answer is stable.
pub fn find_cycle<S: AsRef<str>>(nodes: &[(S, Vec<S>)]) -> Option<Vec<String>> {
    let index: HashMap<&str, usize> = nodes
        .iter()
        .enumerate()
        .map(|(i, (id, _))| (id.as_ref(), i))
        .collect();
    // 0 unvisited, 1 on the current path, 2 done.
    let mut mark = vec![0u8; nodes.len()];
    let mut path: Vec<usize> = Vec::new();
    fn visit<S: AsRef<str>>(
        i: usize,
        nodes: &[(S, Vec<S>)],
        index: &HashMap<&str, usize>,
        mark: &mut [u8],
        path: &mut Vec<usize>,
    ) -> Option<Vec<String>> {
        mark[i] = 1;
        path.push(i);
        for up in &nodes[i].1 {
            let Some(&j) = index.get(up.as_ref()) else {
                continue;
            };
            match mark[j] {
                1 => {
                    let start = path.iter().position(|&p| p == j).expect("on the path");
                    let mut cycle: Vec<String> = path[start..]
                        .iter()
                        .map(|&p| nodes[p].0.as_ref().to_string())
                        .collect();
                    cycle.push(nodes[j].0.as_ref().to_string());
                    return Some(cycle);
                }
                0 => {
                    if let Some(c) = visit(j, nodes, index, mark, path) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        path.pop();
        mark[i] = 2;
        None
    }
    (0..nodes.len()).find_map(|i| {
        if mark[i] == 0 {
            visit(i, nodes, &index, &mut mark, &mut path)
        } else {
            None
        }
    })
}

/// The levels of an acyclic graph: level 0 holds the nodes that wait for nothing, level n
/// those whose furthest upstream is at level n − 1. Within a level, nodes keep the order
/// given. Ids that name no node are ignored; on a cycle the nodes in it are left out.
pub fn levels<S: AsRef<str>>(nodes: &[(S, Vec<S>)]) -> Vec<Vec<String>> {
    let mut level: HashMap<&str, usize> = HashMap::new();
    let known: std::collections::HashSet<&str> = nodes.iter().map(|(id, _)| id.as_ref()).collect();
    // At most one pass per node settles every level of an acyclic graph.
    for _ in 0..nodes.len() {
        let mut changed = false;
        for (id, after) in nodes {
            if level.contains_key(id.as_ref()) {
                continue;
            }
            let ups: Vec<&str> = after
                .iter()
                .map(AsRef::as_ref)
                .filter(|u| known.contains(u))
                .collect();
            if ups.iter().all(|u| level.contains_key(u)) {
                let l = ups.iter().map(|u| level[u] + 1).max().unwrap_or(0);
                level.insert(id.as_ref(), l);
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    let depth = level.values().max().map_or(0, |m| m + 1);
    let mut out = vec![Vec::new(); depth];
    for (id, _) in nodes {
        if let Some(&l) = level.get(id.as_ref()) {
            out[l].push(id.as_ref().to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(edges: &[(&str, &[&str])]) -> Vec<(String, Vec<String>)> {
        edges
            .iter()
            .map(|(id, after)| {
                (
                    id.to_string(),
                    after.iter().map(|s| s.to_string()).collect(),
                )
            })
            .collect()
    }

    #[test]
    fn a_cycle_is_spelled_out_from_its_first_node() {
        let nodes = g(&[("a", &["b"]), ("b", &["c"]), ("c", &["a"]), ("d", &[])]);
        assert_eq!(find_cycle(&nodes).unwrap(), ["a", "b", "c", "a"]);
        let two = g(&[("x", &[]), ("a", &["b"]), ("b", &["a"])]);
        assert_eq!(find_cycle(&two).unwrap(), ["a", "b", "a"]);
    }

    #[test]
    fn a_diamond_has_no_cycle_and_three_levels() {
        let nodes = g(&[("d", &["b", "c"]), ("b", &["a"]), ("c", &["a"]), ("a", &[])]);
        assert_eq!(find_cycle(&nodes), None);
        assert_eq!(levels(&nodes), vec![vec!["a"], vec!["b", "c"], vec!["d"]]);
    }

    #[test]
    fn unknown_ids_are_ignored_by_the_helpers() {
        let nodes = g(&[("a", &["ghost"]), ("b", &["a"])]);
        assert_eq!(find_cycle(&nodes), None);
        assert_eq!(levels(&nodes), vec![vec!["a"], vec!["b"]]);
    }

    #[test]
    fn nodes_in_a_cycle_have_no_level() {
        let nodes = g(&[("a", &[]), ("b", &["c"]), ("c", &["b"])]);
        assert_eq!(levels(&nodes), vec![vec!["a"]]);
    }
}
