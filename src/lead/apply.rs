//! Carrying out effects: the one function every input goes through ([`Driver::apply`]),
//! and what each effect does (kills, pastes, the gate, the council, the report, events).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use chrono::Utc;

use super::{write_report, Driver, PendingKill, Update, LAUNCH_BATCH};
use crate::backend::{signal_group, Target};
use crate::engine::{self, Effect, Input};

impl Driver {
    /// Feed inputs to the engine and carry out every effect, which may produce more inputs.
    /// Returns how many effects there were: the state changes only with effects (every
    /// change is at least an event). Launches wait until everything else is applied (so an
    /// exit is recorded before the work it frees up starts), then one batch goes out; the
    /// rest wait in `pending_launches` for the next turns of the loop.
    pub(super) fn apply(&mut self, inputs: Vec<Input>, emit: &mut impl FnMut(Update)) -> usize {
        let mut queue: VecDeque<Input> = inputs.into();
        let mut count = 0;
        let mut batches = 0;
        loop {
            while let Some(input) = queue.pop_front() {
                let fx = engine::update(&mut self.state, &mut self.mem, Utc::now(), input);
                count += fx.len();
                let changed = !fx.is_empty();
                for effect in fx {
                    if let Some(next) = self.carry_out(effect, emit) {
                        queue.push_back(next);
                    }
                }
                if changed {
                    self.applied += 1;
                    self.maybe_crash();
                }
                // An attempt ended in a run with a budget: its new sum comes next, before
                // anything the ended attempt freed up starts.
                if queue.is_empty() {
                    queue.extend(self.spent_input());
                }
            }
            if self.pending_launches.is_empty()
                || batches == 1
                || self.mem.offline
                || self.in_flight.is_some()
            {
                // A finished run a steering request reopened is driven again.
                self.finished &= self.state.status.is_final();
                return count;
            }
            batches += 1;
            let n = self.pending_launches.len().min(LAUNCH_BATCH);
            let batch: Vec<(String, u32)> = self.pending_launches.drain(..n).collect();
            queue.extend(self.launch_many(batch));
        }
    }

    #[cfg(test)]
    fn maybe_crash(&mut self) {
        if let Some((n, save)) = self.crash_after {
            if self.applied >= n {
                if save {
                    self.save(&mut |_| {});
                    let not_saved = self.saves.flush();
                    assert!(not_saved.is_empty(), "{not_saved:?}");
                }
                std::panic::panic_any(super::tests::Crash);
            }
        }
    }

    #[cfg(not(test))]
    fn maybe_crash(&mut self) {}

