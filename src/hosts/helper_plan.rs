//! Planning a run's hosts: each asked once (`crate::hosts::preflight`), refused when it
//! can never run the run's workers, and crewmux put on those whose workers need it (see
//! the parent module's docs).

use std::collections::BTreeMap;

use super::{ensure_found, found, judge, needs, own_binary, prune, HelperState, OwnBinary};
use super::{Planned, WorkerNeed};
use crate::error::{Error, Result};
use crate::hosts::config::HostSpec;
use crate::providers::Registry;

/// Ask every host of `hosts` once, in parallel, whether it can run the run's workers
/// (`super::preflight`): a host that cannot refuses the run. Then put crewmux on the
/// hosts whose workers need it (see the module docs), remove the old copies there that
/// nothing uses (see `helper_prune.rs`), and judge the result ([`judge`]).
///
/// # Errors
/// [`Error::Usage`]: a host refused ([`crate::hosts::preflight::refusal`], the first by name),
/// as [`judge`]; the SSH control directory cannot be made.
pub fn plan(
    workers: &[WorkerNeed<'_>],
    hosts: &BTreeMap<String, HostSpec>,
    registry: &Registry,
) -> Result<Planned> {
    let need = needs(workers, registry);
    let mut links = vec![];
    for (host, spec) in hosts {
        let helper = need.contains_key(host);
        links.push((
            host.clone(),
            spec,
            helper,
            crate::hosts::ssh::SshLink::new(spec)?,
        ));
    }
    // Read and hashed only when a host needs the copy.
    let own = (!need.is_empty()).then(|| own_binary().map_err(|e| e.to_string()));
    let own = own.as_ref();
    let found: Vec<(String, Checked)> = std::thread::scope(|s| {
        let handles: Vec<_> = links
            .iter()
            .map(|(name, spec, helper, link)| {
                let own = own.filter(|_| *helper);
                (name, s.spawn(move || check_host(link, spec, own)))
            })
            .collect();
        handles
            .into_iter()
            .map(|(name, h)| {
                let checked = h.join().unwrap_or_else(|_| {
                    let why = "the check stopped".to_string();
                    Checked::Helper(HelperState::Unknown { why }, vec![])
                });
                (name.clone(), checked)
            })
            .collect()
    });
    let mut pruned = vec![];
    let mut states = BTreeMap::new();
    for (name, checked) in found {
        match checked {
            Checked::Refused(line) => return Err(Error::Usage(line)),
            Checked::Fine => {}
            Checked::Helper(state, removed) => {
                let bin = hosts[&name].workdir.join("bin");
                pruned.extend(super::prune::pruned_notice(&name, &bin, &removed));
                states.insert(name, state);
            }
        }
    }
    let mut planned = judge(&need, states)?;
    planned.notices.extend(pruned);
    Ok(planned)
}

/// What planning found of one host.
enum Checked {
    /// It can never run the run's workers: the line that says so.
    Refused(String),
    /// It may run them (or does not answer yet), and needs no crewmux.
    Fine,
    /// Its state of crewmux, and the old copies removed there.
    Helper(HelperState, Vec<String>),
}

/// Ask `spec` (`super::preflight`), judge it, then, when its workers need crewmux
/// (`own`: this binary, or why it cannot be read), [`ensure_found`] and [`prune`] there.
fn check_host(
    link: &crate::hosts::ssh::SshLink,
    spec: &HostSpec,
    own: Option<&std::result::Result<&'static OwnBinary, String>>,
) -> Checked {
    let own_ok = own.and_then(|o| o.as_ref().ok()).copied();
    let path = own_ok.map(|o| o.path_on(spec));
    let asked = chrono::Utc::now();
    let answer = crate::hosts::preflight::ask_once(
        link,
        spec,
        path.as_deref(),
        crate::hosts::preflight::PLAN_LIMIT,
    );
    if let Some(line) = crate::hosts::preflight::refusal(spec, &answer) {
        return Checked::Refused(line);
    }
    let (own, path) = match (own, own_ok, path) {
        (None, ..) => return Checked::Fine,
        (Some(Err(why)), ..) => {
            return Checked::Helper(HelperState::Unknown { why: why.clone() }, vec![])
        }
        (_, Some(own), Some(path)) => (own, path),
        _ => return Checked::Fine,
    };
    let found = answer
        .map(|a| found(own, &a.system, a.crewmux.as_deref().unwrap_or("absent")))
        .map_err(|e| e.why);
    let state = ensure_found(link, own, path, found, asked);
    if !matches!(state, HelperState::Ready { .. }) {
        return Checked::Helper(state, vec![]);
    }
    match prune(link, spec, own) {
        Ok(removed) => Checked::Helper(state, removed),
        Err(why) => {
            tracing::warn!(
                "host {}: old copies of crewmux left in place: {why}",
                spec.name
            );
            Checked::Helper(state, vec![])
        }
    }
}
