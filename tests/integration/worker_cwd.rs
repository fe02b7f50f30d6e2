//! A worker runs where it was told or not at all: a `cwd` that can be checked when the team
//! is loaded is refused then (one line with file, line and column, exit 2); one that is
//! gone by the time the worker launches fails the attempt before the agent starts.

use std::path::Path;

use crate::support::{backends, run_crewmux, summary, team_file, worker, Backend, TeamProject};

/// A one-worker team running `true` in `cwd` (shared workspace: the project directory).
fn one_worker(cwd: &str) -> String {
    format!(
        "max_fix_rounds = 0\n\n[workspace]\nmode = \"shared\"\n\n[[worker]]\nid = \"w\"\nrole = \"backend-engineer\"\nprovider = \"command\"\nmax_attempts = 1\ncwd = \"{cwd}\"\ncommand = [\"true\"]\n"
    )
}

/// `crewmux run` of `team` in `project`: exit code and stderr.
fn run_refused(project: &Path, team: &Path) -> (Option<i32>, String) {
    let team = team.to_str().unwrap();
    let args = ["run", "--team", team, "--no-clarify", "--headless"];
    let out = run_crewmux(
        project,
        "unused",
        &[&args[..], &["--backend", "process", "go"]].concat(),
    );
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_missing_cwd_is_refused_at_load_with_its_place() {
    let tmp = TeamProject::new(&one_worker("does/not/exist"));
    let (code, err) = run_refused(tmp.path(), tmp.team());
    assert_eq!(code, Some(2), "{err}");
    let line = err.trim();
    assert!(!line.contains('\n'), "one line: {line}");
    // Line 12 is `cwd = "does/not/exist"`; the value starts at column 7.
    let want = format!(
        "{}:11:7: worker `w`: `cwd` `does/not/exist` does not exist",
        tmp.team().display()
    );
    assert!(line.contains(&want), "{want}\nin: {line}");
    assert!(line.contains("create it"), "says the fix: {line}");
    assert!(!tmp.path().join(".crewmux").join("runs").exists());
}

#[test]
fn a_cwd_that_leaves_the_project_is_refused_at_load() {
    let tmp = crate::support::project();
    let project = tmp.path().join("project");
    std::fs::create_dir_all(project.join("sub")).unwrap();
    std::fs::create_dir_all(tmp.path().join("outside")).unwrap();
    std::os::unix::fs::symlink(tmp.path().join("outside"), project.join("link")).unwrap();
    for (cwd, col) in [("../outside", 7), ("sub/../../outside", 7), ("link", 7)] {
        let team = team_file(&project, "team.toml", &one_worker(cwd));
        let (code, err) = run_refused(&project, &team);
        assert_eq!(code, Some(2), "{cwd}: {err}");
        let want = format!(
            "{}:11:{col}: worker `w`: `cwd` `{cwd}` leaves the project",
            team.display()
        );
        assert!(err.trim().contains(&want), "{want}\nin: {err}");
    }
}

/// On both backends (tmux when it is here): the directory `second` was told to run in is
/// removed by `first` after the team was loaded; it may have two attempts, and is not
/// retried.
#[test]
fn a_cwd_gone_at_launch_fails_the_worker_before_it_starts() {
    for backend in backends("cwd") {
        gone_at_launch(&backend);
    }
}

fn gone_at_launch(backend: &Backend) {
    let body = "max_fix_rounds = 0\n\n[workspace]\nmode = \"shared\"\n\n\
        [[worker]]\nid = \"first\"\nrole = \"backend-engineer\"\nprovider = \"command\"\nmax_attempts = 1\ncommand = [\"rm\", \"-r\", \"sub\"]\n\n\
        [[worker]]\nid = \"second\"\nrole = \"backend-engineer\"\nprovider = \"command\"\nmax_attempts = 2\nafter = [\"first\"]\ncwd = \"sub\"\ncommand = [\"sh\", \"-c\", \"touch ran\"]\n";
    let tmp = TeamProject::new(body);
    std::fs::create_dir_all(tmp.path().join("sub")).unwrap();
    let out = tmp.run("go").on(backend).output();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{backend}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = summary(&out);
    assert_eq!(worker(&s, "first")["status"], "completed", "{backend}: {s}");
    let second = worker(&s, "second");
    assert_eq!(second["status"], "failed", "{backend}: {s}");
    assert_eq!(second["exit_code"], 126, "{backend}: {s}");
    // Attempts remained, but the directory is the same for each: no retry.
    assert_eq!(second["attempts"], 1, "{backend}: {s}");
    let want = format!(
        "cannot enter working directory {}",
        tmp.path().join("sub").display()
    );
    assert_eq!(
        second["reason"].as_str(),
        Some(want.as_str()),
        "{backend}: {s}"
    );
    // The agent never started: not in `sub`, not wherever the shell fell back to.
    assert!(!tmp.path().join("ran").exists(), "{backend}");
    let attempt = crate::support::only_run_dir(tmp.path()).join("workers/second/attempt-1");
    assert!(!attempt.join("ran").exists(), "{backend}");
}

fn git(dir: &Path, args: &[&str]) {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

#[test]
fn a_worktree_workers_cwd_is_checked_in_the_base_commit_at_load() {
    let tmp = crate::support::project();
    let project = tmp.path().join("repo");
    std::fs::create_dir_all(project.join("app")).unwrap();
    std::fs::write(project.join("app/main.txt"), "x\n").unwrap();
    git(&project, &["init", "-q", "-b", "main"]);
    git(&project, &["config", "user.email", "t@example.com"]);
    git(&project, &["config", "user.name", "t"]);
    git(&project, &["add", "-A"]);
    git(&project, &["commit", "-q", "-m", "base"]);
    // In the working tree but not in HEAD: the worker's worktree would not have it.
    std::fs::create_dir_all(project.join("later")).unwrap();
    let team = |cwd: &str| {
        let body = one_worker(cwd).replace("mode = \"shared\"", "mode = \"worktree\"");
        team_file(tmp.path(), &format!("team-{cwd}.toml"), &body)
    };
    let t = team("later");
    let (code, err) = run_refused(&project, &t);
    assert_eq!(code, Some(2), "{err}");
    let line = err.trim();
    assert!(!line.contains('\n'), "one line: {line}");
    let want = format!(
        "{}:11:7: worker `w`: `cwd` `later` does not exist in the base commit HEAD (",
        t.display()
    );
    assert!(line.contains(&want), "{want}\nin: {line}");
    assert!(line.contains("commit it"), "says the fix: {line}");
    assert!(
        !project.join(".crewmux").join("runs").exists(),
        "nothing was created"
    );

    // A folder the commit has passes the check, and the worker runs there.
    let t = team("app");
    let out = run_crewmux(
        &project,
        "unused",
        &[
            "run",
            "--team",
            t.to_str().unwrap(),
            "--no-clarify",
            "--headless",
            "--backend",
            "process",
            "go",
        ],
    );
    let s = summary(&out);
    assert_eq!(worker(&s, "w")["status"], "completed", "{s}");
}
