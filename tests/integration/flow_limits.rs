//! No run waits forever, end to end in real tmux panes: a stand-in codex that only prints
//! reconnect lines ends `failed` with `stalled: …`, as does a program on a `command`
//! provider whose providers.toml names its retry line; a silent worker ends `timeout`; the
//! default limits reach built-in modes (overridden through the flags).

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::support::*;

/// A stand-in `codex` on PATH: answers `--version` and `login status`, and otherwise runs
/// `body` (a shell script).
fn fake_codex(dir: &Path, body: &str) -> String {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let script = format!(
        "#!/bin/sh\ncase \"$1\" in\n  --version) echo 'codex-cli 0.171.0'; exit 0;;\n  login) echo 'Logged in using an API key'; exit 0;;\nesac\n{body}\n"
    );
    let path = bin.join("codex");
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

fn run_with_path(project: &Path, socket: &str, path: &str, args: &[&str]) -> std::process::Output {
    let child = crewmux()
        .current_dir(project)
        .env("CREWMUX_TMUX_SOCKET", socket)
        .env("PATH", path)
        .env("CODEX_API_KEY", "fake")
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("crewmux runs");
    wait_limited(child, args)
}

/// Seconds between a worker's start and end in the run's state.
fn ran_for(project: &Path, id: &str) -> i64 {
    let state: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(only_run_dir(project).join("state.json")).unwrap(),
    )
    .unwrap();
    let w = state["workers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["id"] == id)
        .unwrap()
        .clone();
    let t = |k: &str| {
        chrono::DateTime::parse_from_rfc3339(w[k].as_str().unwrap_or_else(|| panic!("{k}: {w}")))
            .unwrap()
    };
    (t("ended_at") - t("started_at")).num_seconds()
}

#[test]
fn a_worker_printing_only_reconnect_lines_ends_failed_stalled() {
    if !tmux_ready("a_worker_printing_only_reconnect_lines_ends_failed_stalled") {
        return;
    }
    let server = TmuxServer::new("stall");
    let tmp = crate::support::project();
    let path = fake_codex(
        tmp.path(),
        r#"while true; do echo '{"type":"error","message":"Reconnecting... 1/5 (stream disconnected before completion)"}'; sleep 2; done"#,
    );
    let out = run_with_path(
        tmp.path(),
        &server.socket,
        &path,
        &[
            "run",
            "--mode",
            "solo",
            "--provider",
            "codex",
            "--no-clarify",
            "--headless",
            "--max-attempts",
            "1",
            "--max-fix-rounds",
            "0",
            "--stall-after",
            "4",
            "Add a health endpoint to the API",
        ],
    );
    let s = summary(&out);
    let solo = worker(&s, "solo");
    assert_eq!(solo["status"], "failed", "{s}");
    let reason = solo["reason"].as_str().unwrap();
    assert!(reason.starts_with("stalled: "), "{reason}");
    assert!(reason.contains("Reconnecting... 1/5"), "{reason}");
    assert_eq!(out.status.code(), Some(1), "{s}");
    // 4 s of stall lines, then SIGTERM and its grace: well before any default timeout.
    let took = ran_for(tmp.path(), "solo");
    assert!((4..=20).contains(&took), "ran {took}s");
    let events = std::fs::read_to_string(only_run_dir(tmp.path()).join("events.jsonl")).unwrap();
    assert!(events.contains("\"kind\":\"worker-stalled\""), "{events}");
}

/// A program that retries forever, on a `command` provider of the project's providers.toml
/// that names its retry line and a 2 s window.
const RETRIER: &str = r#"
max_fix_rounds = 0
[[worker]]
id = "retrier"
role = "backend-engineer"
provider = "retrier"
max_attempts = 1
command = ["sh", "-c", "while true; do echo 'retrying in a moment'; sleep 0.3; done"]
"#;

#[test]
fn a_command_provider_s_stall_patterns_and_window_end_its_stuck_worker() {
    let tmp = TeamProject::new(RETRIER);
    let dir = tmp.path().join(".crewmux");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("providers.toml"),
        "[providers.retrier]\nkind = \"command\"\nprompt = \"env-file\"\n\
         stall_patterns = [\"retrying\"]\nstall_after_s = 2\n",
    )
    .unwrap();
    // A wall timeout short enough that a stall clock that never runs fails the test fast.
    let out = tmp
        .run("Retry")
        .process()
        .args(&["--check-timeout", "20"])
        .output();
    let s = summary(&out);
    let w = worker(&s, "retrier");
    assert_eq!(w["status"], "failed", "{s}");
    let reason = w["reason"].as_str().unwrap();
    assert!(reason.starts_with("stalled: retrying"), "{reason}");
    assert_eq!(out.status.code(), Some(1), "{s}");
    // 2 s of retry lines, then SIGTERM and its grace, not the wall timeout.
    let took = ran_for(tmp.path(), "retrier");
    assert!(took <= 15, "ran {took}s");
}

