//! Code travels by git for workers on an SSH host (the test's own sshd, `support::sshd`):
//! the run's branches are pushed to a repository under the host's workdir, each remote
//! worker works in a worktree there, and its branch comes back so integration, checks and
//! `merge` treat it as a local worker's.

use std::path::Path;
use std::process::Output;

use crate::support::on_host::{headless, run_with_host};
use crate::support::sshd::{sshd_ready, SshHost};
use crate::support::*;

/// A `command` worker (see [`command_worker`]) on host `box`.
fn remote_worker(id: &str, script: &str, result: &str) -> String {
    command_worker(id, script, result).replace(
        "provider = \"command\"\n",
        "provider = \"command\"\nhost = \"box\"\n",
    )
}

/// `crewmux run --team <team> --no-clarify --headless <extra…> -- <problem>` with `host`.
fn run_team(
    t: &TeamProject,
    server: &TmuxServer,
    host: &SshHost,
    extra: &[&str],
) -> std::process::Output {
    let mut args = vec!["run", "--team", t.team_arg(), "--no-clarify", "--headless"];
    args.extend_from_slice(extra);
    args.extend(["--", "change the files"]);
    run_with_host(t.path(), &server.socket, host, &args)
}

/// The files of `rev` in the repository at `dir`.
fn files_of(dir: &Path, rev: &str) -> Vec<String> {
    git(dir, &["ls-tree", "-r", "--name-only", rev])
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn a_remote_workers_commit_merges_into_the_integration_branch_and_a_check_passes() {
    if !sshd_ready("hosts_git_integration") {
        return;
    }
    let host = SshHost::start();
    let server = TmuxServer::new("hosts-git");
    // The worker works in `sub` of its worktree on the host: it sees the base (with the
    // user's uncommitted line), the `copy` seed and what `setup` made there.
    let t = TeamProject::in_repo(
        &[("a.txt", "a\n"), ("sub/keep.txt", "k\n")],
        &format!(
            "name = \"far\"\n[workspace]\ncopy = [\".env.local\"]\nsetup = [\"sh\", \"-c\", \"touch setup-ran.txt\"]\n\n{}cwd = \"sub\"\n\n\
             [[check]]\nid = \"both\"\ncommand = [\"sh\", \"-c\", \"grep -qx R a.txt && grep -qx seed remote.txt && test -f sub/setup-ran.txt\"]\n",
            remote_worker(
                "far",
                "test -f keep.txt && test -f setup-ran.txt && grep -qx uncommitted ../a.txt && cat ../.env.local > ../remote.txt && echo R >> ../a.txt && echo \"in $PWD\"",
                "Changed a.txt and added remote.txt."
            )
        ),
    );
    let d = t.path();
    host.write_hosts_file(d, "box");
    // A seed the user keeps out of git here; the host's repository does not know that.
    std::fs::write(d.join(".env.local"), "seed\n").unwrap();
    std::fs::write(d.join(".git/info/exclude"), ".env.local\n").unwrap();
    std::fs::write(d.join("a.txt"), "a\nuncommitted\n").unwrap();
    let out = run_team(&t, &server, &host, &["--include-uncommitted"]);
    let s = summary(&out);
    let log = || std::fs::read_to_string(d.join(".crewmux/crewmux.log")).unwrap_or_default();
    assert_eq!(
        (
            s["status"].as_str(),
            worker(&s, "far")["exit_code"].as_i64()
        ),
        (Some("done"), Some(0)),
        "{s}\nstderr: {}\nlog: {}",
        stderr(&out),
        log()
    );
    // Its one worker is remote: this machine's tmux, never started, is not called gone.
    assert!(
        !log().contains("is gone") && !log().contains("answers again"),
        "{}",
        log()
    );
    let id = run_id(d);
    // It ran in its worktree on the host, under the host's workdir.
    let there = host.workdir.path().join("worktrees").join(&id).join("far");
    let output =
        std::fs::read_to_string(only_run_dir(d).join("workers/far/attempt-1/output.log")).unwrap();
    assert!(
        output.contains(&format!("in {}", there.join("sub").display())),
        "{output}"
    );
    assert!(
        there.join("remote.txt").exists(),
        "the work stays on the host too"
    );
    // Its branch came back: committed there with the run's trailers, the seed left out.
    let branch = format!("crewmux/{id}/far");
    let body = git(d, &["log", "-1", "--format=%B", &branch]);
    assert!(
        body.contains(&format!("Crewmux-Run: {id}")) && body.contains("Crewmux-Worker: far"),
        "{body}"
    );
    let files = files_of(d, &branch);
    assert!(files.contains(&"remote.txt".to_string()), "{files:?}");
    assert!(!files.contains(&".env.local".to_string()), "{files:?}");
    // … merged into the integration branch, where the check passed.
    let integ = format!("crewmux/{id}/integration");
    assert!(git_ok(d, &["merge-base", "--is-ancestor", &branch, &integ]));
    let state = try_state(d).unwrap();
    let check = state_worker(&state, "check-both");
    assert_eq!(
        (check["status"].as_str(), check["exit_code"].as_i64()),
        (Some("completed"), Some(0)),
        "{check}\n{}",
        log()
    );
    assert_eq!(
        state["workspace"]["workers"]["far"]["host"], "box",
        "{}",
        state["workspace"]
    );
}

#[test]
fn a_local_and_a_remote_worker_both_change_files_and_merge_brings_both_home() {
    if !sshd_ready("hosts_git_merge") {
        return;
    }
    let host = SshHost::start();
    let server = TmuxServer::new("hosts-git-merge");
    let t = TeamProject::in_repo(
        &[("a.txt", "a\n"), ("b.txt", "b\n")],
        &format!(
            "name = \"pair\"\nparallel = 2\n\n{}{}",
            command_worker("near", "echo A >> a.txt", "Changed a.txt."),
            // Its upstream's work, merged into its branch here, reaches its worktree there.
            remote_worker(
                "far",
                "grep -qx A a.txt && echo B >> b.txt && echo new > far.txt",
                "Changed b.txt."
            ) + "after = [\"near\"]\n"
        ),
    );
    let d = t.path();
    host.write_hosts_file(d, "box");
    let out = run_team(&t, &server, &host, &[]);
    let s = summary(&out);
    assert_eq!(s["status"], "done", "{s}\n{}", stderr(&out));
    let id = run_id(d);

    let merged = run_with_host(d, &server.socket, &host, &["merge", &id]);
    assert!(merged.status.success(), "{}", stderr(&merged));
    assert_eq!(std::fs::read_to_string(d.join("a.txt")).unwrap(), "a\nA\n");
    assert_eq!(std::fs::read_to_string(d.join("b.txt")).unwrap(), "b\nB\n");
    assert_eq!(std::fs::read_to_string(d.join("far.txt")).unwrap(), "new\n");

    // `clean --purge` removes the worktree and branch on the host with the local ones, and
    // the run's folders there with the local run folder.
    let there = host.workdir.path().join("worktrees").join(&id).join("far");
    let runs_there = host.workdir.path().join("runs").join(&id);
    assert!(there.exists() && runs_there.exists());
    let clean = run_with_host(
        d,
        &server.socket,
        &host,
        &["clean", "--purge", "--run", &id],
    );
    assert!(clean.status.success(), "{}", stderr(&clean));
    assert!(
        stderr(&clean).contains(&format!("and branch crewmux/{id}/far on host box")),
        "{}",
        stderr(&clean)
    );
    assert!(!there.exists(), "{}", stderr(&clean));
    assert!(
        !runs_there.exists() && !there.parent().unwrap().exists(),
        "{}",
        stderr(&clean)
    );
    let repo = std::fs::read_dir(host.workdir.path().join("repos"))
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    assert_eq!(
        git(&repo, &["for-each-ref", "--format=%(refname)"]),
        "",
        "no branch or pushed ref of the run stays on the host"
    );
    assert_eq!(git(d, &["branch", "--list", "crewmux/*"]), "");
}

#[test]
fn a_project_without_git_or_a_shared_remote_worker_is_refused_and_nothing_is_made() {
    // Without tmux the run is refused earlier (remote workers run in tmux there).
    if !tmux_ready("hosts_git_refusal") {
        return;
    }
    let hosts = "[hosts.box]\nssh = \"nowhere.invalid\"\nworkdir = \"/srv/crew\"\n";
    let team = remote_worker("far", "true", "Nothing.");
    let check = |t: &TeamProject, wanted: &str| {
        std::fs::create_dir_all(t.path().join(".crewmux")).unwrap();
        std::fs::write(t.path().join(".crewmux/hosts.toml"), hosts).unwrap();
        let out = t.run("x").output();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.trim().starts_with(wanted), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        // `dispatch` shows only plans `run` accepts: the same check, the same line.
        let out = run_crewmux(
            t.path(),
            "unused",
            &["dispatch", "--team", t.team_arg(), "x"],
        );
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert_eq!(stderr(&out).trim(), err.trim());
        let runs = t.path().join(".crewmux/runs");
        assert!(
            !runs.exists() || std::fs::read_dir(&runs).unwrap().count() == 0,
            "no run was made"
        );
        assert!(!t.path().join(".crewmux/worktrees").exists());
    };
    let plain = TeamProject::new(&team);
    check(
        &plain,
        &format!(
            "crewmux: worker `far` runs on host `box`, but {} is not a git repository",
            plain.path().display()
        ),
    );
    let shared = TeamProject::in_repo(
        &[("a.txt", "a\n")],
        &format!("{team}workspace = \"shared\"\n"),
    );
    check(
        &shared,
        "crewmux: worker `far` runs on host `box` but in the shared project directory",
    );
    assert_eq!(git(shared.path(), &["branch", "--list", "crewmux/*"]), "");
}

/// A run of one remote worker that writes `late.txt` after 3 s, with a host that counts
/// as lost only after 300 s, started in the background and seen running on `box`.
fn start_late_run(host: &SshHost, server: &TmuxServer) -> (TeamProject, std::process::Child) {
    let t = TeamProject::in_repo(
        &[("a.txt", "a\n")],
        &remote_worker("far", "sleep 3; echo late > late.txt", "Added late.txt."),
    );
    let d = t.path();
    std::fs::create_dir_all(d.join(".crewmux")).unwrap();
    std::fs::write(
        d.join(".crewmux/hosts.toml"),
        host.hosts_toml("box")
            .replace("lost_after_s = 3", "lost_after_s = 300"),
    )
    .unwrap();
    let child = crewmux()
        .current_dir(d)
        .env("CREWMUX_TMUX_SOCKET", &server.socket)
        .env("XDG_RUNTIME_DIR", host.runtime_dir())
        .env("CREWMUX_LOG", "debug")
        .args(headless(t.team_arg(), "late"))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("crewmux runs");
    let running = wait_for(
        || {
            try_state(d).is_some_and(|s| {
                let w = state_worker(&s, "far");
                w["status"] == "running"
                    && w["pane_id"].as_str().is_some_and(|p| p.starts_with("box:"))
            })
        },
        std::time::Duration::from_secs(60),
    );
    assert!(running, "far never ran on box: {:?}", try_state(d));
    (t, child)
}

/// Wait until the attempt of `far` has ended on the host, and check its work is not
/// back here yet; returns the `rev:path` of `late.txt` on its branch.
fn wait_ended_there(host: &SshHost, d: &Path) -> String {
    let id = run_id(d);
    let exit = host
        .workdir
        .path()
        .join("runs")
        .join(&id)
        .join("workers/far/attempt-1/exit.json");
    assert!(
        wait_for(|| exit.exists(), std::time::Duration::from_secs(60)),
        "the attempt never ended on the host"
    );
    let late = format!("crewmux/{id}/far:late.txt");
    assert!(!git_ok(d, &["cat-file", "-e", &late]), "not back yet");
    late
}

/// The run ended with `far` completed, and its late commit (`late`) is in its branch here.
fn far_came_back(d: &Path, out: &Output, late: &str) {
    let s = summary(out);
    assert_eq!(
        worker(&s, "far")["status"],
        "completed",
        "{s}\n{}",
        stderr(out)
    );
    assert_eq!(git(d, &["show", late]), "late");
}

#[test]
fn an_attempt_that_ends_while_the_host_is_unreachable_comes_back_when_it_answers() {
    if !sshd_ready("hosts_git_outage") {
        return;
    }
    let mut host = SshHost::start();
    let server = TmuxServer::new("hosts-git-outage");
    let (t, child) = start_late_run(&host, &server);
    let d = t.path();
    host.stop_sshd();
    host.kill_ssh_clients();
    let late = wait_ended_there(&host, d);
    host.start_sshd();
    let out = wait_limited(child, &["run"]);
    assert_events_once(d);
    far_came_back(d, &out, &late);
}

#[test]
fn an_attempt_that_ends_while_nobody_drives_the_run_comes_back_on_reattach() {
    if !sshd_ready("hosts_git_reattach") {
        return;
    }
    let host = SshHost::start();
    let server = TmuxServer::new("hosts-git-reattach");
    let (t, mut child) = start_late_run(&host, &server);
    let d = t.path();
    child.kill().unwrap();
    child.wait().unwrap();
    let late = wait_ended_there(&host, d);
    let out = run_with_host(
        d,
        &server.socket,
        &host,
        &["attach", "--headless", &run_id(d)],
    );
    far_came_back(d, &out, &late);
}

#[test]
fn a_host_that_cannot_take_the_code_fails_its_worker_with_its_reason_and_the_rest_goes_on() {
    if !sshd_ready("hosts_git_refused_there") {
        return;
    }
    let host = SshHost::start();
    let server = TmuxServer::new("hosts-git-refused");
    let t = TeamProject::in_repo(
        &[("a.txt", "a\n")],
        &format!(
            "name = \"pair\"\nparallel = 2\n\n{}{}",
            command_worker("near", "echo A >> a.txt", "Changed a.txt."),
            remote_worker("far", "echo B > b.txt", "Added b.txt.")
        ),
    );
    let d = t.path();
    host.write_hosts_file(d, "box");
    // A file where the project's repository on the host would go.
    let name = d.file_name().unwrap().to_string_lossy().into_owned();
    let repos = host.workdir.path().join("repos");
    std::fs::create_dir_all(&repos).unwrap();
    std::fs::write(repos.join(format!("{name}.git")), "not a repository\n").unwrap();
    let out = run_team(&t, &server, &host, &[]);
    let s = summary(&out);
    assert_eq!(worker(&s, "near")["status"], "completed", "{s}");
    let far = worker(&s, "far");
    assert_eq!(far["status"], "failed", "{s}");
    let reason = far["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("cannot make its worktree on host box") && reason.contains(&name),
        "{reason}"
    );
}
