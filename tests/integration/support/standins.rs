//! Stand-in agent CLIs for tests: small `sh` scripts written under the real names (`codex`,
//! `gemini`, ...) into a temp dir that is the whole PATH. Each records its argv, environment
//! and stdin under `<dir>/rec/<name>/`, answers `--version`, and answers its auth probe as
//! the test asks (logged in, logged out, hang).
#![allow(dead_code)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use crewmux::providers::EnvSnapshot;

/// Tests that write executables and spawn processes run one at a time: a script still open
/// for writing in one thread while another thread forks makes `exec` fail with ETXTBSY.
pub fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// How a stand-in answers its auth probe.
#[derive(Clone, Copy, Debug)]
pub enum Auth {
    /// Exit with this code and print this text.
    Says(i32, &'static str),
    /// Sleep 30 s (the caller must kill it).
    Hang,
}

pub struct Bin {
    pub dir: tempfile::TempDir,
}

impl Bin {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("bin")).unwrap();
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        Bin { dir }
    }

    pub fn bin_dir(&self) -> PathBuf {
        self.dir.path().join("bin")
    }

    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    pub fn rec(&self, name: &str) -> PathBuf {
        self.dir.path().join("rec").join(name)
    }

    /// Write a stand-in `name` whose auth probe (`probe_args` joined by spaces) answers `auth`.
    pub fn add(&self, name: &str, probe_args: &str, auth: Auth) {
        let probe = match auth {
            Auth::Says(code, text) => format!("printf '%s\\n' '{text}'; exit {code}"),
            Auth::Hang => "/bin/sleep 30; exit 0".to_string(),
        };
        let rec = self.rec(name);
        let script = format!(
            r#"#!/bin/sh
if [ "$1" = "--version" ]; then echo "{name} 9.9.9"; exit 0; fi
if [ -n "{probe_args}" ] && [ "$*" = "{probe_args}" ]; then {probe}; fi
rec="{rec}"
/bin/mkdir -p "$rec"
: > "$rec/argv"
for a in "$@"; do printf '%s\n' "$a" >> "$rec/argv"; done
/usr/bin/env > "$rec/env"
/bin/cat > "$rec/stdin"
echo "stand-in {name} done"
"#,
            rec = rec.display()
        );
        let path = self.bin_dir().join(name);
        std::fs::write(&path, script).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// Write a stand-in `name` running the `sh` lines `body`; it reads no stdin (the process
    /// backend keeps stdin open for answers). `$REC` is its record directory.
    pub fn script(&self, name: &str, body: &str) {
        let rec = self.rec(name);
        std::fs::create_dir_all(&rec).unwrap();
        let path = self.bin_dir().join(name);
        let text = format!("#!/bin/sh\nREC='{}'\n{body}\n", rec.display());
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// PATH = only the stand-ins; HOME = a private dir; config dir = `<dir>/config`.
    pub fn env(&self) -> EnvSnapshot {
        EnvSnapshot::from_pairs([
            ("PATH", self.bin_dir().display().to_string()),
            ("HOME", self.home().display().to_string()),
            (
                "CREWMUX_CONFIG_DIR",
                self.dir.path().join("config").display().to_string(),
            ),
        ])
    }

    /// Write `<dir>/config/providers.toml`.
    pub fn user_providers(&self, text: &str) {
        let d = self.dir.path().join("config");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("providers.toml"), text).unwrap();
    }

    pub fn recorded_argv(&self, name: &str) -> Vec<String> {
        read(&self.rec(name).join("argv"))
            .lines()
            .map(str::to_string)
            .collect()
    }

    pub fn recorded_stdin(&self, name: &str) -> String {
        read(&self.rec(name).join("stdin"))
    }

    pub fn recorded_env(&self, name: &str) -> String {
        read(&self.rec(name).join("env"))
    }
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}
