//! An SSH host lost for good (gone longer than its `lost_after_s`): its live workers end
//! `crashed (host lost)`, and they — with every worker of that host that has not started
//! yet — run on this machine from then on, so a retry (when attempts remain) starts here.
//! The lost attempts are marked `left_on_host` in their dispatch records: the driver ends
//! them on the host the first time it answers again. An attempt that never started there
//! (its host did not answer when it was to start, so the driver held it back) costs
//! nothing: it starts on this machine under the same attempt number.
//! In a run spread with `--hosts`, each listed host runs at most its share at once.

use super::{ending, Effects, RunMemory};
use crate::domain::{EventKind, RunState, WorkerState, WorkerStatus, LOCAL_HOST};

/// How a lost host's reason starts (`host lost: box unreachable for 120 s (…)`); the
/// event line reads `crashed (host lost): box unreachable …`.
pub(crate) const HOST_LOST: &str = "host lost: ";

/// `host` is lost (`detail`: since when, what ssh said).
pub(super) fn on_host_lost(
    state: &mut RunState,
    mem: &mut RunMemory,
    host: &str,
    detail: &str,
    fx: &mut Effects,
) {
    let mut live = vec![];
    // (worker, attempt its event names, what it says): each worker that runs here from now on.
    let mut moved: Vec<(String, u32, String)> = vec![];
    let started: std::collections::HashSet<(String, u32)> = state
        .dispatches
        .iter()
        .map(|d| (d.worker_id.clone(), d.attempt))
        .collect();
    for w in state
        .workers
        .iter_mut()
        .filter(|w| w.host.as_deref() == Some(host) && !w.status.is_terminal())
    {
        if w.status == WorkerStatus::Starting && !started.contains(&(w.id.clone(), w.attempt)) {
            // Held back while its host did not answer: it starts here, as the same attempt.
            let said =
                format!("host {host} was lost before it started there; it runs on {LOCAL_HOST}");
            moved.push((w.id.clone(), w.attempt, said.clone()));
            w.attempt = w.attempt.saturating_sub(1);
            w.status = WorkerStatus::Pending;
            w.reason = Some(said);
            move_here(w, host);
        } else if w.status.is_live() {
            live.push((w.id.clone(), w.attempt, w.attempt < w.max_attempts));
        } else {
            // Not started yet: it runs here from now on.
            moved.push((
                w.id.clone(),
                w.attempt,
                format!("host {host} was lost; it runs on {LOCAL_HOST}"),
            ));
            move_here(w, host);
        }
    }
    for (worker, attempt, _) in &live {
        // Its processes on the host live on; they are ended when the host answers again.
        for d in state.dispatches.iter_mut().filter(|d| {
            d.worker_id == *worker && d.attempt == *attempt && d.host.as_deref() == Some(host)
        }) {
            d.left_on_host = true;
        }
    }
    for (worker, attempt, retries) in live {
        let then = if retries {
            "; a retry runs on local"
        } else {
            "; no attempt is left to retry"
        };
        ending::on_gone(
            state,
            mem,
            &worker,
            attempt,
            format!("{HOST_LOST}{host} {detail}{then}"),
            fx,
        );
        // A worker that ended for good keeps the host it ran on; one that runs again
        // (a retry, or a cancel that leaves it pending) runs here.
        if let Some(w) = state.worker_mut(&worker) {
            if !w.status.is_terminal() {
                move_here(w, host);
                moved.push((
                    worker,
                    attempt,
                    format!(
                        "host {host} was lost during attempt {attempt}; the next attempt runs on {LOCAL_HOST}"
                    ),
                ));
            }
        }
    }
    for (worker, attempt, said) in moved {
        fx.event(
            EventKind::WorkerMoved,
            Some((&worker, attempt)),
            "engine",
            said,
        );
    }
}

/// `w` runs on this machine from now on, because `host` was lost.
fn move_here(w: &mut WorkerState, host: &str) {
    w.host = None;
    w.moved_from = Some(host.to_string());
}

/// True when `w`'s host already runs as many workers as its share (`host_slots`: a run
/// spread with `--hosts`); a host without a share is bounded by `parallel` only.
pub(super) fn host_full(state: &RunState, w: &WorkerState) -> bool {
    let host = w.host.as_deref().unwrap_or(crate::domain::LOCAL_HOST);
    let Some(&cap) = state.host_slots.get(host) else {
        return false;
    };
    let live = state
        .workers
        .iter()
        .filter(|x| {
            x.status.is_live() && x.host.as_deref().unwrap_or(crate::domain::LOCAL_HOST) == host
        })
        .count();
    live >= cap
}

