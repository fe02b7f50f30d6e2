//! When an attempt ended is when it ended, not when crewmux noticed: an attempt that
//! ended on its host while the host was frozen keeps the time its `exit.json` says.

use std::time::{Duration, Instant};

use crate::support::on_host::{headless, wait_running_remotely, HostRepo};
use crate::support::*;

/// A time of the run's files (RFC 3339).
fn time(v: &serde_json::Value) -> chrono::DateTime<chrono::Utc> {
    v.as_str()
        .and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok())
        .unwrap_or_else(|| panic!("not a time: {v}"))
        .with_timezone(&chrono::Utc)
}

#[test]
fn an_attempt_that_ended_while_its_host_was_frozen_ends_when_its_exit_record_says() {
    let Some(t) = HostRepo::start("hosts-end-time") else {
        return;
    };
    t.host.write_hosts_file_lost_after(t.path(), "box", 300);
    let workdir = t.host.workdir.path().display().to_string();
    let team = t.team(&format!(
        "[[worker]]\nid = \"far\"\nrole = \"backend-engineer\"\nprovider = \"command\"\nhost = \"box\"\nmax_attempts = 1\n\
         command = [\"sh\", \"-c\", \"case $PWD in {workdir}*) echo on the host; sleep 2; exit 0;; esac; exit 5\"]\n"
    ));
    let child = t.spawn(&headless(&team, "an exit noticed late"));
    let project = t.path();
    wait_running_remotely(project, "far");
    let pids = t.host.freeze();
    assert!(!pids.is_empty(), "no sshd to freeze");
    let run = only_run_dir(project);
    let id = run.file_name().unwrap().to_string_lossy().into_owned();
    let there = t.host.workdir.path().join("runs").join(&id);
    let exit_there = there.join("workers/far/attempt-1/exit.json");
    let ended = wait_for(|| exit_there.exists(), Duration::from_secs(30));
    let frozen_for = Duration::from_secs(6);
    std::thread::sleep(frozen_for);
    let thawed_at = chrono::Utc::now();
    t.host.thaw(&pids);
    assert!(ended, "far never ended on the host");
    let t0 = Instant::now();
    let out = wait_limited(child, &["run"]);
    let s = summary(&out);
    assert_eq!(
        worker(&s, "far")["status"],
        "completed",
        "{s}\n{}",
        stderr(&out)
    );
    // When the wrapper wrote it on the host (this machine's clock: the host is here).
    let written: chrono::DateTime<chrono::Utc> = std::fs::metadata(&exit_there)
        .and_then(|m| m.modified())
        .unwrap()
        .into();
    let state = try_state(project).unwrap();
    let recorded = time(&state_worker(&state, "far")["ended_at"]);
    let dispatch = time(&state["dispatches"][0]["ended_at"]);
    eprintln!(
        "exit.json written {written}, ended_at recorded {recorded} ({} ms after), thawed {thawed_at} (the run took {:?} more)",
        (recorded - written).num_milliseconds(),
        t0.elapsed()
    );
    assert!(
        (recorded - written).num_milliseconds().abs() < 1000,
        "{recorded} is when it was noticed, not when it ended ({written})"
    );
    assert_eq!(dispatch, recorded, "the attempt's end is its worker's");
    let exit: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(run.join("workers/far/attempt-1/exit.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        time(&exit["ended_at"]),
        recorded,
        "the end is its exit record's"
    );
    assert!(
        thawed_at - recorded >= chrono::Duration::from_std(frozen_for).unwrap(),
        "{recorded} is when it was noticed, not when it ended ({written})"
    );
}
