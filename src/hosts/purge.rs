//! `clean` on a run's hosts. `--purge` removes the run's folder there
//! (`<workdir>/runs/<run>`, its attempts' files) and its worktrees' folder
//! (`<workdir>/worktrees/<run>`, empty once `clean` removed its worktrees) as the local run
//! folder goes.
//!
//! Only the hosts the run made something on are asked ([`made_on`]): a host whose workers
//! never started there (it refused the login, did not answer, or was lost first) has
//! nothing of the run. What cannot be removed on a host is said in one line per host
//! ([`Left`]); the run is kept so a later `clean` finds it, unless `--force`: the run is
//! then dropped here and the line names what is left on the host.

use std::collections::{BTreeMap, BTreeSet};

use super::config::HostSpec;
use super::ssh::{remote_line, SshLink, CALL_LIMIT};
use crate::domain::{RunState, WorkerStatus};
use crate::error::{Error, Result};

/// The hosts run `state` may have made something on: each host an attempt was started
/// on (its dispatch record), and the host of a worker whose last attempt failed there (a
/// launch that failed may have made its worktree or files first). A worker held back
/// while its host did not answer, and one moved here when its host was lost before it
/// started, made nothing there.
pub fn made_on(state: &RunState) -> BTreeSet<String> {
    let started = state.dispatches.iter().filter_map(|d| d.host.clone());
    let failed = state
        .workers
        .iter()
        .filter(|w| w.status == WorkerStatus::Failed && w.attempt > 0)
        .filter_map(|w| w.host.clone());
    started.chain(failed).collect()
}

/// What could not be removed on one host: why (one line), whether it stays so until
/// someone fixes it (a refused login, a host key), and the things left there.
#[derive(Debug, Clone, Default)]
pub struct LeftOnHost {
    pub why: String,
    pub permanent: bool,
    pub items: Vec<String>,
}

/// Per host, what `clean` could not remove there.
pub type Left = BTreeMap<String, LeftOnHost>;

/// Note in `left` that `item` could not be removed on `host` because of `e`.
pub fn leave(left: &mut Left, host: &str, e: &Error, item: String) {
    let entry = left.entry(host.to_string()).or_insert_with(|| {
        let (why, permanent) = match e {
            Error::Command { message, .. } => {
                let read = super::ssh_said::SshFailed::read(message);
                (read.said(), read.permanent())
            }
            other => (super::ssh_said::one_line(&other.to_string()), false),
        };
        LeftOnHost {
            why,
            permanent,
            items: vec![],
        }
    });
    entry.items.push(item);
}

/// One line per host of `left` for the person: with `force`, what is left there (the run
/// is dropped here all the same); without, what could not be removed and what to do.
pub fn left_lines(run_id: &str, left: &Left, force: bool, purge: bool) -> Vec<String> {
    left.iter()
        .map(|(host, l)| {
            let items = l.items.join(", ");
            if force {
                return format!(
                    "left on host {host} ({}): {items}; remove them there by hand once it lets crewmux in",
                    l.why
                );
            }
            let when = if l.permanent {
                "once it is fixed (`crewmux doctor --hosts`)"
            } else {
                "when it answers"
            };
            let again = if purge {
                format!(
                    "run `crewmux clean --purge --run {run_id}` again {when}, or add --force to drop the run and leave them there"
                )
            } else {
                format!("run `crewmux clean` again {when}")
            };
            format!("could not remove {items} on host {host} ({}): {again}", l.why)
        })
        .collect()
}

/// The `sh` line that removes run `run_id`'s folders on `host`: the run folder whole, the
/// worktrees folder only when empty (a worktree left there is the user's to keep).
///
/// # Errors
/// A path with a NUL byte.
pub fn purge_script(host: &HostSpec, run_id: &str) -> Result<String> {
    let runs = remote_line(&[host.workdir.join("runs").join(run_id).display().to_string()])?;
    let worktrees = remote_line(&[host
        .workdir
        .join("worktrees")
        .join(run_id)
        .display()
        .to_string()])?;
    Ok(format!(
        "rm -rf {runs} && {{ rmdir {worktrees} 2>/dev/null; true; }}"
    ))
}

