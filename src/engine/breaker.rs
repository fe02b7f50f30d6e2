//! The circuit breaker (docs/failures.md "Circuit breaker"): a provider whose attempts keep
//! ending in timeouts, stalls or CLI failures is opened for the rest of the run, so its
//! pending and retried workers move to their fallback providers instead of meeting the
//! same fault again. The seeds' failure tracker did the same across runs; here the count
//! is per run and the project's history keeps steering routing (`providers::history`).

use super::Effects;
use crate::domain::{EventKind, RunState, WorkerStatus};

/// Attempts of one provider in a row that open it: three timeouts, stalls or failing
/// exits, with no completed attempt of the provider between them.
pub const OPEN_AFTER: u32 = 3;

/// How an attempt's end counts for its provider's breaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Counts {
    /// A timeout, a stall, an agent CLI that exited non-zero: one more in a row.
    Against,
    /// A completed attempt: the provider works; the count starts again.
    For,
    /// A cancel, a missing artifact, an attempt gone with no exit code (its pane, tmux
    /// server or host went away, which says nothing of the CLI), a waiting worker.
    Neither,
}

fn counts(status: WorkerStatus, code: Option<i32>, reason: &str) -> Counts {
    match status {
        WorkerStatus::Completed => Counts::For,
        WorkerStatus::Timeout => Counts::Against,
        WorkerStatus::Failed if reason.starts_with("stalled: ") => Counts::Against,
        WorkerStatus::Failed if code.is_some_and(|c| c != 0) => Counts::Against,
        _ => Counts::Neither,
    }
}

/// Attempt `attempt` of `id` on `provider` ended with `status` (`code`, `reason`): count
/// it; at [`OPEN_AFTER`] in a row open the provider (`RunRouting::failed`, a
/// `provider-opened` event). Once it is open, every pending worker on it (this one when
/// its retry is scheduled, and later retries of workers that were still running) moves to
/// its next fallback provider; one with none stays, said once in the event. `command`
/// workers have no breaker: a script's exit code is its verdict and it has no fallback.
pub(super) fn note_end(
    state: &mut RunState,
    (id, attempt): (&str, u32),
    provider: &str,
    (status, code, reason): (WorkerStatus, Option<i32>, &str),
    fx: &mut Effects,
) {
    // A usage limit is the plan's, not the CLI failing: it parks or moves the worker.
    let limited = reason.contains(&format!(": {} (", crate::domain::ExitKind::Limit.says()));
    if provider == "command" || limited {
        return;
    }
    match counts(status, code, reason) {
        Counts::For => {
            state.routing.failing.remove(provider);
            return;
        }
        Counts::Neither => {}
        Counts::Against => {
            let n = state
                .routing
                .failing
                .entry(provider.to_string())
                .or_insert(0);
            *n += 1;
            let n = *n;
            if n >= OPEN_AFTER && !state.routing.failed.contains_key(provider) {
                let why = format!(
                    "{provider}: circuit open: its last {n} attempts in this run ended in a timeout, a stall or a failing exit (the last: {reason})"
                );
                state
                    .routing
                    .failed
                    .insert(provider.to_string(), why.clone());
                fx.event(
                    EventKind::ProviderOpened,
                    Some((id, attempt)),
                    "engine",
                    why,
                );
                move_pending(state, provider, true, fx);
                return;
            }
        }
    }
    if state.routing.failed.contains_key(provider) {
        move_pending(state, provider, false, fx);
    }
}

/// Before a launch: a worker whose provider is out of the run (the breaker opened it, or
/// it failed with a declared exit code) moves to its next fallback, or for a fixer with
/// none of its own, to the first usable fallback of any worker (`exits::fixer_route`); one
/// with nowhere to go starts where it is. This catches what was pending when the provider
/// went out and what became pending since (a retry, text sent to an ended worker, a merge
/// fixer).
pub(super) fn before_launch(state: &mut RunState, id: &str, fx: &mut Effects) {
    let Some(w) = state.worker(id) else {
        return;
    };
    let provider = w.provider.clone();
    let Some(why) = state.routing.failed.get(&provider).cloned() else {
        return;
    };
    if provider == "command" {
        return;
    }
    let next = super::exits::next_provider(state, id).or_else(|| {
        match (w.kind, super::exits::fixer_route(state, &provider)) {
            (crate::domain::WorkerKind::Fixer, super::exits::FixerRoute::Move(f)) => Some(f),
            _ => None,
        }
    });
    if let Some(next) = next {
        super::exits::switch(state, id, &next, &why, fx);
    }
}

/// Move every pending worker on the open `provider` to its next fallback, and every one
/// the engine has asked to start that has not started yet (no dispatch record for its
/// attempt: the driver prepares a launch from the state when it carries it out). On
/// `opening`, the workers that have nowhere to go are said once.
fn move_pending(state: &mut RunState, provider: &str, opening: bool, fx: &mut Effects) {
    let why = state
        .routing
        .failed
        .get(provider)
        .cloned()
        .unwrap_or_default();
    let not_started = |w: &crate::domain::WorkerState| {
        w.status == WorkerStatus::Starting
            && !state
                .dispatches
                .iter()
                .any(|d| d.worker_id == w.id && d.attempt == w.attempt)
    };
    let pending: Vec<String> = state
        .workers
        .iter()
        .filter(|w| w.provider == provider && (w.status == WorkerStatus::Pending || not_started(w)))
        .map(|w| w.id.clone())
        .collect();
    let mut stay = Vec::new();
    for id in pending {
        match super::exits::next_provider(state, &id) {
            Some(next) => super::exits::switch(state, &id, &next, &why, fx),
            None => stay.push(id),
        }
    }
    let unsaid = if opening { stay } else { Vec::new() };
    if !unsaid.is_empty() {
        fx.event(
            EventKind::ProviderOpened,
            None,
            "engine",
            format!(
                "{} {NO_FALLBACK} from {provider}: {} stays on it (give a `fallback` in the team file)",
                unsaid.join(", "),
                if unsaid.len() == 1 { "it" } else { "they" }
            ),
        );
    }
}

