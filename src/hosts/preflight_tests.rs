use std::os::unix::fs::PermissionsExt;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;
use crate::error::{Error, Result};
use crate::hosts::doctor::RemoteOut;

fn host(name: &str, tmux: &str) -> HostSpec {
    let mut h = crate::hosts::config::parse(
        Path::new("/p/hosts.toml"),
        &format!("[hosts.{name}]\nssh = \"me@box\"\nworkdir = \"/w\"\n"),
    )
    .unwrap()
    .remove(name)
    .unwrap();
    h.tmux = tmux.into();
    h
}

/// A host that is this machine: the script runs in a local `sh -s` with `PATH` (when
/// given) as the host's; counts the calls.
struct Here {
    path: Option<String>,
    calls: AtomicUsize,
}

impl Here {
    fn new(path: Option<String>) -> Here {
        Here {
            path,
            calls: AtomicUsize::new(0),
        }
    }
}

impl RemoteSh for Here {
    fn sh(&self, script: &str, _limit: Duration) -> Result<RemoteOut> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let mut cmd = Command::new("/bin/sh");
        cmd.arg("-c").arg(script);
        if let Some(p) = &self.path {
            cmd.env("PATH", p);
        }
        let out = cmd.output().unwrap();
        let mut output = String::from_utf8_lossy(&out.stdout).into_owned();
        output.push_str(&String::from_utf8_lossy(&out.stderr));
        Ok(RemoteOut {
            code: out.status.code(),
            output,
            timed_out: false,
        })
    }
}

/// A directory of stand-ins: `tmux` printing `version`, and `uname` and `head` linked.
fn tools(version: &str, git: bool) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let tmux = dir.path().join("tmux");
    std::fs::write(&tmux, format!("#!/bin/sh\necho '{version}'\n")).unwrap();
    std::fs::set_permissions(&tmux, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut real = vec!["uname", "head"];
    if git {
        real.push("git");
    }
    for tool in real {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .unwrap();
        let at = String::from_utf8_lossy(&found.stdout).trim().to_string();
        std::os::unix::fs::symlink(at, dir.path().join(tool)).unwrap();
    }
    dir
}

#[test]
fn one_question_tells_a_usable_host_from_a_missing_or_old_tmux_and_a_missing_git() {
    let good = tools("tmux 3.3a", true);
    let here = Here::new(Some(good.path().display().to_string()));
    let tmux = good.path().join("tmux").display().to_string();
    let a = ask(&here, &host("box", &tmux), None, ASK_LIMIT).unwrap();
    assert_eq!(a.tmux, Ok("tmux 3.3a".into()));
    assert!(a.git.as_ref().unwrap().starts_with("git version"), "{a:?}");
    assert_eq!(a.crewmux, None);
    assert_eq!(refusal(&host("box", &tmux), &Ok(a)), None);
    assert_eq!(here.calls.load(Ordering::SeqCst), 1, "one call per host");

    let missing = host("box", "/no/tmux");
    let line = refusal(&missing, &ask(&here, &missing, None, ASK_LIMIT)).unwrap();
    assert!(
        line.starts_with("host box: `/no/tmux` does not run there (")
            && line.contains("/no/tmux")
            && line.ends_with("; install tmux 3.2 or newer there, or set `tmux` in /p/hosts.toml"),
        "{line}"
    );

    let old = tools("tmux 2.9a", true);
    let here = Here::new(Some(old.path().display().to_string()));
    let h = host("box", &old.path().join("tmux").display().to_string());
    assert_eq!(
        refusal(&h, &ask(&here, &h, None, ASK_LIMIT)).unwrap(),
        "host box: tmux 2.9a is older than 3.2, the oldest crewmux drives; install tmux 3.2 or newer there, or set `tmux` in /p/hosts.toml"
    );

    let no_git = tools("tmux 3.4", false);
    let here = Here::new(Some(no_git.path().display().to_string()));
    let h = host("box", "tmux");
    let line = refusal(&h, &ask(&here, &h, None, ASK_LIMIT)).unwrap();
    assert!(
        line.starts_with("host box: git not found there (")
            && line.ends_with("install git on the host: remote workers get their code by git"),
        "{line}"
    );
}

#[test]
fn the_copy_of_crewmux_is_asked_in_the_same_call() {
    let dir = tools("tmux 3.3a", true);
    let copy = dir.path().join("crewmux-x");
    std::fs::write(&copy, "#!/bin/sh\necho 'crewmux 0.1.0'\necho more\n").unwrap();
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).unwrap();
    let here = Here::new(Some(dir.path().display().to_string()));
    let h = host("box", "tmux");
    let a = ask(&here, &h, Some(&copy), ASK_LIMIT).unwrap();
    assert_eq!(a.crewmux.as_deref(), Some("runs crewmux 0.1.0"));
    assert_eq!(a.tmux, Ok("tmux 3.3a".into()));
    let a = ask(&here, &h, Some(&dir.path().join("gone")), ASK_LIMIT).unwrap();
    assert_eq!(a.crewmux.as_deref(), Some("absent"));
}

/// A host whose ssh fails with `said` (ssh's exit 255).
struct SshSays(&'static str);

impl RemoteSh for SshSays {
    fn sh(&self, _script: &str, _limit: Duration) -> Result<RemoteOut> {
        Err(Error::Command {
            program: "ssh to host box".into(),
            message: self.0.into(),
        })
    }
}

#[test]
fn a_refused_login_refuses_the_run_and_a_host_that_does_not_answer_is_waited_for() {
    let h = host("badkey", "tmux");
    let refused = ask(
        &SshSays("me@b: Permission denied (publickey).\n"),
        &h,
        None,
        ASK_LIMIT,
    );
    assert_eq!(
        refused.as_ref().unwrap_err().why,
        "ssh to host box: me@b: Permission denied (publickey)."
    );
    assert_eq!(
        refusal(&h, &refused).unwrap(),
        "host badkey: login refused: me@b: Permission denied (publickey).; check `ssh me@box` by hand (keys, ~/.ssh/config, `ssh_args` in /p/hosts.toml)"
    );
    let silent = ask(
        &SshSays("ssh: connect to host 127.0.0.1 port 1: Connection refused\n"),
        &h,
        None,
        ASK_LIMIT,
    );
    assert!(silent.is_err());
    assert_eq!(refusal(&h, &silent), None);
    let timed_out = Err(NotAsked {
        why: "it did not answer within 12 s".into(),
        ssh: None,
    });
    assert_eq!(refusal(&h, &timed_out), None);
}

#[test]
fn a_host_is_asked_once_per_process_unless_the_copy_is_wanted_after_all() {
    let dir = tools("tmux 3.3a", true);
    let here = Here::new(Some(dir.path().display().to_string()));
    // A name of this test's own: the answers are kept per process.
    let h = host("asked-once", "tmux");
    let first = ask_once(&here, &h, Some(Path::new("/no/copy")), ASK_LIMIT).unwrap();
    assert_eq!(ask_once(&here, &h, None, ASK_LIMIT).unwrap(), first);
    assert_eq!(
        ask_once(&here, &h, Some(Path::new("/no/copy")), ASK_LIMIT).unwrap(),
        first
    );
    assert_eq!(here.calls.load(Ordering::SeqCst), 1);
    let other = host("asked-once", "/other/tmux");
    assert_ne!(ask_once(&here, &other, None, ASK_LIMIT).unwrap(), first);
    assert_eq!(
        here.calls.load(Ordering::SeqCst),
        2,
        "another tmux is asked"
    );
}
