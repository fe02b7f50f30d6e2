//! The driver's part of SSH hosts: a host lost for good becomes the engine's `HostLost`,
//! and the attempts it left running there (the dispatch records marked `left_on_host`,
//! also those a driver before this one saved) are handed to the backend, which ends them
//! by their nonce the first time the host answers again; once ended, the mark goes.
//! The hosts found not answering are kept in the run's state (`hosts_not_answering`), for
//! `status` in another process to read while this one drives the run.

use crate::engine::Input;
use crate::lead::{Driver, Update};

impl Driver {
    /// `HostLost` for each host the backend found `lost` (drained with the poll), said
    /// once (the footer's line about the host not answering would stay otherwise); the
    /// attempts still running there are to be ended when it answers again.
    pub(in crate::lead) fn lost_hosts(
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
            let left: Vec<crate::backend::LeftOnHost> = self
                .state
                .dispatches
                .iter()
                .filter(|d| d.host.as_deref() == Some(&host) && d.status.is_live())
                .map(|d| self.left_on_host(d))
                .collect();
            if !left.is_empty() {
                self.backend.get().end_on_host_when_back(&host, left);
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
    pub(in crate::lead) fn keep_hosts_not_answering(
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
    pub(in crate::lead) fn forget_hosts_not_answering(&mut self) -> bool {
        let had = !self.state.hosts_not_answering.is_empty();
        self.state.hosts_not_answering.clear();
        had
    }

    /// The attempt of `d`, left on its host: its nonce and its local folder, where its
    /// files come back.
    fn left_on_host(&self, d: &crate::domain::DispatchRecord) -> crate::backend::LeftOnHost {
        crate::backend::LeftOnHost {
            nonce: d.nonce.clone(),
            dir: Some(self.store.attempt_dir(&d.worker_id, d.attempt)),
        }
    }

    /// Hand the backend every attempt saved as left on a host (a driver that starts on a
    /// run whose host was lost before).
    pub(in crate::lead) fn end_left_on_hosts(&mut self) {
        let mut per_host: std::collections::BTreeMap<String, Vec<crate::backend::LeftOnHost>> =
            Default::default();
        for d in self.state.dispatches.iter().filter(|d| d.left_on_host) {
            if let Some(h) = &d.host {
                per_host
                    .entry(h.clone())
                    .or_default()
                    .push(self.left_on_host(d));
            }
        }
        for (host, left) in per_host {
            tracing::info!(
                "host {host}: {} attempt(s) left running there are ended when it answers",
                left.len()
            );
            self.backend.get().end_on_host_when_back(&host, left);
        }
    }

    /// Clear the mark of the attempts the backend `ended` on their hosts (drained with the
    /// poll; saved at once: a later driver need not end them again), and say what came
    /// back of each. Their status stays as it was settled (`crashed (host lost)`).
    pub(in crate::lead) fn ended_on_hosts(
        &mut self,
        ended: Vec<(String, Vec<crate::backend::EndedOnHost>)>,
        emit: &mut impl FnMut(Update),
    ) {
        if ended.is_empty() {
            return;
        }
        for (host, ended) in ended {
            for d in self
                .state
                .dispatches
                .iter_mut()
                .filter(|d| d.left_on_host && d.host.as_deref() == Some(&host))
            {
                let Some(e) = ended.iter().find(|e| e.nonce == d.nonce) else {
                    continue;
                };
                d.left_on_host = false;
                emit(Update::Notice(format!(
                    "{}#{}: its processes left on host {host} were ended",
                    d.worker_id, d.attempt
                )));
                if let Some(back) = e.came_back {
                    emit(Update::Notice(format!(
                        "{}#{}: {}",
                        d.worker_id,
                        d.attempt,
                        came_back_line(&host, back)
                    )));
                }
            }
        }
        self.save(emit);
    }
}

/// What the person reads once an attempt left on `host` had its files come back:
/// `its output on box came back (40 lines; it ended there with exit 0)`.
fn came_back_line(host: &str, back: crate::backend::CameBack) -> String {
    let ended = match back.exit_code {
        Some(code) => format!("it ended there with exit {code}"),
        None => "it was ended there".to_string(),
    };
    let s = if back.lines == 1 { "" } else { "s" };
    format!(
        "its output on {host} came back ({} line{s}; {ended})",
        back.lines
    )
}

#[cfg(test)]
mod tests {
    use super::came_back_line;
    use crate::backend::CameBack;

    #[test]
    fn what_came_back_from_a_host_is_said_with_how_the_attempt_ended_there() {
        let back = |lines, exit_code| CameBack { lines, exit_code };
        assert_eq!(
            came_back_line("box", back(40, Some(0))),
            "its output on box came back (40 lines; it ended there with exit 0)"
        );
        assert_eq!(
            came_back_line("box", back(1, None)),
            "its output on box came back (1 line; it was ended there)"
        );
    }
}
