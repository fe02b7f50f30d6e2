//! An attempt left running on an SSH host that was lost (its worker crashed as `host
//! lost` and was retried on local) is ended there, by its nonce, the first time the host
//! answers again: by the driver that lost it, and by one that reattaches later.

use std::path::Path;
use std::time::Duration;

use crate::support::on_host::{headless, wait_running_remotely, HostRepo};
use crate::support::*;

/// Live processes whose environment holds `CREWMUX_ATTEMPT_NONCE=<nonce>`. The test's
/// host is this machine, so its `/proc` is read here (its sshd may be down).
fn attempt_processes(nonce: &str) -> Vec<u32> {
    let needle = format!("CREWMUX_ATTEMPT_NONCE={nonce}");
    let mut pids = vec![];
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(env) = std::fs::read(e.path().join("environ")) else {
            continue;
        };
        let zombie = std::fs::read_to_string(e.path().join("stat"))
            .ok()
            .and_then(|s| s.rsplit_once(") ").map(|(_, r)| r.starts_with('Z')))
            .unwrap_or(true);
        if !zombie && env.split(|b| *b == 0).any(|v| v == needle.as_bytes()) {
            pids.push(pid);
        }
    }
    pids
}

/// The state's first dispatch record (the attempt on the host).
fn first_dispatch(project: &Path) -> serde_json::Value {
    try_state(project)
        .map(|s| s["dispatches"][0].clone())
        .unwrap_or_default()
}

/// Start a run whose worker sleeps on the host and, once retried here, waits for
/// `release`; lose the host (sshd stopped, connections killed) and wait for the retry.
/// Returns the running crewmux and the nonce of the attempt left on the host.
fn lose_the_host(t: &mut HostRepo, release: &Path) -> (std::process::Child, String) {
    lose_the_host_running(t, release, "echo on the host; exec sleep 300")
}

/// [`lose_the_host`] with a worker that runs `on_host` (`sh` words) on the host.
fn lose_the_host_running(
    t: &mut HostRepo,
    release: &Path,
    on_host: &str,
) -> (std::process::Child, String) {
    lose_the_host_by(t, release, on_host, |t| {
        t.host.stop_sshd();
        t.host.kill_ssh_clients();
    })
}

/// [`lose_the_host_running`], the host lost by `lose` (sshd stopped, or killed).
fn lose_the_host_by(
    t: &mut HostRepo,
    release: &Path,
    on_host: &str,
    lose: impl FnOnce(&mut HostRepo),
) -> (std::process::Child, String) {
    let workdir = t.host.workdir.path().display().to_string();
    let team = t.team(&format!(
        "[[worker]]\nid = \"far\"\nrole = \"backend-engineer\"\nprovider = \"command\"\nhost = \"box\"\nmax_attempts = 2\n\
         command = [\"sh\", \"-c\", \"case $PWD in {workdir}*) {on_host};; esac; while [ ! -e {release} ]; do sleep 0.1; done; echo ran here; exit 0\"]\n",
        release = release.display()
    ));
    let child = t.spawn(&headless(&team, "a host is lost"));
    let project = t.path();
    wait_running_remotely(project, "far");
    let nonce = first_dispatch(project)["nonce"]
        .as_str()
        .expect("the attempt's nonce")
        .to_string();
    lose(t);
    let project = t.path();
    let retried = wait_for(
        || {
            try_state(project).is_some_and(|s| {
                let w = state_worker(&s, "far");
                w["attempt"] == 2 && w["status"] == "running"
            })
        },
        Duration::from_secs(90),
    );
    assert!(
        retried,
        "far was never retried here: {:?}",
        try_state(project)
    );
    assert_eq!(first_dispatch(project)["left_on_host"], true);
    assert!(
        !attempt_processes(&nonce).is_empty(),
        "the attempt on the lost host should still run there"
    );
    (child, nonce)
}

/// Wait until nothing of the attempt `nonce` runs any more and the run recorded it
/// (60 s at most).
fn wait_ended(project: &Path, nonce: &str) {
    let ended = wait_for(
        || attempt_processes(nonce).is_empty() && first_dispatch(project)["left_on_host"].is_null(),
        Duration::from_secs(60),
    );
    assert!(
        ended,
        "the attempt left on the host still runs: {:?}\n{}",
        attempt_processes(nonce),
        std::fs::read_to_string(project.join(".crewmux/crewmux.log")).unwrap_or_default()
    );
}

/// The run finished with far's retry here; the record no longer says it was left.
fn check_finished(project: &Path, out: &std::process::Output) {
    assert_events_once(project);
    let s = summary(out);
    let w = worker(&s, "far");
    assert_eq!(
        (w["status"].as_str(), w["attempts"].as_i64()),
        (Some("completed"), Some(2)),
        "{s}\n{}",
        stderr(out)
    );
    assert!(
        first_dispatch(project)["left_on_host"].is_null(),
        "{}\n{}",
        stderr(out),
        std::fs::read_to_string(project.join(".crewmux/crewmux.log")).unwrap_or_default()
    );
    assert!(
        stderr(out).contains("far#1: its processes left on host box were ended"),
        "{}",
        stderr(out)
    );
}

