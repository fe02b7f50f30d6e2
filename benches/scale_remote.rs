//! The remote case of the scale benchmark: `remote_workers` workers on an SSH host (the
//! test sshd of `support::sshd`, a real tmux reached through it) against the same workers
//! on this machine, through the real binary (`run --headless`).
//!
//! Each worker holds until the benchmark releases it (a file appears), so the steady-state
//! window has no exit in it and the wall time leaves the hold out: command → all running,
//! plus release → run ended. Every `ssh` process crewmux starts is counted by an `ssh` of
//! the benchmark's own first on its `PATH` (one line to a file, then the real ssh), so the
//! count is exact for any build, this one or an earlier one.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::scale_run::running;
use super::{Build, Config, Figure, Mode};
use crate::support::sshd::{sshd_ready, SshHost};

/// The host's name in the team and in `hosts.toml`.
const HOST: &str = "box";

/// One run of the remote case.
struct Measured {
    /// Command → every worker running, seconds.
    start_s: f64,
    /// Release → the run ended, seconds.
    finish_s: f64,
    /// `ssh` processes started per minute while every worker held.
    ssh_per_min: f64,
    /// Every worker was seen running and the run ended by itself.
    ok: bool,
}

/// Run the remote case when the machine has sshd (otherwise it says so and adds nothing).
pub fn remote_scenario(cfg: &Config, figs: &mut Vec<Figure>) {
    if !sshd_ready("scale benchmark, remote case") {
        return;
    }
    let n = cfg.remote_workers;
    let host = SshHost::start();
    let build = Build {
        exe: cfg.exe.clone(),
        tag: "",
    };
    let local = measure(cfg, &build, &host, false);
    let remote = measure(cfg, &build, &host, true);
    let mut f = Figure::new(
        &format!("{n} workers on an SSH host, command → all running (baseline: here)"),
        "-",
        remote.start_s,
        " s",
        remote.ok && local.ok,
    );
    f.baseline = Some(local.start_s);
    figs.push(f);
    let mut f = Figure::new(
        &format!("{n} workers on an SSH host, wall time without the hold (baseline: here)"),
        "-",
        remote.start_s + remote.finish_s,
        " s",
        remote.ok && local.ok,
    );
    f.baseline = Some(local.start_s + local.finish_s);
    figs.push(f);
    let mut f = Figure::new(
        &format!("ssh processes started per minute, {n} workers on an SSH host, steady state"),
        "0 /min",
        remote.ssh_per_min,
        " /min",
        remote.ssh_per_min == 0.0,
    );
    f.baseline = Some(local.ssh_per_min);
    figs.push(f);
}

