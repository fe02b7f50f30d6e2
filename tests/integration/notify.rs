//! Nothing waits for a screen: with no dashboard open, the run's lead tells the person of a
//! worker that asks and of the run's end through `[notify] command` (one JSON object on
//! its stdin, `CREWMUX_EVENT` and `CREWMUX_RUN` in its environment), once each — also when
//! a second lead takes the run over — on both backends; a command that hangs is killed at
//! its timeout and said in lead.log while the run goes on; and every client attached to
//! the person's own tmux server is shown the question.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::support::*;

/// One worker that asks and waits five minutes for the answer.
const ASKING_TEAM: &str = r#"
name = "asking"

[[worker]]
id = "asker"
role = "frontend-designer"
provider = "sim"
prompt = "Design: {problem}\nsim: lines=4\nsim: delay-ms=100\nsim: ask=Which colour should the badge be?\nsim: ask-timeout=300"
"#;

/// One worker that finishes at once.
const QUICK_TEAM: &str = r#"
name = "quick"

[[worker]]
id = "solo"
role = "backend-engineer"
provider = "sim"
prompt = "Build: {problem}\nsim: lines=3\nsim: delay-ms=50"
"#;

/// One worker that asks and takes its own default after 25 s when nobody answers (a
/// worker of the process backend whose lead died cannot be answered: its stdin was the
/// lead's).
const DEFAULT_TEAM: &str = r#"
name = "defaulting"

[[worker]]
id = "asker"
role = "frontend-designer"
provider = "sim"
prompt = "Design: {problem}\nsim: lines=4\nsim: delay-ms=100\nsim: ask=Which colour should the badge be?\nsim: ask-default=Amber\nsim: ask-timeout=25"
"#;

const PROBLEM: &str = "Add a rejected-requests badge to the usage page";

/// The ways a test turns off unless it looks at them: nothing reaches the desktop or a
/// tmux of the machine the tests run on.
const QUIET_WAYS: &str = "bell = false\nosc = false\nnotify-send = false\ntmux = false\n";

/// A config directory whose `config.toml` has no lingering lead and the `[notify]` table
/// `notify`.
fn config_dir(t: &TeamProject, notify: &str) -> PathBuf {
    let dir = t.path().join("config");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("config.toml"),
        format!("[lead]\nlinger-s = 0\n\n[notify]\n{notify}\n"),
    )
    .unwrap();
    dir
}

/// A notify command that appends its stdin, then `env <CREWMUX_EVENT> <CREWMUX_RUN>`, to
/// `got` (one line each).
fn recorder(t: &TeamProject, got: &Path) -> String {
    let script = t.path().join("notified.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nin=$(cat)\nprintf '%s\\nenv %s %s\\n' \"$in\" \"$CREWMUX_EVENT\" \"$CREWMUX_RUN\" >> '{}'\n",
            got.display()
        ),
    )
    .unwrap();
    format!("command = [\"sh\", \"{}\"]", script.display())
}

/// The notifications `got` holds: each JSON object with the environment line after it.
fn notified(got: &Path) -> Vec<(serde_json::Value, String)> {
    let text = std::fs::read_to_string(got).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines
        .chunks(2)
        .filter(|c| c.len() == 2)
        .map(|c| {
            let v = serde_json::from_str(c[0]).unwrap_or_else(|e| panic!("{e}: {text}"));
            (v, c[1].to_string())
        })
        .collect()
}

