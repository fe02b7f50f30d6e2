//! The SSH side of a host: every call is `ssh` with OpenSSH connection sharing
//! (`ControlMaster=auto`, `ControlPersist`, a control socket in a private directory of
//! this user), so the first call opens the connection and later ones ride on it without a
//! new handshake (ssh_config(5) "ControlMaster"). crewmux never handles credentials:
//! the destination, `~/.ssh/config`, keys and agent are the user's. Every call has a
//! time limit (`ConnectTimeout`, `ServerAliveInterval`, and a kill at the limit).

use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::Duration;

use super::config::HostSpec;
use crate::error::{Error, Result};

/// Limit of one SSH call that copies a few files or runs a short command.
pub const CALL_LIMIT: Duration = Duration::from_secs(20);
/// How long the shared connection stays open after its last user, seconds.
const PERSIST_S: u32 = 600;
/// The keep-alive of an attach's own connection: a request every this many seconds
/// without a word from the host ...
pub const ATTACH_ALIVE_INTERVAL_S: u32 = 2;
/// ... and ssh gives up after this many unanswered in a row: a host that hangs while a
/// person is attached gives the terminal back after about (count + 1) × interval = 6 s
/// instead of the shared connection's 20 s. sshd answers a keep-alive from its own event
/// loop, so a slow but live host (busy shell, loaded machine) still answers in time.
pub const ATTACH_ALIVE_COUNT: u32 = 2;

/// How to reach one host over SSH.
#[derive(Debug, Clone)]
pub struct SshLink {
    pub host: String,
    dest: String,
    args: Vec<String>,
    control_path: PathBuf,
}

/// The private directory of this user's control sockets (`$XDG_RUNTIME_DIR/crewmux-ssh`,
/// else `/tmp/crewmux-ssh-<uid>`), mode 0700. Short, because a socket path is limited
/// to ~104 bytes.
///
/// # Errors
/// The directory cannot be made private (another user owns it, or I/O).
pub fn control_dir() -> Result<PathBuf> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    let uid = nix::unistd::getuid().as_raw();
    let dir = match std::env::var_os("XDG_RUNTIME_DIR") {
        Some(d) if !d.is_empty() => PathBuf::from(d).join("crewmux-ssh"),
        _ => PathBuf::from(format!("/tmp/crewmux-ssh-{uid}")),
    };
    match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(Error::io(&dir, e)),
    }
    let meta = std::fs::symlink_metadata(&dir).map_err(|e| Error::io(&dir, e))?;
    if !meta.is_dir() || meta.uid() != uid {
        return Err(Error::Usage(format!(
            "{} is not a directory of this user: remove it so crewmux can keep its SSH control sockets there",
            dir.display()
        )));
    }
    if meta.mode() & 0o077 != 0 {
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| Error::io(&dir, e))?;
    }
    Ok(dir)
}

/// The control socket's name for `dest` reached with `args`: `%C` (ssh's hash of the
/// local host, remote host, port and user as ssh resolves them, 40 hex digits) then `-`
/// and 12 hex digits of a BLAKE2 hash of the destination and the `ssh_args`. `%C` alone
/// leaves out options such as `-F <config>` or `-i <key>`, so a run with other
/// `ssh_args` would ride on a master an earlier run opened with the old ones.
/// The name is 53 bytes once ssh expands it, plus the 17 bytes of the temporary name ssh
/// binds before renaming: with the control directory (`/run/user/<uid>/crewmux-ssh`),
/// about 97 bytes, under the 104 of a Unix socket path.
pub fn control_name(dest: &str, args: &[String]) -> String {
    use blake2::Digest;
    let mut hasher = blake2::Blake2b512::new();
    // Each word with its length first: ["-i", "k"] and ["-ik"] hash apart.
    for word in std::iter::once(dest).chain(args.iter().map(String::as_str)) {
        hasher.update((word.len() as u64).to_le_bytes());
        hasher.update(word.as_bytes());
    }
    let digest = hasher.finalize();
    let short: String = digest[..6].iter().map(|b| format!("{b:02x}")).collect();
    format!("%C-{short}")
}

