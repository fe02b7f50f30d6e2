//! One tmux version check for `doctor` and `run`: a tmux below the minimum (3.2) means the
//! process backend, said in one line, and `--backend tmux` is refused (exit 2). The tmux
//! here is a fake on PATH that reports 2.9a and records any other call.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::support::{crewmux, summary, wait_limited, TeamProject};

const ONE_SIM: &str = "[[worker]]\nid = \"w\"\nrole = \"backend-engineer\"\nprovider = \"sim\"\nmax_attempts = 1\nprompt = \"{problem}\\nsim: lines=2\"\n";

/// A directory holding a `tmux` that prints `version` for `-V` and records every other call
/// in `calls.log` beside it.
fn fake_tmux(dir: &Path, version: &str) -> String {
    let bin = dir.join("fakebin");
    std::fs::create_dir_all(&bin).unwrap();
    let script = bin.join("tmux");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nif [ \"$1\" = -V ]; then echo '{version}'; exit 0; fi\necho \"$*\" >> '{}'\nexit 1\n",
            bin.join("calls.log").display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

fn run_with(project: &Path, path: &str, args: &[&str]) -> std::process::Output {
    let child = crewmux()
        .current_dir(project)
        .env("PATH", path)
        .env("CREWMUX_TMUX_SOCKET", "crewmux-test-old-tmux")
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_limited(child, args)
}

#[test]
fn an_old_tmux_means_the_process_backend_for_run_and_doctor_alike() {
    let tmp = TeamProject::new(ONE_SIM);
    let path = fake_tmux(tmp.path(), "tmux 2.9a");
    let team = tmp.team_arg();

    let out = run_with(
        tmp.path(),
        &path,
        &["run", "--team", team, "--no-clarify", "--headless", "go"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(summary(&out)["backend"], "process", "{err}");
    let said: Vec<&str> = err.lines().filter(|l| l.contains("tmux")).collect();
    assert_eq!(said.len(), 1, "one line about tmux: {err}");
    assert!(
        said[0].contains("tmux 2.9a is older than 3.2") && said[0].contains("--backend process"),
        "{}",
        said[0]
    );
    assert!(
        !tmp.path().join("fakebin/calls.log").exists(),
        "the old tmux was driven: {}",
        std::fs::read_to_string(tmp.path().join("fakebin/calls.log")).unwrap_or_default()
    );

    let asked = run_with(
        tmp.path(),
        &path,
        &[
            "run",
            "--team",
            team,
            "--no-clarify",
            "--headless",
            "--backend",
            "tmux",
            "go",
        ],
    );
    let err = String::from_utf8_lossy(&asked.stderr);
    assert_eq!(asked.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(
        err.contains("--backend tmux: tmux 2.9a is older than 3.2"),
        "{err}"
    );
    assert!(
        err.contains("--backend process"),
        "names the way out: {err}"
    );

    // doctor with the fake tmux alone on PATH: no agent CLI to probe, so it answers at once.
    let only_tmux = tmp.path().join("fakebin").display().to_string();
    let doctor = run_with(tmp.path(), &only_tmux, &["doctor"]);
    let text = String::from_utf8_lossy(&doctor.stdout);
    let line = text
        .lines()
        .find(|l| l.starts_with("tmux"))
        .unwrap_or_default();
    assert!(
        line.contains("tmux 2.9a is older than 3.2") && line.contains("process backend"),
        "doctor: {text}"
    );
    let json = run_with(tmp.path(), &only_tmux, &["doctor", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["tmux"]["ok"], false);
    assert_eq!(v["tmux"]["minimum"], "3.2");
}

#[test]
fn a_tmux_at_the_minimum_is_used() {
    let tmp = crate::support::project();
    fake_tmux(tmp.path(), "tmux 3.2a");
    let only_tmux = tmp.path().join("fakebin").display().to_string();
    let doctor = run_with(tmp.path(), &only_tmux, &["doctor", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&doctor.stdout).unwrap();
    assert_eq!(v["tmux"]["ok"], true, "{v}");
    assert_eq!(v["tmux"]["problem"], serde_json::Value::Null);
}