/// `crewmux run --detach` of `team` on `backend` with `config`; `tmux_env` is the `$TMUX`
/// it is started from. Returns the run id.
fn detach(t: &TeamProject, backend: &Backend, config: &Path, tmux_env: Option<&str>) -> String {
    let args = [
        "run",
        "--team",
        t.team_arg(),
        "--no-clarify",
        "--detach",
        "--backend",
        backend.name,
        "--",
        PROBLEM,
    ];
    let mut cmd = crewmux();
    cmd.current_dir(t.path())
        .env("CREWMUX_TMUX_SOCKET", backend.socket())
        .env("CREWMUX_CONFIG_DIR", config)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    if let Some(env) = tmux_env {
        cmd.env("TMUX", env);
    }
    let out = wait_limited(cmd.spawn().unwrap(), &args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "run --detach: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn lead_pid(run: &Path) -> u32 {
    let text = std::fs::read_to_string(run.join("lead.json")).expect("lead.json");
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["pid"].as_u64().unwrap() as u32
}

fn lead_log(project: &Path) -> String {
    std::fs::read_to_string(only_run_dir(project).join("lead.log")).unwrap_or_default()
}

fn run_with_config(
    t: &TeamProject,
    backend: &Backend,
    config: &Path,
    args: &[&str],
) -> std::process::Output {
    let child = crewmux()
        .current_dir(t.path())
        .env("CREWMUX_TMUX_SOCKET", backend.socket())
        .env("CREWMUX_CONFIG_DIR", config)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_limited(child, args)
}

#[test]
fn a_waiting_worker_and_the_runs_end_reach_the_notify_command_once_each_across_two_leads() {
    for backend in backends("notify-once") {
        let t = TeamProject::new(DEFAULT_TEAM);
        let got = t.path().join("notified.txt");
        let config = config_dir(&t, &format!("{QUIET_WAYS}{}", recorder(&t, &got)));
        let id = detach(&t, &backend, &config, None);
        let run = only_run_dir(t.path());
        let asked = wait_for(|| !notified(&got).is_empty(), Duration::from_secs(90));
        assert!(
            asked,
            "{backend}: nothing notified\nlead.log:\n{}",
            lead_log(t.path())
        );
        let (question, env) = notified(&got).remove(0);
        assert_eq!(question["kind"], "question", "{backend}: {question}");
        assert_eq!(question["event"], "worker-waiting", "{backend}: {question}");
        assert_eq!(question["run"], id.as_str(), "{backend}: {question}");
        assert_eq!(question["worker"], "asker", "{backend}: {question}");
        assert_eq!(question["attempt"], 1, "{backend}: {question}");
        assert_eq!(
            question["message"], "asker asks: Which colour should the badge be?",
            "{backend}: {question}"
        );
        assert!(
            question["at"].as_str().is_some_and(|a| a.contains('T')),
            "{question}"
        );
        assert_eq!(env, format!("env question {id}"), "{backend}");
        // The lead dies while the worker waits; a second lead (attach) takes the run over,
        // finds the same question, and must not notify it again; the worker then takes its
        // default and the run ends.
        let pid = lead_pid(&run);
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        )
        .unwrap();
        assert!(
            wait_for(|| !procs::alive(pid), Duration::from_secs(10)),
            "{backend}"
        );
        let out = run_with_config(&t, &backend, &config, &["attach", "--headless", &id]);
        let s = summary(&out);
        assert_eq!(s["status"], "done", "{backend}: {s}");
        let all = notified(&got);
        let kinds: Vec<&str> = all
            .iter()
            .map(|(v, _)| v["kind"].as_str().unwrap_or(""))
            .collect();
        assert_eq!(kinds, ["question", "run-ended"], "{backend}: {all:?}");
        let (end, env) = &all[1];
        assert_eq!(end["event"], "run-done", "{backend}: {end}");
        assert_eq!(end["worker"], serde_json::Value::Null, "{backend}: {end}");
        assert!(
            end["message"]
                .as_str()
                .unwrap()
                .starts_with("run done: council"),
            "{end}"
        );
        assert_eq!(*env, format!("env run-ended {id}"), "{backend}");
    }
}

#[test]
fn a_run_its_lead_ends_with_no_dashboard_notifies_its_end_once() {
    for backend in backends("notify-end") {
        let t = TeamProject::new(QUICK_TEAM);
        let got = t.path().join("notified.txt");
        let config = config_dir(&t, &format!("{QUIET_WAYS}{}", recorder(&t, &got)));
        detach(&t, &backend, &config, None);
        let run = only_run_dir(t.path());
        wait_state(t.path(), "run done", Duration::from_secs(90), |s| {
            s["status"] == "done"
        });
        // The lead (linger 0) delivers the end before it exits.
        let pid = lead_pid(&run);
        assert!(
            wait_for(|| !procs::alive(pid), Duration::from_secs(30)),
            "{backend}"
        );
        let all = notified(&got);
        let events: Vec<&str> = all
            .iter()
            .map(|(v, _)| v["event"].as_str().unwrap_or(""))
            .collect();
        assert_eq!(
            events,
            ["run-done"],
            "{backend}: {all:?}\n{}",
            lead_log(t.path())
        );
    }
}

#[test]
fn a_notify_command_that_hangs_is_killed_at_its_timeout_said_in_the_lead_log_and_the_run_ends() {
    let backend = Backend::process();
    let t = TeamProject::new(QUICK_TEAM);
    let config = config_dir(
        &t,
        &format!("{QUIET_WAYS}command = [\"sh\", \"-c\", \"sleep 60\"]\ncommand-timeout-s = 1"),
    );
    detach(&t, &backend, &config, None);
    let run = only_run_dir(t.path());
    wait_state(t.path(), "run done", Duration::from_secs(90), |s| {
        s["status"] == "done"
    });
    let pid = lead_pid(&run);
    assert!(wait_for(|| !procs::alive(pid), Duration::from_secs(30)));
    let log = lead_log(t.path());
    assert!(
        log.contains("notify-failed: the notify command `sh` ran longer than 1 s (command-timeout-s) and was killed"),
        "{log}"
    );
    assert_eq!(count_events(&run, "notify-failed"), 1, "{log}");
    assert!(
        procs::working_in(t.path()).is_empty(),
        "the hung command outlived its timeout: {:?}",
        procs::working_in(t.path())
    );
}

