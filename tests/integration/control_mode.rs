//! The control-mode channel against a real tmux on a private socket: calls go over one
//! `tmux -C` client; when it is killed, detached (`%exit`) or stops answering, calls run as
//! tmux processes and a new channel comes up after the back-off.

use std::time::{Duration, Instant};

use crewmux::tmux::TmuxClient;
use tmux_interface::{DisplayMessage, Tmux};

use crate::support::*;

fn say(client: &TmuxClient, text: &str) -> String {
    client
        .run(Tmux::new().add_command(DisplayMessage::new().print().message(text).build()))
        .expect("display-message answers")
}

/// The control-mode clients the server has: (pid, name).
fn control_clients(server: &TmuxServer) -> Vec<(u32, String)> {
    let out = server.tmux(&[
        "list-clients",
        "-F",
        "#{client_pid} #{client_name} #{client_flags}",
    ]);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains("control-mode"))
        .filter_map(|l| {
            let mut f = l.split(' ');
            Some((f.next()?.parse().ok()?, f.next()?.to_string()))
        })
        .collect()
}

fn started(tag: &str) -> Option<TmuxServer> {
    if !tmux_ready(tag) {
        return None;
    }
    let server = TmuxServer::new(tag);
    let out = server.tmux(&[
        "new-session",
        "-d",
        "-s",
        "run",
        "-x",
        "200",
        "-y",
        "50",
        "sleep 1000",
    ]);
    assert!(out.status.success(), "{out:?}");
    Some(server)
}

/// How long a channel may take to come back after the back-off (1 s, doubling) on a loaded
/// machine.
const RECONNECT: Duration = Duration::from_secs(60);

/// How long tmux may take to drop a killed or detached client from its list.
const GONE: Duration = Duration::from_secs(30);

#[test]
fn calls_go_over_one_channel_and_a_killed_channel_falls_back_then_reconnects() {
    let Some(server) = started("control-kill") else {
        return;
    };
    let client = TmuxClient::new(&server.socket).with_control("run");
    assert_eq!(say(&client, "one"), "one\n");
    let clone = client.clone();
    for i in 0..20 {
        assert_eq!(say(&clone, &format!("n{i}")), format!("n{i}\n"));
    }
    let s = client.control_stats().unwrap();
    assert_eq!((s.connects, s.fallbacks), (1, 0), "{s:?}");
    assert_eq!(s.commands, 21);
    let clients = control_clients(&server);
    assert_eq!(
        clients.len(),
        1,
        "one control client per server: {clients:?}"
    );
    assert_eq!(Some(clients[0].0), s.client_pid);

    // The client dies: the next call still answers, through a process.
    let old = s.client_pid.unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(old as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    assert!(
        wait_for(|| control_clients(&server).is_empty(), GONE),
        "the killed client is still listed"
    );
    assert_eq!(say(&client, "after"), "after\n");
    let s = client.control_stats().unwrap();
    assert!(s.fallbacks >= 1 && !s.connected, "{s:?}");

    // After the back-off a new channel carries the calls again.
    assert!(
        wait_for(
            || {
                say(&client, "again");
                client.control_stats().unwrap().connected
            },
            RECONNECT
        ),
        "{:?}",
        client.control_stats()
    );
    let s = client.control_stats().unwrap();
    assert_eq!(s.connects, 2, "{s:?}");
    assert_ne!(s.client_pid, Some(old));
    assert_eq!(control_clients(&server).len(), 1);
}

#[test]
fn a_detached_channel_says_exit_and_one_that_stops_answering_times_out() {
    let Some(server) = started("control-exit") else {
        return;
    };
    let client = TmuxClient::new(&server.socket).with_control("run");
    say(&client, "up");
    let clients = control_clients(&server);
    assert_eq!(clients.len(), 1);
    // `%exit`: the server detaches the client.
    let out = server.tmux(&["detach-client", "-t", &clients[0].1]);
    assert!(out.status.success(), "{out:?}");
    assert!(
        wait_for(|| !client.control_stats().unwrap().connected, GONE),
        "the channel never saw %exit"
    );
    assert_eq!(say(&client, "fallback"), "fallback\n");
    assert!(
        wait_for(
            || {
                say(&client, "x");
                client.control_stats().unwrap().connected
            },
            RECONNECT
        ),
        "no channel after the detach: {:?}",
        client.control_stats()
    );

    // A server that stops answering: the call ends at its limit, like a process would.
    let pid: i32 =
        String::from_utf8_lossy(&server.tmux(&["display-message", "-p", "#{pid}"]).stdout)
            .trim()
            .parse()
            .unwrap();
    let stop = |sig| nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), sig).unwrap();
    stop(nix::sys::signal::Signal::SIGSTOP);
    let t = Instant::now();
    let err = client
        .run(Tmux::new().add_command(DisplayMessage::new().print().message("x").build()))
        .unwrap_err();
    stop(nix::sys::signal::Signal::SIGCONT);
    // Bounded by the 3 s call limit, not hanging: the margin is for a loaded machine.
    assert!(t.elapsed() < Duration::from_secs(15), "{:?}", t.elapsed());
    assert!(err.to_string().contains(&server.socket), "{err}");
    assert!(!client.control_stats().unwrap().connected);
    assert!(
        wait_for(
            || {
                say(&client, "back");
                client.control_stats().unwrap().connected
            },
            RECONNECT
        ),
        "no channel after SIGCONT: {:?}",
        client.control_stats()
    );
}

