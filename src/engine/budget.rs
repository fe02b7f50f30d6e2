//! The run's budget (`domain::budget`): the spend the driver reports is checked against
//! it; at `WARN_AT` one warning, at the whole budget no new attempt starts, live attempts
//! end (TERM, grace, KILL), what completed is integrated and the run ends `failed` with
//! reason `budget: …` instead of going to its council (whose critics would spend more).

use super::{Effect, Effects, KillReason, RunMemory};
use crate::domain::budget::WARN_AT;
use crate::domain::{EventKind, RunState, Spend, WorkerStatus};

/// The driver's newest sum of what the run spent.
pub(super) fn on_spent(state: &mut RunState, mem: &mut RunMemory, spend: Spend, fx: &mut Effects) {
    let Some(b) = state.budget.as_mut() else {
        return;
    };
    b.spent = spend;
    let share = b.share();
    if share >= WARN_AT && !b.warned {
        b.warned = true;
        fx.event(
            EventKind::BudgetWarning,
            None,
            "engine",
            format!("{} of the run's budget spent: {}", percent(share), b.line()),
        );
    }
    if share >= 1.0 && b.exhausted.is_none() && !state.status.is_final() {
        let why = format!("budget: {}", b.line());
        b.exhausted = Some(why.clone());
        fx.event(EventKind::BudgetSpent, None, "engine", why);
        stop(state, mem, fx);
    }
}

fn percent(share: f64) -> String {
    format!("{:.0} %", share * 100.0)
}

/// Whether the run's budget is spent: nothing more may start.
pub(super) fn exhausted(state: &RunState) -> bool {
    state.budget.as_ref().is_some_and(|b| b.exhausted.is_some())
}

/// The budget is spent: every worker not started ends `cancelled`, every live one is
/// ended, one waiting on its result's question keeps its result.
pub(super) fn stop(state: &mut RunState, mem: &mut RunMemory, fx: &mut Effects) {
    let in_result: Vec<String> = state
        .workers
        .iter()
        .filter(|w| w.waits_on_its_result())
        .map(|w| w.id.clone())
        .collect();
    for id in in_result {
        super::questions::cancel_in_result(state, &id, fx);
    }
    cancel_pending(state, fx);
    for w in state.workers.iter() {
        if w.status.is_live() && !mem.kills.contains_key(&w.id) {
            mem.kills.insert(w.id.clone(), (KillReason::Budget, fx.now));
            fx.push(Effect::Kill {
                worker: w.id.clone(),
                attempt: w.attempt,
                reason: KillReason::Budget,
            });
            fx.event(
                EventKind::WorkerCancelRequested,
                Some((&w.id, w.attempt)),
                "engine",
                "the run's budget is spent: SIGTERM, grace, SIGKILL",
            );
        }
    }
}

/// Every pending worker (a retry scheduled after the budget ran out included) ends
/// `cancelled`: it will not start.
pub(super) fn cancel_pending(state: &mut RunState, fx: &mut Effects) {
    let now = fx.now;
    for w in state.workers.iter_mut() {
        if w.status == WorkerStatus::Pending {
            w.status = WorkerStatus::Cancelled;
            w.reason = Some("not started: the run's budget is spent".into());
            w.ended_at = Some(now);
            fx.event(
                EventKind::WorkerCancelled,
                Some((&w.id, super::lifecycle::not_started(w))),
                "engine",
                "not started: the run's budget is spent",
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use crate::domain::{Budget, BudgetState, EventKind, RunStatus, Spend, WorkerStatus};
    use crate::engine::tests::{exited, launched, run, t0};
    use crate::engine::{update, Effect, Input, KillReason, RunMemory};

    fn events(fx: &[Effect]) -> Vec<EventKind> {
        fx.iter()
            .filter_map(|e| match e {
                Effect::Event(ev) => Some(ev.kind.clone()),
                _ => None,
            })
            .collect()
    }

    fn spent(tokens: u64) -> Input {
        Input::Spent(Spend {
            tokens,
            usd: 0.0,
            estimated: false,
        })
    }

    #[test]
    fn a_budget_warns_at_80_percent_and_at_100_ends_the_run_failed_with_its_work_kept() {
        let (mut s, mut mem) = (run(2, 1), RunMemory::default());
        s.budget = Some(BudgetState {
            limit: Budget {
                usd: None,
                tokens: Some(1000),
            },
            ..BudgetState::default()
        });
        update(&mut s, &mut mem, t0(), Input::Start);
        launched(&mut s, &mut mem, "w0", 1, t0());
        assert!(!events(&update(&mut s, &mut mem, t0(), spent(700)))
            .contains(&EventKind::BudgetWarning));
        let fx = update(&mut s, &mut mem, t0(), spent(850));
        assert_eq!(events(&fx), [EventKind::BudgetWarning], "{fx:?}");
        assert!(
            events(&update(&mut s, &mut mem, t0(), spent(900))).is_empty(),
            "warned once"
        );

        let fx = update(&mut s, &mut mem, t0(), spent(1000));
        assert!(events(&fx).contains(&EventKind::BudgetSpent), "{fx:?}");
        assert!(fx.iter().any(|e| matches!(e, Effect::Kill { worker, reason: KillReason::Budget, .. } if worker == "w0")));
        let w1 = s.worker("w1").unwrap();
        assert_eq!(w1.status, WorkerStatus::Cancelled, "never started");
        assert!(w1.reason.as_deref().unwrap().contains("budget"));

        let fx = exited(&mut s, &mut mem, "w0", 1, 143);
        assert_eq!(s.worker("w0").unwrap().status, WorkerStatus::Cancelled);
        assert!(
            fx.iter().any(|e| matches!(e, Effect::WriteReport)),
            "no council: {fx:?}"
        );
        assert!(!fx
            .iter()
            .any(|e| matches!(e, Effect::Launch { .. } | Effect::RunCouncil)));
        update(
            &mut s,
            &mut mem,
            t0(),
            Input::ReportWritten {
                path: PathBuf::from("/r/report.md"),
                bytes: 10,
            },
        );
        assert_eq!(s.status, RunStatus::Failed);
        let reason = s.reason.clone().unwrap();
        assert!(
            reason.starts_with("budget: 1.0k of 1.0k tokens"),
            "{reason}"
        );
    }
}
