//! `crewmux creds` driven as a user would: keys on stdin, passphrase in the environment,
//! config directory in a temp dir.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::support::creds::*;
use predicates::prelude::*;

#[test]
fn add_list_rotate_remove_round_trip() {
    let env = Env::new();
    env.add("codex", "work", KEY_A);
    env.add("codex", "spare", KEY_B);
    env.add("gemini", "g1", "AIzaSyGeminiKEYvalue-0123456789");

    let listing = env.list(&[]);
    assert!(
        listing.contains("codex (CODEX_API_KEY, round-robin)"),
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
    assert!(env.list(&[]).contains("codex (CODEX_API_KEY, manual)"));

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

    // doctor warns about the same key (and only it), without ever showing a key.
    let mut doctor = std::process::Command::new(env!("CARGO_BIN_EXE_crewmux"));
    doctor
        .arg("doctor")
        .env("CREWMUX_CONFIG_DIR", env.config())
        .env("HOME", env.dir.path())
        .env("CREWMUX_CREDENTIAL_PASSPHRASE", PASS)
        .env("PATH", "/usr/bin:/bin");
    let out = doctor.output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("kimi key `soon` expires on {soon} (in 3 days)")),
        "{text}"
    );
    assert!(!text.contains("`later`"), "{text}");
    assert!(!text.contains(KEY_A) && !text.contains(KEY_B));

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
