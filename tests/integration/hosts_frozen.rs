//! A host that hangs while an ended attempt's work is being brought back from it
//! (committed there, its branch fetched here) holds up nothing of this machine: on the
//! dashboard a local worker's Output and status keep moving while the host's sshd is
//! frozen, and the work comes home once the host answers again. Kills of remote workers
//! (a wall timeout, a cancel) asked while their host is frozen hold up nothing either.
//! (A launch and the first connection to a frozen host: `hosts_start`.)

use std::time::{Duration, Instant};

use crate::support::sshd::{sshd_ready, SshHost};
use crate::support::*;

/// Far below what one ssh call on a frozen host may wait (its 20 s limit) and above what
/// a local exit takes to reach the roster under load.
const LOCAL_BOUND: Duration = Duration::from_secs(5);

/// The highest `tick N` on `screen` (the focused local worker's Output).
fn last_tick(screen: &str) -> u64 {
    screen
        .split("tick ")
        .skip(1)
        .filter_map(|s| {
            let digits: String = s.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        })
        .max()
        .unwrap_or(0)
}

/// The roster's line of `worker` (a `command` worker: the Output's title says `command)`).
fn roster_line<'a>(screen: &'a str, worker: &str) -> &'a str {
    screen
        .lines()
        .find(|l| l.contains(&format!(" {worker} ")) && l.contains(" command "))
        .unwrap_or("")
}

/// `git show <branch of worker>:<path>` in `project`.
fn on_branch(project: &std::path::Path, run_id: &str, worker: &str, path: &str) -> String {
    let out = std::process::Command::new("git")
        .current_dir(project)
        .args(["show", &format!("crewmux/{run_id}/{worker}:{path}")])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_host_frozen_while_an_attempts_work_comes_back_stalls_no_local_worker() {
    if !sshd_ready("hosts_frozen_work_back") {
        return;
    }
    let host = SshHost::start();
    let workers = TmuxServer::new("hosts-frozen-workers");
    let flags = tempfile::tempdir().unwrap();
    let f = |name: &str| flags.path().join(name).display().to_string();
    let (release, go_here) = (f("release"), f("go-here"));
    // The host's git runs this clean filter (a required one) when the attempt's work is
    // committed there: the first commit fails at once (its files come back without the
    // work), the next waits (60 s at most) for the test to let it go.
    std::fs::write(
        f("slow.sh"),
        format!(
            "n=$(ls {dir} | grep -c '^started\\.'); touch {started}.$$\n\
             if [ \"$n\" -eq 0 ]; then exit 1; fi\n\
             i=0; while [ ! -e {release} ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done\ncat\n",
            dir = flags.path().display(),
            started = f("started")
        ),
    )
    .unwrap();
    std::fs::write(
        f("far.sh"),
        format!(
            "git config filter.slow.clean 'sh {slow}'\ngit config filter.slow.required true\n\
             echo '*.txt filter=slow' > .gitattributes\necho 'far work' > far.txt\nexit 0\n",
            slow = f("slow.sh"),
        ),
    )
    .unwrap();
    std::fs::write(
        f("here.sh"),
        format!(
            "i=0; while [ ! -e {go_here} ]; do i=$((i+1)); echo tick $i; sleep 0.2; done\n\
             echo local done\nexit 0\n"
        ),
    )
    .unwrap();
    let t = TeamProject::in_repo(
        &[("README.md", "frozen\n")],
        &format!(
            "parallel = 2\n\
             [[worker]]\nid = \"here\"\nrole = \"backend-engineer\"\nprovider = \"command\"\nmax_attempts = 1\n\
             command = [\"sh\", \"{here}\"]\n\
             [[worker]]\nid = \"far\"\nrole = \"testing-engineer\"\nprovider = \"command\"\nhost = \"box\"\n\
             max_attempts = 1\ncommand = [\"sh\", \"{far}\"]\n",
            here = f("here.sh"),
            far = f("far.sh"),
        ),
    );
    host.write_hosts_file_lost_after(t.path(), "box", 300);
    let cmd = crate::support::viewer::dashboard_cmd(
        t.path(),
        &workers,
        &format!("XDG_RUNTIME_DIR={}", host.runtime_dir().display()),
        t.team(),
        "a host hangs while work comes back",
        "",
    );
    let viewer = Viewer::start("hosts-frozen-viewer", (140, 40), &cmd);
    viewer.wait_screen("tick", Duration::from_secs(60));
    // far ended on the host; its work's first commit there failed, the next one waits.
    let started = || {
        std::fs::read_dir(flags.path()).map_or(0, |d| {
            d.flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with("started."))
                .count()
        })
    };
    let committing = wait_for(|| started() >= 2, Duration::from_secs(60));
    assert!(
        committing,
        "far's work was not committed twice on the host ({} tries): {:?}\n{}",
        started(),
        try_state(t.path()),
        viewer.screen()
    );
    let frozen = host.freeze();
    assert!(!frozen.is_empty(), "no sshd to freeze");
    let frozen_at = Instant::now();
    // The local worker's Output moves on.
    std::thread::sleep(Duration::from_millis(1000));
    let before = last_tick(&viewer.screen());
    std::thread::sleep(Duration::from_millis(2500));
    let screen = viewer.screen();
    let after = last_tick(&screen);
    // Its exit reaches the roster at once.
    std::fs::write(&go_here, "").unwrap();
    let t0 = Instant::now();
    let mut last = String::new();
    let completed = wait_for(
        || {
            last = viewer.screen();
            roster_line(&last, "here").contains("completed")
        },
        Duration::from_secs(60),
    );
    let took = t0.elapsed();
    let frozen_for = frozen_at.elapsed();
    host.thaw(&frozen);
    std::fs::write(&release, "").unwrap();
    eprintln!(
        "host frozen {frozen_for:?}: the local Output went from tick {before} to {after} in 2.5 s, its exit showed in {took:?}"
    );
    assert!(after > before, "the local Output stood still:\n{screen}");
    assert!(completed, "here never completed:\n{last}");
    assert!(
        took < LOCAL_BOUND,
        "here's exit took {took:?} to show:\n{last}"
    );
    // The host answers again: far's work comes back and the run ends.
    let done = wait_for(
        || try_state(t.path()).is_some_and(|s| s["status"] == "done"),
        Duration::from_secs(120),
    );
    let state = try_state(t.path());
    assert!(done, "{state:?}\n{}", viewer.screen());
    viewer.keys(&["q"]);
    viewer.wait_screen("EXITED", Duration::from_secs(30));
    assert_events_once(t.path());
    let state = state.unwrap();
    assert_eq!(
        state_worker(&state, "far")["status"],
        "completed",
        "{state}"
    );
    let run_id = state["run_id"].as_str().unwrap();
    assert_eq!(
        on_branch(t.path(), run_id, "far", "far.txt"),
        "far work\n",
        "far's work did not come back"
    );
}

