//! Workers on other machines over SSH. A host is a `[hosts.NAME]` table of `hosts.toml`
//! ([`config`]); a worker or team says `host = "NAME"`, and `local` (this machine) is
//! always a host.
//!
//! How a remote worker runs (docs/hosts.md):
//! - One SSH connection per host ([`ssh`]: OpenSSH connection sharing in a private control
//!   path) carries a tmux control-mode client on the host (`ssh <dest> tmux -L <socket> -C
//!   attach-session …`, `crate::tmux`'s own client and reader, unchanged), over which the
//!   host's windows are started and polled; the few other calls (copying an attempt's
//!   files) ride on the same connection.
//! - The attempt's files (`prompt.md`, `launch.sh`) are written under
//!   `<workdir>/runs/<run>/workers/<id>/attempt-<n>/` on the host; the wrapper leaves
//!   `output.log` and `exit.json` there, and they come back into the local attempt folder
//!   when the pane ends, so status, report and resume read one place.
//! - Code travels by git ([`git`]): a remote worker's branch is pushed to a repository
//!   under the host's `workdir`, it works in a worktree there, and its work comes back
//!   into its branch here when the attempt ends.
//! - While it runs its output is streamed into the local `output.log` ([`output`]); a
//!   kill, and what an ended attempt left behind, reach its processes on the host by its
//!   nonce ([`kill`]).
//! - The pane-text filter and the `sim` provider run crewmux's own copy on the host,
//!   put there once when a run needs it ([`helper`]).
//! - Each host has a thread of its own (`host_thread`) that owns its link, polls and slow
//!   calls: the loop that drives the run only exchanges messages with it, so a host that
//!   hangs holds up nothing but its own workers (they read `Unknown`).
//! - API keys reach the pane only as `new-window -e` over the channel, as locally.
//! - The hosts a run uses are saved in its folder (`hosts.json`) when it is planned, so
//!   a reattached driver reaches the same machines.

pub mod backend;
pub mod config;
mod config_hint;
pub mod doctor;
mod doctor_version;
mod files;
pub mod git;
pub mod helper;
mod helper_awaited;
mod host_thread;
pub mod kill;
mod launch_remote;
pub mod output;
pub mod poll;
pub mod preflight;
pub mod purge;
pub mod reach;
pub mod spread;
pub mod ssh;
mod ssh_options;
pub mod ssh_said;
pub mod work_back;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use backend::HostsBackend;
pub use config::{HostSpec, Hosts, LOCAL};

use crate::error::{Error, Result};

/// The file in a run's folder that keeps the hosts its workers use.
pub const RUN_HOSTS_FILE: &str = "hosts.json";

/// A worker's host from its own `host` and its team's: `None` for this machine.
pub fn worker_host(own: Option<&str>, team: Option<&str>) -> Option<String> {
    own.or(team).filter(|h| *h != LOCAL).map(str::to_string)
}

/// The hosts `workers` name, checked against `hosts.toml` (user's, then the project's);
/// `team_source` is the team file they come from (`mode:ccg` for a built-in mode).
///
/// # Errors
/// A `hosts.toml` mistake, a host no file defines (one line naming the worker, placed at
/// its `host` value in the team file: `team.toml:7:8: worker `a`: unknown host …`), or
/// `ssh_args` ssh refuses before connecting (`ssh_options`).
pub fn hosts_for<'a>(
    project_dir: &Path,
    team_source: &str,
    workers: impl IntoIterator<Item = (&'a str, Option<&'a str>)>,
) -> Result<BTreeMap<String, HostSpec>> {
    let mut used = BTreeMap::new();
    let mut known: Option<Hosts> = None;
    for (worker, host) in workers {
        let Some(host) = host else { continue };
        if used.contains_key(host) {
            continue;
        }
        let hosts = match &mut known {
            Some(h) => h,
            None => known.insert(Hosts::load(
                project_dir,
                &crate::providers::EnvSnapshot::current(),
            )?),
        };
        let spec = hosts.get(host).map_err(|e| {
            Error::Usage(crate::team::place::at_worker_value(
                team_source,
                worker,
                "host",
                &format!("worker `{worker}`: {e}"),
            ))
        })?;
        if let Some(spec) = spec {
            ssh_options::check(spec)?;
            used.insert(host.to_string(), spec.clone());
        }
    }
    Ok(used)
}

/// Save the hosts a run uses into its folder (nothing when it uses none).
///
/// # Errors
/// I/O.
pub fn save_run_hosts(run_dir: &Path, hosts: &BTreeMap<String, HostSpec>) -> Result<()> {
    if hosts.is_empty() {
        return Ok(());
    }
    let json =
        serde_json::to_vec_pretty(hosts).map_err(|e| Error::Other(format!("hosts.json: {e}")))?;
    crate::store::write_replace(&run_dir.join(RUN_HOSTS_FILE), &json)
}

