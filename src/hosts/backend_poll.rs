//! Polling a run's hosts: one host's targets through its channel, the host marked down
//! (its targets `Unknown`) when it does not answer and lost after its `lost_after_s`, and
//! an ended attempt's files brought back before its exit is settled.

use std::path::Path;

use super::{untagged, HostsBackend, Remote};
use crate::backend::{Liveness, Multiplexer, Poll, Target};
use crate::hosts::reach::Reach;

impl HostsBackend {
    pub(in crate::hosts) fn local_mut(&mut self) -> &mut dyn Multiplexer {
        self.local.as_mut()
    }

    /// Poll one host's targets; the files of every attempt whose pane ended come back
    /// into its local folder before the poll is handed over, so the exit is settled
    /// from the wrapper's own `exit.json` as for a local attempt. A host that does not
    /// answer leaves its targets `Unknown` (see `reach`).
    pub(in crate::hosts) fn poll_host(
        &mut self,
        host: &str,
        targets: &[Target],
        focus: Option<&Target>,
    ) -> Poll {
        let Some(r) = self.remotes.get_mut(host) else {
            return Poll {
                liveness: targets.iter().map(|_| Liveness::Gone).collect(),
                server_down: Some(format!("host {host} is not one of this run's hosts")),
                ..Poll::default()
            };
        };
        let now = std::time::Instant::now();
        if !r.reach.may_try(now) || (r.reach != Reach::Up && !r.probe(now)) {
            return self.unreachable(host, targets, now);
        }
        let untagged_targets: Vec<Target> = targets.iter().map(untagged).collect();
        let focus = focus.map(untagged);
        let poll = r.tmux.poll(&untagged_targets, focus.as_ref());
        if (poll.unanswered || poll.server_down.is_some()) && !r.probe(now) {
            return self.unreachable(host, targets, now);
        }
        for (t, live) in targets.iter().zip(&poll.liveness) {
            let there = r.place.remote_dir(&t.log);
            crate::hosts::output::observe(r.streams.as_mut(), &r.place.link, there, &t.log, *live);
            if matches!(live, Liveness::Dead { .. } | Liveness::Gone) {
                fetch_once(r, t);
            }
        }
        poll
    }

    /// The poll of a host that does not answer: its targets `Unknown`; once it has been
    /// gone longer than its `lost_after_s` it is reported lost (once).
    fn unreachable(&mut self, host: &str, targets: &[Target], now: std::time::Instant) -> Poll {
        let mut down =
            format!("host {host} does not answer; its workers' state is unknown until it does");
        if let Some(r) = self.remotes.get_mut(host) {
            let limit = std::time::Duration::from_secs(r.place.spec.lost_after_s);
            if let Some(why) = r.reach.lose_after(now, limit) {
                tracing::warn!("host {host} lost: {why}");
                self.lost.push((host.to_string(), why));
            }
            if let Reach::Down { why, .. } = &r.reach {
                down = format!("host {host} does not answer ({why}); its workers' state is unknown until it does");
            }
        }
        Poll {
            liveness: targets.iter().map(|_| Liveness::Unknown).collect(),
            server_down: Some(down),
            unanswered: true,
            ..Poll::default()
        }
    }
}

impl Remote {
    /// Ask the host whether it answers (`true`); a failure marks it down.
    fn probe(&mut self, now: std::time::Instant) -> bool {
        match self
            .place
            .link
            .run("true", None, crate::hosts::reach::PROBE_LIMIT)
        {
            Ok(_) => {
                if self.reach != Reach::Up {
                    tracing::info!("host {} answers again", self.place.spec.name);
                }
                self.reach = Reach::Up;
                true
            }
            Err(e) => {
                self.reach.failed(now, e.to_string());
                false
            }
        }
    }
}

/// Bring an ended attempt's files back (once it has its `exit.json`).
fn fetch_once(r: &mut Remote, t: &Target) {
    let Some(local_dir) = t.log.parent().map(Path::to_path_buf) else {
        return;
    };
    if r.fetched.contains(&local_dir) {
        return;
    }
    let Some(remote_dir) = r.place.remote_dir(&t.log) else {
        return;
    };
    match crate::hosts::files::fetch(&r.place.link, &remote_dir, &local_dir) {
        Ok(()) => {
            if local_dir.join("exit.json").exists() {
                r.fetched.insert(local_dir);
            }
        }
        Err(e) => tracing::warn!("{}: host {}: {e}", t.worker, r.place.spec.name),
    }
}