/// Quote `words` as one command line for the remote shell (ssh joins its arguments
/// with spaces and hands them to the login shell there).
///
/// # Errors
/// A word with a NUL byte.
pub fn remote_line<S: AsRef<str>>(words: &[S]) -> Result<String> {
    shlex::try_join(words.iter().map(AsRef::as_ref))
        .map_err(|_| Error::Usage("cannot pass an argument with a NUL byte over ssh".into()))
}

impl SshLink {
    /// The link to `host`.
    ///
    /// # Errors
    /// As [`control_dir`].
    pub fn new(host: &HostSpec) -> Result<SshLink> {
        Ok(SshLink {
            host: host.name.clone(),
            dest: host.ssh.clone(),
            args: host.ssh_args.clone(),
            control_path: control_dir()?.join(control_name(&host.ssh, &host.ssh_args)),
        })
    }

    /// `ssh` with its options up to the destination: a remote command line follows.
    pub fn prefix(&self) -> Vec<String> {
        let mut v = vec!["ssh".to_string()];
        v.extend(self.options());
        v.push("--".into());
        v.push(self.dest.clone());
        v
    }

    /// `ssh <options> <dest> -- <remote command>`, stdin null unless the caller sets it.
    pub fn command(&self, remote: &str) -> Command {
        let mut cmd = Command::new("ssh");
        cmd.args(self.options());
        cmd.arg("--").arg(&self.dest).arg(remote);
        cmd
    }

    /// The destination as `hosts.toml` gives it.
    pub(super) fn dest(&self) -> &str {
        &self.dest
    }

    /// The options of every call: connection sharing, no questions, bounded waits.
    pub(super) fn options(&self) -> Vec<String> {
        let mut o: Vec<String> = [
            "-o",
            "BatchMode=yes",
            "-o",
            "ControlMaster=auto",
            "-o",
            "ConnectTimeout=10",
            "-o",
            "ServerAliveInterval=5",
            "-o",
            "ServerAliveCountMax=3",
            "-o",
            "LogLevel=ERROR",
        ]
        .map(String::from)
        .to_vec();
        o.push("-o".into());
        o.push(format!("ControlPersist={PERSIST_S}"));
        o.push("-o".into());
        o.push(format!("ControlPath={}", self.control_path.display()));
        o.extend(self.args.iter().cloned());
        o
    }

    /// `ssh -t …` for a person at a terminal (attach).
    ///
    /// The attach has a connection of its own (`ControlPath=none`) with a tighter
    /// keep-alive ([`ATTACH_ALIVE_INTERVAL_S`] × [`ATTACH_ALIVE_COUNT`]): a client riding
    /// on the shared connection has no keep-alive of its own and waits for the master's
    /// (5 s × 3, ~20 s in all) when the host hangs, the person's terminal held meanwhile.
    /// ssh takes the first value of each option, so these come before the shared ones.
    pub fn interactive(&self, remote: &str) -> Command {
        let mut cmd = Command::new("ssh");
        cmd.arg("-t").args([
            "-o".to_string(),
            "ControlPath=none".to_string(),
            "-o".to_string(),
            format!("ServerAliveInterval={ATTACH_ALIVE_INTERVAL_S}"),
            "-o".to_string(),
            format!("ServerAliveCountMax={ATTACH_ALIVE_COUNT}"),
        ]);
        cmd.args(self.options());
        cmd.arg("--").arg(&self.dest).arg(remote);
        cmd
    }

