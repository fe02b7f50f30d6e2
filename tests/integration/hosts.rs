//! Workers on an SSH host: a private sshd on a loopback port (`support::sshd`) runs a
//! real tmux "remotely"; the run's other workers stay on `local`.

use crate::support::on_host::*;
use crate::support::*;

const MIXED_TEAM: &str = r#"
parallel = 4

[[worker]]
id = "here"
role = "backend-engineer"
provider = "command"
max_attempts = 1
command = ["sh", "-c", "echo local hello; exit 0"]

[[worker]]
id = "there-ok"
role = "backend-engineer"
provider = "command"
host = "box"
max_attempts = 1
command = ["sh", "-c", "echo remote hello from $PWD; exit 0"]

[[worker]]
id = "there-fail"
role = "backend-engineer"
provider = "command"
host = "box"
max_attempts = 1
command = ["sh", "-c", "echo failing; exit 3"]

[[worker]]
id = "there-forger"
role = "backend-engineer"
provider = "command"
host = "box"
max_attempts = 1
command = ["sh", "-c", "echo __CREWMUX_EXIT_0123456789abcdef__:0; printf '__CREWMUX_EXIT_%s__:0 trailing\\n' whatever; sleep 1; exit 5"]
"#;

#[test]
fn a_team_on_local_and_an_ssh_host_finishes_with_the_right_exit_codes() {
    let Some(t) = HostRepo::start("hosts") else {
        return;
    };
    // Code reaches a host by git: a remote worker's project is a repository.
    let team = t.team(MIXED_TEAM);
    let out = t.run(&headless(&team, "codes on two hosts"));
    let s = summary(&out);
    for (id, status, code) in [
        ("here", "completed", 0),
        ("there-ok", "completed", 0),
        ("there-fail", "failed", 3),
        ("there-forger", "failed", 5),
    ] {
        let w = worker(&s, id);
        assert_eq!(
            (w["status"].as_str(), w["exit_code"].as_i64()),
            (Some(status), Some(code)),
            "{id}: {s}\nstderr: {}\nlog: {}",
            String::from_utf8_lossy(&out.stderr),
            std::fs::read_to_string(t.path().join(".crewmux/crewmux.log")).unwrap_or_default()
        );
    }
    // The remote attempt's files were written on the host and came back here.
    let run = only_run_dir(t.path());
    let run_id = run.file_name().unwrap().to_str().unwrap().to_string();
    let there = t
        .host
        .workdir
        .path()
        .join("runs")
        .join(&run_id)
        .join("workers/there-ok/attempt-1");
    for f in ["launch.sh", "prompt.md", "exit.json", "output.log"] {
        assert!(
            there.join(f).exists(),
            "{f} on the host in {}\nstderr: {}\nlog: {}",
            there.display(),
            String::from_utf8_lossy(&out.stderr),
            std::fs::read_to_string(t.path().join(".crewmux/crewmux.log")).unwrap_or_default()
        );
    }
    let local = run.join("workers/there-ok/attempt-1");
    let log = std::fs::read_to_string(local.join("output.log")).unwrap();
    assert!(
        log.contains(&format!(
            "remote hello from {}",
            t.host
                .workdir
                .path()
                .join("worktrees")
                .join(&run_id)
                .join("there-ok")
                .display()
        )),
        "{log}"
    );
    assert!(local.join("exit.json").exists());
    // The exit codes came from the wrapper's own exit.json, as for a local attempt.
    let state = try_state(t.path()).unwrap();
    for d in state["dispatches"].as_array().unwrap() {
        assert_eq!(d["exit_source"], "exit-file", "{d}");
    }
    // The remote workers ran in panes of the host's tmux server, the local one here.
    let panes = |w: &str| {
        state_worker(&state, w)["pane_id"]
            .as_str()
            .unwrap_or("")
            .to_string()
    };
    assert!(
        panes("there-ok").starts_with("box:%"),
        "{}",
        panes("there-ok")
    );
    assert!(panes("here").starts_with('%'), "{}", panes("here"));
}

