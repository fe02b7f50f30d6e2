//! `--hosts a,b,local`: spreading a run's workers over hosts by free capacity.
//!
//! A host's capacity is its `max_workers` (`hosts.toml`); `local` has the run's
//! `parallel`. Workers that name their own host (`host = "…"` on the worker or on the
//! team) keep it and take a slot of that host first. The others, in the team's order
//! (`order`, then file order), each go to the listed host with the most free slots left;
//! a tie goes to the host listed first. Once every host is full the same rule goes on, so
//! the workers that wait are shared out as evenly as the free slots were. A worker whose
//! provider runs crewmux itself (`sim`, `{self_exe}`: see [`super::helper`]) goes only to
//! a host that can run this crewmux: `local`, or an SSH host whose `uname -sm` is this
//! machine's (one probe per listed SSH host, asked only when such a worker is free to go
//! anywhere; a host that does not answer it is left out for them too). The result is a
//! function of the team, the list and those answers only (no clock), so `crewmux dispatch
//! --hosts …` shows exactly what `crewmux run --hosts …` does, and the run keeps it in
//! `state.json` (each worker's `host`) and in each attempt's dispatch record.

use std::collections::BTreeSet;

use super::config::{Hosts, LOCAL};
use crate::error::{Error, Result};

/// One host of a `--hosts` list and the workers it takes at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slots {
    /// A `hosts.toml` name, or `local`.
    pub host: String,
    /// `max_workers`, or the run's `parallel` for `local`.
    pub capacity: usize,
    /// `None`: it can run this crewmux (`local`, or as far as planning knows); `Some(why)`:
    /// it cannot, and workers that run crewmux itself do not go there.
    pub no_crewmux: Option<NoCrewmux>,
}

/// Why an SSH host of the list cannot run this crewmux, from the helper's probe
/// ([`super::helper::probe`]); shown as the probe's own phrase.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoCrewmux {
    /// It was not asked or gave no answer: what ssh said, the limit, or a check that
    /// did not run there.
    NotAnswering(String),
    /// It answered: it is of another system.
    Foreign(String),
}

impl std::fmt::Display for NoCrewmux {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoCrewmux::NotAnswering(why) | NoCrewmux::Foreign(why) => f.write_str(why),
        }
    }
}

/// A host of a `--hosts` list that the spread gave no worker, and why: what `dispatch`
/// prints (`box: no workers (<reason>)`, and `hosts_without_workers` in `--json`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Unused {
    /// A `hosts.toml` name, or `local`.
    pub host: String,
    /// A few words, from what planning knew: `not answering: <what ssh said>`,
    /// `cannot run crewmux …`, `every worker names its own host`, or its capacity.
    pub reason: String,
}

/// What [`spread_team`] decided besides each worker's host.
#[derive(Debug, Clone, Default)]
pub struct Spread {
    /// Each listed host's slots, for the run's per-host bound (`host_slots`).
    pub slots: std::collections::BTreeMap<String, usize>,
    /// The listed hosts that got no worker, in the list's order.
    pub unused: Vec<Unused>,
}

/// A worker as [`spread`] sees it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Want<'a> {
    /// Its own host (`Some("local")` too), `None`: free to go anywhere.
    pub pinned: Option<&'a str>,
    /// Its provider runs crewmux itself (`sim`, `{self_exe}`).
    pub runs_crewmux: bool,
}

/// The slots of each host of `names` (`--hosts`, in the order given), checked against
/// `hosts`; `parallel` is `local`'s capacity.
///
/// # Errors
/// [`Error::Usage`] for an empty list or name, a name given twice, or a host no
/// `hosts.toml` defines (one line naming the hosts that exist).
pub fn slots(names: &[String], hosts: &Hosts, parallel: usize) -> Result<Vec<Slots>> {
    if names.is_empty() {
        return Err(Error::Usage(
            "--hosts: give at least one host, e.g. --hosts box,local".into(),
        ));
    }
    let mut seen = BTreeSet::new();
    let mut out = vec![];
    for raw in names {
        let name = raw.trim();
        if name.is_empty() {
            return Err(Error::Usage(format!(
                "--hosts \"{}\": an empty host name; separate names with single commas, e.g. --hosts box,local",
                names.join(",")
            )));
        }
        if !seen.insert(name.to_string()) {
            return Err(Error::Usage(format!(
                "--hosts {}: `{name}` is given twice; name each host once",
                names.join(",")
            )));
        }
        let capacity = match hosts
            .get(name)
            .map_err(|e| Error::Usage(format!("--hosts: {e}")))?
        {
            None => parallel.max(1),
            Some(spec) => spec.max_workers as usize,
        };
        out.push(Slots {
            host: name.to_string(),
            capacity,
            no_crewmux: None,
        });
    }
    Ok(out)
}