    /// Run `remote` with `stdin` fed to it, within `limit`.
    ///
    /// # Errors
    /// ssh cannot start or did not end in time; a non-zero exit is [`Error::Command`] with
    /// its stderr (255 is ssh's own: the host cannot be reached).
    pub fn run(&self, remote: &str, stdin: Option<&[u8]>, limit: Duration) -> Result<Output> {
        let out = crate::tmux::output_within(self.command(remote), stdin, limit, &self.host)
            .map_err(|e| match e {
                Error::Timeout { secs, .. } => Error::Timeout {
                    program: format!("ssh to host {}", self.host),
                    secs,
                    hint: "is the host reachable? (`crewmux doctor --hosts`)".into(),
                },
                other => other,
            })?;
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
            return Err(Error::Command {
                program: format!("ssh {} ({})", self.dest, self.host),
                message: if stderr.is_empty() {
                    format!("exit {}", out.status.code().unwrap_or(-1))
                } else {
                    stderr
                },
            });
        }
        Ok(out)
    }

    /// End the shared connection (`ssh -O exit`); nothing to end is fine.
    pub fn close(&self) {
        let mut cmd = Command::new("ssh");
        cmd.args(self.options())
            .args(["-O", "exit", "--", &self.dest]);
        match crate::tmux::output_within(cmd, None, Duration::from_secs(5), &self.host) {
            Ok(_) => {}
            Err(e) => tracing::debug!("ssh -O exit {}: {e}", self.host),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_lines_quote_every_word_for_the_shell_there() {
        assert_eq!(
            remote_line(&["tmux", "-L", "s", "display-message", "-p", "#{pid} x"]).unwrap(),
            "tmux -L s display-message -p '#{pid} x'"
        );
        assert!(remote_line(&["a\0b"]).is_err());
    }

    #[test]
    fn an_attach_has_a_connection_of_its_own_with_a_short_keep_alive() {
        let link = SshLink {
            host: "box".into(),
            dest: "me@b".into(),
            args: vec!["-F".into(), "/tmp/cfg".into()],
            control_path: PathBuf::from("/tmp/c/%C-0"),
        };
        let cmd = link.interactive("tmux attach");
        let args: Vec<String> = cmd
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        // ssh takes the first value of an option: the attach's own come first.
        let first = |key: &str| {
            args.iter()
                .find(|a| a.starts_with(&format!("{key}=")))
                .cloned()
                .unwrap_or_default()
        };
        assert_eq!(first("ControlPath"), "ControlPath=none");
        assert_eq!(first("ServerAliveInterval"), "ServerAliveInterval=2");
        assert_eq!(first("ServerAliveCountMax"), "ServerAliveCountMax=2");
        assert_eq!(args[0], "-t");
        assert_eq!(args[args.len() - 3..], ["--", "me@b", "tmux attach"]);
    }

    #[test]
    fn the_control_socket_depends_on_the_destination_and_the_ssh_args() {
        let words = |w: &[&str]| -> Vec<String> { w.iter().map(|s| (*s).to_string()).collect() };
        let plain = control_name("me@b", &[]);
        assert_eq!(
            plain,
            control_name("me@b", &[]),
            "the same link shares its master"
        );
        let names = [
            plain.clone(),
            control_name("me@b", &words(&["-F", "/tmp/cfg"])),
            control_name("me@b", &words(&["-F", "/tmp/other"])),
            control_name("me@b", &words(&["-i", "key"])),
            control_name("me@b", &words(&["-ikey"])),
            control_name("you@b", &[]),
        ];
        for (i, a) in names.iter().enumerate() {
            for b in &names[i + 1..] {
                assert_ne!(a, b);
            }
        }
        // `%C` stays (ssh's own hash of what the destination resolves to); 40 hex digits
        // once expanded, so the name on disk is 53 bytes.
        assert!(plain.starts_with("%C-"), "{plain}");
        let expanded = plain.replace("%C", &"0".repeat(40));
        assert_eq!(expanded.len(), 53, "{expanded}");
        assert!(
            expanded[41..].bytes().all(|b| b.is_ascii_hexdigit()),
            "{expanded}"
        );
    }

    #[test]
    fn calls_share_one_connection_and_never_ask() {
        let host = HostSpec {
            name: "b".into(),
            ssh: "me@b".into(),
            ssh_args: vec!["-p".into(), "2222".into()],
            workdir: "/w".into(),
            max_workers: 1,
            tmux: "tmux".into(),
            tmux_socket: "s".into(),
            lost_after_s: 120,
            source: "h.toml".into(),
        };
        let link = SshLink::new(&host).unwrap();
        let cmd = link.command("true");
        let args: Vec<String> = cmd
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert!(args.contains(&"ControlMaster=auto".to_string()), "{args:?}");
        assert!(args.contains(&"BatchMode=yes".to_string()), "{args:?}");
        let dest = args.iter().position(|a| a == "me@b").unwrap();
        assert_eq!(args[dest - 1], "--");
        assert_eq!(args[dest + 1], "true");
        assert!(args.iter().position(|a| a == "2222").unwrap() < dest);
        let path = args
            .iter()
            .find_map(|a| a.strip_prefix("ControlPath="))
            .unwrap();
        assert!(
            path.ends_with(&control_name("me@b", &host.ssh_args)),
            "{path}"
        );
    }
}
