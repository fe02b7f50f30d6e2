//! The input checks of a run that need no routing: `run` makes them before it prints the
//! run id and probes the agent CLIs, so bad input stays one line and creates nothing.
//! `create_run_with` makes the same checks again on the routed team. [`ready_to_drive`]
//! checks what the process that drives the run reads once the run exists.

use std::path::Path;

use crate::domain::{BackendKind, WorkerSpec};
use crate::error::{Error, Result};
use crate::team::CheckedTeam;

use super::plan::{checked_problem, hosts_of, no_worker, plan_workspace, Placed};

/// Check `problem` and `team` as [`super::plan::create_run_with`] will: the problem, at
/// least one worker, the programs its `command` workers and checks start
/// (`crate::team::programs`), the hosts its workers will run on (`--hosts` spread as routing spreads
/// them, `crate::hosts::spread`), and the workspace plan. Nothing is created or printed.
///
/// # Errors
/// As `create_run_with`: the problem, no worker, a host or `--hosts` list, a refused
/// workspace.
pub fn precheck(
    project: &Path,
    backend: BackendKind,
    problem: &str,
    team: &CheckedTeam,
    spread_over: &[String],
    ws_opts: &crate::workspace::WorkspaceOptions,
) -> Result<()> {
    checked_problem(problem)?;
    let spec = team.spec();
    if spec.workers.is_empty() {
        return Err(no_worker(spec.name.as_deref().unwrap_or("team")));
    }
    crate::team::programs::refuse_missing_in_spec(spec, project)?;
    // Routed workers are in `order` (then file order), as the spread sees them.
    let mut workers: Vec<(u32, &WorkerSpec)> = spec
        .workers
        .iter()
        .enumerate()
        .map(|(i, w)| (w.order.unwrap_or(i as u32 + 1), w))
        .collect();
    workers.sort_by_key(|(order, _)| *order);
    let pinned: Vec<Option<&str>> = workers
        .iter()
        .map(|(_, w)| w.host.as_deref().or(spec.host.as_deref()))
        .collect();
    let hosts: Vec<Option<String>> = if spread_over.is_empty() {
        pinned
            .iter()
            .map(|h| crate::hosts::worker_host(*h, None))
            .collect()
    } else {
        let known = crate::hosts::Hosts::load(project, &crate::providers::EnvSnapshot::current())?;
        let slots = crate::hosts::spread::slots(spread_over, &known, team.parallel())?;
        // Without the routed providers nor the hosts' probe: where a worker that runs
        // crewmux itself lands is checked again once the team is routed.
        let wants: Vec<crate::hosts::spread::Want<'_>> = pinned
            .iter()
            .map(|p| crate::hosts::spread::Want {
                pinned: *p,
                runs_crewmux: false,
            })
            .collect();
        crate::hosts::spread::spread(&slots, &wants)
            .iter()
            .map(|h| crate::hosts::worker_host(Some(h), None))
            .collect()
    };
    let placed: Vec<Placed<'_>> = workers
        .iter()
        .zip(&hosts)
        .map(|((_, w), host)| Placed {
            id: &w.id,
            workspace: w.workspace,
            host: host.as_deref(),
        })
        .collect();
    hosts_of(project, team.source(), &placed, backend)?;
    refuse_unready_fences(spec, &placed)?;
    let workspace = spec.workspace.clone().unwrap_or_default();
    plan_workspace(project, &workspace, &placed, ws_opts)?;
    Ok(())
}

/// Refuse a fence this machine cannot give (README "Sandbox"): each mode the team's workers
/// use (and so its checks, critics and fixers) is asked once (`sandbox::preflight`:
/// bwrap installed and able to make its namespaces, a container runtime), and a fenced
/// worker on an SSH host is refused (not supported yet). Never a silent run without the fence.
///
/// # Errors
/// [`Error::Usage`], one line: the mode, why, and the fix.
pub fn refuse_unready_fences(spec: &crate::domain::TeamSpec, placed: &[Placed<'_>]) -> Result<()> {
    use crate::domain::{Sandbox, SandboxMode};
    let mut asked: Vec<SandboxMode> = Vec::new();
    // The team's own fence first: its checks, critics and fixers run in it.
    let team = std::iter::once((None, Sandbox::resolve(spec.sandbox.as_ref(), None)));
    let workers = placed.iter().map(|p| {
        let w = spec.workers.iter().find(|w| w.id == p.id);
        let s = Sandbox::resolve(spec.sandbox.as_ref(), w.and_then(|w| w.sandbox.as_ref()));
        (Some(p), s)
    });
    for (p, s) in team.chain(workers) {
        if s.is_none() {
            continue;
        }
        if let Some((p, host)) =
            p.and_then(|p| Some((p, p.host.filter(|h| *h != crate::hosts::LOCAL)?)))
        {
            return Err(Error::Usage(format!(
                "worker `{}`: sandbox `{}` on SSH host {host} is not supported yet: run it on local or with `mode = \"none\"`",
                p.id, s.mode
            )));
        }
        if asked.contains(&s.mode) {
            continue;
        }
        asked.push(s.mode);
        let path = std::env::var_os("PATH");
        if let crate::sandbox::Readiness::Refused(why) =
            crate::sandbox::preflight(s.mode, path.as_deref())
        {
            return Err(Error::Usage(format!(
                "sandbox `{}` cannot start here: {why}",
                s.mode
            )));
        }
    }
    Ok(())
}

/// Check what driving a run reads besides its input, before the run exists (`run` and
/// `demo`): the person's `config.toml` (the driver takes its `[notify]`) and the
/// credential store (its passphrase, at a prompt or from the environment). Without this a
/// broken file or a missing passphrase ended the command after the run was made, which
/// then read `running` with nobody driving it.
///
/// # Errors
/// As [`crate::config::load`] and [`crate::creds::Store::check_default`]: one line naming
/// the file or the variable and the fix.
pub fn ready_to_drive() -> Result<()> {
    crate::config::load()?;
    crate::creds::Store::check_default()
}
