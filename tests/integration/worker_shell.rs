//! `!` opens a shell in the selected worker's worktree: inside the person's own tmux (the
//! viewer server here) as a new window of it, outside tmux by giving the terminal to
//! `$SHELL` until it exits. The dashboard runs in a viewer pane; the run's workers on a
//! second private server.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::support::*;

const TEAM: &str = r#"
name = "tree"

[[worker]]
id = "lister"
role = "backend-engineer"
provider = "command"
command = ["sh", "-c", "echo listed > listing.txt"]
"#;

/// A repository with the team file, and the dashboard's command with `env` before it.
fn setup(env: &str, workers: &TmuxServer) -> (Project, String) {
    let repo = repo(&[("README.md", "# tree\n")]);
    let team = repo.path().join("team.toml");
    std::fs::write(&team, TEAM).unwrap();
    let cmd = dashboard_cmd(repo.path(), workers, env, &team, "List the files", "");
    (repo, cmd)
}

/// The lister's worktree, once the run has made it.
fn lister_tree(project: &Path) -> PathBuf {
    let s = wait_state(project, "lister done", Duration::from_secs(120), |s| {
        state_worker(s, "lister")["status"] == "completed"
    });
    let path = s["workspace"]["workers"]["lister"]["path"]
        .as_str()
        .unwrap();
    PathBuf::from(path).canonicalize().unwrap()
}

#[test]
fn bang_inside_tmux_opens_a_window_of_the_persons_tmux_in_the_workers_tree() {
    if !tmux_ready("bang_inside_tmux_opens_a_window_of_the_persons_tmux_in_the_workers_tree") {
        return;
    }
    let workers = TmuxServer::new("bang-workers");
    let (repo, cmd) = setup("", &workers);
    let viewer = Viewer::start("bang-viewer", (120, 40), &cmd);
    let tree = lister_tree(repo.path());
    // The run's end is said in the footer first; `!`'s line comes after it.
    viewer.wait_screen("run done", Duration::from_secs(60));
    viewer.keys(&["!"]);
    viewer.wait_screen(
        "is in a new window `lister` of your tmux",
        Duration::from_secs(15),
    );
    let windows = viewer.server.tmux(&[
        "list-windows",
        "-t",
        "v",
        "-F",
        "#{window_name}\t#{pane_current_path}",
    ]);
    let windows = String::from_utf8_lossy(&windows.stdout).into_owned();
    let opened = windows
        .lines()
        .find_map(|l| l.strip_prefix("lister\t"))
        .unwrap_or_else(|| panic!("no window `lister`: {windows}"));
    assert_eq!(Path::new(opened).canonicalize().unwrap(), tree, "{windows}");
    // The dashboard kept its window: it is still the current one.
    assert!(viewer.screen().contains("Workers 1"), "{}", viewer.screen());
    viewer.keys(&["q"]);
    viewer.wait_screen("EXITED 0", Duration::from_secs(30));
}

#[test]
fn bang_outside_tmux_gives_the_terminal_to_the_shell_in_the_workers_tree() {
    if !tmux_ready("bang_outside_tmux_gives_the_terminal_to_the_shell_in_the_workers_tree") {
        return;
    }
    let workers = TmuxServer::new("bang-out-workers");
    let scratch = tempfile::tempdir().unwrap();
    let seen = scratch.path().join("seen.txt");
    // The "shell": says where it is and who it is for, then exits.
    let shell = scratch.path().join("shell.sh");
    std::fs::write(
        &shell,
        format!(
            "#!/bin/sh\nprintf '%s %s %s\\n' \"$(pwd -P)\" \"$CREWMUX_WORKER\" \"$CREWMUX_TREE\" > {}\n",
            seen.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&shell, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let env = format!("env -u TMUX SHELL={}", shell.display());
    let (repo, cmd) = setup(&env, &workers);
    let viewer = Viewer::start("bang-out-viewer", (120, 40), &cmd);
    let tree = lister_tree(repo.path());
    // The run's end is said in the footer first; `!`'s line comes after it.
    viewer.wait_screen("run done", Duration::from_secs(60));
    viewer.keys(&["!"]);
    viewer.wait_screen("back from the shell in", Duration::from_secs(15));
    let said = std::fs::read_to_string(&seen).unwrap();
    let mut words = said.split_whitespace();
    assert_eq!(Path::new(words.next().unwrap()), tree, "{said}");
    assert_eq!(words.next(), Some("lister"), "{said}");
    // The dashboard drew itself again after the shell.
    assert!(viewer.screen().contains("Workers 1"), "{}", viewer.screen());
    viewer.keys(&["q"]);
    viewer.wait_screen("EXITED 0", Duration::from_secs(30));
}
