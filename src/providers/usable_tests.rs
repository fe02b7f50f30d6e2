//! Every source of [`auth_state`], one at a time, against a stand-in CLI script.

use std::os::unix::fs::PermissionsExt;

use super::*;
use crate::providers::Registry;

/// A temp dir with `bin/cli` answering its probe `auth status` with `probe_out` and exit
/// `probe_code`, a `home/` and a `config/`.
struct World {
    dir: tempfile::TempDir,
}

impl World {
    fn new(probe_code: i32, probe_out: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        for d in ["bin", "home", "config"] {
            std::fs::create_dir_all(dir.path().join(d)).unwrap();
        }
        let cli = dir.path().join("bin/cli");
        std::fs::write(
            &cli,
            format!("#!/bin/sh\nprintf '%s\\n' '{probe_out}'\nexit {probe_code}\n"),
        )
        .unwrap();
        std::fs::set_permissions(&cli, std::fs::Permissions::from_mode(0o755)).unwrap();
        World { dir }
    }

    fn env(&self) -> EnvSnapshot {
        let p = |s: &str| self.dir.path().join(s).display().to_string();
        EnvSnapshot::from_pairs([
            ("PATH", p("bin")),
            ("HOME", p("home")),
            ("CREWMUX_CONFIG_DIR", p("config")),
        ])
    }

    fn decide(&self, spec: &ProviderSpec, env: &EnvSnapshot) -> (AuthState, String) {
        let opts = ProbeOptions {
            auth_timeout: Some(Duration::from_secs(20)),
            skip_version: true,
        };
        auth_state("cli", spec, &self.dir.path().join("bin/cli"), env, &opts)
    }

    fn index(&self, json: &str) {
        std::fs::write(
            self.dir
                .path()
                .join("config")
                .join(crate::creds::INDEX_FILE),
            json,
        )
        .unwrap();
    }
}

fn spec(toml: &str) -> ProviderSpec {
    let text = format!("[providers.cli]\nbinary = \"cli\"\n{toml}");
    Registry::from_layers(&[(Path::new("p.toml"), &text)])
        .unwrap()
        .get("cli")
        .unwrap()
        .clone()
}

const KEYED: &str = "api_key_env = \"CLI_KEY\"\n[providers.cli.auth]\nenv_any = [\"CLI_TOKEN\"]\n";

#[test]
fn nothing_proves_auth_then_unproven_decides() {
    let w = World::new(0, "");
    let (state, detail) = w.decide(&spec(KEYED), &w.env());
    assert_eq!(state, AuthState::NotAuthenticated);
    assert!(
        detail.contains("$CLI_TOKEN") && detail.contains("$CLI_KEY"),
        "{detail}"
    );
    assert!(detail.contains("credential store"), "{detail}");
    let s = spec(&format!("{KEYED}unproven = \"unknown\"\n"));
    assert_eq!(w.decide(&s, &w.env()).0, AuthState::Unknown);
}

#[test]
fn a_key_in_crewmux_env_by_env_any_or_api_key_env() {
    let w = World::new(0, "");
    for var in ["CLI_TOKEN", "CLI_KEY"] {
        let mut env = w.env();
        env.set(var, "sk-1");
        let (state, detail) = w.decide(&spec(KEYED), &env);
        assert_eq!(state, AuthState::Authenticated, "{var}");
        assert_eq!(detail, format!("${var} is set"));
    }
    let mut env = w.env();
    env.set("CLI_KEY", "");
    assert_eq!(
        w.decide(&spec(KEYED), &env).0,
        AuthState::NotAuthenticated,
        "an empty variable proves nothing"
    );
}

#[test]
fn a_key_in_the_provider_env_overrides() {
    let w = World::new(0, "");
    let s = spec(&format!(
        "{KEYED}[providers.cli.env]\nCLI_KEY = \"sk-local\"\n"
    ));
    let (state, detail) = w.decide(&s, &w.env());
    assert_eq!(state, AuthState::Authenticated);
    assert_eq!(detail, "$CLI_KEY is set in [providers.cli.env]");
}

