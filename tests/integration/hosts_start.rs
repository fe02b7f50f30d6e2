//! Hosts that do not answer at the edges of a run. At its start: its workers wait for it
//! as for an outage (no attempt used up), and once it is lost they run on `local`. When
//! the dashboard quits: it leaves at once, and the run is attached again later. When
//! Enter is pressed on a worker of a host that has just hung, or the host hangs while a
//! person is attached to one: the dashboard says so within a bound.

use std::time::{Duration, Instant};

use crate::support::on_host::*;
use crate::support::sshd::*;
use crate::support::*;

#[test]
fn a_host_down_when_the_run_starts_is_waited_for_then_its_worker_runs_on_local() {
    let Some(mut t) = HostRepo::start("hosts-down-start") else {
        return;
    };
    t.host.stop_sshd();
    let workdir = t.host.workdir.path().display().to_string();
    // One attempt only: waiting for the host must not use it up.
    let team = t.team(&format!(
            "[[worker]]\nid = \"far\"\nrole = \"backend-engineer\"\nprovider = \"command\"\nhost = \"box\"\nmax_attempts = 1\n\
             command = [\"sh\", \"-c\", \"case $PWD in {workdir}*) echo on the host; exit 9;; esac; echo ran here; exit 0\"]\n"
        ),
    );
    let started = Instant::now();
    let out = t.run(&headless(&team, "a host that is down from the start"));
    let took = started.elapsed();
    let log = std::fs::read_to_string(t.path().join(".crewmux/crewmux.log")).unwrap_or_default();
    let s = summary(&out);
    let w = worker(&s, "far");
    assert_eq!(
        (
            s["status"].as_str(),
            w["status"].as_str(),
            w["exit_code"].as_i64(),
            w["attempts"].as_i64()
        ),
        (Some("done"), Some("completed"), Some(0), Some(1)),
        "{s}\n{}\n{log}",
        String::from_utf8_lossy(&out.stderr)
    );
    // It waited for the host's lost_after_s (3 s) before it ran here.
    assert!(took >= Duration::from_secs(3), "{took:?}");
    // Said where a headless run's person reads: that the host does not answer, that it
    // was lost, then that the worker runs here.
    let err = String::from_utf8_lossy(&out.stderr);
    let down = err.find("host box does not answer");
    let lost = err.find("crewmux: host box was lost: unreachable for ");
    let moved =
        err.find("far#1 worker-moved: host box was lost before it started there; it runs on local");
    assert!(down.is_some() && lost > down && moved.is_some(), "{err}");
    // Said once: the run's line, not also the host poll's own `host box lost: …`.
    assert_eq!(
        err.matches("host box was lost: unreachable").count(),
        1,
        "{err}"
    );
    assert!(
        !log.lines()
            .any(|l| l.contains(" WARN ") && l.contains("host box lost:")),
        "{log}"
    );
    let state = try_state(t.path()).unwrap();
    let dispatches = state["dispatches"].as_array().unwrap();
    assert_eq!(dispatches.len(), 1, "{dispatches:?}");
    assert!(dispatches[0]["host"].is_null(), "{dispatches:?}");
    assert_eq!(dispatches[0]["moved_from"], "box", "{dispatches:?}");
    assert!(state_worker(&state, "far")["host"].is_null());
    assert_eq!(
        worker(&s, "far")["placement"],
        "attempt 1 on local (box lost)",
        "{s}"
    );
    let run = only_run_dir(t.path());
    let output = std::fs::read_to_string(run.join("workers/far/attempt-1/output.log")).unwrap();
    assert!(output.contains("ran here"), "{output}");
}

