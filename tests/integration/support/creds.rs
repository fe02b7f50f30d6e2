//! Shared helpers of the `creds` CLI tests: a temp config directory, the passphrase in the
//! environment, and checks on `creds list` output.
#![allow(dead_code)]

use std::path::PathBuf;

use assert_cmd::Command;

pub const PASS: &str = "correct horse battery staple";
pub const KEY_A: &str = "sk-proj-AlphaSECRETvalue0123456789";
pub const KEY_B: &str = "sk-proj-BravoSECRETvalue9876543210";

pub struct Env {
    pub dir: tempfile::TempDir,
}

impl Env {
    pub fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    pub fn config(&self) -> PathBuf {
        self.dir.path().join("config")
    }

    pub fn store(&self) -> PathBuf {
        self.config().join("credentials.enc")
    }

    pub fn cmd(&self, args: &[&str]) -> Command {
        self.cmd_with_pass(args, PASS)
    }

    pub fn cmd_with_pass(&self, args: &[&str], pass: &str) -> Command {
        let mut cmd = Command::cargo_bin("crewmux").unwrap();
        cmd.arg("creds")
            .args(args)
            .env("CREWMUX_CONFIG_DIR", self.config())
            .env("CREWMUX_CREDENTIAL_PASSPHRASE", pass)
            .env("HOME", self.dir.path())
            .env_remove("XDG_CONFIG_HOME");
        cmd
    }

    pub fn add(&self, provider: &str, label: &str, key: &str) {
        self.cmd(&["add", "--provider", provider, "--label", label])
            .write_stdin(format!("{key}\n"))
            .assert()
            .success();
    }

    /// stdout + stderr of a successful `creds list`.
    pub fn list(&self, extra: &[&str]) -> String {
        let mut args = vec!["list"];
        args.extend_from_slice(extra);
        let out = self.cmd(&args).assert().success().get_output().clone();
        String::from_utf8(out.stdout).unwrap() + &String::from_utf8(out.stderr).unwrap()
    }
}

/// The row of `label` in `creds list` output.
pub fn row<'a>(listing: &'a str, label: &str) -> &'a str {
    listing
        .lines()
        .find(|l| l.split_whitespace().any(|w| w == label))
        .unwrap_or_else(|| panic!("no row for {label} in:\n{listing}"))
}

/// Fails when `text` contains any 5-character piece of `key`.
pub fn assert_no_key_bytes(text: &str, key: &str) {
    for start in 0..=key.len() - 5 {
        let piece = &key[start..start + 5];
        assert!(
            !text.contains(piece),
            "found `{piece}` of the key in:\n{text}"
        );
    }
}
