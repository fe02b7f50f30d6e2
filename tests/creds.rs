//! `crewmux creds` driven as a user would: keys on stdin, passphrase in the environment,
//! config directory in a temp dir. Every failure case also checks the store is untouched.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use predicates::prelude::*;

const PASS: &str = "correct horse battery staple";
const KEY_A: &str = "sk-proj-AlphaSECRETvalue0123456789";
const KEY_B: &str = "sk-proj-BravoSECRETvalue9876543210";

struct Env {
    dir: tempfile::TempDir,
}

impl Env {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn config(&self) -> PathBuf {
        self.dir.path().join("config")
    }

    fn store(&self) -> PathBuf {
        self.config().join("credentials.enc")
    }

    fn cmd(&self, args: &[&str]) -> Command {
        self.cmd_with_pass(args, PASS)
    }

    fn cmd_with_pass(&self, args: &[&str], pass: &str) -> Command {
        let mut cmd = Command::cargo_bin("crewmux").unwrap();
        cmd.arg("creds")
            .args(args)
            .env("CREWMUX_CONFIG_DIR", self.config())
            .env("CREWMUX_CREDENTIAL_PASSPHRASE", pass)
            .env("HOME", self.dir.path())
            .env_remove("XDG_CONFIG_HOME");
        cmd
    }

    fn add(&self, provider: &str, label: &str, key: &str) {
        self.cmd(&["add", "--provider", provider, "--label", label])
            .write_stdin(format!("{key}\n"))
            .assert()
            .success();
    }

    /// stdout + stderr of a successful `creds list`.
    fn list(&self, extra: &[&str]) -> String {
        let mut args = vec!["list"];
        args.extend_from_slice(extra);
        let out = self.cmd(&args).assert().success().get_output().clone();
        String::from_utf8(out.stdout).unwrap() + &String::from_utf8(out.stderr).unwrap()
    }
}

/// The row of `label` in `creds list` output.
fn row<'a>(listing: &'a str, label: &str) -> &'a str {
    listing
        .lines()
        .find(|l| l.split_whitespace().any(|w| w == label))
        .unwrap_or_else(|| panic!("no row for {label} in:\n{listing}"))
}

/// Fails when `text` contains any 5-character piece of `key`.
fn assert_no_key_bytes(text: &str, key: &str) {
    for start in 0..=key.len() - 5 {
        let piece = &key[start..start + 5];
        assert!(
            !text.contains(piece),
            "found `{piece}` of the key in:\n{text}"
        );
    }
}

#[test]
fn add_list_rotate_remove_round_trip() {
    let env = Env::new();
    env.add("codex", "work", KEY_A);
    env.add("codex", "spare", KEY_B);
    env.add("gemini", "g1", "AIzaSyGeminiKEYvalue-0123456789");

    let listing = env.list(&[]);
    assert!(
        listing.contains("codex (OPENAI_API_KEY, round-robin)"),
        "{listing}"
    );
    assert!(
        listing.contains("gemini (GEMINI_API_KEY, round-robin)"),
        "{listing}"
    );
    assert!(
        row(&listing, "work").trim_start().starts_with('*'),
        "{listing}"
    );
    assert!(
        !row(&listing, "spare").trim_start().starts_with('*'),
        "{listing}"
    );
    assert!(row(&listing, "work").contains("sk-p…"));
    assert!(row(&listing, "work").contains("never"));

    let only_gemini = env.list(&["--provider", "gemini"]);
    assert!(only_gemini.contains("g1") && !only_gemini.contains("work"));

    env.cmd(&["rotate", "--provider", "codex"])
        .assert()
        .success()
        .stdout(predicate::str::contains("codex: active key is now `spare`"));
    let listing = env.list(&[]);
    assert!(
        row(&listing, "spare").trim_start().starts_with('*'),
        "{listing}"
    );

    env.cmd(&["rotate", "--strategy", "manual"])
        .assert()
        .success()
        .stdout(predicate::str::contains("codex: strategy manual"))
        .stdout(predicate::str::contains("gemini: strategy manual"));
    assert!(env.list(&[]).contains("codex (OPENAI_API_KEY, manual)"));

    env.cmd(&["remove", "--provider", "codex", "--label", "spare"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "removed codex key `spare`; 1 left",
        ));
    let listing = env.list(&[]);
    assert!(!listing.contains("spare"));
    assert!(
        row(&listing, "work").trim_start().starts_with('*'),
        "{listing}"
    );

    env.cmd(&["remove", "--provider", "codex", "--label", "nope"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "no key labelled `nope`; its labels: work",
        ));
}