/// Remove run `state`'s folders on each host of its `hosts.json` it made something on
/// ([`made_on`]), one ssh call per host; a host already in `left` (its worktrees could
/// not be removed) is not asked again. Returns a line per host for the user and whether
/// the run may go here: every host done, or `force` (see [`left_lines`]).
///
/// # Errors
/// `hosts.json` cannot be read ([`crate::error::Error::CorruptState`]).
pub fn purge_run_remote(state: &RunState, left: Left, force: bool) -> Result<(Vec<String>, bool)> {
    let made = made_on(state);
    let mut hosts = super::run_hosts(&state.run_dir)?;
    hosts.retain(|name, _| {
        let asked = made.contains(name);
        if !asked {
            tracing::info!(
                "host {name}: run {} made nothing there; not asked",
                state.run_id
            );
        }
        asked
    });
    Ok(purge_on(&hosts, &state.run_id, left, force))
}

/// Remove run `run_id`'s folders on every host of its `hosts.json` (in `run_dir`): for a
/// run whose state cannot be read, so what it made where is not known. As
/// [`purge_run_remote`]: with `force`, a host that cannot be cleaned is named with what
/// is left there and the run may go all the same.
///
/// # Errors
/// `hosts.json` cannot be read ([`crate::error::Error::CorruptState`]).
pub fn purge_remote(
    run_dir: &std::path::Path,
    run_id: &str,
    force: bool,
) -> Result<(Vec<String>, bool)> {
    let hosts = super::run_hosts(run_dir)?;
    Ok(purge_on(&hosts, run_id, Left::new(), force))
}

/// Remove run `run_id`'s folders on each of `hosts`, except those in `left`, which get
/// the folder added to what is left there; the lines and whether the run may go.
fn purge_on(
    hosts: &BTreeMap<String, HostSpec>,
    run_id: &str,
    mut left: Left,
    force: bool,
) -> (Vec<String>, bool) {
    let mut lines = vec![];
    for (name, spec) in hosts {
        let folder = spec.workdir.join("runs").join(run_id).display().to_string();
        if let Some(l) = left.get_mut(name) {
            l.items.push(folder);
            continue;
        }
        let done = purge_script(spec, run_id).and_then(|script| {
            SshLink::new(spec)?.run(&script, None, CALL_LIMIT)?;
            Ok(())
        });
        match done {
            Ok(()) => lines.push(format!("removed {folder} on host {name}")),
            Err(e) => leave(&mut left, name, &e, folder),
        }
    }
    lines.extend(left_lines(run_id, &left, force, true));
    (lines, force || left.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_removes_the_run_folder_and_an_empty_worktrees_folder() {
        let dir = tempfile::tempdir().unwrap();
        let host = HostSpec {
            name: "box".into(),
            ssh: "x".into(),
            ssh_args: vec![],
            workdir: dir.path().join("work dir"),
            max_workers: 1,
            tmux: "tmux".into(),
            tmux_socket: "crewmux".into(),
            lost_after_s: 1,
            source: "h.toml".into(),
        };
        let runs = host.workdir.join("runs/r1/workers/a");
        let other = host.workdir.join("runs/r2");
        let wts = host.workdir.join("worktrees/r1");
        for d in [&runs, &other, &wts] {
            std::fs::create_dir_all(d).unwrap();
        }
        let sh = |script: &str| {
            std::process::Command::new("sh")
                .args(["-c", script])
                .status()
                .unwrap()
                .success()
        };
        let script = purge_script(&host, "r1").unwrap();
        assert!(sh(&script), "{script}");
        assert!(!host.workdir.join("runs/r1").exists() && !wts.exists() && other.exists());
        // Gone already: still done.
        assert!(sh(&script), "{script}");
        // A worktree left there stays.
        std::fs::create_dir_all(wts.join("kept")).unwrap();
        assert!(sh(&script), "{script}");
        assert!(wts.join("kept").exists());
    }
}
