use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use super::*;
use crate::error::Result;
use crate::hosts::doctor::RemoteOut;

fn own() -> OwnBinary {
    OwnBinary {
        file: PathBuf::from("/x/crewmux"),
        system: "Linux x86_64".into(),
        version: "0.1.0".into(),
        hash: "0123456789ab".into(),
        bytes: 5_000_000,
    }
}

/// A host that is this machine: the script runs in a local `sh -s`, with `uname` answering
/// `system`.
struct Here {
    system: &'static str,
}

impl RemoteSh for Here {
    fn sh(&self, script: &str, _limit: Duration) -> Result<RemoteOut> {
        let script = script.replacen(
            "uname -sm 2>/dev/null",
            &format!("echo '{}'", self.system),
            1,
        );
        let out = Command::new("sh").arg("-c").arg(&script).output().unwrap();
        let mut output = String::from_utf8_lossy(&out.stdout).into_owned();
        output.push_str(&String::from_utf8_lossy(&out.stderr));
        Ok(RemoteOut {
            code: out.status.code(),
            output,
            timed_out: false,
        })
    }
}

fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

#[test]
fn the_probe_tells_present_absent_stale_and_another_system_apart() {
    let dir = tempfile::tempdir().unwrap();
    let same = Here {
        system: "Linux x86_64",
    };
    let good = script(dir.path(), "good", "echo 'crewmux 0.1.0'");
    assert_eq!(probe(&same, &own(), &good), Ok(Found::Present));
    let stale = script(dir.path(), "stale", "echo 'crewmux 0.0.9'");
    assert_eq!(probe(&same, &own(), &stale), Ok(Found::Absent));
    let broken = script(dir.path(), "broken", "exit 126");
    assert_eq!(probe(&same, &own(), &broken), Ok(Found::Absent));
    assert_eq!(
        probe(&same, &own(), &dir.path().join("missing")),
        Ok(Found::Absent)
    );
    let mac = Here {
        system: "Darwin arm64",
    };
    match probe(&mac, &own(), &good) {
        Ok(Found::Foreign(why)) => assert_eq!(
            why,
            "it is `Darwin arm64` and this crewmux is built for `Linux x86_64`"
        ),
        other => panic!("{other:?}"),
    }
}

struct Unreachable;

impl RemoteSh for Unreachable {
    fn sh(&self, _script: &str, _limit: Duration) -> Result<RemoteOut> {
        Err(crate::error::Error::Command {
            program: "ssh to host box".into(),
            message: "Connection refused".into(),
        })
    }
}

#[test]
fn a_host_that_does_not_answer_is_not_judged() {
    let e = probe(&Unreachable, &own(), Path::new("/w/bin/x")).unwrap_err();
    assert!(e.contains("Connection refused"), "{e}");
}

/// A host whose ssh or check ends with `out` (or the error ssh gave).
struct Says(std::result::Result<RemoteOut, &'static str>);

impl RemoteSh for Says {
    fn sh(&self, _script: &str, _limit: Duration) -> Result<RemoteOut> {
        self.0.clone().map_err(|m| crate::error::Error::Command {
            program: "ssh to host box".into(),
            message: m.into(),
        })
    }
}

#[test]
fn each_way_a_probe_fails_is_said_as_it_is() {
    let failed = |says: Says| probe(&says, &own(), Path::new("/w/bin/x")).unwrap_err();
    // A refused login is ssh's word, not a host that is silent.
    let refused = failed(Says(Err("me@box: Permission denied (publickey).")));
    assert_eq!(
        refused,
        "ssh to host box: me@box: Permission denied (publickey)."
    );
    let silent = failed(Says(Ok(RemoteOut {
        code: None,
        output: String::new(),
        timed_out: true,
    })));
    assert_eq!(silent, "it did not answer within 12 s");
    let broke = failed(Says(Ok(RemoteOut {
        code: Some(2),
        output: "sh: 1: syntax error\n".into(),
        timed_out: false,
    })));
    assert_eq!(broke, "the check exited 2: sh: 1: syntax error");
    let killed = failed(Says(Ok(RemoteOut {
        code: None,
        output: String::new(),
        timed_out: false,
    })));
    assert_eq!(killed, "the check ended on a signal");
}

/// Run the copy script here with `bin` on its stdin.
fn copy_here(bin: &Path, to: &Path) -> Ran {
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(copy_script(to));
    stream_file(cmd, bin, Duration::from_secs(20)).unwrap()
}

#[test]
fn the_copy_lands_whole_under_its_name_only_when_it_runs_there() {
    let dir = tempfile::tempdir().unwrap();
    let to = dir.path().join("work dir/bin/crewmux-0.1.0-0123456789ab");
    let good = script(dir.path(), "good", "echo 'crewmux 0.1.0'");
    let ran = copy_here(&good, &to);
    assert_eq!(
        copied(&own(), &to, &ran),
        HelperState::Ready {
            path: to.clone(),
            copied: true
        }
    );
    assert_eq!(std::fs::read(&to).unwrap(), std::fs::read(&good).unwrap());
    let mode = std::fs::metadata(&to).unwrap().permissions().mode();
    assert_eq!(mode & 0o111, 0o111, "executable");

    // A binary that does not run there: nothing under the final name, no temporary left.
    let other = dir.path().join("other/bin/crewmux-0.1.0-0123456789ab");
    let bad = script(
        dir.path(),
        "bad",
        "echo 'cannot execute binary file: Exec format error' >&2; exit 126",
    );
    let ran = copy_here(&bad, &other);
    match copied(&own(), &other, &ran) {
        HelperState::CannotRun { why } => {
            assert!(why.contains("Exec format error"), "{why}")
        }
        s => panic!("{s:?}"),
    }
    let left: Vec<_> = std::fs::read_dir(other.parent().unwrap())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "{left:?}");

    // Another version under the name: said, never taken for this one.
    let old = script(dir.path(), "old", "echo 'crewmux 0.0.9'");
    let third = dir.path().join("third/bin/x");
    assert!(!matches!(
        copied(&own(), &third, &copy_here(&old, &third)),
        HelperState::Ready { .. }
    ));
}

#[test]
fn a_copy_that_could_not_be_written_says_its_exit_code_as_a_number() {
    let ran: Ran = (Some(4), String::new(), "mkdir: Permission denied\n".into());
    match copied(&own(), Path::new("/w/bin/x"), &ran) {
        HelperState::Unknown { why } => assert_eq!(
            why,
            "copying to /w/bin/x failed (exited 4): mkdir: Permission denied"
        ),
        s => panic!("{s:?}"),
    }
}

#[test]
fn doctor_says_what_the_host_has_and_copies_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let host = crate::hosts::config::parse(
        Path::new("h.toml"),
        &format!(
            "[hosts.box]\nssh = \"me@box\"\nworkdir = \"{}\"\n",
            dir.path().display()
        ),
    )
    .unwrap()
    .remove("box")
    .unwrap();
    let own = own_binary().unwrap();
    let same = Here {
        system: Box::leak(own.system.clone().into_boxed_str()),
    };
    let c = doctor_line(&host, &same);
    assert!(c.ok, "{c:?}");
    assert!(c.detail.contains("not there yet: copied to"), "{c:?}");
    assert!(!own.path_on(&host).exists(), "doctor copies nothing");
    let mac = Here {
        system: "Darwin arm64",
    };
    let c = doctor_line(&host, &mac);
    assert!(!c.ok);
    assert!(
        c.detail
            .starts_with("cannot run crewmux there (it is `Darwin arm64`"),
        "{c:?}"
    );
}
