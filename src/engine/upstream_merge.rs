//! A downstream worker's worktree holds its upstreams' work before it starts: in a run with
//! worktrees, a ready worker with `after` first has its completed upstreams' branches merged
//! into its own (`Effect::MergeUpstreams`, answered by `Input::UpstreamsMerged`).
//!
//! A conflict between upstreams goes to a merge-fixer first, as at integration: a fixer
//! worker (role `fixer`, the same agent as the integration's) works in the downstream's
//! worktree on the conflicted merge, and the downstream waits for it (`queued`, `after
//! merge-fixer-…`). Once the fixer has ended, the merge pass runs again: a resolved merge is
//! committed and the other upstreams follow; one still unresolved (the fixer failed or left
//! conflict markers), or one with no agent to fix it, is aborted and left out. A downstream
//! with an upstream left out is `skipped` with the conflict as its reason, unless it sets
//! `on_upstream_failure = "run"`: then it starts and its prompt says what it does not have.

use super::{Effect, Effects, IntegrationOutcome, RunMemory};
use crate::domain::{
    EventKind, MergeConflict, RunState, UpstreamPolicy, WorkerState, WorkerStatus,
};

/// The id of the merge-fixer that resolves `theirs`' branch into `downstream`'s worktree.
pub fn fixer_id(downstream: &str, theirs: &str) -> String {
    format!("merge-fixer-{theirs}-into-{downstream}")
}

/// True when `w` has a worktree and a completed upstream with a worktree whose branch is
/// neither merged into it nor given up on: it must not start before the merge pass.
pub(super) fn needed(state: &RunState, w: &WorkerState) -> bool {
    let Some(ws) = state.workspace.as_ref() else {
        return false;
    };
    let Some(own) = ws.workers.get(&w.id) else {
        return false;
    };
    if own.upstreams.failed.is_some() {
        return false;
    }
    w.flow.after.iter().any(|id| {
        ws.workers.contains_key(id)
            && state
                .worker(id)
                .is_some_and(|u| u.status == WorkerStatus::Completed)
            && !own.upstreams.settled(id)
    })
}

/// `downstream` waits again for `up` (a retried upstream): its next merge pass takes `up`'s
/// branch again (what its worktree already holds merges as "already up to date", the new
/// attempt's commits come in).
pub(super) fn merge_again(state: &mut RunState, downstream: &str, up: &str) {
    let Some(own) = state
        .workspace
        .as_mut()
        .and_then(|ws| ws.workers.get_mut(downstream))
    else {
        return;
    };
    let r = &mut own.upstreams;
    r.merged.retain(|m| m != up);
    r.left_out.retain(|c| c.theirs != up);
    r.resolved.retain(|c| c.theirs != up);
    r.failed = None;
}

/// The merge-fixer `w` waits for: its worktree holds a conflicted merge and the fixer has
/// not ended.
pub fn waiting_for_fixer(state: &RunState, w: &WorkerState) -> Option<String> {
    let c = state
        .workspace
        .as_ref()?
        .workers
        .get(&w.id)?
        .upstreams
        .conflict
        .as_ref()?;
    let id = fixer_id(&w.id, &c.theirs);
    state
        .worker(&id)
        .is_some_and(|f| !f.status.is_terminal())
        .then_some(id)
}

/// Ask for `worker`'s merge pass once. With `fixer` false (no agent can fix, or the fixer of
/// this conflict was tried) a conflict is aborted and left out instead of waiting.
pub(super) fn request(state: &RunState, mem: &mut RunMemory, worker: &str, fx: &mut Effects) {
    if !mem.merging.insert(worker.to_string()) {
        return;
    }
    let fixer = super::integrate::fixer_agent(state).is_some() && !mem.no_fixer.contains(worker);
    fx.push(Effect::MergeUpstreams {
        worker: worker.to_string(),
        fixer,
    });
}

/// Apply the merge pass of `worker`: bring in a merge-fixer on a conflict, skip the worker
/// when an upstream was left out and it does not run anyway.
pub(super) fn on_outcome(
    state: &mut RunState,
    mem: &mut RunMemory,
    worker: &str,
    outcome: IntegrationOutcome,
    fx: &mut Effects,
) {
    mem.merging.remove(worker);
    let Some(w) = state
        .worker(worker)
        .filter(|w| w.status == WorkerStatus::Pending)
        .cloned()
    else {
        return;
    };
    match outcome {
        IntegrationOutcome::Clean => skip_if_left_out(state, &w, fx),
        IntegrationOutcome::Failed(msg) => fx.event(
            EventKind::IntegrationFailed,
            Some((worker, w.attempt)),
            "engine",
            format!("merging the upstreams of {worker}: {msg}"),
        ),
        IntegrationOutcome::Conflict { conflict, task } => {
            fx.event(
                EventKind::MergeConflict,
                Some((worker, w.attempt)),
                "engine",
                finding(worker, &conflict),
            );
            let id = fixer_id(worker, &conflict.theirs);
            let fixer = (state.worker(&id).is_none())
                .then(|| super::integrate::new_fixer(state, id, task, w.stage, w.round))
                .flatten();
            match fixer {
                Some(mut f) => {
                    f.cwd = fixer_cwd(state, worker);
                    state.workers.push(f);
                }
                // Tried already, or nobody can fix: the next pass leaves it out.
                None => {
                    mem.no_fixer.insert(worker.to_string());
                }
            }
        }
    }
}

/// The downstream's worktree (its working directory), where its merge-fixer works.
fn fixer_cwd(state: &RunState, worker: &str) -> Option<std::path::PathBuf> {
    let ws = state.workspace.as_ref()?;
    Some(ws.cwd_in(&ws.workers.get(worker)?.path))
}

fn finding(worker: &str, c: &MergeConflict) -> String {
    format!(
        "merge conflict in {} between {} and {} (upstreams of {worker})",
        c.files.join(", "),
        c.ours,
        c.theirs
    )
}

/// A worker whose upstream's work was left out is skipped, unless it runs anyway.
fn skip_if_left_out(state: &mut RunState, w: &WorkerState, fx: &mut Effects) {
    if w.flow.on_upstream_failure == UpstreamPolicy::Run {
        return;
    }
    let Some(c) = state
        .workspace
        .as_ref()
        .and_then(|ws| ws.workers.get(&w.id))
        .and_then(|own| own.upstreams.left_out.first().cloned())
    else {
        return;
    };
    let why = match state.worker(&fixer_id(&w.id, &c.theirs)) {
        Some(f) if f.status == WorkerStatus::Completed => {
            "the merge-fixer left it unresolved".to_string()
        }
        Some(f) => format!("{} {}", f.id, f.status),
        None => "no agent to resolve it: set a [fixer] provider".to_string(),
    };
    let reason = format!(
        "upstream {} conflicts with {} in {} ({why})",
        c.theirs,
        c.ours,
        c.files.join(", ")
    );
    if let Some(w) = state.workers.iter_mut().find(|x| x.id == w.id) {
        super::graph::skip(w, reason, fx);
    }
}
