//! Attempts that wait for their SSH host. An attempt whose host does not answer when it is
//! to start (the host is down already, or its launch failed and the host's thread then
//! found it does not answer) is held back: it stays `starting` in the run (the roster
//! reads it as unknown while the host is said not to answer) and no attempt is used up.
//! It starts when the host answers again; when the host is lost (gone longer than its
//! `lost_after_s`), the engine hands it to this machine under the same attempt number.
//! A launch that failed on a host that answers fails as any launch does.

use crate::engine::Input;
use crate::lead::{Driver, Update};

/// One attempt held back for its host.
#[derive(Debug, Clone)]
struct Held {
    host: String,
    worker: String,
    attempt: u32,
    /// Why its launch failed, while its host's check is under way (`None`: it was not
    /// tried, or the host was found not to answer).
    error: Option<String>,
}

/// The attempts held back for their hosts.
#[derive(Debug, Default)]
pub(in crate::lead) struct HostWait {
    held: Vec<Held>,
}

impl HostWait {
    /// True when an attempt waits for its host (its host is polled, so it is seen to
    /// answer again or to be lost).
    pub(in crate::lead) fn any(&self) -> bool {
        !self.held.is_empty()
    }

    fn checking(&self, host: &str) -> bool {
        self.held
            .iter()
            .any(|h| h.host == host && h.error.is_some())
    }
}

impl Driver {
    /// The SSH host `worker` runs on (`None`: this machine).
    pub(in crate::lead) fn host_of(&self, worker: &str) -> Option<String> {
        self.state.worker(worker).and_then(|w| w.host.clone())
    }

    /// Hold back the attempts of `wanted` whose host does not answer now; returns the
    /// others, to be started.
    pub(in crate::lead) fn hold_for_down_hosts(
        &mut self,
        wanted: Vec<(String, u32)>,
    ) -> Vec<(String, u32)> {
        let down = self.hosts_not_answering();
        if down.is_empty() {
            return wanted;
        }
        let mut go = vec![];
        for (worker, attempt) in wanted {
            match self.host_of(&worker).filter(|h| down.contains(h)) {
                Some(host) => {
                    tracing::info!(
                        "{worker}#{attempt}: waits for host {host}, which does not answer"
                    );
                    self.host_wait.held.push(Held {
                        host,
                        worker,
                        attempt,
                        error: None,
                    });
                }
                None => go.push((worker, attempt)),
            }
        }
        go
    }

    /// An attempt could not be started: on an SSH host it is held back until the host's
    /// thread says whether the host answers (`None`); here, `LaunchFailed`.
    pub(in crate::lead) fn launch_failed(
        &mut self,
        worker: String,
        attempt: u32,
        error: String,
    ) -> Option<Input> {
        let Some(host) = self.host_of(&worker) else {
            return Some(Input::LaunchFailed {
                worker,
                attempt,
                error,
            });
        };
        if !self.host_wait.checking(&host) {
            self.backend.get().check_host(&host);
        }
        self.host_wait.held.push(Held {
            host,
            worker,
            attempt,
            error: Some(error),
        });
        None
    }

    /// Each turn: the hosts' checks answered (a host that answers fails the launches held
    /// for it with their own reasons; one that does not keeps them waiting, said once),
    /// and the attempts whose host answers again go back to be started.
    pub(in crate::lead) fn host_wait_turn(&mut self, emit: &mut impl FnMut(Update)) -> Vec<Input> {
        if !self.host_wait.any() {
            return vec![];
        }
        let mut inputs = vec![];
        for (host, answers) in self.backend.get().take_checked_hosts() {
            let (checked, rest): (Vec<Held>, Vec<Held>) = std::mem::take(&mut self.host_wait.held)
                .into_iter()
                .partition(|h| h.host == host && h.error.is_some());
            self.host_wait.held = rest;
            for mut h in checked {
                let error = h.error.take().unwrap_or_default();
                if answers {
                    inputs.push(Input::LaunchFailed {
                        worker: h.worker,
                        attempt: h.attempt,
                        error,
                    });
                } else {
                    tracing::info!(
                        "{}#{}: host {host} does not answer ({error}); it starts when the host answers, or on local once the host is lost",
                        h.worker,
                        h.attempt,
                    );
                    self.host_wait.held.push(h);
                }
            }
        }
        let down = self.backend.get().hosts_not_answering();
        let (back, wait): (Vec<Held>, Vec<Held>) = std::mem::take(&mut self.host_wait.held)
            .into_iter()
            .partition(|h| h.error.is_none() && !down.contains(&h.host));
        self.host_wait.held = wait;
        for h in back {
            emit(Update::Notice(format!(
                "{}#{}: host {} answers; starting it there",
                h.worker, h.attempt, h.host
            )));
            self.pending_launches.push_back((h.worker, h.attempt));
        }
        inputs
    }

    /// `host` is lost: what was held back for it is the engine's to move here (its
    /// `worker-moved` event says so).
    pub(in crate::lead) fn host_lost_held(&mut self, host: &str) {
        self.host_wait.held.retain(|h| h.host != host);
    }

    /// A kill of an attempt held back for its host: it never started, so it ends at once
    /// (the kill's reason decides its status).
    pub(in crate::lead) fn kill_held(&mut self, worker: &str, attempt: u32) -> Option<Input> {
        let i = self
            .host_wait
            .held
            .iter()
            .position(|h| h.worker == worker && h.attempt == attempt)?;
        let h = self.host_wait.held.remove(i);
        Some(Input::Vanished {
            worker: h.worker,
            attempt: h.attempt,
            detail: format!("it never started: host {} did not answer", h.host),
        })
    }
}
