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

/// A tmux that will not start for lack of a UTF-8 locale (tmux 3.3a's own refusal, printed
/// for `-V` too, with exit 1) is said to be that, with the locale as its fix: not a version
/// below the minimum with "install tmux 3.2 or newer".
#[test]
fn a_tmux_without_a_utf8_locale_is_named_as_such_with_its_fix() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = TeamProject::new(ONE);
    let bin = tmp.path().join("fakebin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::write(
        bin.join("tmux"),
        "#!/bin/sh\necho 'tmux: need UTF-8 locale (LC_CTYPE) but have ANSI_X3.4-1968' >&2\nexit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(bin.join("tmux"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let run = |args: &[&str]| {
        let child = crewmux()
            .current_dir(tmp.path())
            .env("PATH", &path)
            .env("CREWMUX_TMUX_SOCKET", "crewmux-test-no-locale")
            .args(args)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        wait_limited(child, args)
    };
    let team = tmp.team_arg();
    let asked = run(&[
        "run",
        "--team",
        team,
        "--no-clarify",
        "--headless",
        "--backend",
        "tmux",
        "go",
    ]);
    let err = String::from_utf8_lossy(&asked.stderr);
    assert_eq!(asked.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(
        err.contains("tmux will not start without a UTF-8 locale")
            && err.contains("need UTF-8 locale (LC_CTYPE) but have ANSI_X3.4-1968")
            && err.contains("LANG=C.UTF-8"),
        "{err}"
    );
    assert!(
        !err.contains("install tmux") && !err.contains("version"),
        "{err}"
    );

    let doctor = run(&["doctor"]);
    let text = String::from_utf8_lossy(&doctor.stdout);
    let line = text
        .lines()
        .find(|l| l.starts_with("tmux"))
        .unwrap_or_default();
    assert!(
        line.contains("without a UTF-8 locale") && line.contains("LANG=C.UTF-8"),
        "doctor: {text}"
    );
    assert!(!line.contains("install tmux"), "doctor: {line}");
}
