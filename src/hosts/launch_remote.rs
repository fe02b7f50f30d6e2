//! Starting a batch of attempts on an SSH host, on that host's own thread (`host_thread`):
//! the workers' worktrees there are made or brought up to date (their branches pushed,
//! `crate::hosts::git`), then each attempt's files are shipped and its window started
//! over the host's channel. A host that hangs holds up its own launches alone: the launch
//! thread and the driver's loop never wait on its ssh calls.

use std::collections::BTreeMap;

use super::backend::Place;
use crate::backend::{HostLaunch, HostLaunched, SpawnSpec};
use crate::error::Error;
use crate::tmux::TmuxBackend;

impl super::host_thread::HostSide {
    /// Carry out `launch` (see the module docs), first asking the host whether it answers
    /// when it never has on this thread: a host that hangs (frozen before the run) then
    /// fails the batch within a probe's limit (5 s) and is down from the launch's start,
    /// so its driver says so and holds the batch at once, and its `lost_after_s` counts
    /// from then, not from after the batch's calls (each up to 15 s) and a probe of its
    /// own timed out.
    pub(super) fn launch(&mut self, launch: HostLaunch) -> HostLaunched {
        if !self.answered {
            let now = std::time::Instant::now();
            if !self.reach.may_try(now) || !self.probe(now) {
                let why = super::backend::outage_line(&self.place.spec.name, &self.reach)
                    .unwrap_or_else(|| format!("host {} does not answer", self.place.spec.name));
                let started = launch
                    .specs
                    .into_iter()
                    .map(|s| (s.worker, s.attempt, Err(Error::Other(why.clone()))))
                    .collect();
                return HostLaunched {
                    host: self.place.spec.name.clone(),
                    started,
                    sent: vec![],
                };
            }
        }
        let done = launch_batch(&self.place, &mut self.tmux, launch);
        self.answered |= done.started.iter().any(|(_, _, r)| r.is_ok());
        done
    }
}

/// Carry out `launch` on the host of `place` (see the module docs); one result per spec.
fn launch_batch(place: &Place, tmux: &mut TmuxBackend, launch: HostLaunch) -> HostLaunched {
    let host = place.spec.name.clone();
    let mut failed: BTreeMap<String, String> = BTreeMap::new();
    let mut sent = vec![];
    if let Some(g) = &launch.git {
        let made =
            super::git::send_to_host(&place.spec, &g.workspace, &g.project, &g.run_id, &g.workers);
        place.progress.step();
        for (id, r) in made {
            match r {
                Ok(()) => sent.push(id),
                Err(e) => {
                    tracing::warn!("{id}: cannot make its worktree on host {host}: {e}");
                    failed.insert(id, format!("cannot make its worktree on host {host}: {e}"));
                }
            }
        }
    }
    let (go, stop): (Vec<SpawnSpec>, Vec<SpawnSpec>) = launch
        .specs
        .into_iter()
        .partition(|s| !failed.contains_key(&s.worker));
    // crewmux there first when the run awaited it (the host did not answer at planning).
    let (go, no_helper) = super::helper_awaited::before_launch(place, go);
    for (s, why) in &no_helper {
        failed.insert(s.worker.clone(), why.clone());
    }
    let stop = stop
        .into_iter()
        .chain(no_helper.into_iter().map(|(s, _)| s));
    let results = super::backend::spawn_on(place, tmux, &go);
    let mut started: Vec<_> = go
        .into_iter()
        .zip(results)
        .map(|(s, r)| (s.worker, s.attempt, r))
        .collect();
    for s in stop {
        let why = failed.remove(&s.worker).unwrap_or_default();
        started.push((s.worker, s.attempt, Err(Error::Other(why))));
    }
    HostLaunched {
        host,
        started,
        sent,
    }
}
