//! `!`: a shell in the selected worker's tree, to look at or finish its work by hand. Inside
//! the person's own tmux (`$TMUX`, never crewmux's private server of worker panes) it is a
//! new window of that tmux, named after the worker, and the dashboard stays on screen;
//! outside tmux the dashboard gives the terminal to `$SHELL` (else `sh`) until it exits,
//! as `e` does for the editor. The shell's environment has `CREWMUX_RUN`,
//! `CREWMUX_WORKER` and `CREWMUX_TREE`.
//!
//! tmux(1): `new-window -d` keeps the current window, `-n` names the window, `-c` is its
//! start directory, `-e VAR=value` sets its environment (tmux ≥ 3.0; crewmux needs 3.2).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::terminal::TerminalGuard;
use crate::domain::{RunState, WorkerKind};

/// The directory a shell for `worker` opens in: its worktree (with the project's prefix
/// and its `cwd`), the integration worktree for a check, critic or fixer, else the folder
/// the worker runs in (the project, or its own `cwd`).
///
/// # Errors
/// One line for the person: no such worker, a worker on an SSH host (its tree is there,
/// named), or a tree that is gone (the run was cleaned).
pub fn shell_dir(run: &RunState, worker: &str) -> Result<PathBuf, String> {
    let w = run
        .worker(worker)
        .ok_or_else(|| format!("there is no worker `{worker}` in this run"))?;
    let dir = crate::workspace::cwd_for(run, w).unwrap_or_else(|| match &w.cwd {
        Some(c) if c.is_absolute() => c.clone(),
        Some(c) => run.project_dir.join(c),
        None => run.project_dir.clone(),
    });
    // `<worktree>/` with an empty prefix reads as `<worktree>`.
    let dir: PathBuf = dir.components().collect();
    if let Some(host) = w
        .host
        .as_deref()
        .filter(|h| *h != crate::domain::LOCAL_HOST)
    {
        if w.kind == WorkerKind::Worker {
            return Err(format!(
                "{worker} runs on {host}: its tree is there (ssh {host}, then cd {})",
                dir.display()
            ));
        }
    }
    if !dir.is_dir() {
        return Err(format!(
            "{worker}'s tree {} is gone (the run was cleaned): crewmux diff {} --stat says what is left",
            dir.display(),
            run.run_id
        ));
    }
    Ok(dir)
}

/// Open the shell for `worker` (see the module doc); returns the line the footer shows.
/// `user_tmux`: the person's own tmux server's socket
/// ([`crate::notify::tmux::user_socket`]); `None` outside tmux.
pub fn open(
    guard: &mut TerminalGuard,
    run: &RunState,
    worker: &str,
    user_tmux: Option<&Path>,
) -> String {
    let dir = match shell_dir(run, worker) {
        Ok(d) => d,
        Err(why) => return why,
    };
    let env = [
        ("CREWMUX_RUN", run.run_id.clone()),
        ("CREWMUX_WORKER", worker.to_string()),
        ("CREWMUX_TREE", dir.display().to_string()),
    ];
    if let Some(socket) = user_tmux {
        return match new_window(socket, worker, &dir, &env) {
            Ok(()) => format!(
                "a shell in {} is in a new window `{worker}` of your tmux",
                dir.display()
            ),
            Err(why) => why,
        };
    }
    let shell = std::env::var("SHELL")
        .ok()
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(|| "sh".into());
    let mut cmd = Command::new(&shell);
    cmd.current_dir(&dir).envs(env.iter().map(|(k, v)| (*k, v)));
    let ran = guard.suspend(|| {
        println!(
            "crewmux: a shell in {} ({worker} of run {}); exit it to come back to the dashboard",
            dir.display(),
            run.run_id
        );
        cmd.status()
    });
    match ran {
        Err(e) => format!("cannot give the terminal to the shell: {e}"),
        Ok(Err(e)) => format!("cannot start the shell `{shell}`: {e}"),
        Ok(Ok(_)) => format!("back from the shell in {}", dir.display()),
    }
}

/// `tmux -S socket new-window -d -n worker -c dir -e …` on the person's own tmux.
fn new_window(
    socket: &Path,
    worker: &str,
    dir: &Path,
    env: &[(&str, String)],
) -> Result<(), String> {
    let mut cmd = Command::new("tmux");
    cmd.arg("-S")
        .arg(socket)
        .args(["new-window", "-d", "-n", worker, "-c"]);
    cmd.arg(dir);
    for (k, v) in env {
        cmd.arg("-e").arg(format!("{k}={v}"));
    }
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run tmux for a new window: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    Err(format!(
        "tmux new-window in {} failed: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr).trim()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::fixtures;

    #[test]
    fn the_shell_opens_in_the_workers_tree_or_says_why_not() {
        let tmp = tempfile::tempdir().unwrap();
        let mut run = fixtures::crazy_run();
        run.project_dir = tmp.path().to_path_buf();
        let id = run.workers[0].id.clone();
        // A run without worktrees: the project.
        assert_eq!(shell_dir(&run, &id).unwrap(), tmp.path());
        let tree = tmp.path().join(".crewmux/worktrees/r/w");
        run.workspace = Some(crate::domain::RunWorkspace {
            repo: tmp.path().to_path_buf(),
            prefix: "app".into(),
            base: "abc".into(),
            base_ref: "HEAD".into(),
            user_branch: None,
            uncommitted: false,
            root: tmp.path().join(".crewmux/worktrees/r"),
            copy: vec![],
            setup: None,
            workers: [(
                id.clone(),
                crate::domain::WorkerWorkspace {
                    path: tree.clone(),
                    branch: "crewmux/r/w".into(),
                    diff: None,
                    commits: 0,
                    head: None,
                    start: None,
                    upstreams: Default::default(),
                    host: None,
                },
            )]
            .into(),
            pending: vec![],
            integration: None,
            integrated_round: None,
        });
        // The worktree is not there (cleaned): said, with what to run.
        let gone = shell_dir(&run, &id).unwrap_err();
        assert!(gone.contains("is gone (the run was cleaned)"), "{gone}");
        std::fs::create_dir_all(tree.join("app")).unwrap();
        assert_eq!(shell_dir(&run, &id).unwrap(), tree.join("app"));
        run.workers[0].host = Some("box".into());
        let remote = shell_dir(&run, &id).unwrap_err();
        assert!(
            remote.starts_with(&format!("{id} runs on box: its tree is there")),
            "{remote}"
        );
        assert!(shell_dir(&run, "nobody")
            .unwrap_err()
            .contains("no worker `nobody`"));
    }
}
