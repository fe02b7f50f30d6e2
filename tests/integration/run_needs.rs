//! Everything a run needs is checked before the run exists: a command that starts a run
//! and cannot drive it (a broken `config.toml`, a credential store without its passphrase)
//! is one line, exit 2, and leaves no run behind; a project folder git does not track runs
//! its workers in that folder instead of worktrees that lack it.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::support::creds::Env;
use crate::support::*;

/// `crewmux args…` in `project` with `config` as its config directory, without a terminal
/// (`setsid`: a session of its own, no controlling tty to ask a passphrase on) and without
/// a passphrase in the environment.
fn without_terminal(project: &Path, config: &Path, args: &[&str]) -> Output {
    let mut c = Command::new("setsid");
    c.arg("--wait")
        .arg(env!("CARGO_BIN_EXE_crewmux"))
        .current_dir(project)
        .env("XDG_STATE_HOME", state_home())
        .env_remove("TMUX")
        .env_remove("TMUX_PANE")
        .env("CREWMUX_CONFIG_DIR", config)
        .env_remove("CREWMUX_CREDENTIAL_PASSPHRASE")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    wait_limited(c.spawn().unwrap(), args)
}

/// The runs under `project` (none when `.crewmux/runs` does not exist).
fn runs(project: &Path) -> usize {
    std::fs::read_dir(project.join(".crewmux/runs")).map_or(0, Iterator::count)
}

#[test]
fn a_demo_with_a_broken_config_toml_is_refused_before_its_run_exists() {
    let tmp = project();
    let d = tmp.path();
    let config = d.join("config");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(config.join("config.toml"), "[notify]\nbell = \"loud\"\n").unwrap();
    let out = without_terminal(d, &config, &["demo", "--headless", "--backend", "process"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("config.toml:2:"),
        "names the file and line: {err}"
    );
    assert_eq!(runs(d), 0, "no run is left: {err}");
}

#[test]
fn a_credential_store_without_its_passphrase_refuses_the_run_and_makes_nothing() {
    let env = Env::new();
    env.add("sim", "first", "sk-sim-NeedsPassphrase-0123456789");
    let t = TeamProject::new(&command_worker(
        "one",
        "echo here > made.txt",
        "Added made.txt.",
    ));
    let d = t.path();
    for args in [
        vec![
            "run",
            "--team",
            t.team_arg(),
            "--no-clarify",
            "--headless",
            "--backend",
            "process",
            "--",
            "Add a health endpoint",
        ],
        vec!["demo", "--headless", "--backend", "process"],
    ] {
        let out = without_terminal(d, &env.config(), &args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("no passphrase: set CREWMUX_CREDENTIAL_PASSPHRASE"),
            "{args:?}: {err}"
        );
        assert_eq!(runs(d), 0, "{args:?}: no run is left: {err}");
        assert!(!d.join("made.txt").exists());
    }
}

#[test]
fn a_project_in_a_folder_git_does_not_track_runs_its_workers_there_and_says_so() {
    let t = TeamProject::in_repo(
        &[("a.txt", "a\n")],
        &command_worker("one", "echo here > made.txt", "Added made.txt."),
    );
    let scratch = t.path().join("scratch");
    std::fs::create_dir(&scratch).unwrap();
    std::fs::write(scratch.join("notes.txt"), "untracked\n").unwrap();
    let out = t.run("Add made.txt").process().in_dir(&scratch).output();
    let err = stderr(&out);
    assert_eq!(summary(&out)["status"], "done", "{err}");
    assert!(
        err.contains("is a folder git does not track in the repository at")
            && err.contains("workers share it"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(scratch.join("made.txt")).unwrap(),
        "here\n"
    );
    assert_eq!(git(t.path(), &["worktree", "list"]).lines().count(), 1);

    // Asking for worktrees of a commit that lacks the folder is refused, with nothing made.
    let out = t
        .run("Add made.txt")
        .process()
        .in_dir(&scratch)
        .args(&["--base", "HEAD"])
        .output();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("--base: "), "{err}");
    assert_eq!(runs(&scratch), 1, "only the first run: {err}");

    // With --include-uncommitted its untracked files are in the snapshot: worktrees again.
    let out = t
        .run("Add made.txt")
        .process()
        .in_dir(&scratch)
        .args(&["--include-uncommitted"])
        .output();
    assert_eq!(summary(&out)["status"], "done", "{}", stderr(&out));
    assert!(
        !stderr(&out).contains("workers share it"),
        "{}",
        stderr(&out)
    );
}