/// A wall timeout and a cancel of remote workers asked while their host is frozen: the
/// kills go to the host's thread and are carried out once it answers, and a local worker's
/// exit is recorded meanwhile.
#[test]
fn kills_of_remote_workers_while_their_host_is_frozen_stall_no_local_worker() {
    let Some(t) = crate::support::on_host::HostRepo::start("hosts-frozen-kills") else {
        return;
    };
    t.host.write_hosts_file_lost_after(t.path(), "box", 300);
    let flags = tempfile::tempdir().unwrap();
    let go_here = flags.path().join("go-here");
    let team = t.team(&format!(
        "parallel = 3\n\
         [[worker]]\nid = \"here\"\nrole = \"backend-engineer\"\nprovider = \"command\"\nmax_attempts = 1\n\
         command = [\"sh\", \"-c\", \"while [ ! -e {go} ]; do sleep 0.1; done; echo local done\"]\n\
         [[worker]]\nid = \"timed\"\nrole = \"backend-engineer\"\nprovider = \"command\"\nhost = \"box\"\n\
         max_attempts = 1\ntimeout_s = 6\ncommand = [\"sh\", \"-c\", \"echo timed; sleep 300\"]\n\
         [[worker]]\nid = \"stopped\"\nrole = \"backend-engineer\"\nprovider = \"command\"\nhost = \"box\"\n\
         max_attempts = 1\ncommand = [\"sh\", \"-c\", \"echo stopped; sleep 300\"]\n",
        go = go_here.display()
    ));
    let args = crate::support::on_host::headless(&team, "kills while the host hangs");
    let child = t.spawn(&args);
    crate::support::on_host::wait_running_remotely(t.path(), "timed");
    crate::support::on_host::wait_running_remotely(t.path(), "stopped");
    let state = try_state(t.path()).unwrap();
    assert_eq!(state_worker(&state, "here")["status"], "running", "{state}");
    let run_id = state["run_id"].as_str().unwrap().to_string();
    let frozen = t.host.freeze();
    assert!(!frozen.is_empty(), "no sshd to freeze");
    let cancel = t.spawn(&["cancel", &run_id, "--worker", "stopped", "--grace", "1"]);
    // Both kills are asked while the host is frozen.
    let log = t.path().join(".crewmux/crewmux.log");
    let asked = wait_for(
        || {
            std::fs::read_to_string(&log).is_ok_and(|l| {
                l.contains("timed#1: SIGTERM sent") && l.contains("stopped#1: SIGTERM sent")
            })
        },
        Duration::from_secs(30),
    );
    assert!(
        asked,
        "{}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    std::fs::write(&go_here, "").unwrap();
    let t0 = Instant::now();
    let recorded = wait_for(
        || try_state(t.path()).is_some_and(|s| state_worker(&s, "here")["status"] == "completed"),
        Duration::from_secs(60),
    );
    let took = t0.elapsed();
    t.host.thaw(&frozen);
    eprintln!("kills asked of a frozen host: a local exit was recorded in {took:?}");
    assert!(recorded, "{:?}", try_state(t.path()));
    assert!(
        took < LOCAL_BOUND,
        "a local exit took {took:?} to be recorded"
    );
    // The host answers again: the kills are carried out there and the run ends.
    let c = wait_limited(cancel, &["cancel"]);
    assert_eq!(
        c.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&c.stderr)
    );
    let out = wait_limited(child, &args);
    assert_events_once(t.path());
    let s = summary(&out);
    for (id, status) in [
        ("here", "completed"),
        ("timed", "timeout"),
        ("stopped", "cancelled"),
    ] {
        assert_eq!(
            worker(&s, id)["status"].as_str(),
            Some(status),
            "{id}: {s}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
