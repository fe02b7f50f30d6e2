//! The credential store in a run: a sim worker that prints a rate-limit line is retried with
//! the provider's next key, the event log names labels only, and no file of the run, no
//! output of crewmux and no pane's screen holds a byte sequence of any key.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::support::*;

const PASS: &str = "run test passphrase";
const KEYS: [(&str, &str); 2] = [
    ("first", "sk-sim-FirstRunKEY-4f1c9a7e2b"),
    ("second", "sk-sim-SecondRunKEY-8d3b6c0a5e"),
];

/// A limited worker: every attempt prints a rate-limit line and exits 1.
const LIMITED_TEAM: &str = r#"
name = "limited"

[[worker]]
id = "limited"
role = "backend-engineer"
max_attempts = 2
prompt = "Do: {problem}\nsim: lines=2\nsim: delay-ms=30\nsim: fail-with=Error: 429 Too Many Requests (rate limit reached)"
"#;

fn creds(config: &Path, args: &[&str], stdin: &str) {
    let out = assert_cmd::Command::new(env!("CARGO_BIN_EXE_crewmux"))
        .arg("creds")
        .args(args)
        .env("CREWMUX_CONFIG_DIR", config)
        .env("CREWMUX_CREDENTIAL_PASSPHRASE", PASS)
        .write_stdin(stdin)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A config dir whose store holds both sim keys, handed out by failover (so only a
/// rotation, never round-robin, changes the key between attempts).
fn store_with_two_sim_keys(root: &Path) -> PathBuf {
    let config = root.join("config");
    for (label, key) in KEYS {
        creds(
            &config,
            &["add", "--provider", "sim", "--label", label],
            key,
        );
    }
    creds(
        &config,
        &["rotate", "--provider", "sim", "--strategy", "failover"],
        "",
    );
    config
}

fn run_limited(project: &Path, config: &Path, socket: &str, backend: &str) -> Output {
    let team = team_file(project, "team.toml", LIMITED_TEAM);
    crewmux()
        .current_dir(project)
        .env("CREWMUX_TMUX_SOCKET", socket)
        .env("CREWMUX_CONFIG_DIR", config)
        .env("CREWMUX_CREDENTIAL_PASSPHRASE", PASS)
        .args([
            "run",
            "--team",
            team.to_str().unwrap(),
            "--provider",
            "sim",
            "--no-clarify",
        ])
        .args(["--headless", "--backend", backend, "Add a health endpoint"])
        .output()
        .unwrap()
}

/// Fails when `haystack` holds any 6-byte piece of any test key.
fn assert_no_key_bytes(what: &str, haystack: &[u8]) {
    for (_, key) in KEYS {
        for piece in key.as_bytes().windows(6) {
            assert!(
                !haystack.windows(6).any(|w| w == piece),
                "{what} holds `{}` of a key",
                String::from_utf8_lossy(piece)
            );
        }
    }
}

fn assert_no_key_in_tree(dir: &Path) -> usize {
    let mut files = 0;
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            files += assert_no_key_in_tree(&path);
        } else if !kind.is_file() {
            // A FIFO or socket: opening it could wait for a peer for good.
            continue;
        } else if let Ok(bytes) = std::fs::read(&path) {
            assert_no_key_bytes(&path.display().to_string(), &bytes);
            files += 1;
        }
    }
    files
}

fn assert_rotated_by_label(project: &Path, out: &Output) {
    let s = summary(out);
    let w = worker(&s, "limited");
    assert_eq!(
        (w["status"].as_str(), w["attempts"].as_i64()),
        (Some("failed"), Some(2)),
        "{s}"
    );
    let run = only_run_dir(project);
    let events = std::fs::read_to_string(run.join("events.jsonl")).unwrap();
    let lines: Vec<&str> = events.lines().collect();
    let started = |n: u32, label: &str| {
        lines.iter().position(|l| {
            l.contains("\"kind\":\"worker-started\"")
                && l.contains(&format!("\"attempt\":{n}"))
                && l.contains(&format!("credential `{label}`"))
        })
    };
    let rotated = lines.iter().position(|l| {
        l.contains("\"kind\":\"credential-rotated\"")
            && l.contains("rate limited on credential `first`; sim moves to `second`")
    });
    let (a1, rot, a2) = (started(1, "first"), rotated, started(2, "second"));
    assert!(a1.is_some() && rot.is_some() && a2.is_some(), "{events}");
    assert!(
        a1 < rot && rot < a2,
        "attempt 1, rotation, attempt 2 in order:\n{events}"
    );
    let state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("state.json")).unwrap()).unwrap();
    // The limited worker's own attempts (a fix round may add a fixer's dispatch after them).
    let labels: Vec<(i64, &str)> = state["dispatches"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["worker_id"] == "limited")
        .map(|d| {
            (
                d["attempt"].as_i64().unwrap(),
                d["credential_label"].as_str().unwrap_or("-"),
            )
        })
        .collect();
    assert_eq!(
        labels,
        [(1, "first"), (2, "second")],
        "dispatch records keep the label"
    );

    let files = assert_no_key_in_tree(&project.join(".crewmux"));
    assert!(files >= 8, "scanned {files} files");
    assert_no_key_bytes("stdout", &out.stdout);
    assert_no_key_bytes("stderr", &out.stderr);
}

