//! For every built-in provider that takes a key from the credential store: the variable
//! `creds add` names is the one a run's launch sets, and the one the provider's CLI reads
//! (`api_key_env`), checked against a stand-in CLI that records its environment.

use std::os::unix::fs::PermissionsExt;

use crate::support::standins::{serial, Bin};

/// A stand-in `name` that records its environment and ends at once (it reads no stdin: the
/// process backend keeps stdin open for answers).
fn stand_in(bin: &Bin, name: &str) {
    let rec = bin.rec(name);
    std::fs::create_dir_all(&rec).unwrap();
    let path = bin.bin_dir().join(name);
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh
/usr/bin/env > '{}/env'
echo 'stand-in {name} done'
",
            rec.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

const PASS: &str = "creds env test passphrase";

fn crewmux(bin: &Bin, project: &std::path::Path) -> assert_cmd::Command {
    let mut c = assert_cmd::Command::cargo_bin("crewmux").unwrap();
    c.env_clear()
        .env("PATH", format!("{}:/usr/bin:/bin", bin.bin_dir().display()))
        .env("HOME", bin.home())
        .env("CREWMUX_CONFIG_DIR", bin.dir.path().join("config"))
        .env("CREWMUX_CREDENTIAL_PASSPHRASE", PASS)
        .timeout(std::time::Duration::from_secs(120))
        .current_dir(project);
    c
}

#[test]
fn the_variable_creds_names_is_the_one_each_launch_sets() {
    let _g = serial();
    let reg = crewmux::providers::Registry::builtin();
    let mut checked = vec![];
    for (name, spec) in reg.agents() {
        let Some(var) = spec.api_key_env.clone() else {
            continue;
        };
        let bin = Bin::new();
        stand_in(&bin, name);
        let project = crate::support::project();
        let key = format!("sk-{name}-StoredKEY-0123456789");
        let out = crewmux(&bin, project.path())
            .args(["creds", "add", "--provider", name])
            .write_stdin(key.clone())
            .output()
            .unwrap();
        assert!(out.status.success(), "{name}: {out:?}");
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(
            said.contains(&format!("(reaches workers as {var})")),
            "{name}: {said}"
        );
        let out = crewmux(&bin, project.path())
            .args(["run", "--provider", name, "--no-clarify", "--headless"])
            .args(["--backend", "process", "Add a health endpoint"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let env = bin.recorded_env(name);
        assert!(
            env.lines().any(|l| l == format!("{var}={key}")),
            "{name}: ${var} not set to the stored key"
        );
        checked.push(name.to_string());
    }
    assert_eq!(
        checked,
        ["aider", "claude", "codex", "gemini", "kimi", "qwen"],
        "every built-in agent with a key variable"
    );
}

/// `api_key_env` set in a project's `.crewmux/providers.toml` is the variable `creds add`
/// (run in the project) accepts and names, and the one the run's launch sets: for a built-in
/// provider that has none (opencode) and one whose variable the file changes (codex).
#[test]
fn a_projects_api_key_env_is_the_variable_creds_names_and_the_launch_sets() {
    let _g = serial();
    for (name, var) in [
        ("opencode", "OPENCODE_PROJECT_KEY"),
        ("codex", "CODEX_PROJECT_KEY"),
    ] {
        let bin = Bin::new();
        stand_in(&bin, name);
        let project = crate::support::project();
        let dir = project.path().join(".crewmux");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("providers.toml"),
            format!("[providers.{name}]\napi_key_env = \"{var}\"\n"),
        )
        .unwrap();
        let key = format!("sk-{name}-ProjectKEY-0123456789");
        let out = crewmux(&bin, project.path())
            .args(["creds", "add", "--provider", name])
            .write_stdin(key.clone())
            .output()
            .unwrap();
        assert!(out.status.success(), "{name}: {out:?}");
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(
            said.contains(&format!("(reaches workers as {var})")),
            "{name}: {said}"
        );
        let out = crewmux(&bin, project.path())
            .args(["run", "--provider", name, "--no-clarify", "--headless"])
            .args(["--backend", "process", "Add a health endpoint"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let env = bin.recorded_env(name);
        assert!(
            env.lines().any(|l| l == format!("{var}={key}")),
            "{name}: ${var} not set to the stored key"
        );
    }
}