/// The hosts a run saved when it was planned; none when it has no `hosts.json`.
///
/// # Errors
/// [`Error::CorruptState`] for a file that is not what crewmux wrote.
pub fn run_hosts(run_dir: &Path) -> Result<BTreeMap<String, HostSpec>> {
    let path = run_dir.join(RUN_HOSTS_FILE);
    match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| Error::CorruptState {
            path,
            reason: format!("not the hosts crewmux saved ({e}); the run cannot reach its hosts"),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(BTreeMap::new()),
        Err(e) => Err(Error::io(&path, e)),
    }
}

/// Where an attempt's folder is on `host`: `<workdir>/runs/<run>/workers/<id>/attempt-<n>`
/// for the local `<run dir>/workers/<id>/attempt-<n>`.
pub fn remote_attempt_dir(host: &HostSpec, run_id: &str, local_dir: &Path) -> PathBuf {
    let tail: Vec<_> = local_dir.components().rev().take(3).collect();
    let mut dir = host.workdir.join("runs").join(run_id);
    for c in tail.into_iter().rev() {
        dir.push(c);
    }
    dir
}

/// The folder a remote worker without a worktree works in on `host`.
pub fn remote_work_dir(host: &HostSpec, run_id: &str, worker: &str) -> PathBuf {
    host.workdir
        .join("runs")
        .join(run_id)
        .join("work")
        .join(worker)
}

/// Where a remote worker's attempt lives on its host.
#[derive(Debug, Clone)]
pub struct RemotePlace {
    /// The attempt folder there (the wrapper's `dir`).
    pub attempt_dir: PathBuf,
    /// The working directory there.
    pub cwd: PathBuf,
    /// crewmux on that host, when the run found or put one there ([`helper`]).
    pub helper: Option<PathBuf>,
    /// Where crewmux is to be on that host when the host did not answer when the run was
    /// planned: put there before an attempt that runs it starts (`helper_awaited.rs`).
    pub helper_awaited: Option<PathBuf>,
}

/// The place on its host of attempt folder `local_dir` of worker `w` of the run `state`;
/// `None` for a worker of this machine. A worker with a worktree works in its worktree on
/// the host ([`git`]); one without, in a plain folder there.
///
/// # Errors
/// The run's `hosts.json` is missing the host or cannot be read; a corrupt
/// `helpers.json`.
pub fn place(
    state: &crate::domain::RunState,
    w: &crate::domain::WorkerState,
    local_dir: &Path,
) -> Result<Option<RemotePlace>> {
    let Some(host) = w.host.as_deref() else {
        return Ok(None);
    };
    let hosts = run_hosts(&state.run_dir)?;
    let spec = hosts.get(host).ok_or_else(|| {
        Error::Usage(format!(
            "worker `{}` runs on host `{host}`, which {} does not name",
            w.id,
            state.run_dir.join(RUN_HOSTS_FILE).display()
        ))
    })?;
    Ok(Some(RemotePlace {
        attempt_dir: remote_attempt_dir(spec, &state.run_id, local_dir),
        cwd: git::remote_cwd(state, w, spec)
            .unwrap_or_else(|| remote_work_dir(spec, &state.run_id, &w.id)),
        helper: helper::run_helper(&state.run_dir, host)?,
        helper_awaited: helper::awaited_helper(&state.run_dir, host)?,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host() -> HostSpec {
        HostSpec {
            name: "b".into(),
            ssh: "me@b".into(),
            ssh_args: vec![],
            workdir: "/srv/crew".into(),
            max_workers: 2,
            tmux: "tmux".into(),
            tmux_socket: "crewmux".into(),
            lost_after_s: 120,
            source: "h.toml".into(),
        }
    }

    #[test]
    fn an_attempt_folder_keeps_its_place_under_the_hosts_workdir() {
        assert_eq!(
            remote_attempt_dir(
                &host(),
                "r1",
                Path::new("/p/.crewmux/runs/r1/workers/alpha/attempt-2")
            ),
            PathBuf::from("/srv/crew/runs/r1/workers/alpha/attempt-2")
        );
    }

    #[test]
    fn local_is_no_host_and_a_workers_own_host_wins() {
        assert_eq!(worker_host(None, None), None);
        assert_eq!(worker_host(Some("local"), Some("b")), None);
        assert_eq!(worker_host(None, Some("b")), Some("b".into()));
        assert_eq!(worker_host(Some("c"), Some("b")), Some("c".into()));
    }

    #[test]
    fn the_run_keeps_the_hosts_it_was_planned_with() {
        let dir = tempfile::tempdir().unwrap();
        assert!(run_hosts(dir.path()).unwrap().is_empty());
        let hosts = BTreeMap::from([("b".to_string(), host())]);
        save_run_hosts(dir.path(), &hosts).unwrap();
        assert_eq!(run_hosts(dir.path()).unwrap(), hosts);
        std::fs::write(dir.path().join(RUN_HOSTS_FILE), "{").unwrap();
        let e = run_hosts(dir.path()).unwrap_err().to_string();
        assert!(
            e.contains("hosts.json") && e.contains("not the hosts"),
            "{e}"
        );
    }
}