#[test]
fn store_is_0600_in_a_0700_dir_and_holds_no_key_text() {
    let env = Env::new();
    env.add("claude", "main", KEY_A);
    let mode = fs::metadata(env.store()).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let dir_mode = fs::metadata(env.config()).unwrap().permissions().mode() & 0o777;
    assert_eq!(dir_mode, 0o700);
    let bytes = fs::read(env.store()).unwrap();
    assert_no_key_bytes(&String::from_utf8_lossy(&bytes), KEY_A);
    assert!(
        !String::from_utf8_lossy(&bytes).contains("main"),
        "labels are sealed too"
    );

    fs::set_permissions(env.store(), fs::Permissions::from_mode(0o644)).unwrap();
    env.cmd(&["list"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("mode 644").and(predicate::str::contains("chmod 600")));
}

#[test]
fn list_and_every_message_show_at_most_four_key_characters() {
    let env = Env::new();
    let out = env
        .cmd(&["add", "--provider", "codex", "--label", "work"])
        .write_stdin(KEY_A)
        .assert()
        .success()
        .get_output()
        .clone();
    let mut seen = String::from_utf8(out.stdout).unwrap() + &String::from_utf8(out.stderr).unwrap();
    seen += &env.list(&[]);
    env.cmd(&["rotate"]).assert().success();
    seen += &env.list(&["--provider", "codex"]);
    // Adding the same key again is refused without echoing it.
    let dup = env
        .cmd(&["add", "--provider", "codex", "--label", "again"])
        .write_stdin(KEY_A)
        .assert()
        .code(2)
        .get_output()
        .clone();
    let dup_err = String::from_utf8(dup.stderr).unwrap();
    assert!(
        dup_err.contains("already stored for codex as `work`"),
        "{dup_err}"
    );
    seen += &dup_err;
    assert_no_key_bytes(&seen, KEY_A);
    assert!(seen.contains("sk-p…"));
}

#[test]
fn the_key_is_never_taken_from_argv() {
    let env = Env::new();
    env.cmd(&["add", "--provider", "codex", KEY_A])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unexpected argument"));
    assert!(!env.store().exists());
}

/// Run `args` against a store whose bytes were replaced by `bytes`; expect exit 1 with
/// `message`, and the file unchanged.
fn assert_refused_and_untouched(env: &Env, bytes: &[u8], pass: &str, message: &str) {
    fs::write(env.store(), bytes).unwrap();
    fs::set_permissions(env.store(), fs::Permissions::from_mode(0o600)).unwrap();
    let store = env.store().display().to_string();
    for args in [
        vec!["list"],
        vec!["add", "--provider", "codex", "--label", "new"],
        vec!["rotate"],
        vec!["remove", "--provider", "codex", "--label", "work"],
    ] {
        let out = env
            .cmd_with_pass(&args, pass)
            .write_stdin(KEY_B)
            .assert()
            .code(1)
            .get_output()
            .clone();
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "one line for {args:?}: {err}");
        assert!(
            err.contains(&store) && err.contains(message),
            "{args:?}: {err}"
        );
        assert_eq!(
            fs::read(env.store()).unwrap(),
            bytes,
            "{args:?} changed the file"
        );
    }
}

#[test]
fn wrong_passphrase_tampered_truncated_and_newer_files_are_refused_and_kept() {
    let env = Env::new();
    env.add("codex", "work", KEY_A);
    let good = fs::read(env.store()).unwrap();

    assert_refused_and_untouched(&env, &good, "not the passphrase", "wrong passphrase");

    let mut tampered = good.clone();
    let last = tampered.len() - 20;
    tampered[last] ^= 0x01;
    assert_refused_and_untouched(&env, &tampered, PASS, "modified since it was written");

    assert_refused_and_untouched(&env, &good[..good.len() - 7], PASS, "truncated");
    assert_refused_and_untouched(&env, &good[..40], PASS, "truncated");

    let mut newer = good.clone();
    newer[14] = 2; // the format version byte follows the 14-byte magic
    assert_refused_and_untouched(&env, &newer, PASS, "newer crewmux (store format 2");

    assert_refused_and_untouched(
        &env,
        b"{\"providers\":{}}",
        PASS,
        "not a crewmux credential store",
    );

    // The intact file still opens.
    fs::write(env.store(), &good).unwrap();
    assert!(env.list(&[]).contains("work"));
}

