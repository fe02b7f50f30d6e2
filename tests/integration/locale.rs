//! tmux without a UTF-8 locale: under `env -i` (a bare cron job or service) a tmux client
//! prints every tab and non-ASCII byte of its replies as `_`, and crewmux could read no
//! pane it started ("tmux did not start window"). crewmux gives the tmux it starts a UTF-8
//! locale, so a run under an empty environment works like any other.

use crate::support::*;

const ONE: &str = r#"
[[worker]]
id = "w"
role = "backend-engineer"
provider = "command"
max_attempts = 1
command = ["echo", "café ok"]
"#;

#[test]
fn a_run_under_an_empty_environment_starts_its_tmux_workers() {
    if !tmux_ready("locale") {
        return;
    }
    let server = TmuxServer::new("locale");
    let tmp = crate::support::project();
    let t = team_file(tmp.path(), "team.toml", ONE);
    let mut cmd = crewmux();
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("XDG_STATE_HOME", state_home())
        .env("CREWMUX_TMUX_SOCKET", &server.socket)
        .current_dir(tmp.path())
        .args([
            "run",
            "--team",
            t.to_str().unwrap(),
            "--no-clarify",
            "--headless",
        ])
        .args(["--backend", "tmux", "print"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let out = wait_limited(cmd.spawn().expect("crewmux runs"), &["run", "env -i"]);
    assert_events_once(tmp.path());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("did not start"), "{err}");
    let s = summary(&out);
    assert_eq!(worker(&s, "w")["status"], "completed", "{s}");
    assert_eq!(worker(&s, "w")["exit_code"], 0, "{s}");
    let log =
        std::fs::read(only_run_dir(tmp.path()).join("workers/w/attempt-1/output.log")).unwrap();
    assert!(
        String::from_utf8_lossy(&log).contains("café ok"),
        "the pane's bytes are kept as printed"
    );
}
