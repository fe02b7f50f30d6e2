//! A worker whose provider runs crewmux itself (`sim`) on a host that does not answer when
//! the run starts: it waits for the host as a command worker does. Once the host is lost
//! it runs here; when the host answers first, crewmux is put there before it starts.
//! Spread with `--hosts`, such workers skip a host that does not answer, and `dispatch`
//! says why that host got none.

use std::time::Duration;

use crate::support::on_host::*;
use crate::support::sshd::*;
use crate::support::*;

#[test]
fn a_sim_worker_on_a_host_down_at_the_start_waits_for_it_as_a_command_worker_does_then_runs_here() {
    let Some(t) = HostRepo::start("hosts-sim-down") else {
        return;
    };
    let p = t.path();
    // The test's sshd config on a port nothing listens on: the host never answers.
    write_hosts(
        p,
        &t.host
            .hosts_toml("box")
            .replace("ssh_args = [\"-F\"", "ssh_args = [\"-p\", \"1\", \"-F\""),
    );
    let team = t.team(
        "[[worker]]\nid = \"simmer\"\nrole = \"backend-engineer\"\nprovider = \"sim\"\nhost = \"box\"\nmax_attempts = 1\n\
         [[worker]]\nid = \"cmd\"\nrole = \"backend-engineer\"\nprovider = \"command\"\nhost = \"box\"\nmax_attempts = 1\n\
         command = [\"sh\", \"-c\", \"echo ran; exit 0\"]\n",
    );
    let out = t.run(&headless(&team, "a host down from the start"));
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let s = summary(&out);
    // Both waited for the host, then ran here once it was lost, on their one attempt.
    for id in ["simmer", "cmd"] {
        let w = worker(&s, id);
        assert_eq!(
            (
                w["status"].as_str(),
                w["attempts"].as_i64(),
                w["placement"].as_str()
            ),
            (
                Some("completed"),
                Some(1),
                Some("attempt 1 on local (box lost)")
            ),
            "{id}: {s}\n{stderr}"
        );
    }
    assert!(
        stderr.contains("host box does not answer (")
            && stderr.contains(
                "worker `simmer` (provider `sim`) waits for it as the run's other workers do"
            ),
        "{stderr}"
    );
    assert!(
        stderr.contains("simmer#1 worker-moved: host box was lost before it started there"),
        "{stderr}"
    );
    assert_events_once(p);
}

#[test]
fn a_sim_worker_on_a_host_down_at_the_start_runs_there_with_crewmux_copied_once_it_answers() {
    let Some(mut t) = HostRepo::start("hosts-sim-back") else {
        return;
    };
    t.host.write_hosts_file_lost_after(t.path(), "box", 300);
    t.host.stop_sshd();
    let team = t.team(
        "[[worker]]\nid = \"simmer\"\nrole = \"backend-engineer\"\nprovider = \"sim\"\nhost = \"box\"\nmax_attempts = 1\n\
         prompt = \"Do: {problem}\\nsim: lines=3\"\n",
    );
    let child = t.spawn(&headless(&team, "a host that comes up late"));
    wait_log(t.path(), |l| {
        l.contains("simmer#1: waits for host box")
            || l.contains("simmer#1: host box does not answer")
    });
    t.host.start_sshd();
    let out = wait_limited(child, &["run"]);
    let p = t.path();
    assert_events_once(p);
    let s = summary(&out);
    let w = worker(&s, "simmer");
    assert_eq!(
        (
            w["status"].as_str(),
            w["attempts"].as_i64(),
            w["placement"].as_str()
        ),
        (Some("completed"), Some(1), Some("on box")),
        "{s}\n{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        std::fs::read_to_string(p.join(".crewmux/crewmux.log")).unwrap_or_default()
    );
    // crewmux was put there when the host answered, and the run keeps where.
    let run = only_run_dir(p);
    let helpers: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run.join("helpers.json")).unwrap()).unwrap();
    assert_eq!(helpers["box"]["state"], "ready", "{helpers}");
    let copy = helpers["box"]["path"].as_str().unwrap().to_string();
    let workdir = t.host.workdir.path().display().to_string();
    assert!(copy.starts_with(&workdir), "{copy}");
    let wrapper = std::fs::read_to_string(run.join("workers/simmer/attempt-1/launch.sh")).unwrap();
    assert!(wrapper.contains(&copy), "{wrapper}");
    assert!(
        run.join("workers/simmer/attempt-1/result.md").exists(),
        "the sim agent's result came back"
    );
}

