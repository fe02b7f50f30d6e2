//! `clean --purge` on a run's hosts: the run's folder there (`<workdir>/runs/<run>`, its
//! attempts' files) and its worktrees' folder (`<workdir>/worktrees/<run>`, empty once
//! `clean` removed its worktrees) go as the local run folder does.

use std::path::Path;

use super::config::HostSpec;
use super::ssh::{remote_line, SshLink, CALL_LIMIT};
use crate::error::Result;

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

/// Remove run `run_id`'s folders on every host of its `hosts.json` (in `run_dir`), one ssh
/// call per host. Returns a line per host for the user and whether every host was done.
///
/// # Errors
/// `hosts.json` cannot be read ([`crate::error::Error::CorruptState`]).
pub fn purge_remote(run_dir: &Path, run_id: &str) -> Result<(Vec<String>, bool)> {
    let mut lines = vec![];
    let mut all = true;
    for (name, spec) in super::run_hosts(run_dir)? {
        let done = purge_script(&spec, run_id).and_then(|script| {
            SshLink::new(&spec)?.run(&script, None, CALL_LIMIT)?;
            Ok(())
        });
        match done {
            Ok(()) => lines.push(format!(
                "removed {} on host {name}",
                spec.workdir.join("runs").join(run_id).display()
            )),
            Err(e) => {
                all = false;
                lines.push(format!(
                    "could not remove run {run_id}'s folders on host {name} ({e}): \
                     run `crewmux clean --purge --run {run_id}` again when it answers"
                ));
            }
        }
    }
    Ok((lines, all))
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
