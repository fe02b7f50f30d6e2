//! tmux on another machine: every tmux client process — the persistent control-mode
//! client included — runs as `ssh <options> <dest> -- '<tmux>' <args…>`, each argument
//! quoted for the shell there (ssh joins its arguments into one command line for the
//! remote login shell). The control-mode protocol is the same over the SSH channel: the
//! client's stdin and stdout are ssh's. Nothing else changes, so the reader, the deadlines
//! and the fallback to processes apply as locally.
//!
//! Every call runs `tmux -u`: without a UTF-8 locale (an SSH session often has none)
//! tmux writes the control characters of `-F` output as `_`.
//!
//! Two local shortcuts do not apply to a remote server and are replaced: the session
//! does not receive crewmux's own environment (it is this machine's), and the SIGCHLD
//! kick for a pane death tmux missed goes through `run-shell` on the host instead of
//! `kill(2)` here (a pid of that host means nothing on this one).

use std::process::Command;
use std::time::Duration;

use crate::error::{Error, Result};

/// How to reach a tmux on another machine.
#[derive(Debug, Clone)]
pub struct RemoteShell {
    /// `ssh` and its arguments up to the destination, e.g. `["ssh", "-o", "…", "--",
    /// "me@box"]`.
    pub ssh: Vec<String>,
    /// The tmux program on that machine.
    pub tmux: String,
    /// The host's name, for messages.
    pub host: String,
}

/// Longest a first call may take over SSH: the connection may have to be opened.
pub const REMOTE_CALL_LIMIT: Duration = Duration::from_secs(15);

impl RemoteShell {
    /// `cmd` (a `tmux …` command built for this machine) as the same command run on the
    /// host through ssh; stdin, stdout and stderr are left for the caller to set.
    ///
    /// # Errors
    /// An argument with a NUL byte (it cannot be passed to a remote shell).
    pub fn wrap(&self, cmd: &Command) -> Result<Command> {
        // `-u`: an SSH session often has no UTF-8 locale, and tmux then writes control
        // characters of `-F` output (the tab of a launch's reply) as `_` (tmux(1) `-u`).
        let mut words = vec![self.tmux.clone(), "-u".to_string()];
        words.extend(cmd.get_args().map(|a| a.to_string_lossy().into_owned()));
        let line = shlex::try_join(words.iter().map(String::as_str)).map_err(|_| {
            Error::Usage(format!(
                "cannot pass an argument with a NUL byte to tmux on host {}",
                self.host
            ))
        })?;
        let (program, args) = self
            .ssh
            .split_first()
            .ok_or_else(|| Error::Other(format!("no ssh command for host {}", self.host)))?;
        let mut out = Command::new(program);
        out.args(args).arg(line);
        Ok(out)
    }
}

impl super::TmuxBackend {
    /// The tmux backend of a run's session on another machine: calls go through
    /// `shell`; see the module docs for what differs.
    pub fn over_ssh(
        socket: &str,
        session: &str,
        home_argv: Vec<String>,
        shell: RemoteShell,
    ) -> Self {
        let mut b = super::TmuxBackend::new(socket, session, home_argv);
        b.client = b.client.via(shell);
        // The session keeps the host's own environment.
        b.env_synced = true;
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tmux_call_becomes_one_quoted_command_line_for_the_host() {
        let shell = RemoteShell {
            ssh: ["ssh", "-o", "BatchMode=yes", "--", "me@box"]
                .map(String::from)
                .to_vec(),
            tmux: "/opt/tmux".into(),
            host: "box".into(),
        };
        let mut cmd = Command::new("tmux");
        cmd.args(["-L", "s", "list-panes", "-F", "#{pane_id}\t#{pane_dead}"]);
        let wrapped = shell.wrap(&cmd).unwrap();
        assert_eq!(wrapped.get_program(), "ssh");
        let args: Vec<String> = wrapped
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(&args[..4], ["-o", "BatchMode=yes", "--", "me@box"]);
        assert_eq!(
            shlex::split(&args[4]).unwrap(),
            [
                "/opt/tmux",
                "-u",
                "-L",
                "s",
                "list-panes",
                "-F",
                "#{pane_id}\t#{pane_dead}"
            ]
        );
        assert_eq!(args.len(), 5);
    }
}
