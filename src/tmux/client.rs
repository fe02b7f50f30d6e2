//! One tmux server socket (`tmux -L <socket>`): every call is one blocking tmux client
//! process with stdin set to null (docs/tmux.md: tmux_interface inherits stdin by default,
//! which a raw-mode dashboard must not share).
#![allow(
    clippy::expect_used,
    reason = "stdout and stderr are piped just before they are taken"
)]

use std::collections::BTreeMap;
use std::process::Command;
use std::time::Duration;

use tmux_interface::{AttachSession, SelectWindow, Tmux, TmuxCommand};

use std::sync::Arc;

use super::command_line::{channel_lines, command_line, is_read_only, tmux_args};
use super::control_client::{Channel, ControlStats, Sent};
use crate::error::{Error, Result};

/// tmux client processes started so far, per socket (`-L` name).
static CLIENT_CALLS: std::sync::Mutex<BTreeMap<String, u64>> =
    std::sync::Mutex::new(BTreeMap::new());

/// tmux client processes this process has started so far for the server on `socket`
/// (every call that does not go over a control channel is one, and so is each control
/// client); the scale benchmark reads it to count tmux processes per second. Counted per
/// socket so that runs on other servers in the same process (tests run side by side) do
/// not add to it.
pub fn client_calls(socket: &str) -> u64 {
    let calls = CLIENT_CALLS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    calls.get(socket).copied().unwrap_or(0)
}

/// Count one tmux client process started for the server on `socket`.
pub(super) fn count_call(socket: &str) {
    let mut calls = CLIENT_CALLS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    *calls.entry(socket.to_string()).or_insert(0) += 1;
}

/// A tmux server on a private socket. Calls go through its control-mode channel when the
/// client has one ([`with_control`](Self::with_control)) and it is up, otherwise through
/// one tmux process each.
#[derive(Clone)]
pub struct TmuxClient {
    socket: String,
    sep: String,
    pub(super) control: Option<Arc<Channel>>,
    /// Set for a server on another machine: every tmux process runs through ssh.
    remote: Option<Arc<super::remote::RemoteShell>>,
}

impl std::fmt::Debug for TmuxClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TmuxClient")
            .field("socket", &self.socket)
            .field("control", &self.control.is_some())
            .finish()
    }
}

impl TmuxClient {
    pub fn new(socket: &str) -> Self {
        TmuxClient {
            socket: socket.to_string(),
            sep: format!(
                "__crewmux_sep_{}__",
                &uuid::Uuid::new_v4().simple().to_string()[..12]
            ),
            control: None,
            remote: None,
        }
    }

    /// Reach the server on another machine through `shell` (see `tmux::remote`).
    pub fn via(mut self, shell: super::remote::RemoteShell) -> Self {
        self.remote = Some(Arc::new(shell));
        self
    }

    /// True for a server on another machine.
    pub fn is_remote(&self) -> bool {
        self.remote.is_some()
    }

    /// Run a tmux client process (through ssh for a remote server, whose limit is at
    /// least [`REMOTE_CALL_LIMIT`](super::remote::REMOTE_CALL_LIMIT)).
    ///
    /// # Errors
    /// The client cannot be started, or it did not end within its limit.
    pub(super) fn output(
        &self,
        cmd: Command,
        stdin: Option<&[u8]>,
        limit: Duration,
    ) -> Result<std::process::Output> {
        match &self.remote {
            None => super::bounded::output_within(cmd, stdin, limit, &self.socket),
            Some(shell) => super::bounded::output_within(
                shell.wrap(&cmd)?,
                stdin,
                limit.max(super::remote::REMOTE_CALL_LIMIT),
                &format!("{} on host {}", self.socket, shell.host),
            ),
        }
    }

    /// Send routine calls over one persistent control-mode client attached to `session`
    /// (started at the first call, restarted after a back-off when it ends); clones share
    /// it. For a process that drives a run: a one-off command is cheaper without it.
    pub fn with_control(mut self, session: &str) -> Self {
        self.control = Some(Arc::new(Channel::new(
            &self.socket,
            session,
            self.remote.clone(),
        )));
        self
    }

    /// This client when its control channel is up; otherwise a copy of it that runs every
    /// call as a tmux process and so never tries to start the channel (for the calls that
    /// make the session a channel attaches to).
    pub(super) fn channel_or_processes(&self) -> TmuxClient {
        let mut client = self.clone();
        if !self.control.as_ref().is_some_and(|c| c.is_up()) {
            client.control = None;
        }
        client
    }

    /// The control channel's counters, `None` without one.
    pub fn control_stats(&self) -> Option<ControlStats> {
        self.control.as_ref().map(|c| c.stats())
    }