#[cfg(test)]
mod tests {
    use crate::domain::{EventKind, WorkerStatus};
    use crate::engine::tests::{exited, launched, launches, run, t0};
    use crate::engine::{update, Effect, Input, RunMemory};

    /// `w` runs its first attempt of `max_attempts` in a pane on host `box`.
    fn running_on_box(w: &mut crate::domain::WorkerState, max_attempts: u32) {
        w.host = Some("box".into());
        w.attempt = 1;
        w.max_attempts = max_attempts;
        w.status = WorkerStatus::Running;
        w.pane_id = Some("box:%1@42.1700000000".into());
    }

    /// Host `box` is found lost.
    fn lose_box(s: &mut crate::domain::RunState, mem: &mut RunMemory) -> Vec<Effect> {
        update(
            s,
            mem,
            t0(),
            Input::HostLost {
                host: "box".into(),
                detail: "unreachable for 120 s".into(),
            },
        )
    }

    #[test]
    fn each_listed_host_runs_at_most_its_share_at_once() {
        // local runs 1 at once, box 2; the run 3. Order: w0 local, w1 local, w2..w4 box.
        let mut s = run(5, 3);
        s.host_slots = [("local".to_string(), 1), ("box".to_string(), 2)].into();
        for w in &mut s.workers[2..] {
            w.host = Some("box".into());
        }
        let mut mem = RunMemory::default();
        let fx = update(&mut s, &mut mem, t0(), Input::Start);
        // w1 waits for local's one slot; box's two go to w2 and w3.
        assert_eq!(
            launches(&fx),
            vec![("w0".into(), 1), ("w2".into(), 1), ("w3".into(), 1)]
        );
        launched(&mut s, &mut mem, "w2", 1, t0());
        let fx = exited(&mut s, &mut mem, "w2", 1, 0);
        // A box slot freed: w4 (box) starts, w1 still waits for local.
        assert_eq!(launches(&fx), vec![("w4".into(), 1)]);
        launched(&mut s, &mut mem, "w0", 1, t0());
        let fx = exited(&mut s, &mut mem, "w0", 1, 0);
        assert_eq!(launches(&fx), vec![("w1".into(), 1)]);
    }

    #[test]
    fn a_lost_hosts_worker_with_no_attempt_left_keeps_its_host_and_promises_no_retry() {
        let mut s = run(1, 1);
        let mut mem = RunMemory::default();
        running_on_box(&mut s.workers[0], 1);
        let fx = lose_box(&mut s, &mut mem);
        let w = &s.workers[0];
        let said = format!("{fx:?}");
        assert!(!said.contains("a retry runs"), "{said}");
        assert!(said.contains("no attempt is left to retry"), "{said}");
        assert_eq!(w.status, WorkerStatus::Crashed);
        assert_eq!(w.host.as_deref(), Some("box"), "it ran and crashed on box");
    }

    #[test]
    fn a_lost_hosts_workers_crash_and_run_on_local_from_then_on() {
        let mut s = run(3, 3);
        let mut mem = RunMemory::default();
        running_on_box(&mut s.workers[0], 2);
        s.workers[1].host = Some("box".into());
        s.workers[2].host = Some("other".into());
        let fx = lose_box(&mut s, &mut mem);
        let w = &s.workers[0];
        let said = format!("{fx:?}");
        assert!(
            said.contains("crashed (host lost): box unreachable") && !said.contains("vanished"),
            "{said}"
        );
        assert_eq!(
            (w.status, w.reason.as_deref()),
            (WorkerStatus::Pending, Some("retry 2 of 2 after crashed"))
        );
        assert_eq!(w.host, None, "the retry runs here");
        assert_eq!(
            s.workers[1].host, None,
            "a pending worker of that host runs here"
        );
        assert_eq!(s.workers[2].host.as_deref(), Some("other"));
        assert_eq!(s.workers[2].moved_from, None);
    }

