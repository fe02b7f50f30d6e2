//! A pane that is gone: an ended attempt's pane killed, or its whole tmux server restarted
//! (a new server numbers panes from `%0` again, so the old id would name another pane).
//! The worker keeps no pane reference, so nothing offers to show or attach to it; the
//! dispatch record keeps the reference the attempt had.

use super::Effects;
use crate::domain::{EventKind, RunState};

/// `worker`'s pane for `attempt` is gone: drop the worker's reference once the attempt has
/// ended (a live attempt's end is decided by its exit evidence first), with a `pane-gone`
/// event. Nothing when it is another attempt or the reference is already dropped.
pub(super) fn on_pane_gone(state: &mut RunState, worker: &str, attempt: u32, fx: &mut Effects) {
    let Some(w) = state.worker_mut(worker).filter(|w| w.attempt == attempt) else {
        return;
    };
    if w.status.is_live() {
        return;
    }
    let Some(pane) = w.pane_id.take() else {
        return;
    };
    let id = crate::domain::pane_label(&pane).to_string();
    fx.event(
        EventKind::PaneGone,
        Some((worker, attempt)),
        "backend",
        format!("pane {id} is gone; the output stays in output.log"),
    );
}

#[cfg(test)]
mod tests {
    use crate::domain::WorkerStatus;
    use crate::engine::tests::{run, t0};
    use crate::engine::{update, Input, RunMemory};

    #[test]
    fn an_ended_attempt_loses_its_gone_pane_once_and_a_live_one_keeps_it() {
        let mut s = run(3, 3);
        let mut rt = RunMemory::default();
        s.workers[0].attempt = 1;
        s.workers[0].status = WorkerStatus::Running;
        s.workers[0].pane_id = Some("%1@42.1700000000".into());
        let gone = Input::PaneGone {
            worker: s.workers[0].id.clone(),
            attempt: 1,
        };
        assert!(
            update(&mut s, &mut rt, t0(), gone.clone()).is_empty(),
            "live: exit first"
        );
        assert!(s.workers[0].pane_id.is_some());
        s.workers[0].status = WorkerStatus::Crashed;
        let fx = update(&mut s, &mut rt, t0(), gone.clone());
        assert_eq!(fx.len(), 1, "one pane-gone event: {fx:?}");
        assert_eq!(s.workers[0].pane_id, None);
        assert!(update(&mut s, &mut rt, t0(), gone).is_empty(), "once");
    }
}