#[test]
fn an_attempt_left_on_a_lost_host_is_ended_when_the_host_answers_again() {
    let Some(mut t) = HostRepo::start("hosts-left") else {
        return;
    };
    let flags = tempfile::tempdir().unwrap();
    let release = flags.path().join("release");
    let (child, nonce) = lose_the_host(&mut t, &release);
    t.host.start_sshd();
    wait_ended(t.path(), &nonce);
    std::fs::write(&release, "").unwrap();
    let out = wait_limited(child, &["run"]);
    check_finished(t.path(), &out);
}

#[test]
fn an_attempt_left_on_a_lost_host_is_ended_by_a_driver_that_reattaches() {
    let Some(mut t) = HostRepo::start("hosts-left-reattach") else {
        return;
    };
    let flags = tempfile::tempdir().unwrap();
    let release = flags.path().join("release");
    let (mut child, nonce) = lose_the_host(&mut t, &release);
    // Nobody drives the run while the host comes back.
    child.kill().unwrap();
    child.wait().unwrap();
    t.host.start_sshd();
    assert!(
        !attempt_processes(&nonce).is_empty(),
        "nothing ends it while nobody drives the run"
    );
    let attach = t
        .command(&["attach", "--headless", &run_id(t.path())])
        .spawn()
        .expect("crewmux attach runs");
    wait_ended(t.path(), &nonce);
    std::fs::write(&release, "").unwrap();
    let out = wait_limited(attach, &["attach"]);
    check_finished(t.path(), &out);
}

/// far#1's folder on the host and here, once it ended on the host (60 s at most).
fn far_ended_there(t: &HostRepo) -> (std::path::PathBuf, std::path::PathBuf) {
    let run = only_run_dir(t.path());
    let id = run.file_name().unwrap().to_string_lossy().into_owned();
    let there = t
        .host
        .workdir
        .path()
        .join("runs")
        .join(&id)
        .join("workers/far/attempt-1");
    assert!(
        wait_for(|| there.join("exit.json").exists(), Duration::from_secs(60)),
        "far#1 never ended on the host"
    );
    (there, run.join("workers/far/attempt-1"))
}

#[test]
fn the_output_of_an_attempt_that_ended_on_a_lost_host_comes_back_when_it_answers_again() {
    let Some(mut t) = HostRepo::start("hosts-left-output") else {
        return;
    };
    let flags = tempfile::tempdir().unwrap();
    let release = flags.path().join("release");
    // About 12 s on the host: it goes on there after the host is lost (3 s) and the
    // retry started here, then ends there by itself.
    let ticks = "echo on the host; i=0; while [ $i -lt 120 ]; do i=$((i+1)); echo tick $i; sleep 0.1; done; exit 0";
    let (child, nonce) = lose_the_host_running(&mut t, &release, ticks);
    let (there, here) = far_ended_there(&t);
    let host_log = std::fs::read_to_string(there.join("output.log")).unwrap();
    assert!(host_log.contains("tick 120"), "{host_log}");
    let before = std::fs::read_to_string(here.join("output.log")).unwrap_or_default();
    assert!(
        !before.contains("tick 120"),
        "the host was lost before far#1 ended there: {before}"
    );
    t.host.start_sshd();
    wait_ended(t.path(), &nonce);
    // Its files came back whole: all it wrote there, and how it ended.
    let after = std::fs::read_to_string(here.join("output.log")).unwrap_or_default();
    assert_eq!(after, host_log);
    let exit: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(here.join("exit.json")).unwrap()).unwrap();
    assert_eq!(
        (exit["code"].as_i64(), exit["nonce"].as_str()),
        (Some(0), Some(nonce.as_str()))
    );
    // It keeps the status it was given when its host was lost.
    let d = first_dispatch(t.path());
    assert_eq!(d["status"], "crashed", "{d}");
    std::fs::write(&release, "").unwrap();
    let out = wait_limited(child, &["run"]);
    check_finished(t.path(), &out);
    let lines = host_log.lines().count();
    let said =
        format!("far#1: its output on box came back ({lines} lines; it ended there with exit 0)");
    assert!(stderr(&out).contains(&said), "{said}\n{}", stderr(&out));
}

/// Every sshd process of the test's host SIGKILLed (the listener and each connection's):
/// the host's sessions go at once, as when its sshd is killed with `kill -9`.
fn kill_sshd(t: &mut HostRepo) {
    let pids = t.host.freeze();
    crate::support::procs::signal(&pids, crate::support::procs::Signal::SIGKILL);
    t.host.stop_sshd();
}

#[test]
fn an_attempt_left_when_sshd_was_killed_brings_its_output_back_once_sshd_is_back() {
    let Some(mut t) = HostRepo::start("hosts-left-sshd-killed") else {
        return;
    };
    let flags = tempfile::tempdir().unwrap();
    let release = flags.path().join("release");
    let ticks = "echo on the host; i=0; while [ $i -lt 100 ]; do i=$((i+1)); echo tick $i; sleep 0.1; done; exit 0";
    let (child, nonce) = lose_the_host_by(&mut t, &release, ticks, kill_sshd);
    let (there, here) = far_ended_there(&t);
    t.host.start_sshd();
    wait_ended(t.path(), &nonce);
    let host_log = std::fs::read_to_string(there.join("output.log")).unwrap();
    let back = std::fs::read_to_string(here.join("output.log")).unwrap();
    assert_eq!(back, host_log);
    std::fs::write(&release, "").unwrap();
    let out = wait_limited(child, &["run"]);
    check_finished(t.path(), &out);
    assert!(
        stderr(&out).contains("far#1: its output on box came back ("),
        "{}",
        stderr(&out)
    );
}
