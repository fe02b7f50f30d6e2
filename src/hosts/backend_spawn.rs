//! Starting attempts across a run's hosts: each spec goes where it runs (this machine's
//! backend, or its host's thread), and on a host its attempt files are shipped there
//! before its window starts (on that host's thread).

use std::collections::BTreeMap;

use super::{tag_pane, Place};
use crate::backend::{Launcher, Multiplexer, SpawnSpec, Spawned};
use crate::error::{Error, Result};
use crate::tmux::TmuxBackend;

impl Place {
    /// Ship one attempt's files to the host and say how to start it there.
    fn prepare(&self, spec: &SpawnSpec) -> Result<SpawnSpec> {
        let local_dir = spec
            .log
            .parent()
            .ok_or_else(|| Error::Other(format!("{} has no attempt folder", spec.worker)))?;
        let remote_dir = crate::hosts::remote_attempt_dir(&self.spec, &self.run_id, local_dir);
        crate::hosts::files::ship(&self.link, local_dir, &remote_dir, &spec.cwd)?;
        let mut remote = spec.clone();
        remote.launch = remote_dir.join("launch.sh");
        remote.log = remote_dir.join("output.log");
        remote.host = None;
        Ok(remote)
    }
}

/// One result per spec started, in order.
pub(super) type Started = Vec<Result<Spawned>>;

/// Start `specs` where each belongs: this machine's through `local`, each host's through
/// its launcher after its files are shipped. One result per spec, in order.
pub(super) fn route(
    specs: &[SpawnSpec],
    local: &mut dyn FnMut(&[SpawnSpec]) -> Vec<Result<Spawned>>,
    remote: &mut dyn FnMut(&str, &[SpawnSpec]) -> Option<Started>,
) -> Vec<Result<Spawned>> {
    let mut out: Vec<Option<Result<Spawned>>> = specs.iter().map(|_| None).collect();
    let mut groups: BTreeMap<Option<&str>, Vec<usize>> = BTreeMap::new();
    for (i, s) in specs.iter().enumerate() {
        groups.entry(s.host.as_deref()).or_default().push(i);
    }
    for (host, idx) in groups {
        let group: Vec<SpawnSpec> = idx.iter().map(|&i| specs[i].clone()).collect();
        let results = match host {
            None => local(&group),
            Some(h) => match remote(h, &group) {
                Some(r) => r
                    .into_iter()
                    .map(|r| {
                        r.map(|s| Spawned {
                            pane_id: s.pane_id.map(|p| tag_pane(h, &p)),
                            // A pid of that host: never signalled or looked up here.
                            pid: None,
                        })
                    })
                    .collect(),
                None => group
                    .iter()
                    .map(|_| {
                        Err(Error::Other(format!(
                            "host {h} is not one of this run's hosts"
                        )))
                    })
                    .collect(),
            },
        };
        for (i, r) in idx.into_iter().zip(results) {
            out[i] = Some(r);
        }
    }
    out.into_iter()
        .map(|r| r.unwrap_or_else(|| Err(Error::Other("nothing was started".into()))))
        .collect()
}

/// The specs of one host after their files were shipped: those ready to start (with
/// their index) and those whose files did not get there.
struct Shipped {
    ready: Vec<(usize, SpawnSpec)>,
    failed: Vec<(usize, Error)>,
}

/// Ship each spec's files.
fn ship_all(place: &Place, specs: &[SpawnSpec]) -> Shipped {
    let mut out = Shipped {
        ready: vec![],
        failed: vec![],
    };
    for (i, s) in specs.iter().enumerate() {
        match place.prepare(s) {
            Ok(r) => out.ready.push((i, r)),
            Err(e) => out.failed.push((i, e)),
        }
        place.progress.step();
    }
    out
}

/// Ship `specs`' files to the host of `place` and start them with `tmux` (on the host's
/// thread); one result per spec, in order.
pub(in crate::hosts) fn spawn_on(
    place: &Place,
    tmux: &mut TmuxBackend,
    specs: &[SpawnSpec],
) -> Vec<Result<Spawned>> {
    let shipped = ship_all(place, specs);
    start_shipped(specs.len(), shipped, &mut |s| {
        Multiplexer::spawn_many(tmux, s)
    })
}

/// Start the shipped specs with `start`, putting each result back at its index.
fn start_shipped(
    n: usize,
    Shipped { ready, failed }: Shipped,
    start: &mut dyn FnMut(&[SpawnSpec]) -> Vec<Result<Spawned>>,
) -> Vec<Result<Spawned>> {
    let mut out: Vec<Option<Result<Spawned>>> = (0..n).map(|_| None).collect();
    for (i, e) in failed {
        out[i] = Some(Err(e));
    }
    let specs: Vec<SpawnSpec> = ready.iter().map(|(_, s)| s.clone()).collect();
    // Nothing ready, no tmux call there: one on a host that hangs would cost its connect
    // limit before the host could be said not to answer.
    if !specs.is_empty() {
        for ((i, _), r) in ready.iter().zip(start(&specs)) {
            out[*i] = Some(r);
        }
    }
    out.into_iter()
        .map(|r| r.unwrap_or_else(|| Err(Error::Other("tmux started nothing".into()))))
        .collect()
}

/// The launch thread's handle: this machine's launcher. An attempt on an SSH host is
/// started on its host's own thread ([`Multiplexer::launch_on_host`]); one that reaches
/// this launcher names a host the run does not have.
pub(super) struct HostsLauncher {
    pub(super) local: Option<Box<dyn Launcher>>,
}

impl Launcher for HostsLauncher {
    fn spawn_many(&mut self, specs: &[SpawnSpec]) -> Vec<Result<Spawned>> {
        let local = &mut self.local;
        route(
            specs,
            &mut |group| match local.as_mut() {
                Some(l) => l.spawn_many(group),
                None => group
                    .iter()
                    .map(|_| Err(Error::Other("no local launcher".into())))
                    .collect(),
            },
            &mut |_, _| None,
        )
    }
}
