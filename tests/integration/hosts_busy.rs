//! A host whose thread is busy with a long launch (many attempts' files shipped one after
//! the other) still answers: the polls of its running workers wait behind the launch, and
//! as long as the launch's steps keep finishing the host is not said to be down, nor its
//! workers `unknown`.

use std::os::unix::fs::PermissionsExt;

use crate::support::on_host::{headless, HostRepo};
use crate::support::*;

/// Workers started on the host in the second, long launch.
const LATE: usize = 8;

#[test]
fn a_host_busy_with_a_long_launch_is_not_said_to_be_down() {
    let Some(t) = HostRepo::start("hosts-busy") else {
        return;
    };
    let hosts = t
        .host
        .hosts_toml_lost_after("box", 300)
        .replace("max_workers = 4", &format!("max_workers = {}", LATE + 2));
    crate::support::sshd::write_hosts(t.path(), &hosts);
    // An ssh whose every shipping of an attempt's files takes 0.8 s: the late launch
    // takes ~6.4 s, each of its steps well under the 5 s after which a host reads as hung.
    let shim = tempfile::tempdir().unwrap();
    let real = which::which("ssh").expect("ssh is on PATH (sshd_ready said so)");
    let script = shim.path().join("ssh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\ncase \"$*\" in *'tar -xf - -C'*) sleep 0.8;; esac\nexec '{}' \"$@\"\n",
            real.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        shim.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let flags = tempfile::tempdir().unwrap();
    let go = flags.path().join("go");
    // `long` runs on the host (so the host is polled) while `gate` ends and the late
    // workers, which wait for it, are launched there together.
    let remote = |id: &str, extra: &str, cmd: &str| {
        format!(
            "[[worker]]\nid = \"{id}\"\nrole = \"backend-engineer\"\nprovider = \"command\"\nhost = \"box\"\n\
             max_attempts = 1\n{extra}command = [\"sh\", \"-c\", \"{cmd}\"]\n"
        )
    };
    let mut body = format!("parallel = {}\n", LATE + 2);
    body.push_str(&remote(
        "long",
        "",
        &format!(
            "echo long; while [ ! -e {} ]; do sleep 0.1; done",
            go.display()
        ),
    ));
    body.push_str(&remote("gate", "", "echo gate"));
    let late: Vec<String> = (0..LATE).map(|i| format!("late{i}")).collect();
    for id in &late {
        body.push_str(&remote(id, "after = [\"gate\"]\n", "echo late"));
    }
    let team = t.team(&body);
    let args = headless(&team, "a long launch");
    let child = t.command(&args).env("PATH", path).spawn().unwrap();
    let all_late = wait_for(
        || {
            try_state(t.path()).is_some_and(|s| {
                late.iter()
                    .all(|id| state_worker(&s, id)["status"] == "completed")
            })
        },
        std::time::Duration::from_secs(90),
    );
    std::fs::write(&go, "").unwrap();
    let out = wait_limited(child, &args);
    assert_events_once(t.path());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(all_late, "{:?}\n{err}", try_state(t.path()));
    let s = summary(&out);
    for id in late.iter().map(String::as_str).chain(["long", "gate"]) {
        assert_eq!(
            worker(&s, id)["status"].as_str(),
            Some("completed"),
            "{id}: {s}\n{err}"
        );
    }
    assert!(!err.contains("host box does not answer"), "{err}");
}
