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

/// Carry out `launch` on the host of `place` (see the module docs); one result per spec.
pub(super) fn launch(place: &Place, tmux: &mut TmuxBackend, launch: HostLaunch) -> HostLaunched {
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
