//! `--hosts a,b,local`: spreading a run's workers over hosts by free capacity.
//!
//! A host's capacity is its `max_workers` (`hosts.toml`); `local` has the run's
//! `parallel`. Workers that name their own host (`host = "…"` on the worker or on the
//! team) keep it and take a slot of that host first. The others, in the team's order
//! (`order`, then file order), each go to the listed host with the most free slots left;
//! a tie goes to the host listed first. Once every host is full the same rule goes on, so
//! the workers that wait are shared out as evenly as the free slots were. The result is
//! a function of the team and the list only (no probe, no clock), so `crewmux dispatch
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
                "--hosts {}: an empty host name; separate names with single commas, e.g. --hosts box,local",
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
        });
    }
    Ok(out)
}

/// The host of each worker: `pinned[i]` is worker `i`'s own host (`Some("local")` too),
/// `None` for one that is free to go anywhere; workers come in the team's order. Free
/// workers get a host of `slots` by the rule of the module docs; pinned ones keep theirs.
/// Returns one host name per worker (`local` for this machine).
pub fn spread(slots: &[Slots], pinned: &[Option<&str>]) -> Vec<String> {
    let mut free: Vec<i64> = slots
        .iter()
        .map(|s| {
            let taken = pinned
                .iter()
                .filter(|p| **p == Some(s.host.as_str()))
                .count();
            s.capacity as i64 - taken as i64
        })
        .collect();
    pinned
        .iter()
        .map(|p| {
            if let Some(host) = p {
                return (*host).to_string();
            }
            // The most free slots; `max_by_key` keeps the last of equals, so walk the
            // list backwards to let the first listed host win a tie.
            let Some((i, _)) = free.iter().enumerate().rev().max_by_key(|(_, f)| **f) else {
                return LOCAL.to_string();
            };
            free[i] -= 1;
            slots[i].host.clone()
        })
        .collect()
}

/// Spread `team`'s workers over `names` (see the module docs): a worker whose spec (or
/// its team) names no host gets one; the team's own `host` counts as named. `team_spec`
/// is the team file the workers were resolved from.
///
/// Returns each listed host's slots, for the run's per-host bound.
///
/// # Errors
/// As [`slots`], and a `hosts.toml` mistake.
pub fn spread_team(
    workers: &mut [crate::team::ResolvedWorker],
    team_spec: &crate::domain::TeamSpec,
    names: &[String],
    parallel: usize,
    project_dir: &std::path::Path,
    env: &crate::providers::EnvSnapshot,
) -> Result<std::collections::BTreeMap<String, usize>> {
    let hosts = Hosts::load(project_dir, env)?;
    let slots = slots(names, &hosts, parallel)?;
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
    let pinned_refs: Vec<Option<&str>> = pinned.iter().map(Option::as_deref).collect();
    for (w, host) in workers.iter_mut().zip(spread(&slots, &pinned_refs)) {
        w.host = super::worker_host(Some(&host), None);
    }
    Ok(slots.into_iter().map(|s| (s.host, s.capacity)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(host: &str, capacity: usize) -> Slots {
        Slots {
            host: host.into(),
            capacity,
        }
    }

    #[test]
    fn free_workers_go_where_most_slots_are_free_and_ties_go_to_the_first_listed() {
        let slots = [s("a", 2), s("b", 4), s("local", 2)];
        let got = spread(&slots, &[None; 8]);
        // b: 4 free → 3 → 2 ties a (2) and local (2): a is listed first.
        assert_eq!(got, ["b", "b", "a", "b", "local", "a", "b", "local"]);
    }

    #[test]
    fn pinned_workers_keep_their_host_and_take_its_slots_first() {
        let slots = [s("a", 2), s("local", 2)];
        let got = spread(&slots, &[None, Some("a"), None, Some("a"), None, Some("z")]);
        assert_eq!(got, ["local", "a", "local", "a", "a", "z"]);
    }

    #[test]
    fn past_every_hosts_capacity_the_waiting_workers_are_shared_out_evenly() {
        let slots = [s("a", 1), s("b", 1)];
        let got = spread(&slots, &[None; 5]);
        assert_eq!(got, ["a", "b", "a", "b", "a"]);
        // The same team and list always give the same hosts.
        assert_eq!(spread(&slots, &[None; 5]), got);
    }

    #[test]
    fn a_bad_hosts_list_is_one_line_naming_the_fix() {
        let hosts = Hosts::default();
        let e = slots(&["box".into()], &hosts, 4).unwrap_err().to_string();
        assert!(
            e.starts_with("--hosts: unknown host `box`: the hosts are local;"),
            "{e}"
        );
        let e = slots(&["local".into(), "local".into()], &hosts, 4)
            .unwrap_err()
            .to_string();
        assert!(e.contains("`local` is given twice"), "{e}");
        let e = slots(&["local".into(), String::new()], &hosts, 4)
            .unwrap_err()
            .to_string();
        assert!(e.contains("an empty host name"), "{e}");
        assert_eq!(
            slots(&["local".into()], &hosts, 3).unwrap(),
            [s("local", 3)]
        );
    }
}
