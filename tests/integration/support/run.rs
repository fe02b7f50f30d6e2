//! The crewmux binary under test: run it (bounded), start it in the background, read what
//! it leaves (run directory, summary JSON), and write team files for it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The crewmux binary built for the tests, with its XDG state directory (the `--all`
/// project index) inside the build's temporary directory, so tests never add their
/// temporary projects to the person's own index. An exported `RUST_BACKTRACE` needs no
/// removing: crewmux keeps its errors to one line unless `-v` asks for the report (see
/// `cli::an_io_error_names_its_path_on_one_line_and_v_shows_the_cause`).
///
/// `TMUX` and `TMUX_PANE` are removed: a suite started inside the person's own tmux
/// would otherwise have every run end with a `tmux display-message` on their client (the
/// finish notification), which a test counting tmux calls reads as tmux being driven.
pub fn crewmux() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_crewmux"));
    c.env("XDG_STATE_HOME", state_home())
        .env_remove("TMUX")
        .env_remove("TMUX_PANE");
    c
}

/// The `XDG_STATE_HOME` every crewmux the tests start uses (also the tmux servers' panes).
pub fn state_home() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("xdg-state")
}

/// How long one crewmux command of a test may run before the test kills it and fails.
pub const COMMAND_LIMIT: std::time::Duration = std::time::Duration::from_secs(120);

/// Run crewmux in `project` with `socket`; returns its output. Killed (and the test
/// failed) after [`COMMAND_LIMIT`], so a hang never wedges the suite. Every run in
/// `project` then passes the event-once check.
pub fn run_crewmux(project: &Path, socket: &str, args: &[&str]) -> Output {
    let out = wait_limited(spawn_crewmux(project, socket, args), args);
    super::assert_events_once(project);
    out
}

/// Start crewmux in `project` with `socket` in the background (stdin null, output piped);
/// finish it with [`wait_limited`].
pub fn spawn_crewmux(project: &Path, socket: &str, args: &[&str]) -> std::process::Child {
    crewmux()
        .current_dir(project)
        .env("CREWMUX_TMUX_SOCKET", socket)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("crewmux runs")
}

/// Wait for `child` at most [`COMMAND_LIMIT`]; kill it and panic past that.
pub fn wait_limited(child: std::process::Child, what: &[&str]) -> Output {
    super::bounded::output_within(child, COMMAND_LIMIT)
        .unwrap_or_else(|| panic!("crewmux {what:?} did not finish within {COMMAND_LIMIT:?}"))
}

/// Write a team file into `dir` and return its path.
pub fn team_file(dir: &Path, name: &str, body: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, body).unwrap();
    p
}

/// The only run directory under `project`.
pub fn only_run_dir(project: &Path) -> PathBuf {
    let root = project.join(".crewmux").join("runs");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(dirs.len(), 1, "one run in {}", root.display());
    dirs.pop().unwrap()
}

/// Parse the summary JSON printed on stdout.
pub fn summary(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "summary JSON ({e}); stdout: {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// The worker object of `id` in a summary.
pub fn worker<'a>(summary: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    summary["workers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["id"] == id)
        .unwrap_or_else(|| panic!("worker {id} in {summary}"))
}

/// A worker object's status, exit code and attempts, to compare in one assertion.
pub fn outcome(w: &serde_json::Value) -> (Option<&str>, Option<i64>, Option<i64>) {
    (
        w["status"].as_str(),
        w["exit_code"].as_i64(),
        w["attempts"].as_i64(),
    )
}

/// A three-worker team of sim agents: one succeeds, one exits 3 (one attempt only), one
/// fails its first attempt and succeeds on the second.
pub const THREE_SIM_WORKERS: &str = r#"
name = "three"
parallel = 3

[[worker]]
id = "ok"
role = "backend-engineer"
prompt = "Plan the change for: {problem}\nsim: lines=4\nsim: delay-ms=50"

[[worker]]
id = "bad"
role = "security-auditor"
max_attempts = 1
prompt = "Review: {problem}\nsim: lines=3\nsim: delay-ms=50\nsim: exit=3"

[[worker]]
id = "flaky"
role = "testing-engineer"
prompt = "Test plan for: {problem}\nsim: lines=3\nsim: delay-ms=50\nsim: fail-first"
"#;
