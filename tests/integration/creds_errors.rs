//! `crewmux creds` refusing what it cannot trust or accept: each refusal is one line naming
//! the file or the bad value, and the store's bytes stay exactly as they were.

use std::fs;
use std::os::unix::fs::PermissionsExt;

use crate::support::creds::*;
use predicates::prelude::*;

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