#[test]
fn rate_limited_sim_worker_retries_with_the_next_key_on_the_process_backend() {
    let tmp = crate::support::project();
    let project = tmp.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    let config = store_with_two_sim_keys(tmp.path());
    let out = run_limited(&project, &config, "unused", "process");
    assert_rotated_by_label(&project, &out);
}

#[test]
fn rate_limited_sim_worker_retries_with_the_next_key_in_tmux_and_no_pane_shows_a_key() {
    if !tmux_ready("rate_limited_sim_worker_retries_with_the_next_key_in_tmux") {
        return;
    }
    let server = TmuxServer::new("creds");
    let tmp = crate::support::project();
    let project = tmp.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    let config = store_with_two_sim_keys(tmp.path());
    let out = run_limited(&project, &config, &server.socket, "tmux");
    assert_rotated_by_label(&project, &out);

    // What a dashboard could show or tmux could tell anyone on the machine.
    let panes = server.tmux(&[
        "list-panes",
        "-a",
        "-F",
        "#{pane_id}\t#{pane_start_command}",
    ]);
    let panes = String::from_utf8_lossy(&panes.stdout).into_owned();
    assert_no_key_bytes("pane start commands", panes.as_bytes());
    let mut captured = 0;
    for pane in panes.lines().filter_map(|l| l.split('\t').next()) {
        let screen = server.tmux(&["capture-pane", "-p", "-J", "-S", "-", "-t", pane]);
        assert_no_key_bytes(&format!("pane {pane}"), &screen.stdout);
        captured += 1;
    }
    assert!(captured >= 2, "{panes}");
    let env = server.tmux(&["show-environment", "-g"]);
    assert_no_key_bytes("global tmux environment", &env.stdout);
}

#[test]
fn the_dashboard_screen_and_the_log_file_never_show_a_key() {
    if !tmux_ready("the_dashboard_screen_and_the_log_file_never_show_a_key") {
        return;
    }
    let workers = TmuxServer::new("creds-dash-workers");
    let root = crate::support::project();
    let config = store_with_two_sim_keys(root.path());
    let project = root.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    let team = team_file(&project, "team.toml", LIMITED_TEAM);
    let cmd = format!(
        "cd {} && CREWMUX_TMUX_SOCKET={} CREWMUX_CONFIG_DIR={} CREWMUX_CREDENTIAL_PASSPHRASE='{PASS}' {} run --team {} --provider sim --no-clarify 'Add a health endpoint'; sleep 60",
        project.display(),
        workers.socket,
        config.display(),
        env!("CARGO_BIN_EXE_crewmux"),
        team.display()
    );
    let viewer = Viewer::start("creds-dash-viewer", (160, 45), &cmd);
    let mut screens = Vec::new();
    let end = std::time::Instant::now() + std::time::Duration::from_secs(90);
    loop {
        let screen = viewer.screen();
        let done = screen.contains("done  council");
        screens.extend_from_slice(screen.as_bytes());
        if done || std::time::Instant::now() > end {
            assert!(done, "the run never finished:\n{screen}");
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
    // Every screen seen, the log panel included, and the log file on disk.
    assert_no_key_bytes("dashboard screens", &screens);
    let log = std::fs::read(project.join(".crewmux/crewmux.log")).unwrap();
    assert!(!log.is_empty(), "the log file is written");
    assert_no_key_bytes("crewmux.log", &log);
    assert!(assert_no_key_in_tree(&project.join(".crewmux")) > 0);
    viewer.keys(&["q"]);
}