#[test]
fn a_host_down_when_the_run_starts_runs_its_worker_once_it_answers() {
    let Some(mut t) = HostRepo::start("hosts-back-start") else {
        return;
    };
    t.host.write_hosts_file_lost_after(t.path(), "box", 300);
    t.host.stop_sshd();
    let workdir = t.host.workdir.path().display().to_string();
    let team = t.team(&format!(
            "[[worker]]\nid = \"far\"\nrole = \"backend-engineer\"\nprovider = \"command\"\nhost = \"box\"\nmax_attempts = 1\n\
             command = [\"sh\", \"-c\", \"case $PWD in {workdir}*) echo on the host; exit 0;; esac; echo ran here; exit 9\"]\n"
        ),
    );
    let child = t.spawn(&headless(&team, "a host that comes up late"));
    // The worker waits for the host (its launch was tried, the host did not answer).
    wait_log(t.path(), |l| l.contains("far#1: host box does not answer"));
    t.host.start_sshd();
    let out = wait_limited(child, &["run"]);
    assert_events_once(t.path());
    let s = summary(&out);
    let w = worker(&s, "far");
    assert_eq!(
        outcome(w),
        (Some("completed"), Some(0), Some(1)),
        "{s}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let state = try_state(t.path()).unwrap();
    assert_eq!(state["dispatches"][0]["host"], "box", "{state}");
    let run = only_run_dir(t.path());
    let output = std::fs::read_to_string(run.join("workers/far/attempt-1/output.log")).unwrap();
    assert!(output.contains("on the host"), "{output}");
}

/// A dashboard whose worker `there` runs on the test's host, and that host frozen
/// (sshd and its connections SIGSTOPped) once the dashboard shows it running. The host is
/// lost only after 300 s: it must come back as itself. Dropped viewer first, host last.
struct Frozen {
    viewer: Viewer,
    t: TeamProject,
    workers: TmuxServer,
    host: SshHost,
    /// What [`SshHost::thaw`] lets go on.
    pids: Vec<u32>,
}

impl Frozen {
    /// `None` without sshd, ssh or tmux (skipped loudly); `tag` names the test's servers.
    fn start(tag: &str, team: &str, problem: &str) -> Option<Frozen> {
        if !sshd_ready(tag) {
            return None;
        }
        let host = SshHost::start();
        let workers = TmuxServer::new(&format!("{tag}-workers"));
        let t = TeamProject::in_repo(&[("README.md", "frozen\n")], team);
        host.write_hosts_file_lost_after(t.path(), "box", 300);
        let (viewer, _) = dashboard_on_host(&t, &workers, &host, tag, problem, "there");
        let pids = host.freeze();
        assert!(!pids.is_empty(), "no sshd to freeze");
        Some(Frozen {
            viewer,
            t,
            workers,
            host,
            pids,
        })
    }
}

/// Far below what a frozen host's calls cost the quit before (a 15 s call and a 5 s probe
/// per host thread) and above what leaving takes under load.
const QUIT_BOUND: Duration = Duration::from_secs(6);

/// Above `status`'s one wait for its hosts (4 s), leaving their threads (1.5 s) and what
/// a loaded machine adds; far below the 22 s it took before (a 15 s call and a 5 s probe).
const STATUS_BOUND: Duration = Duration::from_secs(10);

#[test]
fn q_with_a_frozen_host_leaves_at_once_and_the_lead_finishes_the_run_later() {
    let flags = tempfile::tempdir().unwrap();
    let go = flags.path().join("go");
    let team = format!(
        "[[worker]]\nid = \"there\"\nrole = \"backend-engineer\"\nprovider = \"command\"\nhost = \"box\"\nmax_attempts = 1\n\
         command = [\"sh\", \"-c\", \"echo on the host; while [ ! -e {go} ]; do sleep 0.2; done; echo finished; exit 0\"]\n",
        go = go.display()
    );
    let Some(f) = Frozen::start("hosts-quit", &team, "quit while the host hangs") else {
        return;
    };
    let (host, workers, t, viewer, frozen) = (&f.host, &f.workers, &f.t, &f.viewer, &f.pids);
    // Let the run's polls meet the frozen host (one goes out at least every 0.8 s).
    std::thread::sleep(Duration::from_millis(1500));
    let t0 = Instant::now();
    viewer.keys(&["q"]);
    let after = viewer.wait_screen("EXITED", Duration::from_secs(60));
    let took = t0.elapsed();
    // `status` while the host is still frozen: each call bounded, and its worker reads
    // unknown once the lead has found the host not answering (its poll outstanding for
    // HUNG_AFTER, 5 s, then saved): until then status says the last state the lead saved,
    // so it is asked again until then (on a loaded machine the lead's finding came after
    // the q in 1 of several runs).
    let run_id = run_id(t.path());
    let unknown = |said: &str| {
        said.lines()
            .find(|l| l.starts_with("there "))
            .is_some_and(|row| row.contains(" unknown "))
            && said.contains("\n  unknown (host box not answering); last seen running\n")
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    let (said, took_status, stderr) = loop {
        let t1 = Instant::now();
        let status = crate::support::on_host::run_with_host(
            t.path(),
            &workers.socket,
            host,
            &["status", &run_id],
        );
        let took_status = t1.elapsed();
        let said = String::from_utf8_lossy(&status.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&status.stderr).into_owned();
        assert!(
            took_status < STATUS_BOUND,
            "status took {took_status:?} with the host frozen: {said}"
        );
        if unknown(&said) || Instant::now() > deadline {
            break (said, took_status, stderr);
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    host.thaw(frozen);
    eprintln!("q with the host frozen: the dashboard was gone in {took:?}");
    assert!(after.contains("EXITED 0"), "{after}");
    assert!(took < QUIT_BOUND, "q took {took:?} with the host frozen");
    eprintln!("status with the host frozen took {took_status:?}");
    assert!(unknown(&said), "{said}\n{stderr}");
    // `q` left the run to its lead, which goes on driving it while the host hangs.
    let state = try_state(t.path()).unwrap();
    assert_eq!(state["status"], "running", "{state}");
    assert_eq!(
        state_worker(&state, "there")["status"],
        "running",
        "{state}"
    );
    // The worker kept running on the host; once the host answers, the lead finishes it.
    std::fs::write(&go, "").unwrap();
    let s = wait_state(t.path(), "the run is done", Duration::from_secs(120), |s| {
        s["status"] == "done"
    });
    let w = state_worker(&s, "there");
    assert_eq!(
        (
            w["status"].as_str(),
            w["exit_code"].as_i64(),
            w["attempt"].as_i64()
        ),
        (Some("completed"), Some(0), Some(1)),
        "{s}"
    );
}

/// Above the attach check's 3 s and what a loaded machine adds; far below what `ssh -t`
/// waited on a frozen host (its connection's keep-alive, 15 s, and more).
const ENTER_BOUND: Duration = Duration::from_secs(8);

#[test]
fn enter_on_a_worker_of_a_host_that_just_froze_says_so_within_a_bound() {
    let team = "[[worker]]\nid = \"there\"\nrole = \"backend-engineer\"\nprovider = \"command\"\nhost = \"box\"\nmax_attempts = 1\n\
         command = [\"sh\", \"-c\", \"echo on the host; sleep 300\"]\n";
    let Some(f) = Frozen::start("hosts-enter", team, "attach while the host hangs") else {
        return;
    };
    let (host, viewer, frozen) = (&f.host, &f.viewer, &f.pids);
    // At once: the polls take 5 s to find the host not answering.
    let t0 = Instant::now();
    viewer.keys(&["Enter"]);
    let said = viewer.wait_screen("does not answer", Duration::from_secs(60));
    let took = t0.elapsed();
    eprintln!("Enter with the host just frozen: said so in {took:?}");
    assert!(took < ENTER_BOUND, "Enter took {took:?}:\n{said}");
    assert!(said.contains("Workers 1"), "the dashboard is back:\n{said}");
    // The attach check's own line, not the polls' later one: what the driver said
    // meanwhile does not cover it.
    assert!(
        footer(&said).contains("host box does not answer (no reply within 3 s)"),
        "{said}"
    );
    viewer.keys(&["q"]);
    let after = viewer.wait_screen("EXITED", Duration::from_secs(30));
    host.thaw(frozen);
    assert!(after.contains("EXITED 0"), "{after}");
}

/// The footer: the line above the key help, the screen's last.
fn footer(screen: &str) -> &str {
    let lines: Vec<&str> = screen.lines().filter(|l| !l.trim().is_empty()).collect();
    lines.len().checked_sub(2).map_or("", |i| lines[i])
}

/// Above the attach's own keep-alive limit (2 s × 3) and what a loaded machine adds; far
/// below the ~20 s `ssh -t` held the terminal riding on the shared connection (its
/// keep-alive, 5 s × 3, after 5 s of silence).
const ATTACHED_BOUND: Duration = Duration::from_secs(12);

#[test]
fn a_host_that_hangs_while_attached_gives_the_terminal_back_within_a_bound() {
    if !sshd_ready("hosts_attached") {
        return;
    }
    let host = SshHost::start();
    let workers = TmuxServer::new("hosts-attached-workers");
    let team = "[[worker]]\nid = \"there\"\nrole = \"backend-engineer\"\nprovider = \"command\"\nhost = \"box\"\nmax_attempts = 1\n\
         command = [\"sh\", \"-c\", \"echo on the host; sleep 300\"]\n";
    let t = TeamProject::in_repo(&[("README.md", "attached\n")], team);
    host.write_hosts_file_lost_after(t.path(), "box", 300);
    let (viewer, _) = dashboard_on_host(
        &t,
        &workers,
        &host,
        "hosts-attached",
        "hang while attached",
        "there",
    );
    viewer.keys(&["Enter"]);
    viewer.wait_screen(":there-1*", Duration::from_secs(30));
    // A slow but live host: a stall well within the keep-alive's limit keeps the attach.
    let stalled = host.freeze();
    std::thread::sleep(Duration::from_millis(2500));
    host.thaw(&stalled);
    std::thread::sleep(Duration::from_secs(6));
    let screen = viewer.screen();
    assert!(
        screen.contains(":there-1*") && !screen.contains("Workers 1"),
        "a 2.5 s stall ended the attach:\n{screen}"
    );
    // Hung for good: the terminal comes back, and the footer says why.
    let frozen = host.freeze();
    let t0 = Instant::now();
    let back = viewer.wait_screen("Workers 1", Duration::from_secs(60));
    let took = t0.elapsed();
    let said = viewer.wait_screen("does not answer", Duration::from_secs(10));
    host.thaw(&frozen);
    eprintln!("the host hung while attached: the dashboard was back in {took:?}");
    assert!(took < ATTACHED_BOUND, "back after {took:?}:\n{back}");
    // The polls find the host not answering about when ssh gives up: the footer has
    // either's line, and the Log says how the attach ended.
    assert!(footer(&said).contains("host box does not answer"), "{said}");
    wait_log(t.path(), |l| {
        l.contains("attach to there: host box does not answer (the attach's ssh gave up on it)")
    });
    viewer.keys(&["q"]);
    let after = viewer.wait_screen("EXITED", Duration::from_secs(30));
    assert!(after.contains("EXITED 0"), "{after}");
}

/// Far below what one launch on a frozen host waits (ssh's 10 s connect limit, a 20 s
/// call limit) and above a local worker's start and exit under load.
const LOCAL_BOUND: Duration = Duration::from_secs(8);

#[test]
fn a_launch_on_a_frozen_host_holds_up_neither_a_local_worker_nor_the_run() {
    let Some(t) = HostRepo::start("hosts-launch-frozen") else {
        return;
    };
    t.host.write_hosts_file_lost_after(t.path(), "box", 300);
    let team = t.team("parallel = 2\n\
         [[worker]]\nid = \"far\"\nrole = \"backend-engineer\"\nprovider = \"command\"\nhost = \"box\"\nmax_attempts = 2\n\
         command = [\"sh\", \"-c\", \"echo on the host; exit 0\"]\n\
         [[worker]]\nid = \"here\"\nrole = \"backend-engineer\"\nprovider = \"command\"\nmax_attempts = 1\n\
         command = [\"sh\", \"-c\", \"echo local line; exit 0\"]\n",
    );
    let frozen = t.host.freeze();
    assert!(!frozen.is_empty(), "no sshd to freeze");
    let t0 = Instant::now();
    let child = t.spawn(&headless(&team, "a host hangs while its worker starts"));
    let here_done = wait_for(
        || try_state(t.path()).is_some_and(|s| state_worker(&s, "here")["status"] == "completed"),
        Duration::from_secs(60),
    );
    let took = t0.elapsed();
    t.host.thaw(&frozen);
    eprintln!(
        "a local worker beside a launch on a frozen host: completed {took:?} after the run began"
    );
    assert!(here_done, "{:?}", try_state(t.path()));
    assert!(took < LOCAL_BOUND, "the local worker took {took:?}");
    // The host answers again: its worker starts there (again, if its first launch failed).
    let out = wait_limited(child, &["run"]);
    assert_events_once(t.path());
    let s = summary(&out);
    assert_eq!(
        (
            s["status"].as_str(),
            worker(&s, "far")["status"].as_str(),
            worker(&s, "here")["status"].as_str()
        ),
        (Some("done"), Some("completed"), Some("completed")),
        "{s}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = only_run_dir(t.path());
    let attempts = worker(&s, "far")["attempts"].as_i64().unwrap();
    let output =
        std::fs::read_to_string(run.join(format!("workers/far/attempt-{attempts}/output.log")))
            .unwrap();
    assert!(output.contains("on the host"), "{output}");
}

/// A host frozen before the run (sshd SIGSTOPped) whose worker runs a command (planning
/// asks it nothing): the launch there is its first contact; the host is said not to
/// answer within a few seconds of the stage change, and lost `lost_after_s` after that
/// launch began, not after its calls and a probe timed out.
#[test]
fn a_host_frozen_before_the_run_is_said_and_lost_from_its_first_launch() {
    let Some(t) = HostRepo::start("hosts-frozen-launch") else {
        return;
    };
    let lost_after = 20;
    t.host
        .write_hosts_file_lost_after(t.path(), "box", lost_after);
    let team = t.team(
        "[[worker]]\nid = \"far\"\nrole = \"backend-engineer\"\nprovider = \"command\"\nhost = \"box\"\nmax_attempts = 1\n\
         command = [\"sh\", \"-c\", \"echo ran; exit 0\"]\n",
    );
    let run = t.run_frozen_from_the_start(&team);
    let all = &run.all;
    let stage = run.when(|l| l.contains("stage-changed: team-plan → team-exec"));
    let silent = run.when(|l| l.contains("host box does not answer"));
    let lost = run.when(|l| l.contains("host box was lost: unreachable for"));
    let s = summary(&run.out);
    assert_eq!(
        worker(&s, "far")["placement"],
        "attempt 1 on local (box lost)",
        "{s}\n{all}"
    );
    // A first launch's probe waits 5 s for a host that hangs; a loaded machine adds some.
    let said_after = silent.saturating_sub(stage);
    assert!(
        said_after <= Duration::from_secs(8),
        "said {said_after:?} after the stage began\n{all}"
    );
    let lost_after_stage = lost.saturating_sub(stage);
    assert!(
        lost_after_stage <= Duration::from_secs(lost_after + 5),
        "lost {lost_after_stage:?} after the stage began\n{all}"
    );
}