    #[test]
    fn a_worker_moved_off_a_lost_host_says_so_in_an_event_its_record_and_its_placement() {
        let mut s = run(2, 2);
        let mut mem = RunMemory::default();
        running_on_box(&mut s.workers[0], 2);
        s.workers[1].host = Some("box".into());
        let fx = lose_box(&mut s, &mut mem);
        let moved: Vec<(Option<String>, Option<u32>, String)> = fx
            .iter()
            .filter_map(|e| match e {
                Effect::Event(ev) if ev.kind == EventKind::WorkerMoved => {
                    Some((ev.worker.clone(), ev.attempt, ev.message.clone()))
                }
                _ => None,
            })
            .collect();
        assert_eq!(
            moved,
            vec![
                (
                    Some("w1".into()),
                    Some(0),
                    "host box was lost; it runs on local".into()
                ),
                (
                    Some("w0".into()),
                    Some(1),
                    "host box was lost during attempt 1; the next attempt runs on local".into()
                ),
            ]
        );
        let w = &s.workers[0];
        assert_eq!(w.moved_from.as_deref(), Some("box"));
        assert_eq!(
            w.placement().as_deref(),
            Some("next attempt on local (box lost)")
        );
        // The retry starts here: its record and its start say where and why.
        s.workers[0].flow.retry_at = None;
        s.workers[0].status = WorkerStatus::Starting;
        s.workers[0].attempt = 2;
        let fx = update(
            &mut s,
            &mut mem,
            t0(),
            Input::Launched {
                worker: "w0".into(),
                attempt: 2,
                nonce: "n2".into(),
                prompt_path: "/p/w0/attempt-2/prompt.md".into(),
                backend: "tmux".into(),
                pane_id: Some("%1".into()),
                pid: Some(42),
                credential_label: None,
            },
        );
        let d = s.dispatches.last().unwrap();
        assert_eq!(
            (d.attempt, d.host.as_deref(), d.moved_from.as_deref()),
            (2, None, Some("box"))
        );
        assert!(format!("{fx:?}").contains("on local (box lost)"), "{fx:?}");
        assert_eq!(
            s.workers[0].placement().as_deref(),
            Some("attempt 2 on local (box lost)")
        );
    }

    #[test]
    fn an_attempt_held_back_while_its_host_did_not_answer_starts_here_as_the_same_attempt() {
        let mut s = run(1, 1);
        let mut mem = RunMemory::default();
        s.workers[0].host = Some("box".into());
        update(&mut s, &mut mem, t0(), Input::Start);
        let w = &s.workers[0];
        assert_eq!((w.status, w.attempt), (WorkerStatus::Starting, 1));
        // The driver never launched it: no dispatch record, no pane.
        let fx = lose_box(&mut s, &mut mem);
        assert_eq!(launches(&fx), vec![("w0".into(), 1)], "{fx:?}");
        let w = &s.workers[0];
        assert_eq!(
            (w.status, w.attempt, w.host.as_deref()),
            (WorkerStatus::Starting, 1, None)
        );
        assert!(!format!("{fx:?}").contains("crashed"), "{fx:?}");
        launched(&mut s, &mut mem, "w0", 1, t0());
        exited(&mut s, &mut mem, "w0", 1, 0);
        assert_eq!(s.workers[0].status, WorkerStatus::Completed);
    }

    #[test]
    fn the_attempt_a_lost_host_was_running_is_marked_left_there() {
        let mut s = run(2, 2);
        let mut mem = RunMemory::default();
        let record = |worker: &str, status| crate::domain::DispatchRecord {
            worker_id: worker.into(),
            prompt_path: "p".into(),
            attempt: 1,
            backend: "tmux".into(),
            status,
            reason: None,
            nonce: format!("n-{worker}"),
            pane_id: None,
            exit_code: None,
            exit_source: None,
            started_at: t0(),
            ended_at: None,
            credential_label: None,
            host: Some("box".into()),
            left_on_host: false,
            moved_from: None,
            session: None,
            resumed: None,
        };
        for (i, status) in [WorkerStatus::Running, WorkerStatus::Completed]
            .into_iter()
            .enumerate()
        {
            let w = &mut s.workers[i];
            w.host = Some("box".into());
            w.attempt = 1;
            w.status = status;
            let r = record(&w.id.clone(), status);
            s.dispatches.push(r);
        }
        lose_box(&mut s, &mut mem);
        let marked: Vec<bool> = s.dispatches.iter().map(|d| d.left_on_host).collect();
        assert_eq!(marked, vec![true, false], "only the attempt that ran there");
    }
}