    /// Send `lines` (one command each) over the control channel; `None` when there is
    /// none or it is down (the caller runs a tmux process). A channel that ended before
    /// answering is retried as a process only when every command is `read_only` (running
    /// the others twice could, say, type an answer twice).
    pub(super) fn over_channel(
        &self,
        lines: &[String],
        limit: Duration,
        read_only: bool,
        args: &[String],
    ) -> Option<Result<String>> {
        let channel = self.control.as_ref()?;
        let sent = channel.send(lines, limit);
        match sent {
            Sent::Answered(ref replies) => {
                let mut out = String::new();
                for r in replies {
                    if !r.ok {
                        return Some(Err(Error::Tmux {
                            args: args.to_vec(),
                            stderr: r.text().trim().to_string(),
                        }));
                    }
                    out.push_str(&r.text());
                }
                Some(Ok(out))
            }
            Sent::Down => None,
            Sent::Lost if read_only => None,
            Sent::Lost | Sent::TimedOut => Some(Err(self.unanswered(&sent, args, limit))),
        }
    }

    /// The error of a channel that ended (`Sent::Lost`) or missed its deadline
    /// (`Sent::TimedOut`) before every reply came.
    fn unanswered(&self, sent: &Sent, args: &[String], limit: Duration) -> Error {
        match sent {
            Sent::TimedOut => Error::Timeout {
                program: format!("the tmux server on socket {}", self.socket),
                secs: limit.as_secs(),
                hint: format!(
                    "is it stopped? (`tmux -L {} list-sessions` hangs too); crewmux tries again",
                    self.socket
                ),
            },
            _ => Error::Tmux {
                args: args.to_vec(),
                stderr:
                    "the control channel ended before tmux answered; the command may not have run"
                        .into(),
            },
        }
    }

    /// Send `lines` (one tmux command each, as [`run_script`](Self::run_script) runs them)
    /// over the control channel, handing each line's reply to `each` as soon as it comes:
    /// the line's index, and its output or tmux's message (`secrets` redacted). `None` when
    /// the channel is not up: nothing was sent, the caller runs the script otherwise.
    ///
    /// # Errors
    /// The channel ended, or missed its deadline ([`SCRIPT_LIMIT`](super::bounded::SCRIPT_LIMIT)),
    /// before every reply came: the lines not answered may or may not have run.
    pub(super) fn script_each(
        &self,
        lines: &[String],
        secrets: &[&str],
        each: &mut dyn FnMut(usize, std::result::Result<String, String>),
    ) -> Option<Result<()>> {
        let channel = self.control.as_ref()?;
        let limit = super::bounded::SCRIPT_LIMIT;
        let sent = channel.send_each(lines, limit, &mut |i, reply| {
            let text = reply.text();
            each(
                i,
                if reply.ok {
                    Ok(text)
                } else {
                    Err(secrets
                        .iter()
                        .filter(|v| !v.is_empty())
                        .fold(text.trim().to_string(), |t, v| t.replace(v, "<redacted>")))
                },
            );
        });
        match sent {
            Sent::Answered(_) => Some(Ok(())),
            Sent::Down => None,
            Sent::Lost | Sent::TimedOut => {
                let args = ["source-file", "-"].map(String::from);
                Some(Err(self.unanswered(&sent, &args, limit)))
            }
        }
    }

    pub fn socket(&self) -> &str {
        &self.socket
    }

    /// A random line that separates the outputs of batched commands.
    pub fn separator(&self) -> &str {
        &self.sep
    }