/// What the reason of a pending worker with no provider to move to says.
const NO_FALLBACK: &str = "no fallback";

#[cfg(test)]
mod tests {
    use chrono::Duration;

    use crate::domain::{Fallback, WorkerStatus};
    use crate::engine::tests::{exited, launched, launches, run, t0};
    use crate::engine::{update, Input, KillReason, RunMemory};

    /// Three timeouts in a row on `slow` open it; the fourth worker starts on `quick`.
    #[test]
    fn three_timeouts_in_a_row_open_the_provider_and_the_next_worker_runs_on_its_fallback() {
        let (mut s, mut mem) = (run(4, 1), RunMemory::default());
        for w in s.workers.iter_mut() {
            w.provider = "slow".into();
            w.max_attempts = 1;
            w.timeout_s = Some(10);
        }
        for i in 0..4 {
            s.routing.fallbacks.insert(
                format!("w{i}"),
                vec![Fallback {
                    provider: "quick".into(),
                    model: None,
                }],
            );
        }
        update(&mut s, &mut mem, t0(), Input::Start);
        let mut now = t0();
        for i in 0..3 {
            let id = format!("w{i}");
            launched(&mut s, &mut mem, &id, 1, now);
            now += Duration::seconds(11);
            update(&mut s, &mut mem, now, Input::Tick);
            assert!(mem
                .kills
                .get(&id)
                .is_some_and(|k| k.0 == KillReason::Timeout));
            let fx = exited(&mut s, &mut mem, &id, 1, 143);
            assert_eq!(s.worker(&id).unwrap().status, WorkerStatus::Timeout);
            if i < 2 {
                assert!(!s.routing.failed.contains_key("slow"), "after {}", i + 1);
            } else {
                assert_eq!(launches(&fx), [("w3".to_string(), 1)]);
            }
        }
        let why = s.routing.failed.get("slow").expect("slow is open");
        assert!(
            why.contains("circuit open") && why.contains("last 3 attempts"),
            "{why}"
        );
        assert_eq!(s.worker("w3").unwrap().provider, "quick");
    }

    /// Three at once time out together: the retries the first two were given before the
    /// third opened the provider have not started yet, and go to the fallback too.
    #[test]
    fn retries_asked_for_before_the_provider_opened_but_not_started_move_too() {
        let (mut s, mut mem) = (run(3, 3), RunMemory::default());
        for w in s.workers.iter_mut() {
            w.provider = "slow".into();
            w.max_attempts = 2;
        }
        for i in 0..3 {
            s.routing.fallbacks.insert(
                format!("w{i}"),
                vec![Fallback {
                    provider: "quick".into(),
                    model: None,
                }],
            );
        }
        update(&mut s, &mut mem, t0(), Input::Start);
        for i in 0..3 {
            launched(&mut s, &mut mem, &format!("w{i}"), 1, t0());
        }
        for i in 0..3 {
            exited(&mut s, &mut mem, &format!("w{i}"), 1, 1);
        }
        assert!(s.routing.failed.contains_key("slow"));
        for w in &s.workers {
            assert_eq!(
                (w.id.as_str(), w.provider.as_str()),
                (w.id.as_str(), "quick")
            );
        }
    }

    #[test]
    fn a_completed_attempt_between_failures_keeps_the_provider_closed() {
        let mut s = run(1, 1);
        let mut fx = crate::engine::Effects {
            now: t0(),
            out: vec![],
        };
        for status in [
            WorkerStatus::Timeout,
            WorkerStatus::Timeout,
            WorkerStatus::Completed,
            WorkerStatus::Timeout,
            WorkerStatus::Timeout,
            // Gone with no exit code (a killed tmux server) and cancels do not count.
            WorkerStatus::Crashed,
            WorkerStatus::Cancelled,
        ] {
            super::note_end(&mut s, ("w0", 1), "slow", (status, None, "x"), &mut fx);
        }
        assert!(!s.routing.failed.contains_key("slow"), "{:?}", s.routing);
        assert_eq!(s.routing.failing.get("slow"), Some(&2));
        // A stall and a failing exit count.
        super::note_end(
            &mut s,
            ("w0", 1),
            "slow",
            (WorkerStatus::Failed, Some(1), "exit code 1"),
            &mut fx,
        );
        assert!(s.routing.failed.contains_key("slow"));
        // A command's exits are its verdicts: no breaker.
        for _ in 0..5 {
            super::note_end(
                &mut s,
                ("w0", 1),
                "command",
                (WorkerStatus::Failed, Some(1), "exit code 1"),
                &mut fx,
            );
        }
        assert!(!s.routing.failed.contains_key("command"));
    }
}
