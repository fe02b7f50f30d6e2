//! A hung SSH host (its sshd frozen with SIGSTOP: connections hang instead of failing)
//! stalls nothing but its own workers: a local worker's exit is recorded at once, the host
//! is said not to answer and then to answer again, and its worker finishes.

use std::time::{Duration, Instant};

use crate::support::on_host::*;
use crate::support::*;

/// A bound far below what one hung ssh call costs (a 5 s probe, a 15 s call) and far
/// above what recording an exit takes, even under load.
const LOCAL_EXIT_BOUND: Duration = Duration::from_secs(4);

fn status_of(project: &std::path::Path, worker: &str) -> Option<String> {
    let s = try_state(project)?;
    state_worker(&s, worker)["status"]
        .as_str()
        .map(str::to_string)
}

#[test]
fn a_frozen_host_stalls_neither_a_local_workers_exit_nor_its_own_worker() {
    let Some(t) = HostRepo::start("hosts-hung") else {
        return;
    };
    // Lost only long after the test is over: the host must come back as itself.
    let hosts = t.path().join(".crewmux/hosts.toml");
    let text = std::fs::read_to_string(&hosts).unwrap();
    std::fs::write(
        &hosts,
        text.replace("lost_after_s = 3", "lost_after_s = 300"),
    )
    .unwrap();
    let flags = tempfile::tempdir().unwrap();
    let go_here = flags.path().join("here");
    let go_far = flags.path().join("far");
    let team = t.team(&format!(
            "parallel = 2\n\
             [[worker]]\nid = \"here\"\nrole = \"backend-engineer\"\nprovider = \"command\"\nmax_attempts = 1\n\
             command = [\"sh\", \"-c\", \"while [ ! -e {here} ]; do sleep 0.05; done; echo local line; exit 0\"]\n\
             [[worker]]\nid = \"far\"\nrole = \"backend-engineer\"\nprovider = \"command\"\nhost = \"box\"\nmax_attempts = 1\n\
             command = [\"sh\", \"-c\", \"echo started; while [ ! -e {far} ]; do sleep 0.1; done; echo finished; sleep 3; exit 0\"]\n",
            here = go_here.display(),
            far = go_far.display()
        ),
    );
    let args = headless(&team, "a host hangs");
    let child = t.spawn(&args);
    wait_running_remotely(t.path(), "far");
    assert!(
        wait_for(
            || status_of(t.path(), "here").as_deref() == Some("running"),
            Duration::from_secs(60)
        ),
        "here never ran: {:?}",
        try_state(t.path())
    );
    let frozen = t.host.freeze();
    let frozen_at = Instant::now();
    assert!(!frozen.is_empty(), "no sshd to freeze");
    // The run polls its host at least every 0.8 s: let a poll meet the frozen host.
    std::thread::sleep(Duration::from_millis(1500));
    let t0 = Instant::now();
    std::fs::write(&go_here, "").unwrap();
    let recorded = wait_for(
        || status_of(t.path(), "here").as_deref() == Some("completed"),
        Duration::from_secs(60),
    );
    let took = t0.elapsed();
    eprintln!("hosts_hung: a local exit was recorded {took:?} after it was allowed, host frozen");
    // Hold the freeze past the 5 s after which a host that does not reply reads as not
    // answering, so the run says so.
    std::thread::sleep(Duration::from_secs(8).saturating_sub(frozen_at.elapsed()));
    t.host.thaw(&frozen);
    assert!(recorded, "here never completed: {:?}", try_state(t.path()));
    assert!(
        took < LOCAL_EXIT_BOUND,
        "a local exit took {took:?} to be recorded while a host hung"
    );
    std::fs::write(&go_far, "").unwrap();
    let out = wait_limited(child, &args);
    assert_events_once(t.path());
    let err = format!(
        "{}\n--- crewmux.log:\n{}",
        String::from_utf8_lossy(&out.stderr),
        std::fs::read_to_string(t.path().join(".crewmux/crewmux.log")).unwrap_or_default()
    );
    let s = summary(&out);
    for (id, code) in [("here", 0), ("far", 0)] {
        let w = worker(&s, id);
        assert_eq!(
            outcome(w),
            (Some("completed"), Some(code), Some(1)),
            "{id}: {s}\n{err}"
        );
    }
    let run = only_run_dir(t.path());
    let log = std::fs::read_to_string(run.join("workers/far/attempt-1/output.log")).unwrap();
    assert!(log.contains("started") && log.contains("finished"), "{log}");
    let said = String::from_utf8_lossy(&out.stderr);
    // The host's outage is its own notice: said not to answer, and last said to answer
    // again (a loaded machine may see a slow start too); the tmux server never stopped.
    // (far lives 3 s after it is let go, so the run polls the host once it answers.)
    let down = said.rfind("host box does not answer");
    let back = said.rfind("host box answers again");
    assert!(down.is_some() && back > down, "{err}");
    assert!(!said.contains("the tmux server answers again"), "{err}");
    // Said once: the run's notice, not also the host thread's own line.
    let log = std::fs::read_to_string(t.path().join(".crewmux/crewmux.log")).unwrap_or_default();
    assert!(
        !log.lines()
            .any(|l| l.contains("crewmux::hosts") && l.contains("answers again")),
        "{log}"
    );
}