    /// Run a batch of commands in one tmux process; returns stdout.
    ///
    /// # Errors
    /// Tmux could not start, or exited non-zero (the message is tmux's stderr).
    pub fn run(&self, tmux: Tmux<'_>) -> Result<String> {
        if self.control.is_some() {
            let commands = tmux_args(&tmux);
            let lines = channel_lines(&commands)?;
            let read_only = lines.iter().all(|l| is_read_only(l));
            if let Some(done) =
                self.over_channel(&lines, super::bounded::CALL_LIMIT, read_only, &commands)
            {
                return done;
            }
        }
        count_call(&self.socket);
        let tmux = tmux.socket_name(self.socket.as_str());
        let args = tmux_args(&tmux);
        let cmd = tmux.into_command();
        let out = self.output(cmd, None, super::bounded::CALL_LIMIT)?;
        if !out.status.success() {
            return Err(Error::Tmux {
                args,
                stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            });
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// True when the server answers and has `session`.
    pub fn has_session(&self, session: &str) -> bool {
        let mut cmd = TmuxCommand::new();
        cmd.name("has-session");
        cmd.push_option("-t", format!("={session}"));
        self.run(Tmux::new().add_command(cmd)).is_ok()
    }

    /// Run `first ; second` with extra `-e NAME=value` options on `first`, sent through the
    /// client's stdin with `source-file -` so the values never appear on a command line
    /// (argv is readable in /proc). Values must not contain control characters.
    ///
    /// # Errors
    /// As [`command_line`] (a value with control characters) and [`run_script`](Self::run_script).
    pub fn run_with_secret_env(
        &self,
        first: TmuxCommand<'_>,
        second: TmuxCommand<'_>,
        secret_env: &[(String, String)],
    ) -> Result<String> {
        let script = format!(
            "{} ; {}\n",
            command_line(first, secret_env)?,
            command_line(second, &[])?
        );
        let secrets: Vec<&str> = secret_env.iter().map(|(_, v)| v.as_str()).collect();
        self.run_script(&script, &secrets)
    }

    /// Run a script of tmux commands (one command list a line) through `source-file -`, the
    /// client's stdin; returns stdout. `secrets` are replaced by `<redacted>` in an error
    /// (tmux may quote the failing command line).
    ///
    /// # Errors
    /// [`Error::Tmux`] with tmux's stderr (secrets redacted) when it exits non-zero;
    /// [`Error::Timeout`] after [`SCRIPT_LIMIT`](super::bounded::SCRIPT_LIMIT); [`Error::Other`]
    /// when tmux cannot be started.
    pub fn run_script(&self, script: &str, secrets: &[&str]) -> Result<String> {
        if self.control.is_some() {
            let lines: Vec<String> = script
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(str::to_string)
                .collect();
            let args = ["source-file", "-"].map(String::from).to_vec();
            if let Some(done) =
                self.over_channel(&lines, super::bounded::SCRIPT_LIMIT, false, &args)
            {
                return done.map_err(|e| redact(e, secrets));
            }
        }
        count_call(&self.socket);
        let mut cmd = Command::new("tmux");
        cmd.args(["-L", &self.socket, "source-file", "-"]);
        let out = self.output(cmd, Some(script.as_bytes()), super::bounded::SCRIPT_LIMIT)?;
        if !out.status.success() {
            let mut err = String::from_utf8_lossy(&out.stderr).trim().to_string();
            for v in secrets.iter().filter(|v| !v.is_empty()) {
                err = err.replace(v, "<redacted>");
            }
            return Err(Error::Tmux {
                args: ["-L", &self.socket, "source-file", "-"]
                    .map(String::from)
                    .to_vec(),
                stderr: err,
            });
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// `tmux -L <socket> select-window -t <pane> ; attach-session -t =<session>` with
    /// `$TMUX` removed so it works from inside another tmux too; run it with the terminal.
    pub fn attach_command(&self, session: &str, pane: &str) -> Command {
        let mut cmd = Tmux::new()
            .socket_name(self.socket.as_str())
            .add_command(SelectWindow::new().target_window(pane).build())
            .add_command(
                AttachSession::new()
                    .target_session(format!("={session}"))
                    .build(),
            )
            .into_command();
        cmd.env_remove("TMUX");
        cmd
    }

    /// Send SIGCHLD to the tmux server so it reaps a pane whose death it missed.
    pub fn kick_sigchld(&self, server_pid: u32) {
        if self.is_remote() {
            // A pid of that host: the kill runs there, from its tmux server.
            let mut cmd = TmuxCommand::new();
            cmd.name("run-shell");
            cmd.push_flag("-b");
            cmd.push_param(format!("kill -s CHLD {server_pid}"));
            if let Err(e) = self.run(Tmux::new().add_command(cmd)) {
                tracing::debug!("SIGCHLD to the tmux server on {}: {e}", self.socket);
            }
            return;
        }
        if let Ok(pid) = i32::try_from(server_pid) {
            if pid > 1 {
                // Err: the server is gone (ESRCH); the poll that follows finds that out.
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGCHLD,
                );
            }
        }
    }

    /// `kill-server` on this socket only (as a process: the channel ends with the server).
    ///
    /// # Errors
    /// As [`run`](Self::run); no server on the socket is a tmux error too.
    pub fn kill_server(&self) -> Result<()> {
        if let Some(c) = &self.control {
            c.close();
        }
        count_call(&self.socket);
        let mut cmd = TmuxCommand::new();
        cmd.name("kill-server");
        let tmux = Tmux::new()
            .socket_name(self.socket.as_str())
            .add_command(cmd);
        let args = tmux_args(&tmux);
        let out = self.output(tmux.into_command(), None, super::bounded::CALL_LIMIT)?;
        if !out.status.success() {
            return Err(Error::Tmux {
                args,
                stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            });
        }
        Ok(())
    }
}

/// `e` with every secret value replaced by `<redacted>` (tmux may quote the failing line).
fn redact(e: Error, secrets: &[&str]) -> Error {
    match e {
        Error::Tmux { args, mut stderr } => {
            for v in secrets.iter().filter(|v| !v.is_empty()) {
                stderr = stderr.replace(v, "<redacted>");
            }
            Error::Tmux { args, stderr }
        }
        other => other,
    }
}