#[test]
fn keys_in_the_credential_store_index() {
    let w = World::new(0, "");
    w.index(r#"{"providers":{"cli":{"keys":2,"valid_until":null}}}"#);
    let (state, detail) = w.decide(&spec(KEYED), &w.env());
    assert_eq!(state, AuthState::Authenticated);
    assert_eq!(detail, "2 keys in the credential store (reaches $CLI_KEY)");
    // Keys of another provider, or only expired ones, prove nothing.
    w.index(r#"{"providers":{"other":{"keys":1,"valid_until":null}}}"#);
    assert_eq!(
        w.decide(&spec(KEYED), &w.env()).0,
        AuthState::NotAuthenticated
    );
    w.index(r#"{"providers":{"cli":{"keys":1,"valid_until":"2001-01-01"}}}"#);
    assert_eq!(
        w.decide(&spec(KEYED), &w.env()).0,
        AuthState::NotAuthenticated
    );
}

#[test]
fn a_probe_decides_and_runs_with_the_provider_env() {
    let w = World::new(0, "Logged in as someone");
    let s = spec("[providers.cli.auth]\nprobe = [\"auth\", \"status\"]\n");
    assert_eq!(w.decide(&s, &w.env()).0, AuthState::Authenticated);
    let w = World::new(1, "Not logged in");
    assert_eq!(w.decide(&s, &w.env()).0, AuthState::NotAuthenticated);
    // The probe sees the provider's env (e.g. a config directory it points at).
    let w = World::new(0, "");
    let cli = w.dir.path().join("bin/cli");
    std::fs::write(
        &cli,
        "#!/bin/sh\nif [ \"$CLI_HOME\" = /cfg ]; then echo ok; exit 0; fi\necho 'not logged in'; exit 1\n",
    )
    .unwrap();
    let s2 = spec(
        "[providers.cli.auth]\nprobe = [\"auth\", \"status\"]\n[providers.cli.env]\nCLI_HOME = \"/cfg\"\n",
    );
    assert_eq!(w.decide(&s2, &w.env()).0, AuthState::Authenticated);
}

#[test]
fn a_stored_login_file_under_the_launch_home() {
    let w = World::new(0, "");
    let s = spec("[providers.cli.auth]\nfiles_any = [\"~/.cli/creds.json\"]\n");
    assert_eq!(w.decide(&s, &w.env()).0, AuthState::NotAuthenticated);
    std::fs::create_dir_all(w.dir.path().join("home/.cli")).unwrap();
    std::fs::write(w.dir.path().join("home/.cli/creds.json"), "{}").unwrap();
    let (state, detail) = w.decide(&s, &w.env());
    assert_eq!(state, AuthState::Authenticated);
    assert_eq!(detail, "stored login ~/.cli/creds.json");
}

#[test]
fn auth_none_is_keyless_and_usable() {
    let w = World::new(1, "Not logged in");
    let s = spec("auth = \"none\"\n");
    assert!(s.auth.keyless);
    let (state, detail) = w.decide(&s, &w.env());
    assert_eq!(state, AuthState::Keyless);
    assert!(detail.contains("keyless"), "{detail}");
    // A later layer may turn a built-in's auth table into "none" and back.
    let reg = Registry::from_layers(&[
        (Path::new("a"), crate::providers::spec::BUILTIN_PROVIDERS),
        (Path::new("b"), "[providers.codex]\nauth = \"none\"\n"),
    ])
    .unwrap();
    assert!(reg.get("codex").unwrap().auth.keyless);
    let err = Registry::from_layers(&[(
        Path::new("c.toml"),
        "[providers.x]\nbinary = \"x\"\nauth = \"nope\"\n",
    )])
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("c.toml:3") && err.contains("\"none\""),
        "{err}"
    );
}