#[test]
fn dispatch_over_a_host_that_does_not_answer_names_it_and_why_it_got_no_workers() {
    let Some(mut t) = HostRepo::start("hosts-dispatch-down") else {
        return;
    };
    t.host.stop_sshd();
    let team = t.team(
        "[[worker]]\nid = \"one\"\nrole = \"backend-engineer\"\nprovider = \"sim\"\n\
         [[worker]]\nid = \"two\"\nrole = \"backend-engineer\"\nprovider = \"sim\"\n",
    );
    // box has the most free slots (its max_workers against local's 1): without the probe's
    // answer the workers would go there.
    let args = |json: bool| {
        let mut a = vec!["dispatch"];
        if json {
            a.push("--json");
        }
        a.extend(["--team", &team, "--hosts", "box,local", "--parallel", "1"]);
        a.extend(["--", "a host down"]);
        a
    };
    let started = std::time::Instant::now();
    let out = wait_limited(t.command(&args(false)).spawn().unwrap(), &args(false));
    let took = started.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    let said: Vec<&str> = stdout
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("box: "))
        .collect();
    assert_eq!(said.len(), 1, "{stdout}");
    assert!(
        said[0].starts_with("box: no workers (not answering: ssh to host box: ")
            && said[0].contains("Connection refused")
            && said[0].ends_with(')'),
        "{stdout}"
    );
    assert!(!stdout.contains("local: no workers"), "{stdout}");
    // Only the hosts that got workers count toward what runs at once: box's share is never
    // used.
    assert!(
        stdout.contains("hosts:  local 1 at once (1 at once in all)")
            && stdout.contains(", 1 at once over 1 host):"),
        "{stdout}"
    );
    eprintln!("dispatch over a host that is down took {took:?}:\n{stdout}");
    // One probe, refused at once: nothing waits for a limit.
    assert!(took.as_secs() < 10, "dispatch took {took:?}");

    let out = wait_limited(t.command(&args(true)).spawn().unwrap(), &args(true));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&out.stdout));
    });
    let unused = json["hosts_without_workers"].as_array().unwrap();
    assert_eq!(unused.len(), 1, "{json}");
    assert_eq!(unused[0]["host"], "box", "{json}");
    let reason = unused[0]["reason"].as_str().unwrap();
    assert_eq!(format!("box: no workers ({reason})"), said[0]);
    for w in json["workers"].as_array().unwrap() {
        assert!(w["host"].is_null() || w["host"] == "local", "{w}");
    }
}

#[test]
fn dispatch_over_a_frozen_host_is_bounded_by_the_one_probe_and_says_it_did_not_answer() {
    let Some(t) = HostRepo::start("hosts-dispatch-frozen") else {
        return;
    };
    let team =
        t.team("[[worker]]\nid = \"one\"\nrole = \"backend-engineer\"\nprovider = \"sim\"\n");
    let args = [
        "dispatch",
        "--team",
        &team,
        "--hosts",
        "box,local",
        "--",
        "a host frozen",
    ];
    let frozen = t.host.freeze();
    assert!(!frozen.is_empty(), "no sshd to freeze");
    let started = std::time::Instant::now();
    let out = wait_limited(t.command(&args).spawn().unwrap(), &args);
    let took = started.elapsed();
    t.host.thaw(&frozen);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    eprintln!("dispatch over a frozen host took {took:?}:\n{stdout}");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // ssh's own connect limit (10 s) or the probe's (12 s), whichever ends it first.
    assert!(
        stdout.contains("\n        box: no workers (not answering: ")
            && (stdout.contains("timed out") || stdout.contains("did not answer within 12 s")),
        "{stdout}"
    );
    // One probe, bounded: the reason is not asked for again.
    assert!(took < Duration::from_secs(20), "dispatch took {took:?}");
}

/// Planning's probe of a host frozen before the run (sshd SIGSTOPped) is its first
/// contact that fails: the host is said not to answer as soon as the run's stage starts,
/// and lost `lost_after_s` after that probe asked, not after a launch and a probe of the
/// driver's own failed too (69 s for a `lost_after_s` of 40, measured by hand).
#[test]
fn a_host_frozen_before_the_run_is_lost_its_lost_after_s_after_planning_found_it_silent() {
    let Some(t) = HostRepo::start("hosts-frozen-plan") else {
        return;
    };
    let lost_after = 20;
    t.host
        .write_hosts_file_lost_after(t.path(), "box", lost_after);
    let team = t.team(
        "[[worker]]\nid = \"simmer\"\nrole = \"backend-engineer\"\nprovider = \"sim\"\nhost = \"box\"\nmax_attempts = 1\n\
         prompt = \"Do: {problem}\\nsim: lines=2\"\n",
    );
    let run = t.run_frozen_from_the_start(&team);
    let (all, t0_utc) = (&run.all, run.t0_utc);
    let planned = run.when(|l| l.contains("waits for it as the run's other workers do"));
    let silent = run.when(|l| {
        l.contains("host box does not answer") && l.contains("state is unknown until it does")
    });
    let lost = run.when(|l| l.contains("host box was lost: unreachable for"));
    let s = summary(&run.out);
    assert_eq!(
        worker(&s, "simmer")["placement"],
        "attempt 1 on local (box lost)",
        "{s}\n{all}"
    );
    // Planning's probe waits for its limit (12 s); the run's stage starts right after.
    assert!(
        silent.saturating_sub(planned) <= Duration::from_secs(5),
        "said {:?} after planning\n{all}",
        silent.saturating_sub(planned)
    );
    // Lost lost_after_s after planning's probe asked (its time in helpers.json), with a
    // little slack for a loaded machine: not a 15 s launch and a 5 s probe later.
    let helpers: serde_json::Value = serde_json::from_slice(
        &std::fs::read(only_run_dir(t.path()).join("helpers.json")).unwrap(),
    )
    .unwrap();
    let asked = helpers["box"]["since"]
        .as_str()
        .and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok())
        .unwrap_or_else(|| panic!("no time of planning's probe: {helpers}"));
    let asked = (asked.with_timezone(&chrono::Utc) - t0_utc)
        .to_std()
        .unwrap_or_default();
    let bound = asked + Duration::from_secs(lost_after + 5);
    assert!(
        lost <= bound,
        "lost {lost:?} after the run began, planning asked at {asked:?}\n{all}"
    );
}