/// The host of each worker of `wants` (in the team's order): free workers get a host of
/// `slots` by the rule of the module docs (one that runs crewmux itself only a slot
/// without [`Slots::no_crewmux`]); pinned ones keep theirs. Returns one host name per
/// worker (`local` for this machine; also for a free worker no slot may take).
pub fn spread(slots: &[Slots], wants: &[Want<'_>]) -> Vec<String> {
    let mut free: Vec<i64> = slots
        .iter()
        .map(|s| {
            let taken = wants
                .iter()
                .filter(|w| w.pinned == Some(s.host.as_str()))
                .count();
            s.capacity as i64 - taken as i64
        })
        .collect();
    wants
        .iter()
        .map(|w| {
            if let Some(host) = w.pinned {
                return host.to_string();
            }
            // The most free slots; `max_by_key` keeps the last of equals, so walk the
            // list backwards to let the first listed host win a tie.
            let Some((i, _)) = free
                .iter()
                .enumerate()
                .rev()
                .filter(|(i, _)| !w.runs_crewmux || slots[*i].no_crewmux.is_none())
                .max_by_key(|(_, f)| **f)
            else {
                return LOCAL.to_string();
            };
            free[i] -= 1;
            slots[i].host.clone()
        })
        .collect()
}

/// Each host of `slots` that `placed` (what [`spread`] gave `wants`) names for no worker,
/// with the reason planning has: every worker names its own host; the host cannot run
/// crewmux ([`Slots::no_crewmux`]) and every free worker runs it; or the free workers went
/// to hosts with as many free slots or more (its capacity is said).
pub fn unused(slots: &[Slots], wants: &[Want<'_>], placed: &[String]) -> Vec<Unused> {
    let free: Vec<&Want<'_>> = wants.iter().filter(|w| w.pinned.is_none()).collect();
    let others = free.iter().filter(|w| !w.runs_crewmux).count();
    slots
        .iter()
        .filter(|s| !placed.contains(&s.host))
        .map(|s| {
            let capacity = if s.host == LOCAL {
                format!("parallel {}", s.capacity)
            } else {
                format!("max_workers {}", s.capacity)
            };
            let went = |n: usize, which: &str| {
                format!(
                    "the {n} {which}worker{} went to hosts with as many free slots or more",
                    if n == 1 { "" } else { "s" }
                )
            };
            let reason = match &s.no_crewmux {
                _ if free.is_empty() => "every worker names its own host".to_string(),
                Some(no) => {
                    let why = match no {
                        NoCrewmux::NotAnswering(why) => format!("not answering: {why}"),
                        NoCrewmux::Foreign(why) => {
                            format!("cannot run this crewmux, which the free workers' provider runs: {why}")
                        }
                    };
                    if others == 0 {
                        why
                    } else {
                        format!("{why}; {capacity}: {}", went(others, "other free "))
                    }
                }
                None => format!("{capacity}: {}", went(free.len(), "free ")),
            };
            Unused {
                host: s.host.clone(),
                reason,
            }
        })
        .collect()
}

/// Spread `team`'s workers over `names` (see the module docs): a worker whose spec (or
/// its team) names no host gets one; the team's own `host` counts as named. `team_spec`
/// is the team file the workers were resolved from.
///
/// Returns each listed host's slots, for the run's per-host bound, and the listed hosts
/// that got no worker with why ([`unused`]; nothing is asked for it).
///
/// # Errors
/// As [`slots`], and a `hosts.toml` mistake; a free worker that runs crewmux itself when
/// no listed host can run it (one line naming the worker, each host's reason and the
/// fix).
pub fn spread_team(
    workers: &mut [crate::team::ResolvedWorker],
    team_spec: &crate::domain::TeamSpec,
    names: &[String],
    parallel: usize,
    project_dir: &std::path::Path,
    env: &crate::providers::EnvSnapshot,
    registry: &crate::providers::Registry,
) -> Result<Spread> {
    let hosts = Hosts::load(project_dir, env)?;
    let mut slots = slots(names, &hosts, parallel)?;
    let pinned: Vec<Option<String>> = workers
        .iter()
        .map(|w| {
            let own = team_spec
                .workers
                .iter()
                .find(|s| s.id == w.id)
                .and_then(|s| s.host.clone());
            own.or_else(|| team_spec.host.clone())
        })
        .collect();
    let wants: Vec<Want<'_>> = workers
        .iter()
        .zip(&pinned)
        .map(|(w, p)| Want {
            pinned: p.as_deref(),
            runs_crewmux: registry
                .get(&w.provider)
                .is_some_and(|s| super::helper::runs_crewmux(s, w.command.as_deref())),
        })
        .collect();
    if let Some(first) = wants
        .iter()
        .position(|w| w.pinned.is_none() && w.runs_crewmux)
    {
        mark_no_crewmux(&mut slots, &hosts)?;
        if slots.iter().all(|s| s.no_crewmux.is_some()) {
            let w = &workers[first];
            return Err(none_runs_crewmux(&w.id, &w.provider, names, &slots));
        }
    }
    let placed = spread(&slots, &wants);
    let unused = unused(&slots, &wants, &placed);
    for (w, host) in workers.iter_mut().zip(placed) {
        w.host = super::worker_host(Some(&host), None);
    }
    Ok(Spread {
        slots: slots.into_iter().map(|s| (s.host, s.capacity)).collect(),
        unused,
    })
}

/// Ask each SSH host of `slots` (in parallel) whether it can run this crewmux, and mark
/// those that cannot or do not answer ([`super::preflight::ask_once`], the question planning
/// asks; nothing is copied).
///
/// # Errors
/// The SSH control directory cannot be made; this crewmux binary cannot be read.
fn mark_no_crewmux(slots: &mut [Slots], hosts: &Hosts) -> Result<()> {
    let mut remote = vec![];
    for (i, s) in slots.iter().enumerate() {
        let spec = hosts
            .get(&s.host)
            .map_err(|e| Error::Usage(format!("--hosts: {e}")))?;
        remote.extend(spec.map(|spec| (i, spec)));
    }
    if remote.is_empty() {
        return Ok(());
    }
    // Read (and hashed) once per process: the plan's copy uses it next.
    let own = super::helper::own_binary()?;
    let mut asked = vec![];
    for (i, spec) in remote {
        asked.push((i, spec, super::ssh::SshLink::new(spec)?, own.path_on(spec)));
    }
    let answers: Vec<(usize, Option<NoCrewmux>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = asked
            .iter()
            .map(|(i, spec, link, path)| {
                let i = *i;
                // Planning asks the same question next: kept, it asks no host twice.
                let ask = move || {
                    super::preflight::ask_once(link, spec, Some(path), super::preflight::ASK_LIMIT)
                        .map(|a| {
                            let copy = a.crewmux.as_deref().unwrap_or("absent");
                            super::helper::found(own, &a.system, copy)
                        })
                };
                (i, scope.spawn(ask))
            })
            .collect();
        handles
            .into_iter()
            .map(|(i, h)| {
                let why = match h.join() {
                    Ok(Ok(super::helper::Found::Foreign(why))) => Some(NoCrewmux::Foreign(why)),
                    Ok(Ok(_)) => None,
                    // Why it was not asked or did not answer, in its own words (a refused
                    // ssh login is not a silent host).
                    Ok(Err(not)) => Some(NoCrewmux::NotAnswering(not.why)),
                    Err(_) => Some(NoCrewmux::NotAnswering("the check stopped".into())),
                };
                (i, why)
            })
            .collect()
    });
    for (i, why) in answers {
        if let Some(why) = &why {
            tracing::info!(
                "--hosts: {} cannot take workers that run crewmux: {why}",
                slots[i].host
            );
        }
        slots[i].no_crewmux = why;
    }
    Ok(())
}

/// The refusal of worker `id`, whose `provider` runs crewmux itself, when no host of
/// `names` can run it.
fn none_runs_crewmux(id: &str, provider: &str, names: &[String], slots: &[Slots]) -> Error {
    let why: Vec<String> = slots
        .iter()
        .map(|s| match &s.no_crewmux {
            Some(why) => format!("{}: {why}", s.host),
            None => format!("{}: ?", s.host),
        })
        .collect();
    Error::Usage(format!(
        "--hosts {}: worker `{}` uses provider `{}`, which runs crewmux itself, and no host listed can run this crewmux ({}): add `local` to --hosts, or give the worker another provider",
        names.join(","),
        id,
        provider,
        why.join("; ")
    ))
}

#[cfg(test)]
#[path = "spread_tests.rs"]
mod tests;