    /// Carry out one effect; returns the input it produces, if any.
    fn carry_out(&mut self, effect: Effect, emit: &mut impl FnMut(Update)) -> Option<Input> {
        match effect {
            Effect::Launch { worker, attempt } => {
                // Started in batches by `apply` and the loop, once what was observed is in,
                // and the results its prompt quotes are whole (see `retake`).
                if !self.retakes.hold(&self.state, &worker, attempt) {
                    self.pending_launches.push_back((worker, attempt));
                }
                None
            }
            Effect::Kill {
                worker,
                attempt,
                reason,
            } => {
                // Held back for its SSH host: it never started, so it ends now.
                if let Some(ended) = self.kill_held(&worker, attempt) {
                    return Some(ended);
                }
                // Being started on its SSH host: killed once it is known to have started.
                if self.kill_in_remote_flight(&worker, attempt, reason) {
                    return None;
                }
                let pid = self.state.worker(&worker).and_then(|w| w.pid);
                if let Some(pid) = pid {
                    if let Err(e) = signal_group(pid, false) {
                        emit(Update::Notice(e.to_string()));
                    }
                }
                // Children that left the group (setsid, a double fork) carry the nonce; on
                // an SSH host every process of the attempt is found by it there.
                let nonce = self.nonce_of(&worker, attempt);
                let host = self.state.worker(&worker).and_then(|w| w.host.clone());
                if let Some(n) = &nonce {
                    self.signal_attempt(host.as_deref(), &worker, n, false, emit);
                }
                self.kills.push(PendingKill {
                    worker: worker.clone(),
                    attempt,
                    pid,
                    nonce,
                    host,
                    at: Instant::now() + self.kill_grace(reason),
                });
                tracing::info!("{worker}#{attempt}: SIGTERM sent ({})", reason.as_str());
                None
            }
            Effect::Paste { worker, text } => {
                self.paste(&worker, &text, emit);
                None
            }
            Effect::Reply {
                worker,
                attempt,
                call,
                reply,
            } => {
                self.reply_to_call(&worker, attempt, &call, &reply, emit);
                None
            }
            Effect::EvaluateGate => Some(Input::Gate(crate::clarification::gate::evaluate(
                &self.state.problem,
                &self.state.clarification.answers,
            ))),
            Effect::RunCouncil => self.council_or_wait(),
            Effect::Integrate => Some(Input::Integrated(crate::workspace::run_integration(
                &mut self.state,
            ))),
            Effect::MergeUpstreams { worker, fixer } => Some(Input::UpstreamsMerged {
                outcome: crate::workspace::upstream::merge_upstreams(
                    &mut self.state,
                    &worker,
                    fixer,
                ),
                worker,
            }),
            Effect::WriteReport => match write_report(&self.state, &self.store) {
                Ok((path, bytes)) => Some(Input::ReportWritten { path, bytes }),
                Err(e) => {
                    emit(Update::Notice(format!("could not write report.md: {e}")));
                    Some(Input::ReportWritten {
                        path: self.store.dir().join("report.md"),
                        bytes: 0,
                    })
                }
            },
            Effect::RaceChecks { task, candidates } => {
                self.start_race_checks(task, candidates);
                None
            }
            Effect::Event(e) => {
                self.record_event(e, emit);
                None
            }
            Effect::Finished => {
                self.finished = true;
                None
            }
        }
    }

    /// Paste `text` into `worker`'s pane (a notice when it cannot be).
    fn paste(&mut self, worker: &str, text: &str, emit: &mut impl FnMut(Update)) {
        let target = self.state.worker(worker).map(|w| Target {
            worker: w.id.clone(),
            attempt: w.attempt,
            pane_id: w.pane_id.clone(),
            pid: w.pid,
            log: self.store.attempt_dir(&w.id, w.attempt).join("output.log"),
            watch_screen: false,
        });
        if let Some(t) = target {
            // What the pane will echo of the text, expected before it is typed.
            let question = self.state.worker(worker).and_then(|w| w.question.clone());
            if let Some(w) = self.watches.get_mut(worker) {
                let prompt = w.partial_line();
                w.echo = super::echo::Echo::new(text, &prompt, question.as_deref());
            }
            if let Err(e) = self.backend.get().send_text(&t, text) {
                if let Some(w) = self.watches.get_mut(worker) {
                    w.echo = None;
                }
                emit(Update::Notice(format!("could not answer {worker}: {e}")));
            }
        }
    }

    /// Append an event to `events.jsonl`, log it, hand it to whoever shows the run and
    /// tell the person when it calls for it (`crate::notify`). A transition already in
    /// the log (observed again after a reattach) is left out, and so notifies nobody
    /// again; a second start of one attempt (a launch a stopped driver never recorded,
    /// ended and made again) is told as `worker-relaunched`.
    pub(super) fn record_event(
        &mut self,
        mut e: crate::domain::RunEvent,
        emit: &mut impl FnMut(Update),
    ) {
        if !self.recorded.first_time(&e) {
            if e.kind != crate::domain::EventKind::WorkerStarted {
                tracing::debug!("already in the log: {} {:?}", e.kind, e.worker);
                return;
            }
            e.kind = crate::domain::EventKind::WorkerRelaunched;
        }
        if let Err(err) = self.store.append_event(&e) {
            emit(Update::Notice(format!("could not append an event: {err}")));
        }
        let who = e
            .worker
            .as_deref()
            .map(|w| format!("{w}: "))
            .unwrap_or_default();
        let bad = matches!(
            e.kind.as_str(),
            "worker-crashed"
                | "worker-failed"
                | "worker-timeout"
                | "run-failed"
                | "fix-skipped"
                | "state-saved-aside"
                | "notify-failed"
        );
        if bad {
            tracing::warn!(target: "crewmux::run", "{who}{} {}", e.kind, e.message);
        } else {
            tracing::info!(target: "crewmux::run", "{who}{} {}", e.kind, e.message);
        }
        if let Some(n) = crate::notify::Notification::of_event(&self.state.run_id, &e) {
            self.notifier.send(&n);
        }
        emit(Update::Event(e));
    }