#[test]
fn a_silent_worker_past_its_idle_timeout_ends_timeout() {
    if !tmux_ready("a_silent_worker_past_its_idle_timeout_ends_timeout") {
        return;
    }
    let server = TmuxServer::new("idle");
    let tmp = TeamProject::new("name = \"quiet\"\nmax_fix_rounds = 0\n[[worker]]\nid = \"quiet\"\nrole = \"architect\"\nprovider = \"command\"\ncommand = [\"sleep\", \"120\"]\nidle_timeout_s = 3\nmax_attempts = 1\n");
    let out = tmp.run("Wait").socket(&server.socket).output();
    let s = summary(&out);
    let w = worker(&s, "quiet");
    assert_eq!(w["status"], "timeout", "{s}");
    assert_eq!(w["reason"], "no output for 3s", "{s}");
    assert_eq!(out.status.code(), Some(1), "{s}");
}

#[test]
fn built_in_modes_get_the_default_limits_which_the_flags_override() {
    if !tmux_ready("built_in_modes_get_the_default_limits_which_the_flags_override") {
        return;
    }
    let server = TmuxServer::new("limits");
    let tmp = crate::support::project();
    let path = fake_codex(tmp.path(), "sleep 120");
    let out = run_with_path(
        tmp.path(),
        &server.socket,
        &path,
        &[
            "run",
            "--mode",
            "solo",
            "--provider",
            "codex",
            "--no-clarify",
            "--headless",
            "--max-attempts",
            "1",
            "--max-fix-rounds",
            "0",
            "--idle-timeout",
            "3",
            "Add a health endpoint to the API",
        ],
    );
    let s = summary(&out);
    assert_eq!(worker(&s, "solo")["status"], "timeout", "{s}");
    assert_eq!(worker(&s, "solo")["reason"], "no output for 3s", "{s}");
    // The state keeps what was not overridden: the defaults.
    let state: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(only_run_dir(tmp.path()).join("state.json")).unwrap(),
    )
    .unwrap();
    let solo = &state["workers"][0];
    assert_eq!(solo["timeout_s"], crewmux::team::limits::DEFAULT_TIMEOUT_S);
    assert_eq!(
        solo["flow"]["stall_after_s"],
        crewmux::team::limits::DEFAULT_STALL_AFTER_S
    );
}

#[test]
fn run_help_states_the_default_limits() {
    use crewmux::team::limits::*;
    let out = crewmux().args(["run", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    for want in [
        format!(
            "[default: {DEFAULT_TIMEOUT_S} = {} min]",
            DEFAULT_TIMEOUT_S / 60
        ),
        format!(
            "[default: {DEFAULT_IDLE_TIMEOUT_S} = {} min]",
            DEFAULT_IDLE_TIMEOUT_S / 60
        ),
        format!("[default: {DEFAULT_STALL_AFTER_S}, or the provider's]"),
        format!(
            "[default: {DEFAULT_CHECK_TIMEOUT_S} = {} min]",
            DEFAULT_CHECK_TIMEOUT_S / 60
        ),
    ] {
        assert!(help.contains(&want), "{want} in\n{help}");
    }
}
