//! `crewmux status` from another terminal on a run a process drives: while the driver
//! finds the run's SSH host not answering (sshd frozen with SIGSTOP), the host's live
//! worker reads `unknown (host box not answering)` there too, in the text, in `--json` and
//! in the list of runs, and `running` again once the host answers. (A run nobody drives:
//! `status` asks the host itself, `hosts_start`.)

use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};
use std::time::Duration;

use crate::support::on_host::{headless, wait_running_remotely, HostRepo};
use crate::support::sshd::SshHost;
use crate::support::*;

/// Above the 5 s a poll waits before its host reads as not answering, and a loaded
/// machine's delays on top.
const NOTICED_WITHIN: Duration = Duration::from_secs(45);

/// Above a save of the driver's (it is written as the notice goes out) and what a loaded
/// machine adds to starting `status`.
const STATUS_SEES_WITHIN: Duration = Duration::from_secs(10);

/// Ends the headless run when the test fails before it does (the run's worker waits for a
/// file that is gone then).
struct Driving(Option<Child>);

impl Drop for Driving {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Lets the frozen sshd go on when the test fails while it is frozen.
struct Frozen<'a> {
    host: &'a SshHost,
    pids: Vec<u32>,
}

impl Frozen<'_> {
    fn thaw(&mut self) {
        self.host.thaw(&std::mem::take(&mut self.pids));
    }
}

impl Drop for Frozen<'_> {
    fn drop(&mut self) {
        self.thaw();
    }
}

/// `crewmux status <args>` in the repo, to its end.
fn status(t: &HostRepo, args: &[&str]) -> Output {
    let mut all = vec!["status"];
    all.extend_from_slice(args);
    t.run(&all)
}

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Whether the driver said `line` on its stderr (written to `log`).
fn said(log: &Path, line: &str) -> bool {
    std::fs::read_to_string(log).is_ok_and(|l| l.contains(line))
}

/// The row of worker `id` in `status <run>`'s text and the line under it.
fn row_and_next<'a>(text: &'a str, id: &str) -> (&'a str, &'a str) {
    let mut lines = text.lines().skip_while(|l| !l.starts_with(id));
    (
        lines.next().unwrap_or_default(),
        lines.next().unwrap_or_default(),
    )
}

#[test]
fn status_of_a_driven_run_reads_unknown_while_its_driver_finds_the_host_not_answering() {
    let Some(t) = HostRepo::start("hosts-driven-status") else {
        return;
    };
    // Not lost while frozen: the worker stays the host's.
    t.host.write_hosts_file_lost_after(t.path(), "box", 300);
    let flags = tempfile::tempdir().unwrap();
    let go = flags.path().join("go");
    let team = t.team(&format!(
        "[[worker]]\nid = \"there\"\nrole = \"backend-engineer\"\nprovider = \"command\"\nhost = \"box\"\n\
         max_attempts = 1\ncommand = [\"sh\", \"-c\", \"echo on the host; while [ ! -e {go} ]; do sleep 0.2; done; echo finished\"]\n",
        go = go.display()
    ));
    let args = headless(&team, "status while the host hangs");
    let log: PathBuf = flags.path().join("driver.stderr");
    let mut cmd = t.command(&args);
    cmd.stderr(Stdio::from(std::fs::File::create(&log).unwrap()));
    let mut driving = Driving(Some(cmd.spawn().expect("crewmux runs")));
    wait_running_remotely(t.path(), "there");
    let run_id = try_state(t.path()).unwrap()["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    let before = text(&status(&t, &[&run_id]));
    assert!(
        before.contains("(being driven)") && !before.contains("not answering"),
        "{before}"
    );

    let mut frozen = Frozen {
        host: &t.host,
        pids: t.host.freeze(),
    };
    assert!(!frozen.pids.is_empty(), "no sshd to freeze");
    let noticed = wait_for(|| said(&log, "host box does not answer"), NOTICED_WITHIN);
    assert!(
        noticed,
        "the driver never said the host does not answer:\n{}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    // The driver saves what it found as it says so; `status` reads the state only.
    let mut said_status = String::new();
    let t0 = std::time::Instant::now();
    let unknown = wait_for(
        || {
            said_status = text(&status(&t, &[&run_id]));
            said_status.contains("unknown (host box not answering)")
        },
        STATUS_SEES_WITHIN,
    );
    let took = t0.elapsed();
    let json = summary(&status(&t, &[&run_id, "--json"]));
    let list = text(&status(&t, &[]));
    let list_json: serde_json::Value =
        serde_json::from_slice(&status(&t, &["--json"]).stdout).unwrap();
    assert!(
        unknown,
        "status said the worker runs while its driver found the host not answering:\n{said_status}\n{}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    let (row, next) = row_and_next(&said_status, "there");
    eprintln!(
        "status read the worker unknown {took:?} after the driver said the host does not answer"
    );
    assert!(row.contains(" unknown "), "{said_status}");
    assert_eq!(
        next, "  unknown (host box not answering); last seen running",
        "{said_status}"
    );
    assert!(
        said_status.contains("\nhost box not answering since "),
        "{said_status}"
    );
    assert_eq!(
        worker(&json, "there")["unknown"],
        "unknown (host box not answering)",
        "{json}"
    );
    assert_eq!(worker(&json, "there")["status"], "running", "{json}");
    assert_eq!(json["hosts_not_answering"], serde_json::json!(["box"]));
    assert!(
        json["hosts_not_answering_since"]["box"].is_string(),
        "{json}"
    );
    assert!(
        list.contains("\n  host box not answering since ")
            && list.contains(": 1 worker(s) unknown\n"),
        "{list}"
    );
    assert_eq!(
        worker(&list_json[0], "there")["unknown"],
        "unknown (host box not answering)",
        "{list_json}"
    );

    frozen.thaw();
    let back = wait_for(|| said(&log, "host box answers again"), NOTICED_WITHIN);
    assert!(
        back,
        "the driver never said the host answers again:\n{}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    let t0 = std::time::Instant::now();
    let running = wait_for(
        || {
            said_status = text(&status(&t, &[&run_id]));
            !said_status.contains("not answering")
        },
        STATUS_SEES_WITHIN,
    );
    eprintln!(
        "status read the worker running again {:?} after the driver said the host answers",
        t0.elapsed()
    );
    assert!(running, "{said_status}");
    let (row, _) = row_and_next(&said_status, "there");
    assert!(row.contains(" running "), "{said_status}");
    let json = summary(&status(&t, &[&run_id, "--json"]));
    assert!(worker(&json, "there").get("unknown").is_none(), "{json}");
    assert_eq!(json["hosts_not_answering"], serde_json::json!([]));

    // The worker kept running on the host; let go, the run ends.
    std::fs::write(&go, "").unwrap();
    let out = wait_limited(driving.0.take().unwrap(), &args);
    let s = summary(&out);
    assert_eq!(
        (s["status"].as_str(), worker(&s, "there")["status"].as_str()),
        (Some("done"), Some("completed")),
        "{s}\n{}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    let state = try_state(t.path()).unwrap();
    assert!(state.get("hosts_not_answering").is_none(), "{state}");
}