    /// Record what went wrong with `[notify] command` since the last look
    /// (`notify-failed`); with `finish`, after waiting for the commands still running (a
    /// run that ends has its last notification delivered before its driver leaves).
    pub(super) fn notify_failures(&mut self, finish: bool, emit: &mut impl FnMut(Update)) {
        let failures = if finish {
            self.notifier.finish()
        } else {
            self.notifier.failures()
        };
        for why in failures {
            let e = crate::domain::RunEvent {
                ts: Utc::now(),
                kind: crate::domain::EventKind::NotifyFailed,
                worker: None,
                attempt: None,
                source: "notify".into(),
                message: why,
            };
            self.record_event(e, emit);
        }
    }

    /// The time between SIGTERM and SIGKILL of a kill for `reason`: the grace a `crewmux
    /// cancel --grace` sent through the inbox asked for, for a cancel; else `opts.grace`.
    fn kill_grace(&self, reason: crate::engine::KillReason) -> Duration {
        match (reason, self.cancel_grace) {
            (crate::engine::KillReason::Cancel, Some(g)) => g,
            _ => self.opts.grace,
        }
    }

    /// SIGKILL attempts still alive after their grace period (their group and every
    /// process carrying their nonce).
    pub(super) fn hard_kills(&mut self) {
        let now = Instant::now();
        let state = &self.state;
        let backend = &self.backend;
        self.kills.retain(|k| {
            let still = state
                .worker(&k.worker)
                .is_some_and(|w| w.attempt == k.attempt && w.status.is_live());
            if still && now < k.at {
                return true;
            }
            // Ended (children that ignored SIGTERM may remain) or out of grace. The group
            // may be gone already, which is what we want.
            if let Some(pid) = k.pid {
                if let Err(e) = signal_group(pid, true) {
                    tracing::warn!("SIGKILL to {}: {e}", k.worker);
                }
            }
            match (&k.nonce, &k.host) {
                (Some(n), Some(h)) => {
                    if let Err(e) = backend.get().signal_on_host(h, n, true) {
                        tracing::warn!("SIGKILL to {} on host {h}: {e}", k.worker);
                    }
                }
                (Some(n), None) => {
                    crate::backend::reap::signal_attempt(n, nix::sys::signal::Signal::SIGKILL);
                }
                (None, _) => {}
            }
            false
        });
    }

    /// SIGTERM (SIGKILL with `hard`) to every process carrying the attempt's nonce, here
    /// or on its SSH host `host`.
    fn signal_attempt(
        &mut self,
        host: Option<&str>,
        worker: &str,
        nonce: &str,
        hard: bool,
        emit: &mut impl FnMut(Update),
    ) {
        use nix::sys::signal::Signal;
        match host {
            None => {
                let sig = if hard {
                    Signal::SIGKILL
                } else {
                    Signal::SIGTERM
                };
                crate::backend::reap::signal_attempt(nonce, sig);
            }
            Some(h) => {
                if let Err(e) = self.backend.get().signal_on_host(h, nonce, hard) {
                    emit(Update::Notice(format!(
                        "could not end {worker} on host {h}: {e}"
                    )));
                }
            }
        }
    }
}
