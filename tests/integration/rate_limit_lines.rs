//! Each provider's own rate-limit patterns mark a worker `rate-limited`, without a
//! credential store: claude's `overloaded_error` marks a claude worker, while the same line
//! from codex (whose patterns do not name it) does not; a `command` worker, which names no
//! pattern, is never marked by a number in its output.

use crate::support::run::{crewmux, only_run_dir};
use crate::support::standins::{serial, Bin};
use crate::support::wait::events;
use crate::support::TeamProject;

const TEAM: &str = r#"
name = "limits"
parallel = 2
max_fix_rounds = 0

[[worker]]
id = "claude-w"
role = "backend-engineer"
provider = "claude"
max_attempts = 1

[[worker]]
id = "codex-w"
role = "reviewer"
provider = "codex"
max_attempts = 1
"#;

#[test]
fn a_providers_own_rate_limit_line_marks_its_worker() {
    let _g = serial();
    let bin = Bin::new();
    let line = "echo 'API Error: 529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"}}'\nsleep 1\nexit 1";
    bin.script("claude", line);
    bin.script("codex", line);
    let project = TeamProject::new(TEAM);
    let out = crewmux()
        .current_dir(project.path())
        .env_clear()
        .env("PATH", format!("{}:/usr/bin:/bin", bin.bin_dir().display()))
        .env("HOME", bin.home())
        .env("CREWMUX_CONFIG_DIR", bin.dir.path().join("config"))
        .env("ANTHROPIC_API_KEY", "k")
        .env("CODEX_API_KEY", "k")
        .args(["run", "--no-clarify", "--headless", "--backend", "process"])
        .args(["--team", project.team_arg(), "Fix the app"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let marked: Vec<String> = events(&only_run_dir(project.path()))
        .iter()
        .filter(|e| e["kind"] == "worker-rate-limited")
        .map(|e| e["worker"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(marked, vec!["claude-w".to_string()]);
}

#[test]
fn a_command_workers_429_is_no_rate_limit() {
    let _g = serial();
    let bin = Bin::new();
    let project = TeamProject::new(
        "[[worker]]\nid = \"w\"\nrole = \"backend-engineer\"\nprovider = \"command\"\n\
         max_attempts = 1\ncommand = [\"sh\", \"-c\", \"echo 'ligne é ✓ 429'; echo 'HTTP 429 Too Many Requests'; exit 3\"]\n",
    );
    let out = crewmux()
        .current_dir(project.path())
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", bin.home())
        .env("CREWMUX_CONFIG_DIR", bin.dir.path().join("config"))
        .args(["run", "--no-clarify", "--headless", "--backend", "process"])
        .args(["--team", project.team_arg(), "Fix the app"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let run = only_run_dir(project.path());
    let all = events(&run);
    assert!(
        !all.iter().any(|e| e["kind"] == "worker-rate-limited"),
        "{all:?}"
    );
    let state = std::fs::read_to_string(run.join("state.json")).unwrap();
    assert!(state.contains("exit code 3"), "{state}");
    assert!(!state.contains("rate-limited"), "{state}");
}