#[test]
fn expiry_is_shown_and_warned_fourteen_days_ahead() {
    let env = Env::new();
    let today = chrono::Utc::now().date_naive();
    let soon = (today + chrono::Days::new(3)).to_string();
    let later = (today + chrono::Days::new(30)).to_string();
    for (label, key, day) in [("soon", KEY_A, &soon), ("later", KEY_B, &later)] {
        env.cmd(&[
            "add",
            "--provider",
            "kimi",
            "--label",
            label,
            "--expires",
            day,
        ])
        .write_stdin(key)
        .assert()
        .success();
    }
    let out = env.cmd(&["list"]).assert().success().get_output().clone();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        row(&stdout, "soon").contains(&format!("{soon} expires in 3 day(s)")),
        "{stdout}"
    );
    assert!(row(&stdout, "later").ends_with(&later), "{stdout}");
    assert!(stderr.contains("warning: kimi key `soon`"), "{stderr}");
    assert!(!stderr.contains("`later`"), "{stderr}");

    let yesterday = today.pred_opt().unwrap().to_string();
    env.cmd(&["add", "--provider", "kimi", "--expires", &yesterday])
        .write_stdin("sk-another-key-0123456789")
        .assert()
        .code(2)
        .stderr(predicate::str::contains(format!(
            "expiry date {yesterday} is in the past"
        )));
}

#[test]
fn bad_input_gets_one_line_naming_it_and_exit_2() {
    let env = Env::new();
    env.add("codex", "work", KEY_A);
    let before = fs::read(env.store()).unwrap();
    let cases: &[(&[&str], &str, &str)] = &[
        (&["add", "--provider", "nosuch"], KEY_B, "provider `nosuch`"),
        (
            &["add", "--provider", "codex", "--expires", "31/12/2027"],
            KEY_B,
            "`31/12/2027`",
        ),
        (
            &["add", "--provider", "codex", "--label", "bad label"],
            KEY_B,
            "label `bad label`",
        ),
        (
            &["add", "--provider", "codex", "--label", "work"],
            KEY_B,
            "already has a key labelled `work`",
        ),
        (
            &["add", "--provider", "codex"],
            "sk-has'quote-123456",
            "a quote at character 7",
        ),
        (
            &["add", "--provider", "codex"],
            "sk-two\nlines-123456",
            "a control character",
        ),
        (&["add", "--provider", "codex"], "", "the key is empty"),
        (
            &["rotate", "--strategy", "random"],
            "",
            "unknown strategy `random`",
        ),
        (
            &["rotate", "--provider", "gemini"],
            "",
            "no keys stored for `gemini`",
        ),
    ];
    for (args, stdin, message) in cases {
        let out = env
            .cmd(args)
            .write_stdin(*stdin)
            .assert()
            .code(2)
            .get_output()
            .clone();
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.contains(message), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(!err.contains("sk-has") && !err.contains("sk-two"), "{err}");
        assert_eq!(
            fs::read(env.store()).unwrap(),
            before,
            "{args:?} changed the store"
        );
    }
    env.cmd_with_pass(&["list"], "")
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "CREWMUX_CREDENTIAL_PASSPHRASE is set but empty",
        ));
}

#[test]
fn concurrent_adds_are_serialised_by_the_lock() {
    let env = Env::new();
    env.add("qwen", "first", "sk-qwen-first-0123456789");
    let children: Vec<_> = (0..4)
        .map(|i| {
            let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("crewmux"));
            cmd.args([
                "creds",
                "add",
                "--provider",
                "qwen",
                "--label",
                &format!("k{i}"),
            ])
            .env("CREWMUX_CONFIG_DIR", env.config())
            .env("CREWMUX_CREDENTIAL_PASSPHRASE", PASS)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null());
            let mut child = cmd.spawn().unwrap();
            use std::io::Write;
            let key = format!("sk-qwen-concurrent-{i}-0123456789");
            child
                .stdin
                .take()
                .unwrap()
                .write_all(key.as_bytes())
                .unwrap();
            child
        })
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    let listing = env.list(&["--provider", "qwen"]);
    for label in ["first", "k0", "k1", "k2", "k3"] {
        row(&listing, label);
    }
    let leftovers: Vec<_> = fs::read_dir(env.config())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| Path::new(n).extension().is_some_and(|e| e == "tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}
