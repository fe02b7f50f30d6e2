//! A raced worker becomes its candidates (README "Races"): `race = N` on a worker, or
//! `run --race N` for every worker that sets none, turns worker `fix` into `fix-c1` …
//! `fix-cN`, the same task each, on different providers where enough are usable: the
//! team's `[race] agents` in order, else the worker's own provider and then its usable
//! fallbacks (routing's order, best first); when there are fewer than N, the list is used
//! again from its start and the candidate's routing reason says so. A `command` worker's
//! candidates all run its argv (with `CREWMUX_CANDIDATE` telling them apart).

use crate::domain::race::{candidate_id, MAX_CANDIDATES};
use crate::domain::{Candidate, TeamSpec};
use crate::error::{Error, Result};
use crate::providers::{ProviderHealth, Registry};

use super::ResolvedWorker;

/// The candidates of every raced worker in place of it, in team order; `race_flag` is
/// `run --race N`. The races were checked by [`check`].
pub fn expand(
    workers: Vec<ResolvedWorker>,
    spec: &TeamSpec,
    race_flag: Option<u32>,
    registry: &Registry,
    health: &[ProviderHealth],
) -> Vec<ResolvedWorker> {
    let race_of = |id: &str| {
        spec.workers
            .iter()
            .find(|w| w.id == id)
            .and_then(|w| w.race)
            .or(race_flag)
    };
    let agents = spec
        .race
        .as_ref()
        .map(|r| r.agents.clone())
        .unwrap_or_default();
    let mut out = Vec::new();
    for w in workers {
        let Some(n) = race_of(&w.id) else {
            out.push(w);
            continue;
        };
        let providers = providers_for(&w, &agents, registry, health);
        for k in 1..=n {
            let id = candidate_id(&w.id, k);
            let provider = providers[((k - 1) as usize) % providers.len()].clone();
            let again = k as usize > providers.len();
            let mut c = w.clone();
            c.id = id;
            if provider != w.provider {
                c.model = None;
                c.reason = format!("race `{}`: candidate {k} of {n} on {provider}", w.id);
            } else {
                c.reason = format!("race `{}`: candidate {k} of {n}; {}", w.id, w.reason);
            }
            if again && registry.get(&provider).is_some_and(|s| s.is_agent()) {
                c.reason.push_str(&format!(
                    " (only {} usable provider{} for {n} candidates: {provider} again)",
                    providers.len(),
                    if providers.len() == 1 { "" } else { "s" }
                ));
            }
            c.fallbacks.retain(|f| *f != provider);
            c.provider = provider;
            c.candidate = Some(Candidate {
                task: w.id.clone(),
                n: k,
                of: n,
            });
            out.push(c);
        }
    }
    out
}

/// The races a team asks for are ones crewmux runs, checked before anything of the run
/// is made (`team::resolve::check`); `race_flag` and `sandbox_flag` are `run --race N` and
/// `run --sandbox MODE`, `file` the team's source.
///
/// # Errors
/// [`Error::Usage`], one line naming the team file and the worker: a race of fewer than 2
/// or more than [`MAX_CANDIDATES`] candidates; a worker whose `after` names a raced worker
/// (a downstream of a race is not built yet); a race in a fenced team (its candidates'
/// checks do not run in the fence yet); an `[race] agents` entry that is no provider.
pub fn check(
    spec: &TeamSpec,
    (race_flag, sandbox_flag): (Option<u32>, Option<crate::domain::SandboxMode>),
    registry: &Registry,
    file: &str,
) -> Result<()> {
    let race_of = |w: &crate::domain::WorkerSpec| w.race.or(race_flag);
    let fenced = |s: Option<&crate::domain::SandboxSpec>| {
        s.and_then(|s| s.mode)
            .is_some_and(|m| m != crate::domain::SandboxMode::None)
    };
    let team_fenced = sandbox_flag.map_or(fenced(spec.sandbox.as_ref()), |m| {
        m != crate::domain::SandboxMode::None
    });
    let agents = spec
        .race
        .as_ref()
        .map(|r| r.agents.clone())
        .unwrap_or_default();
    if let Some(bad) = agents.iter().find(|a| registry.get(a).is_none()) {
        return Err(Error::Usage(format!(
            "{file}: [race] agents: `{bad}` is no provider: use one of {}",
            registry.names().collect::<Vec<_>>().join(", ")
        )));
    }
    for w in &spec.workers {
        if let Some(n) = race_of(w).filter(|n| !(2..=MAX_CANDIDATES).contains(n)) {
            return Err(Error::Usage(format!(
                "{file}: worker `{}`: `race = {n}`: a race has 2 to {MAX_CANDIDATES} candidates",
                w.id
            )));
        }
        let raced = |id: &String| {
            spec.workers
                .iter()
                .any(|u| &u.id == id && race_of(u).is_some())
        };
        if let Some(up) = w.after.iter().find(|a| raced(a)) {
            return Err(Error::Usage(format!(
                "{file}: worker `{}` waits for `{up}`, which races: a worker after a race is not supported yet; run the race in a team of its own and the downstream worker on its merged result",
                w.id
            )));
        }
        // `run --sandbox` is over the team's and the worker's own.
        let worker_fenced = sandbox_flag.is_none() && fenced(w.sandbox.as_ref());
        if race_of(w).is_some() && (team_fenced || worker_fenced) {
            return Err(Error::Usage(format!(
                "{file}: worker `{}` races in a sandbox: a race's candidates are checked outside the fence, which is not built yet; race with `mode = \"none\"` (or no --sandbox)",
                w.id
            )));
        }
        if let Some(n) = race_of(w) {
            let ids: Vec<String> = (1..=n).map(|k| candidate_id(&w.id, k)).collect();
            if let Some(clash) = spec.workers.iter().find(|o| ids.contains(&o.id)) {
                return Err(Error::Usage(format!(
                    "{file}: worker `{}` races as `{}`, an id another worker has: rename one",
                    w.id, clash.id
                )));
            }
        }
    }
    Ok(())
}

/// The providers `w`'s candidates take in turn: `[race] agents` that are usable here
/// (installed and not known unauthenticated), else its own provider and its fallbacks;
/// a `command` worker's own provider only.
fn providers_for(
    w: &ResolvedWorker,
    agents: &[String],
    registry: &Registry,
    health: &[ProviderHealth],
) -> Vec<String> {
    if registry.get(&w.provider).is_some_and(|s| !s.is_agent()) {
        return vec![w.provider.clone()];
    }
    let usable = |p: &str| {
        health
            .iter()
            .find(|h| h.provider == p)
            .is_none_or(|h| h.usable())
    };
    let chosen: Vec<String> = agents.iter().filter(|a| usable(a)).cloned().collect();
    if !chosen.is_empty() {
        return chosen;
    }
    let mut list = vec![w.provider.clone()];
    for f in &w.fallbacks {
        if !list.contains(f) {
            list.push(f.clone());
        }
    }
    list
}