#[test]
fn every_client_of_the_persons_own_tmux_is_shown_the_question() {
    if !tmux_ready("every_client_of_the_persons_own_tmux_is_shown_the_question") {
        return;
    }
    // The person's own tmux server, with a client attached (in a viewer's pane), showing
    // messages for a minute so the test reads them at leisure.
    let own = TmuxServer::new("notify-own");
    let out = own.tmux(&[
        "new-session",
        "-d",
        "-s",
        "u",
        "-x",
        "120",
        "-y",
        "20",
        "sleep 600",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    own.tmux(&["set", "-g", "display-time", "60000"]);
    let client = Viewer::start(
        "notify-client",
        (120, 20),
        &format!("TMUX= tmux -L {} attach -t u", own.socket),
    );
    assert!(
        wait_for(
            || !String::from_utf8_lossy(&own.tmux(&["list-clients"]).stdout)
                .trim()
                .is_empty(),
            Duration::from_secs(20)
        ),
        "no client attached: {}",
        client.screen()
    );
    let backend = Backend::tmux("notify-own-workers");
    let t = TeamProject::new(ASKING_TEAM);
    let config = config_dir(
        &t,
        "bell = false\nosc = false\nnotify-send = false\ntmux = true",
    );
    let tmux_env = format!("{},4242,0", socket_path(&own.socket).display());
    let id = detach(&t, &backend, &config, Some(&tmux_env));
    let shown = client.wait_screen("crewmux: asker asks: Which colour", Duration::from_secs(90));
    assert!(shown.contains("badge be?"), "{shown}");
    let out = run_crewmux(t.path(), backend.socket(), &["cancel", &id]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn an_open_dashboard_rings_its_terminal_once_for_the_leads_question() {
    if !tmux_ready("an_open_dashboard_rings_its_terminal_once_for_the_leads_question") {
        return;
    }
    // The question comes a few seconds after the start, once the dashboard follows.
    let t = TeamProject::new(&ASKING_TEAM.replace("delay-ms=100", "delay-ms=1500"));
    let config = config_dir(
        &t,
        "bell = true\nosc = true\nnotify-send = false\ntmux = false",
    );
    let workers = TmuxServer::new("notify-ring-workers");
    let cmd = dashboard_cmd(
        t.path(),
        &workers,
        &format!("CREWMUX_CONFIG_DIR={}", config.display()),
        t.team(),
        PROBLEM,
        "",
    );
    let viewer = Viewer::start("notify-ring", (140, 42), &cmd);
    // Everything the dashboard writes to its terminal, byte for byte.
    let raw = t.path().join("terminal.raw");
    let pipe = format!("cat >> '{}'", raw.display());
    let out = viewer.server.tmux(&["pipe-pane", "-o", "-t", "v", &pipe]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    wait_state(t.path(), "asker waiting", Duration::from_secs(90), |s| {
        state_worker(s, "asker")["status"] == "waiting"
    });
    // The bell, then the desktop sequence (OSC 9, or 777 for VTE terminals), with the question.
    let rung = |bytes: &[u8]| {
        let text = String::from_utf8_lossy(bytes).into_owned();
        text.matches("\x07\x1b]").count()
    };
    let once = wait_for(
        || rung(&std::fs::read(&raw).unwrap_or_default()) == 1,
        Duration::from_secs(30),
    );
    let bytes = std::fs::read(&raw).unwrap_or_default();
    assert!(once, "rung {} times: {}", rung(&bytes), viewer.screen());
    let text = String::from_utf8_lossy(&bytes);
    assert!(
        text.contains("asker asks: Which colour should the badge be?"),
        "{text:?}"
    );
    // Nothing more rings while the question stands (the state is saved and read again).
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(rung(&std::fs::read(&raw).unwrap_or_default()), 1);
    viewer.keys(&["q"]);
    viewer.wait_screen("EXITED", Duration::from_secs(30));
    let id = only_run_dir(t.path())
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let out = run_crewmux(t.path(), workers.socket.as_str(), &["cancel", &id]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_run_cancelled_while_no_lead_drives_it_notifies_its_end_from_the_cancel() {
    let backend = Backend::process();
    let t = TeamProject::new(ASKING_TEAM);
    let got = t.path().join("notified.txt");
    let config = config_dir(&t, &format!("{QUIET_WAYS}{}", recorder(&t, &got)));
    let id = detach(&t, &backend, &config, None);
    let run = only_run_dir(t.path());
    assert!(
        wait_for(|| !notified(&got).is_empty(), Duration::from_secs(90)),
        "nothing notified\nlead.log:\n{}",
        lead_log(t.path())
    );
    let pid = lead_pid(&run);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    assert!(wait_for(|| !procs::alive(pid), Duration::from_secs(10)));
    let out = run_with_config(&t, &backend, &config, &["cancel", &id, "--grace", "1"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    wait_state(t.path(), "run cancelled", Duration::from_secs(30), |s| {
        s["status"] == "cancelled"
    });
    let all = notified(&got);
    let events: Vec<&str> = all
        .iter()
        .map(|(v, _)| v["event"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(events, ["worker-waiting", "run-cancelled"], "{all:?}");
}
