//! A remote attempt's life on an SSH host (`support::sshd`): crewmux ends it there (cancel,
//! a wall timeout, what an attempt left behind) with nothing of it left on the host.

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use crate::support::on_host::*;
use crate::support::sshd::*;
use crate::support::*;

/// Live processes on `host` whose environment holds `needle` (`NAME=value`), read from
/// `/proc` there over ssh.
pub fn processes_on_host(host: &SshHost, needle: &str) -> Vec<u32> {
    let script = format!(
        "for f in $(grep -lzxF -e '{needle}' /proc/[0-9]*/environ 2>/dev/null); do \
         p=${{f#/proc/}}; p=${{p%/environ}}; \
         case $(sed 's/.*) //' /proc/$p/stat 2>/dev/null) in Z*|'') ;; *) echo $p;; esac; done"
    );
    let out = host.ssh(&[&script]);
    assert!(
        out.status.success(),
        "reading /proc on the host: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect()
}

/// Everything about a finished run, for an assertion's message.
pub fn explain(project: &Path, out: &Output) -> String {
    format!(
        "stdout: {}\nstderr: {}\nlog: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        std::fs::read_to_string(project.join(".crewmux/crewmux.log")).unwrap_or_default()
    )
}

const ESCAPERS_THERE: &str = r#"
parallel = 3

[[worker]]
id = "hanger"
role = "backend-engineer"
provider = "command"
host = "box"
max_attempts = 1
timeout_s = 2
command = ["sh", "-c", "setsid sh -c 'sleep 302 & sleep 303' >/dev/null 2>&1 & sleep 300"]

[[worker]]
id = "waiter"
role = "backend-engineer"
provider = "command"
host = "box"
max_attempts = 1
command = ["sh", "-c", "setsid sleep 304 >/dev/null 2>&1 & nohup sleep 305 >/dev/null 2>&1 & (trap '' TERM; exec sleep 306) & echo waiting; sleep 300"]

[[worker]]
id = "leaver"
role = "backend-engineer"
provider = "command"
host = "box"
max_attempts = 1
command = ["sh", "-c", "setsid sleep 307 >/dev/null 2>&1 & echo done"]
"#;

#[test]
fn cancel_and_a_wall_timeout_end_a_remote_worker_and_leave_nothing_of_it_on_the_host() {
    let Some(t) = HostRepo::start("hosts-kills") else {
        return;
    };
    let team = t.team(ESCAPERS_THERE);
    let args = headless(&team, "end them there");
    let child = t.spawn(&args);
    wait_running_remotely(t.path(), "waiter");
    let run_id = run_id(t.path());
    // Each worker's escapers are on the host before the cancel.
    let needle = format!("CREWMUX_RUN_ID={run_id}");
    let started = wait_for(
        || processes_on_host(&t.host, &needle).len() >= 4,
        Duration::from_secs(30),
    );
    assert!(started, "{:?}", processes_on_host(&t.host, &needle));
    let cancel = t.spawn(&["cancel", &run_id, "--worker", "waiter", "--grace", "1"]);
    let c = wait_limited(cancel, &["cancel"]);
    assert_eq!(c.status.code(), Some(0), "{}", explain(t.path(), &c));
    let out = wait_limited(child, &args);
    assert_events_once(t.path());
    let s = summary(&out);
    for (id, status) in [
        ("hanger", "timeout"),
        ("waiter", "cancelled"),
        ("leaver", "completed"),
    ] {
        assert_eq!(
            worker(&s, id)["status"].as_str(),
            Some(status),
            "{id}: {}",
            explain(t.path(), &out)
        );
    }
    // Nothing of the run is left on the host: not the panes' processes, not what left
    // their groups, not what ignored SIGTERM.
    let clean = wait_for(
        || processes_on_host(&t.host, &needle).is_empty(),
        Duration::from_secs(10),
    );
    assert!(
        clean,
        "left on the host: {:?}\n{}",
        processes_on_host(&t.host, &needle),
        explain(t.path(), &out)
    );
}

/// The events of `kind` for `worker` in the run folder `run` so far.
fn events_of(run: &Path, kind: &str, worker: &str) -> usize {
    std::fs::read_to_string(run.join("events.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["kind"] == kind && e["worker"] == worker)
        .count()
}

#[test]
fn a_remote_workers_rate_limit_line_is_acted_on_while_it_runs() {
    let Some(t) = HostRepo::start("hosts-live") else {
        return;
    };
    let team = t.team("[[worker]]\nid = \"limited\"\nrole = \"backend-engineer\"\nprovider = \"command\"\nhost = \"box\"\nmax_attempts = 1\n\
         command = [\"sh\", \"-c\", \"echo started; sleep 1; echo 'Error: 429 Too Many Requests (rate limit reached)'; sleep 300\"]\n",
    );
    // A `command` worker has no rate-limit patterns of its own: the project names one.
    std::fs::create_dir_all(t.path().join(".crewmux")).unwrap();
    std::fs::write(
        t.path().join(".crewmux/providers.toml"),
        "[providers.command]\nrate_limit_patterns = [\"too many requests\"]\n",
    )
    .unwrap();
    let args = headless(&team, "live output");
    let child = t.spawn(&args);
    wait_running_remotely(t.path(), "limited");
    let run = only_run_dir(t.path());
    let seen = wait_for(
        || events_of(&run, "worker-rate-limited", "limited") > 0,
        Duration::from_secs(30),
    );
    // Seen while the attempt still runs on the host (it sleeps 300 s after the line).
    let state = try_state(t.path()).unwrap();
    assert!(seen, "no rate-limit event while it ran: {state}");
    assert_eq!(
        state_worker(&state, "limited")["status"],
        "running",
        "{state}"
    );
    let log = std::fs::read_to_string(run.join("workers/limited/attempt-1/output.log")).unwrap();
    assert!(log.contains("started") && log.contains("429"), "{log}");
    let run_id = run.file_name().unwrap().to_string_lossy().into_owned();
    let cancel = t.spawn(&["cancel", &run_id, "--grace", "1"]);
    wait_limited(cancel, &["cancel"]);
    let out = wait_limited(child, &args);
    assert_events_once(t.path());
    let s = summary(&out);
    assert_eq!(
        worker(&s, "limited")["status"],
        "cancelled",
        "{}",
        explain(t.path(), &out)
    );
    // The stream ended with the attempt: no `tail` follows the file on the host any more
    // (the pane's own `pipe-pane` writer goes with its window).
    let remote_log = t
        .host
        .workdir
        .path()
        .join("runs")
        .join(&run_id)
        .join("workers/limited/attempt-1/output.log");
    let following = || {
        let out = t.host.ssh(&["ps -eo pid=,ppid=,args="]);
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.contains(&remote_log.display().to_string()) && l.contains("tail"))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let gone = wait_for(|| following().is_empty(), Duration::from_secs(10));
    assert!(gone, "left following the output: {:?}", following());
}

/// Pids on `host` of tmux control-mode clients attached to `session` of `socket`.
fn control_clients(host: &SshHost, socket: &str, session: &str) -> Vec<u32> {
    let out = host.ssh(&["ps -eo pid=,args="]);
    let want = format!("-L {socket} -C attach-session -t ={session} ");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (pid, args) = l.trim().split_once(' ')?;
            (args.starts_with("tmux") && args.contains(&want)).then(|| pid.parse().ok())?
        })
        .collect()
}

#[test]
fn a_control_client_orphaned_by_a_dead_ssh_connection_is_ended_on_reconnect() {
    let Some(t) = HostRepo::start("hosts-orphan") else {
        return;
    };
    let team = t.team("[[worker]]\nid = \"far\"\nrole = \"backend-engineer\"\nprovider = \"command\"\nhost = \"box\"\nmax_attempts = 1\n\
         command = [\"sh\", \"-c\", \"echo started; sleep 300\"]\n",
    );
    let args = headless(&team, "orphans");
    let child = t.spawn(&args);
    wait_running_remotely(t.path(), "far");
    let state = try_state(t.path()).unwrap();
    let session = state["session"].as_str().unwrap().to_string();
    let run_id = state["run_id"].as_str().unwrap().to_string();
    let mut first = vec![];
    let up = wait_for(
        || {
            first = control_clients(&t.host, &t.host.tmux_socket, &session);
            first.len() == 1
        },
        Duration::from_secs(30),
    );
    assert!(up, "one control client on the host: {first:?}");
    assert!(
        t.host.kill_ssh_clients() > 0,
        "no ssh client of crewmux to kill"
    );
    // A new channel comes up, and the client the dead connection left is ended.
    let mut now = vec![];
    let ok = wait_for(
        || {
            now = control_clients(&t.host, &t.host.tmux_socket, &session);
            now.len() == 1 && now[0] != first[0]
        },
        Duration::from_secs(60),
    );
    assert!(ok, "control clients before {first:?}, now {now:?}");
    // The host's tmux server still answers every client.
    let ls = t
        .host
        .ssh(&[&format!("tmux -L {} list-sessions", t.host.tmux_socket)]);
    assert!(
        ls.status.success(),
        "{}",
        String::from_utf8_lossy(&ls.stderr)
    );
    let cancel = t.spawn(&["cancel", &run_id, "--grace", "1"]);
    wait_limited(cancel, &["cancel"]);
    let out = wait_limited(child, &args);
    assert_events_once(t.path());
    assert_eq!(
        worker(&summary(&out), "far")["status"],
        "cancelled",
        "{}",
        explain(t.path(), &out)
    );
}

#[test]
fn a_remote_pane_gets_a_utf8_locale_when_the_ssh_session_has_none() {
    if !sshd_ready("hosts_life_locale") {
        return;
    }
    let host = SshHost::start();
    // The test's ssh config forwards no locale variable (no `SendEnv`), and its sshd reads
    // no locale file (no PAM): a session there has no UTF-8 locale of its own.
    let bare = host.ssh(&["echo \"[$LC_ALL|$LC_CTYPE|$LANG]\""]);
    assert_eq!(String::from_utf8_lossy(&bare.stdout).trim(), "[||]");
    let server = TmuxServer::new("hosts-locale");
    let tmp = repo(&[("README", "x\n")]);
    host.write_hosts_file(tmp.path(), "box");
    let team = team_file(
        tmp.path(),
        "team.toml",
        "[[worker]]\nid = \"far\"\nrole = \"backend-engineer\"\nprovider = \"command\"\nhost = \"box\"\nmax_attempts = 1\n\
         command = [\"sh\", \"-c\", \"echo \\\"locale=[$LC_ALL|$LC_CTYPE]\\\"\"]\n",
    );
    let args = headless(team.to_str().unwrap(), "locale");
    let out = wait_limited(
        spawn_on_host(tmp.path(), &server.socket, &host, &args),
        &args,
    );
    assert_events_once(tmp.path());
    assert_eq!(
        worker(&summary(&out), "far")["status"],
        "completed",
        "{}",
        explain(tmp.path(), &out)
    );
    let log =
        std::fs::read_to_string(only_run_dir(tmp.path()).join("workers/far/attempt-1/output.log"))
            .unwrap();
    assert!(log.contains("locale=[|C.UTF-8]"), "{log}");
}