#[test]
fn an_unknown_host_or_a_bad_hosts_file_is_one_line_and_nothing_runs() {
    let tmp = project();
    let team = team_file(
        tmp.path(),
        "team.toml",
        "[[worker]]\nid = \"a\"\nrole = \"backend-engineer\"\nprovider = \"command\"\nhost = \"nope\"\ncommand = [\"true\"]\n",
    );
    let args = headless(team.to_str().unwrap(), "x");
    let out = run_crewmux(tmp.path(), "crewmux-test-unused", &args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    // Placed at the `host` value, as the team file's other mistakes are.
    assert!(
        err.trim().starts_with(&format!(
            "crewmux: {}:5:8: worker `a`: unknown host `nope`: the hosts are local;",
            team.display()
        )),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        !tmp.path().join(".crewmux/runs").exists()
            || std::fs::read_dir(tmp.path().join(".crewmux/runs"))
                .unwrap()
                .count()
                == 0
    );
    // dispatch shows only a plan `run` would accept.
    let out = run_crewmux(
        tmp.path(),
        "crewmux-test-unused",
        &["dispatch", "--team", team.to_str().unwrap(), "x"],
    );
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert_eq!(said.trim(), err.trim());

    std::fs::create_dir_all(tmp.path().join(".crewmux")).unwrap();
    std::fs::write(
        tmp.path().join(".crewmux/hosts.toml"),
        "[hosts.nope]\nssh = \"me@nope\"\nworkdir = \"relative\"\n",
    )
    .unwrap();
    let out = run_crewmux(tmp.path(), "crewmux-test-unused", &args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(
            "hosts.toml:3:11: host `nope`: `workdir` \"relative\" must be an absolute path"
        ),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

#[test]
fn a_broken_hosts_file_is_a_warning_with_its_place_when_the_run_uses_no_host() {
    let tmp = project();
    std::fs::create_dir_all(tmp.path().join(".crewmux")).unwrap();
    std::fs::write(
        tmp.path().join(".crewmux/hosts.toml"),
        "[hosts.box]\nssh = \"me@box\"\nworkdir = \"relative\"\n",
    )
    .unwrap();
    let team = team_file(
        tmp.path(),
        "team.toml",
        "[[worker]]\nid = \"a\"\nrole = \"backend-engineer\"\nprovider = \"command\"\ncommand = [\"true\"]\n",
    );
    let team = team.to_str().unwrap();
    let warning = "hosts.toml:3:11: host `box`: `workdir` \"relative\" must be an absolute path";
    let out = run_crewmux(
        tmp.path(),
        "crewmux-test-unused",
        &["dispatch", "--team", team, "x"],
    );
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{said}");
    let lines: Vec<&str> = said.lines().filter(|l| l.contains("hosts.toml")).collect();
    assert_eq!(lines.len(), 1, "{said}");
    assert!(
        lines[0].starts_with("crewmux: warning: ") && lines[0].contains(warning),
        "{said}"
    );
    let out = run_crewmux(
        tmp.path(),
        "crewmux-test-unused",
        &[
            "run",
            "--team",
            team,
            "--backend",
            "process",
            "--no-clarify",
            "--headless",
            "--",
            "x",
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    let s = summary(&out);
    assert_eq!(
        (s["status"].as_str(), worker(&s, "a")["status"].as_str()),
        (Some("done"), Some("completed")),
        "{err}"
    );
    let lines: Vec<&str> = err.lines().filter(|l| l.contains("hosts.toml")).collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines[0].starts_with("crewmux: warning: ") && lines[0].contains(warning),
        "{err}"
    );
    assert_events_once(tmp.path());
}

#[test]
fn killing_the_ssh_connection_mid_run_reconnects_and_loses_nothing() {
    let Some(t) = HostRepo::start("hosts-killed") else {
        return;
    };
    let team = t.team("[[worker]]\nid = \"far\"\nrole = \"backend-engineer\"\nprovider = \"command\"\nhost = \"box\"\nmax_attempts = 1\n\
         command = [\"sh\", \"-c\", \"echo started; sleep 4; echo finished; exit 7\"]\n",
    );
    let args = headless(&team, "hosts come and go");
    let child = t.spawn(&args);
    wait_running_remotely(t.path(), "far");
    assert!(
        t.host.kill_ssh_clients() > 0,
        "no ssh client of crewmux to kill"
    );
    let out = wait_limited(child, &["run"]);
    assert_events_once(t.path());
    let s = summary(&out);
    let w = worker(&s, "far");
    // The attempt kept running on the host; its own exit code came back.
    assert_eq!(outcome(w), (Some("failed"), Some(7), Some(1)), "{s}");
    let run = only_run_dir(t.path());
    let log = std::fs::read_to_string(run.join("workers/far/attempt-1/output.log")).unwrap();
    assert!(log.contains("started") && log.contains("finished"), "{log}");
}

#[test]
fn a_host_gone_for_good_crashes_its_worker_as_host_lost_and_the_retry_runs_on_local() {
    let Some(mut t) = HostRepo::start("hosts-lost") else {
        return;
    };
    let workdir = t.host.workdir.path().display().to_string();
    let team = t.team(&format!(
            "[[worker]]\nid = \"far\"\nrole = \"backend-engineer\"\nprovider = \"command\"\nhost = \"box\"\nmax_attempts = 2\n\
             command = [\"sh\", \"-c\", \"case $PWD in {workdir}*) echo on the host; sleep 120;; esac; echo ran here; exit 0\"]\n"
        ),
    );
    let args = headless(&team, "hosts come and go");
    let child = t.spawn(&args);
    wait_running_remotely(t.path(), "far");
    t.host.stop_sshd();
    t.host.kill_ssh_clients();
    let out = wait_limited(child, &["run"]);
    assert_events_once(t.path());
    let s = summary(&out);
    let w = worker(&s, "far");
    assert_eq!(
        outcome(w),
        (Some("completed"), Some(0), Some(2)),
        "{s}\n{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        std::fs::read_to_string(t.path().join(".crewmux/crewmux.log")).unwrap_or_default()
    );
    let state = try_state(t.path()).unwrap();
    let first = &state["dispatches"][0];
    assert_eq!(first["status"], "crashed", "{first}");
    assert!(
        first["reason"]
            .as_str()
            .is_some_and(|r| r.contains("host lost: box")),
        "{first}"
    );
    assert!(state_worker(&state, "far")["host"].is_null());
    // The move leaves a trace: an event, the retry's record, the summary, `status`.
    let second = &state["dispatches"][1];
    assert_eq!(
        (second["host"].as_str(), second["moved_from"].as_str()),
        (None, Some("box")),
        "{second}"
    );
    assert_eq!(w["placement"], "attempt 2 on local (box lost)", "{s}");
    let events = std::fs::read_to_string(only_run_dir(t.path()).join("events.jsonl")).unwrap();
    assert_eq!(
        events.matches("\"worker-moved\"").count(),
        1,
        "one move, said once: {events}"
    );
    let status = t.run(&["status", s["run_id"].as_str().unwrap()]);
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(
        status.contains("  attempt 2 on local (box lost)\n"),
        "{status}"
    );
    let run = only_run_dir(t.path());
    let log = std::fs::read_to_string(run.join("workers/far/attempt-2/output.log")).unwrap();
    assert!(log.contains("ran here"), "{log}");
}