#[test]
fn text_pasted_over_the_channel_arrives_byte_for_byte() {
    let Some(server) = started("control-paste") else {
        return;
    };
    let tmp = crate::support::project();
    let file = tmp.path().join("typed");
    let out = server.tmux(&[
        "new-window",
        "-d",
        "-P",
        "-F",
        "#{pane_id}",
        "-t",
        "=run:",
        &format!("stty -echo; cat > '{}'", file.display()),
    ]);
    let pane = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let client = TmuxClient::new(&server.socket).with_control("run");
    let text = "-dash first; \"quotes\" 'single' $HOME ~ \\back\ttab\nsecond line é 日本 \u{1}";
    client.paste(&pane, text).unwrap();
    let s = client.control_stats().unwrap();
    assert_eq!((s.connects, s.fallbacks), (1, 0), "{s:?}");
    let want = format!("{text}\n");
    assert!(
        wait_for(
            || std::fs::read_to_string(&file).unwrap_or_default() == want,
            Duration::from_secs(30)
        ),
        "{:?}",
        std::fs::read_to_string(&file)
    );
}

/// Four command workers that each wait for the file `@GO@` (the test makes it once the new
/// control client is up, so the run cannot end before that), then end with their own code.
const FOUR: &str = r#"
parallel = 4
[[worker]]
id = "a"
role = "backend-engineer"
provider = "command"
max_attempts = 1
command = ["sh", "-c", "while [ ! -e '@GO@' ]; do sleep 0.2; done; echo a done"]

[[worker]]
id = "b"
role = "backend-engineer"
provider = "command"
max_attempts = 1
command = ["sh", "-c", "while [ ! -e '@GO@' ]; do sleep 0.2; done; exit 3"]

[[worker]]
id = "c"
role = "backend-engineer"
provider = "command"
max_attempts = 1
command = ["sh", "-c", "while [ ! -e '@GO@' ]; do sleep 0.2; done; echo c done"]

[[worker]]
id = "d"
role = "backend-engineer"
provider = "command"
max_attempts = 1
command = ["sh", "-c", "while [ ! -e '@GO@' ]; do sleep 0.2; done; exit 1"]
"#;

