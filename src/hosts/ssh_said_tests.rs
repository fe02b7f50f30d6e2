use super::*;

/// What OpenSSH 9.2p1 printed (`LogLevel=ERROR`, `BatchMode=yes`) for each case.
const CHANGED: &str = "@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@
@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @
@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@
IT IS POSSIBLE THAT SOMEONE IS DOING SOMETHING NASTY!
Someone could be eavesdropping on you right now (man-in-the-middle attack)!
It is also possible that a host key has just been changed.
The fingerprint for the ED25519 key sent by the remote host is
SHA256:8O8HH0ScE4eP+/955Za9PKbu8Bv/1GxQ3dshmfSqIss.
Please contact your system administrator.
Add correct host key in /tmp/s/kh to get rid of this message.
Offending ED25519 key in /tmp/s/kh:1
  remove with:
  ssh-keygen -f \"/tmp/s/kh\" -R \"[127.0.0.1]:50487\"
Host key for [127.0.0.1]:50487 has changed and you have requested strict checking.
Host key verification failed.
";

fn host() -> HostSpec {
    crate::hosts::config::parse(
        std::path::Path::new("/p/hosts.toml"),
        "[hosts.box]\nssh = \"me@box\"\nssh_args = [\"-F\", \"/tmp/cfg\"]\nworkdir = \"/w\"\n",
    )
    .unwrap()
    .remove("box")
    .unwrap()
}

#[test]
fn a_changed_host_key_is_one_line_with_the_fix_ssh_gave() {
    let read = SshFailed::read(CHANGED);
    assert_eq!(
        read,
        SshFailed::HostKeyChanged {
            host: "[127.0.0.1]:50487".into(),
            remove: Some("ssh-keygen -f \"/tmp/s/kh\" -R \"[127.0.0.1]:50487\"".into()),
        }
    );
    assert!(read.permanent());
    let line = read.phrase(&host());
    assert_eq!(
        line,
        "host key of [127.0.0.1]:50487 does not match the known_hosts entry: check it and fix known_hosts (ssh-keygen -f \"/tmp/s/kh\" -R \"[127.0.0.1]:50487\")"
    );
    assert!(!line.contains('\n') && !line.contains("@@@"));
}

#[test]
fn each_permanent_failure_is_told_from_a_host_that_does_not_answer() {
    let h = host();
    let refused = SshFailed::read("me@127.0.0.1: Permission denied (publickey).\n");
    assert_eq!(
        refused,
        SshFailed::LoginRefused("me@127.0.0.1: Permission denied (publickey).".into())
    );
    assert_eq!(
        refused.phrase(&h),
        "login refused: me@127.0.0.1: Permission denied (publickey).; check `ssh -F /tmp/cfg me@box` by hand (keys, ~/.ssh/config, `ssh_args` in /p/hosts.toml)"
    );
    let unknown = SshFailed::read(
        "No ED25519 host key is known for [127.0.0.1]:50487 and you have requested strict checking.\nHost key verification failed.\n",
    );
    assert_eq!(
        unknown,
        SshFailed::HostKeyUnknown(Some("[127.0.0.1]:50487".into()))
    );
    let no_file =
        SshFailed::read("Can't open user config file /no/cfg: No such file or directory\n");
    assert_eq!(
        no_file.phrase(&h),
        "ssh config file /no/cfg cannot be read (No such file or directory): fix `ssh_args` in /p/hosts.toml"
    );
    let bad = SshFailed::read(
        "cfg: line 2: Bad configuration option: foo\ncfg: terminating, 1 bad configuration options\n",
    );
    assert_eq!(
        bad,
        SshFailed::Config("cfg: line 2: Bad configuration option: foo".into())
    );
    let flag = SshFailed::read(
        "unknown option -- Z\nusage: ssh [-46AaCfGgKkMNnqsTtVvXxYy] [-B bind_interface]\n",
    );
    assert_eq!(flag, SshFailed::Config("unknown option -- Z".into()));
    for p in [&refused, &unknown, &no_file, &bad, &flag] {
        assert!(p.permanent(), "{p:?}");
    }
    for said in [
        "ssh: connect to host 127.0.0.1 port 1: Connection refused\n",
        "ssh: Could not resolve hostname nosuch.invalid: Name or service not known\n",
        "ssh: connect to host 10.1.1.1 port 22: Connection timed out\n",
        "Connection closed by 127.0.0.1 port 2222\n",
        "",
    ] {
        let read = SshFailed::read(said);
        assert!(!read.permanent(), "{said}: {read:?}");
        assert!(read.phrase(&h).starts_with("unreachable: "), "{said}");
    }
    assert_eq!(
        SshFailed::read("ssh: connect to host 127.0.0.1 port 1: Connection refused\n"),
        SshFailed::NoAnswer("ssh: connect to host 127.0.0.1 port 1: Connection refused".into())
    );
}
