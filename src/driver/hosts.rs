//! The driver's part of SSH hosts: a host lost for good becomes the engine's `HostLost`,
//! and the attempts it left running there (the dispatch records marked `left_on_host`,
//! also those a driver before this one saved) are handed to the backend, which ends them
//! by their nonce the first time the host answers again; once ended, the mark goes.
//! The hosts found not answering are kept in the run's state (`hosts_not_answering`), for
//! `status` in another process to read while this one drives the run.

use super::{Driver, Update};
use crate::engine::Input;

impl Driver {
    /// `HostLost` for each host the backend found `lost` (drained with the poll), said
    /// once (the footer's line about the host not answering would stay otherwise); the
    /// attempts still running there are to be ended when it answers again.
    pub(super) fn lost_hosts(
        &mut self,
        lost: Vec<(String, String)>,
        emit: &mut impl FnMut(Update),
    ) -> Vec<Input> {
        let mut inputs = vec![];
        for (host, detail) in lost {
            emit(Update::Notice(format!(
                "host {host} was lost: {detail}; its workers run on local from now on"
            )));
            self.host_lost_held(&host);
            // Lost, not just silent: its workers end (or moved) with the `HostLost` below.
            if self.state.hosts_not_answering.remove(&host).is_some() {
                self.save(emit);
            }
            let nonces: Vec<String> = self
                .state
                .dispatches
                .iter()
                .filter(|d| d.host.as_deref() == Some(&host) && d.status.is_live())
                .map(|d| d.nonce.clone())
                .collect();
            if !nonces.is_empty() {
                self.backend.get().end_on_host_when_back(&host, nonces);
            }
            inputs.push(Input::HostLost { host, detail });
        }
        inputs
    }

    /// Bring the run's `hosts_not_answering` in line with the hosts said not to answer
    /// (`hosts_down_reported`, the set the roster's `?` comes from; `before`: that set
    /// before this poll), and save it when it changed: a host newly said not to answer is
    /// added with the time now, one said to answer again goes. A host already lost stays
    /// out (see [`lost_hosts`](Self::lost_hosts)). An offline command keeps nothing: its
    /// `status` says what it found itself.
    pub(super) fn keep_hosts_not_answering(
        &mut self,
        before: &std::collections::BTreeSet<String>,
        emit: &mut impl FnMut(Update),
    ) {
        if self.mem.offline {
            return;
        }
        let now = chrono::Utc::now();
        let kept = &mut self.state.hosts_not_answering;
        let old = kept.clone();
        kept.retain(|h, _| self.hosts_down_reported.contains(h));
        for host in self.hosts_down_reported.difference(before) {
            kept.entry(host.clone()).or_insert(now);
        }
        if *kept != old {
            tracing::info!(
                "hosts not answering, as saved for status: {:?}",
                kept.keys().collect::<Vec<_>>()
            );
            self.save(emit);
        }
    }

    /// Forget the hosts kept as not answering (the driver leaves: nobody keeps the list
    /// up to date then); true when there were some (the state is to be saved).
    pub(super) fn forget_hosts_not_answering(&mut self) -> bool {
        let had = !self.state.hosts_not_answering.is_empty();
        self.state.hosts_not_answering.clear();
        had
    }

    /// Hand the backend every attempt saved as left on a host (a driver that starts on a
    /// run whose host was lost before).
    pub(super) fn end_left_on_hosts(&mut self) {
        let mut per_host: std::collections::BTreeMap<String, Vec<String>> = Default::default();
        for d in self.state.dispatches.iter().filter(|d| d.left_on_host) {
            if let Some(h) = &d.host {
                per_host.entry(h.clone()).or_default().push(d.nonce.clone());
            }
        }
        for (host, nonces) in per_host {
            tracing::info!(
                "host {host}: {} attempt(s) left running there are ended when it answers",
                nonces.len()
            );
            self.backend.get().end_on_host_when_back(&host, nonces);
        }
    }

    /// Clear the mark of the attempts the backend `ended` on their hosts (drained with the
    /// poll; saved at once: a later driver need not end them again).
    pub(super) fn ended_on_hosts(
        &mut self,
        ended: Vec<(String, Vec<String>)>,
        emit: &mut impl FnMut(Update),
    ) {
        if ended.is_empty() {
            return;
        }
        for (host, nonces) in ended {
            for d in self.state.dispatches.iter_mut().filter(|d| {
                d.left_on_host && d.host.as_deref() == Some(&host) && nonces.contains(&d.nonce)
            }) {
                d.left_on_host = false;
                emit(Update::Notice(format!(
                    "{}#{}: its processes left on host {host} were ended",
                    d.worker_id, d.attempt
                )));
            }
        }
        self.save(emit);
    }
}