#[test]
fn a_run_whose_control_client_is_killed_falls_back_reconnects_and_finishes_right() {
    if !tmux_ready("control_run") {
        return;
    }
    let server = TmuxServer::new("control-run");
    let tmp = TeamProject::new("");
    let go = tmp.path().join("go");
    std::fs::write(tmp.team(), FOUR.replace("@GO@", &go.display().to_string())).unwrap();
    let child = tmp
        .run("four waiters")
        .tmux(&server)
        .args(&["--quiet"])
        .spawn();
    wait_state(
        tmp.path(),
        "4 workers running",
        Duration::from_secs(120),
        |s| count_status(s, "running") == 4,
    );
    // The driver's one control client comes up once the run's session exists.
    let mut first = vec![];
    assert!(
        wait_for(
            || {
                first = control_clients(&server);
                !first.is_empty()
            },
            RECONNECT
        ),
        "no control client"
    );
    assert_eq!(first.len(), 1, "{first:?}");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(first[0].0 as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    // Meanwhile polls run as processes; after the back-off a new client comes up.
    let mut second = vec![];
    assert!(
        wait_for(
            || {
                second = control_clients(&server);
                second.len() == 1 && second[0].0 != first[0].0
            },
            RECONNECT
        ),
        "no new control client: {second:?}"
    );
    std::fs::write(&go, "").unwrap();
    let out = wait_limited(child, &["run"]);
    let s = summary(&out);
    let codes: Vec<(String, String, i64)> = ["a", "b", "c", "d"]
        .iter()
        .map(|id| {
            let w = worker(&s, id);
            (
                id.to_string(),
                w["status"].as_str().unwrap_or("").to_string(),
                w["exit_code"].as_i64().unwrap_or(-99),
            )
        })
        .collect();
    assert_eq!(
        codes,
        vec![
            ("a".into(), "completed".into(), 0),
            ("b".into(), "failed".into(), 3),
            ("c".into(), "completed".into(), 0),
            ("d".into(), "failed".into(), 1),
        ],
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let log = std::fs::read_to_string(tmp.path().join(".crewmux/crewmux.log")).unwrap();
    assert!(
        log.contains("the control channel ended; using tmux processes meanwhile"),
        "{log}"
    );
    assert!(log.matches("control channel up").count() >= 2, "{log}");
    assert_events_once(tmp.path());
}

/// A launch batch over the channel hands each window over as tmux answers for it: once
/// each, in order, each with its own pane on the server, nothing run as a tmux process.
#[test]
fn a_launch_batch_hands_each_window_over_in_order_with_its_own_pane() {
    use crewmux::backend::{Multiplexer, SpawnSpec};
    let Some(server) = started("control-batch") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let launch = tmp.path().join("launch.sh");
    std::fs::write(&launch, "exec sleep 1000\n").unwrap();
    let specs: Vec<SpawnSpec> = (0..6)
        .map(|i| SpawnSpec {
            worker: format!("w{i}"),
            attempt: 1,
            nonce: format!("n{i}"),
            window: format!("w{i}-1"),
            cwd: tmp.path().to_path_buf(),
            launch: launch.clone(),
            log: tmp.path().join(format!("w{i}.log")),
            env: vec![],
            secret_env: vec![],
            host: None,
        })
        .collect();
    let mut backend =
        crewmux::tmux::TmuxBackend::new(&server.socket, "run", vec![]).with_control_mode();
    let mut launcher = backend
        .launcher()
        .expect("tmux starts attempts off the loop");
    let mut got = vec![];
    launcher.spawn_each(&specs, &mut |i, r| got.push((i, r)));
    let order: Vec<usize> = got.iter().map(|(i, _)| *i).collect();
    assert_eq!(order, [0, 1, 2, 3, 4, 5]);
    let out = server.tmux(&["list-panes", "-s", "-t", "=run", "-F", "#{pane_id}"]);
    let panes = String::from_utf8_lossy(&out.stdout).to_string();
    let mut seen = std::collections::HashSet::new();
    for (i, r) in got {
        let pane = r
            .unwrap_or_else(|e| panic!("window {i}: {e}"))
            .pane_id
            .unwrap();
        let id = pane.split('@').next().unwrap().to_string();
        assert!(panes.lines().any(|l| l == id), "{pane} not in {panes}");
        assert!(seen.insert(id), "window {i} has another's pane");
    }
    let s = backend.client().control_stats().unwrap();
    assert_eq!(s.fallbacks, 0, "{s:?}");
}