/// One run of `remote_workers` holding workers, on the SSH host when `remote`.
fn measure(cfg: &Config, build: &Build, host: &SshHost, remote: bool) -> Measured {
    let n = cfg.remote_workers;
    let tmp = tempfile::tempdir().unwrap();
    let project = tmp.path().join("project");
    git_project(&project);
    let release = tmp.path().join("release");
    let counted = tmp.path().join("ssh-calls");
    let shim = ssh_shim(tmp.path(), &counted);
    std::fs::create_dir_all(project.join(".crewmux")).unwrap();
    std::fs::write(project.join(".crewmux/hosts.toml"), hosts_toml(host, n)).unwrap();
    let team = project.join(".crewmux/bench-team.toml");
    std::fs::write(&team, team_text(n, &release, remote)).unwrap();
    let socket = format!(
        "crewmux-bench-{}-remote-{}",
        std::process::id(),
        if remote { "there" } else { "here" }
    );
    let path = format!(
        "{}:{}",
        shim.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let started = Instant::now();
    let mut child = build
        .quiet_run(
            &project,
            &socket,
            Mode::Control,
            &team,
            n,
            "hold until released",
        )
        .env("PATH", path)
        .env("XDG_RUNTIME_DIR", host.runtime_dir())
        .spawn()
        .unwrap();
    let limit = Duration::from_secs(120);
    while running(&project) < n && started.elapsed() < limit {
        std::thread::sleep(Duration::from_millis(20));
    }
    let start_s = started.elapsed().as_secs_f64();
    let all = running(&project) == n;
    // Steady state: every worker holding, the connection long open.
    std::thread::sleep(Duration::from_secs(1));
    let (calls0, t0) = (lines(&counted), Instant::now());
    std::thread::sleep(Duration::from_secs_f64(cfg.window_s));
    let ssh_per_min = (lines(&counted) - calls0) as f64 / t0.elapsed().as_secs_f64() * 60.0;
    std::fs::write(&release, "").unwrap();
    let released = Instant::now();
    let ended = end_within(&mut child, limit);
    let finish_s = released.elapsed().as_secs_f64();
    // This machine's server; the host's ends with `host` (it ends the clients first).
    let _ = crewmux::tmux::TmuxClient::new(&socket).kill_server();
    Measured {
        start_s,
        finish_s,
        ssh_per_min,
        ok: all && ended,
    }
}

/// Wait up to `limit` for `child` to end; past it, it is killed (false).
fn end_within(child: &mut std::process::Child, limit: Duration) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if child.try_wait().unwrap().is_some() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // The figures say it did not end; the run is ended however it can be.
    let _ = child.kill();
    let _ = child.wait();
    false
}

/// A git repository with one commit at `dir` (a remote worker's code travels by git).
fn git_project(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("README"), "benchmark project\n").unwrap();
    for args in [
        vec!["init", "-q"],
        vec!["add", "README"],
        vec![
            "-c",
            "user.name=bench",
            "-c",
            "user.email=bench@localhost",
            "commit",
            "-q",
            "-m",
            "benchmark project",
        ],
    ] {
        let st = Command::new("git")
            .args(&args)
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(st.success(), "git {args:?}");
    }
}

/// An `ssh` that writes a line to `counted` and runs the real one; returns its directory.
fn ssh_shim(tmp: &Path, counted: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let real = which::which("ssh").expect("ssh is on PATH (sshd_ready said so)");
    let dir = tmp.join("shim");
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("ssh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho >> '{}'\nexec '{}' \"$@\"\n",
            counted.display(),
            real.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

/// Lines in `path` (0 when it does not exist).
fn lines(path: &Path) -> usize {
    std::fs::read_to_string(path).map_or(0, |s| s.lines().count())
}

/// The host as `hosts.toml` names it, taking all `n` workers at once and never lost
/// during the benchmark.
fn hosts_toml(host: &SshHost, n: usize) -> String {
    format!(
        "[hosts.{HOST}]\nssh = \"{}\"\nssh_args = [\"-F\", \"{}\"]\nworkdir = \"{}\"\ntmux_socket = \"{}\"\nmax_workers = {n}\nlost_after_s = 120\n",
        crate::support::sshd::SSH_DEST,
        host.ssh_config().display(),
        host.workdir.path().display(),
        host.tmux_socket
    )
}

/// `n` command workers that hold until `release` exists, on the host when `remote`.
fn team_text(n: usize, release: &Path, remote: bool) -> String {
    let hold = format!(
        "while [ ! -e '{}' ]; do sleep 0.1; done; echo released",
        release.display()
    );
    let mut t = format!("name = \"remote\"\nparallel = {n}\nmax_fix_rounds = 0\n");
    for i in 0..n {
        t.push_str(&format!(
            "\n[[worker]]\nid = \"r{i}\"\nrole = \"backend-engineer\"\nprovider = \"command\"\nmax_attempts = 1\n{}command = [\"sh\", \"-c\", {}]\n",
            if remote { format!("host = \"{HOST}\"\n") } else { String::new() },
            super::scale_run::toml_string(&hold)
        ));
    }
    t
}
