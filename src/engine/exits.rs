//! Exit codes with a meaning: a provider declares some of its CLI's exit codes (`auth`,
//! `untrusted-dir`, `usage`, …; `RunRouting::exit_codes`). Such a failure repeats on the
//! same provider, so it is never retried there: the worker moves to its next fallback
//! provider that has not failed this way in the run (pending workers of the failed provider
//! move too), and when there is none the worker ends with a reason that says what to do.

use super::{Effects, RunMemory};
use crate::domain::{EventKind, ExitSaid, Fallback, RunState, WorkerStatus};

/// The reason of `id`'s attempt that exited `code` (not 0). For a declared code, or an exit
/// the CLI's output explained (`said`): mark the provider failed for this run, move this
/// worker (when attempts remain) and the pending workers of that provider to their next
/// provider, or forbid the retry. A declared code wins over the output.
pub(super) fn failed_exit(
    state: &mut RunState,
    mem: &mut RunMemory,
    id: &str,
    attempt: u32,
    code: i32,
    said: Option<&ExitSaid>,
    fx: &mut Effects,
) -> String {
    let Some(w) = state.worker(id) else {
        return format!("exit code {code}");
    };
    let provider = w.provider.clone();
    let max = w.max_attempts;
    let reason = match (state.routing.meaning(&provider, code), said) {
        (Some(meaning), _) => meaning.reason(&provider, code),
        (None, Some(said)) => said.reason(&provider, code),
        (None, None) => return format!("exit code {code}"),
    };
    if let Some(said) = said.filter(|s| {
        s.meaning.meaning == crate::domain::ExitKind::Limit
            && state.routing.meaning(&provider, code).is_none()
    }) {
        if let Some(parked) = super::parking::on_limit(state, mem, (id, attempt), &reason, said, fx)
        {
            return parked;
        }
    }
    state
        .routing
        .failed
        .insert(provider.clone(), reason.clone());
    let retries_left = attempt < max && !mem.cancelled;
    match next_provider(state, id).filter(|_| retries_left) {
        Some(next) => switch(state, id, &next, &reason, fx),
        None => {
            mem.no_retry.insert(id.to_string());
        }
    }
    // Workers not started yet would fail the same way: move them now.
    let waiting: Vec<String> = state
        .workers
        .iter()
        .filter(|w| w.id != id && w.provider == provider && w.status == WorkerStatus::Pending)
        .map(|w| w.id.clone())
        .collect();
    for other in waiting {
        if let Some(next) = next_provider(state, &other) {
            switch(state, &other, &next, &reason, fx);
        }
    }
    reason
}

/// The first fallback of `id` that is not its provider and has not failed in this run.
pub(super) fn next_provider(state: &RunState, id: &str) -> Option<Fallback> {
    let current = &state.worker(id)?.provider;
    state
        .routing
        .fallbacks
        .get(id)?
        .iter()
        .find(|f| &f.provider != current && !state.routing.failed.contains_key(&f.provider))
        .cloned()
}

pub(super) fn switch(state: &mut RunState, id: &str, to: &Fallback, why: &str, fx: &mut Effects) {
    let Some(w) = state.worker_mut(id) else {
        return;
    };
    let from = std::mem::replace(&mut w.provider, to.provider.clone());
    w.model = to.model.clone();
    let attempt = w.attempt;
    fx.event(
        EventKind::ProviderSwitched,
        Some((id, attempt)),
        "engine",
        format!("{from} → {}: {why}", to.provider),
    );
}

/// Where a fixer goes when it would go to `preferred`.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum FixerRoute {
    /// `preferred` did not fail with a declared exit code in this run, nor stall.
    Keep,
    /// It did: the first fallback of any worker (in worker order) that is usable.
    Move(Fallback),
    /// It did and nothing else is left: the reason it failed.
    Nowhere(String),
}

/// A provider that failed with a declared exit code, or whose latest attempts all stalled
/// on its connection (`RunRouting::unusable`), gets no fixer: a fix round there would try
/// the same dead endpoint again.
pub(super) fn fixer_route(state: &RunState, preferred: &str) -> FixerRoute {
    let Some(why) = state.routing.unusable(preferred) else {
        return FixerRoute::Keep;
    };
    state
        .workers
        .iter()
        .filter_map(|w| state.routing.fallbacks.get(&w.id))
        .flatten()
        .find(|f| state.routing.unusable(&f.provider).is_none())
        .cloned()
        .map_or_else(|| FixerRoute::Nowhere(why), FixerRoute::Move)
}
