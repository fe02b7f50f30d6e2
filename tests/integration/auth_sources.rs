//! `doctor` and `dispatch` agree on whether a provider is usable, for every source a launch
//! gives the CLI its key: crewmux's environment, `[providers.NAME.env]`, the credential
//! store, a stored login, a keyless endpoint (`auth = "none"`), and none at all.

use crate::support::standins::{serial, Auth, Bin};
use assert_cmd::Command;

const PASS: &str = "correct horse battery staple";

fn crewmux(bin: &Bin, project: &std::path::Path) -> Command {
    let mut c = Command::cargo_bin("crewmux").unwrap();
    c.env_clear()
        .env("PATH", bin.bin_dir())
        .env("HOME", bin.home())
        .env("CREWMUX_CONFIG_DIR", bin.dir.path().join("config"))
        .timeout(std::time::Duration::from_secs(60))
        .current_dir(project);
    c
}

/// One way for gemini (the only CLI installed) to get its key.
#[derive(Debug, Clone, Copy)]
enum Source {
    CrewmuxEnv,
    ProviderEnv,
    Store,
    LoginFile,
    Keyless,
    Nothing,
}

/// Set `source` up; returns extra environment for the crewmux commands.
fn set_up(source: Source, bin: &Bin, project: &std::path::Path) -> Vec<(&'static str, String)> {
    let overrides = project.join(".crewmux");
    match source {
        Source::CrewmuxEnv => return vec![("GEMINI_API_KEY", "from-env".into())],
        Source::ProviderEnv => {
            std::fs::create_dir_all(&overrides).unwrap();
            std::fs::write(
                overrides.join("providers.toml"),
                "[providers.gemini.env]\nGEMINI_API_KEY = \"local-key\"\n",
            )
            .unwrap();
        }
        Source::Store => {
            crewmux(bin, project)
                .env("CREWMUX_CREDENTIAL_PASSPHRASE", PASS)
                .args(["creds", "add", "--provider", "gemini"])
                .write_stdin("AIza-test-key-0123456789")
                .assert()
                .success();
        }
        Source::LoginFile => {
            let dir = bin.home().join(".gemini");
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("oauth_creds.json"), "{}").unwrap();
        }
        Source::Keyless => {
            std::fs::create_dir_all(&overrides).unwrap();
            std::fs::write(
                overrides.join("providers.toml"),
                "[providers.gemini]\nauth = \"none\"\n[providers.gemini.env]\nGOOGLE_GEMINI_BASE_URL = \"http://127.0.0.1:9\"\n",
            )
            .unwrap();
        }
        Source::Nothing => {}
    }
    vec![]
}

#[test]
fn doctor_and_dispatch_agree_on_every_auth_source() {
    let _g = serial();
    let cases = [
        (
            Source::CrewmuxEnv,
            true,
            "authenticated",
            "$GEMINI_API_KEY is set",
        ),
        (
            Source::ProviderEnv,
            true,
            "authenticated",
            "[providers.gemini.env]",
        ),
        (Source::Store, true, "authenticated", "credential store"),
        (
            Source::LoginFile,
            true,
            "authenticated",
            "~/.gemini/oauth_creds.json",
        ),
        (Source::Keyless, true, "keyless", "keyless"),
        (Source::Nothing, false, "not-authenticated", "none of"),
    ];
    for (source, usable, auth, detail) in cases {
        let bin = Bin::new();
        bin.add("gemini", "", Auth::Says(0, ""));
        let project = crate::support::project();
        let extra = set_up(source, &bin, project.path());
        // doctor, run inside the project without --project.
        let out = crewmux(&bin, project.path())
            .envs(extra.clone())
            .args(["doctor", "--json"])
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(if usable { 0 } else { 1 }),
            "{source:?}"
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let gemini = v["providers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|h| h["provider"] == "gemini")
            .unwrap()
            .clone();
        assert_eq!(gemini["auth"], auth, "{source:?}: {gemini}");
        let d = gemini["auth_detail"].as_str().unwrap();
        assert!(d.contains(detail), "{source:?}: {d}");
        assert_eq!(
            v["ready"] == serde_json::json!(["gemini"]),
            usable,
            "{source:?}"
        );
        // dispatch routes a gemini-shaped problem to it exactly when doctor calls it ready.
        let out = crewmux(&bin, project.path())
            .envs(extra)
            .args([
                "dispatch",
                "--json",
                "--target",
                "auto",
                "Polish the dark mode theme",
            ])
            .output()
            .unwrap();
        if usable {
            assert!(
                out.status.success(),
                "{source:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(v["workers"][0]["provider"], "gemini", "{source:?}");
        } else {
            assert_eq!(out.status.code(), Some(1), "{source:?}");
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                err.contains("gemini not-authenticated"),
                "{source:?}: {err}"
            );
        }
    }
}

#[test]
fn doctor_warns_about_a_keyless_provider() {
    let _g = serial();
    let bin = Bin::new();
    bin.add("gemini", "", Auth::Says(0, ""));
    let project = crate::support::project();
    set_up(Source::Keyless, &bin, project.path());
    let out = crewmux(&bin, project.path())
        .arg("doctor")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("warning: gemini has auth = \"none\": no key is checked"),
        "{text}"
    );
    assert!(
        text.contains("silent retries: gemini retries a failing API for up to ~4 min"),
        "{text}"
    );
}
