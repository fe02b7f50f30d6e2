//! Nothing a worker started outlives its attempt: besides the process group, every process
//! carrying the attempt's `CREWMUX_ATTEMPT_NONCE` nonce (found in `/proc`, see
//! [`crate::backend::reap`]) is ended with the same grace → SIGKILL, when crewmux ends an
//! attempt (cancel, timeouts) and when an attempt ends by itself leaving children behind.
//! Processes that survive SIGKILL are named in the event log.

use std::time::{Duration, Instant};

use chrono::Utc;
use nix::sys::signal::Signal;

use super::{Driver, Update};
use crate::backend::reap::{attempt_pids, signal_attempt_but, spared};
use crate::domain::RunEvent;

/// How long after SIGKILL survivors are looked for.
const SETTLE: Duration = Duration::from_millis(500);

/// Leftover processes of an ended attempt, on their way out.
pub(super) struct Reap {
    worker: String,
    attempt: u32,
    nonce: String,
    /// The attempt's wrapper (its pid), spared: it exits by itself with the agent's status.
    keep: Option<u32>,
    /// When the next step is due: SIGKILL, then the survivors' count.
    at: Instant,
    killed: bool,
}

impl Driver {
    /// The nonce of `worker`'s `attempt`, from its dispatch record.
    pub(super) fn nonce_of(&self, worker: &str, attempt: u32) -> Option<String> {
        self.state
            .dispatches
            .iter()
            .rev()
            .find(|r| r.worker_id == worker && r.attempt == attempt)
            .map(|r| r.nonce.clone())
    }

    /// The attempt ended: SIGTERM whatever of it is left (children that left the group,
    /// daemons) and schedule the SIGKILL after the grace period.
    pub(super) fn reap_attempt(&mut self, worker: &str, attempt: u32) {
        let Some(nonce) = self.nonce_of(worker, attempt) else {
            return;
        };
        // The wrapper is still writing its exit evidence and then exits with the agent's
        // status (tmux's pane_dead_status); a signal now would replace that status.
        let keep = self
            .state
            .worker(worker)
            .filter(|w| w.attempt == attempt)
            .and_then(|w| w.pid);
        if signal_attempt_but(&nonce, Signal::SIGTERM, keep).is_empty() {
            return;
        }
        tracing::info!("{worker}#{attempt}: SIGTERM to processes left behind");
        self.reaps.push(Reap {
            worker: worker.to_string(),
            attempt,
            nonce,
            keep,
            at: Instant::now() + self.opts.grace,
            killed: false,
        });
    }

    /// Carry out the reaps that are due; with `all`, finish every reap now (waiting out
    /// what is left of its grace), as when the driver stops.
    pub(super) fn reap_due(&mut self, all: bool, emit: &mut impl FnMut(Update)) {
        let mut events = vec![];
        self.reaps.retain_mut(|r| loop {
            let now = Instant::now();
            if now < r.at {
                if !all {
                    return true;
                }
                if attempt_pids(&r.nonce).iter().all(|&p| spared(p, r.keep)) {
                    return false;
                }
                std::thread::sleep((r.at - now).min(Duration::from_millis(50)));
                continue;
            }
            if !r.killed {
                signal_attempt_but(&r.nonce, Signal::SIGKILL, r.keep);
                r.killed = true;
                r.at = now + SETTLE;
                continue;
            }
            let mut left = attempt_pids(&r.nonce);
            left.retain(|&p| !spared(p, r.keep));
            if !left.is_empty() {
                events.push(RunEvent {
                    ts: Utc::now(),
                    kind: crate::domain::EventKind::AttemptSurvivors,
                    worker: Some(r.worker.clone()),
                    attempt: Some(r.attempt),
                    source: "driver".into(),
                    message: format!("still alive after SIGKILL: {}", describe(&left)),
                });
            }
            return false;
        });
        for e in events {
            self.record_event(e, emit);
        }
    }
}

/// `pid (command)` for each pid, for the event log.
fn describe(pids: &[u32]) -> String {
    pids.iter()
        .map(|p| {
            let comm = std::fs::read_to_string(format!("/proc/{p}/comm")).unwrap_or_default();
            format!("{p} ({})", comm.trim())
        })
        .collect::<Vec<_>>()
        .join(", ")
}
