//! Attempts on SSH hosts start on their host's own thread (`crate::hosts`): the batch's
//! worktrees there, its files and its windows. The loop hands each host its part of a
//! batch and goes on; what came of it is taken in at a later turn. So a slow or hung host
//! holds up neither the launch thread (this machine's windows, other hosts) nor the
//! person's requests, which wait only for this machine's batch in flight.
//!
//! A kill asked for an attempt still being started on its host (a cancel, a timeout) is
//! kept until the start is known: a started attempt is then signalled by its nonce there,
//! and one that did not start ends at once.

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use crate::backend::{GitSend, HostLaunch};
use crate::engine::{Input, KillReason};
use crate::lead::launch::ReadyAttempt;
use crate::lead::{Driver, PendingKill, Update};

/// The attempts being started on their hosts' threads, by `(worker, attempt)`.
#[derive(Default)]
pub(in crate::lead) struct RemoteFlight {
    ready: HashMap<(String, u32), ReadyAttempt>,
    /// Kills asked for while they were being started.
    kills: HashMap<(String, u32), KillReason>,
}

impl Driver {
    /// Hand the attempts of `ready` that run on SSH hosts to their hosts' threads, one
    /// batch per host; returns the others (this machine's, and any a backend could not
    /// take), to be started as usual.
    pub(in crate::lead) fn launch_remote(&mut self, ready: Vec<ReadyAttempt>) -> Vec<ReadyAttempt> {
        let mut here = vec![];
        let mut per_host: BTreeMap<String, Vec<ReadyAttempt>> = BTreeMap::new();
        for r in ready {
            match r.prepared.spawn.host.clone() {
                Some(h) => per_host.entry(h).or_default().push(r),
                None => here.push(r),
            }
        }
        for (host, batch) in per_host {
            let specs: Vec<_> = batch.iter().map(|r| r.prepared.spawn.clone()).collect();
            let git = self.state.workspace.as_ref().map(|ws| GitSend {
                workspace: ws.clone(),
                project: self.state.project_dir.clone(),
                run_id: self.state.run_id.clone(),
                workers: batch
                    .iter()
                    .map(|r| r.worker.clone())
                    .filter(|id| ws.workers.contains_key(id))
                    .collect(),
            });
            if !self
                .backend
                .get()
                .launch_on_host(&host, HostLaunch { specs, git })
            {
                here.extend(batch);
                continue;
            }
            // Its work is fetched back from there when it ends, also by the host's thread
            // reading the saved state: recorded before the attempt can end.
            if let Some(ws) = self.state.workspace.as_mut() {
                for r in &batch {
                    if let Some(w) = ws.workers.get_mut(&r.worker) {
                        w.host = Some(host.clone());
                    }
                }
            }
            for r in batch {
                self.remote_flight
                    .ready
                    .insert((r.worker.clone(), r.attempt), r);
            }
        }
        here
    }

    /// True while an attempt is being started on its host.
    pub(in crate::lead) fn remote_in_flight(&self) -> bool {
        !self.remote_flight.ready.is_empty()
    }

    /// A kill of an attempt still being started on its host: kept for when it lands
    /// (true), see the module docs.
    pub(in crate::lead) fn kill_in_remote_flight(
        &mut self,
        worker: &str,
        attempt: u32,
        reason: KillReason,
    ) -> bool {
        let key = (worker.to_string(), attempt);
        if !self.remote_flight.ready.contains_key(&key) {
            return false;
        }
        self.remote_flight.kills.insert(key, reason);
        true
    }

    /// The batches the hosts' threads started since the last turn, as inputs: each
    /// attempt `Launched`, or failed (held back for its host when the host does not
    /// answer, see `host_wait`).
    pub(in crate::lead) fn remote_landed(&mut self, emit: &mut impl FnMut(Update)) -> Vec<Input> {
        if !self.remote_in_flight() {
            return vec![];
        }
        let mut inputs = vec![];
        let landed = self.backend.get().take_launched_on_hosts();
        for l in landed {
            if let Some(ws) = self.state.workspace.as_mut() {
                for id in &l.sent {
                    if let Some(w) = ws.workers.get_mut(id) {
                        w.host = Some(l.host.clone());
                    }
                }
            }
            for (worker, attempt, result) in l.started {
                let key = (worker.clone(), attempt);
                let Some(r) = self.remote_flight.ready.remove(&key) else {
                    tracing::warn!(
                        "{worker}#{attempt}: started on host {} unasked; ignored",
                        l.host
                    );
                    continue;
                };
                let Some(reason) = self.remote_flight.kills.remove(&key) else {
                    inputs.extend(self.landed_one(r, result));
                    continue;
                };
                match result {
                    Ok(spawned) => {
                        let nonce = r.prepared.nonce.clone();
                        inputs.extend(self.landed_one(r, Ok(spawned)));
                        self.kill_landed(&l.host, worker, attempt, nonce, reason, emit);
                    }
                    Err(e) => inputs.push(Input::Vanished {
                        worker,
                        attempt,
                        detail: format!("it never started on host {}: {e}", l.host),
                    }),
                }
            }
        }
        inputs
    }

    /// SIGTERM now to an attempt a kill was asked for while it was being started on
    /// `host`, SIGKILL after the grace (as `Effect::Kill` does).
    fn kill_landed(
        &mut self,
        host: &str,
        worker: String,
        attempt: u32,
        nonce: String,
        reason: KillReason,
        emit: &mut impl FnMut(Update),
    ) {
        if let Err(e) = self.backend.get().signal_on_host(host, &nonce, false) {
            emit(Update::Notice(format!(
                "could not end {worker} on host {host}: {e}"
            )));
        }
        tracing::info!("{worker}#{attempt}: SIGTERM sent ({})", reason.as_str());
        self.kills.push(PendingKill {
            worker,
            attempt,
            pid: None,
            nonce: Some(nonce),
            host: Some(host.to_string()),
            at: Instant::now() + self.opts.grace,
        });
    }
}
