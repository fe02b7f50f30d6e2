//! One tmux server socket (`tmux -L <socket>`): every call is one blocking tmux client
//! process with stdin set to null (docs/tmux.md: tmux_interface inherits stdin by default,
//! which a raw-mode dashboard must not share).
#![allow(
    clippy::expect_used,
    reason = "stdout and stderr are piped just before they are taken"
)]

use std::process::{Command, Stdio};
use std::time::Duration;

use tmux_interface::{
    AttachSession, LoadBuffer, PasteBuffer, SelectWindow, SendKeys, Tmux, TmuxCommand,
};

use std::sync::Arc;

use super::control_client::{Channel, ControlStats, Sent};
use crate::error::{Error, Result};

static CLIENT_CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// tmux client processes this process has started so far (every call is one); the scale
/// benchmark reads it to count tmux processes per second.
pub fn client_calls() -> u64 {
    CLIENT_CALLS.load(std::sync::atomic::Ordering::Relaxed)
}

pub(super) fn count_call() {
    CLIENT_CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// One tmux command as a line of tmux's command language, with `-e NAME=value` options
/// added right after the command name (for `new-window`/`new-session`); every argument
/// quoted with [`tmux_quote`].
///
/// # Errors
/// A name or value with control characters (they cannot be quoted safely).
#[allow(
    clippy::needless_pass_by_value,
    reason = "tmux_interface builds commands by value"
)]
pub fn command_line(cmd: TmuxCommand<'_>, env: &[(String, String)]) -> Result<String> {
    let mut args: Vec<String> = cmd.to_vec().into_iter().map(|c| c.into_owned()).collect();
    if args.is_empty() {
        return Err(Error::Other("empty tmux command".into()));
    }
    let name = args.remove(0);
    let mut line = vec![name];
    for (k, v) in env {
        if v.chars().any(|c| c.is_control()) || k.chars().any(|c| c.is_control()) {
            return Err(Error::Other(format!(
                "the value for {k} has control characters; re-add it with `crewmux creds add`"
            )));
        }
        line.push("-e".into());
        line.push(tmux_quote(&format!("{k}={v}")));
    }
    line.extend(args.iter().map(|a| tmux_quote(a)));
    Ok(line.join(" "))
}

/// The arguments of a tmux invocation after `tmux` itself, for an error.
fn tmux_args(tmux: &Tmux<'_>) -> Vec<String> {
    let mut args: Vec<String> = tmux
        .clone()
        .build()
        .to_vec()
        .into_iter()
        .map(std::borrow::Cow::into_owned)
        .collect();
    if args.first().is_some_and(|a| a == "tmux") {
        args.remove(0);
    }
    args
}

/// A tmux server on a private socket. Calls go through its control-mode channel when the
/// client has one ([`with_control`](Self::with_control)) and it is up, otherwise through
/// one tmux process each.
#[derive(Clone)]
pub struct TmuxClient {
    socket: String,
    sep: String,
    control: Option<Arc<Channel>>,
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

/// True when a `tmux` binary is on PATH.
pub fn tmux_available() -> bool {
    which::which("tmux").is_ok()
}

/// `(major, minor)` from `tmux -V` (e.g. `tmux 3.3a` → `(3, 3)`, `tmux next-3.6` → `(3, 6)`).
///
/// # Errors
/// Tmux missing or its output unrecognised.
pub fn tmux_version() -> Result<(u32, u32)> {
    let out = Command::new("tmux")
        .arg("-V")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Error::Other(format!("tmux -V: {e}")))?;
    let text = String::from_utf8_lossy(&out.stdout);
    parse_version(&text).ok_or_else(|| Error::Other(format!("tmux -V printed {text:?}")))
}

fn parse_version(text: &str) -> Option<(u32, u32)> {
    let v = text.split_whitespace().nth(1)?;
    let v = v.trim_start_matches(|c: char| !c.is_ascii_digit());
    let mut parts = v.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor: String = parts
        .next()
        .unwrap_or("0")
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    Some((major, minor.parse().unwrap_or(0)))
}

/// Quote one argument for tmux's command language (used with `source-file -`): single
/// quotes when possible; otherwise double quotes with `\`, `"`, `$` and `~` escaped
/// (tmux(1) "PARSING SYNTAX").
pub fn tmux_quote(arg: &str) -> String {
    if !arg.contains('\'') {
        format!("'{arg}'")
    } else {
        let mut s = String::from("\"");
        for c in arg.chars() {
            if matches!(c, '\\' | '"' | '$' | '~') {
                s.push('\\');
            }
            s.push(c);
        }
        s.push('"');
        s
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
    fn output(
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

    /// The control channel's counters, `None` without one.
    pub fn control_stats(&self) -> Option<ControlStats> {
        self.control.as_ref().map(|c| c.stats())
    }

    /// Send `lines` (one command each) over the control channel; `None` when there is
    /// none or it is down (the caller runs a tmux process). A channel that ended before
    /// answering is retried as a process only when every command is `read_only` (running
    /// the others twice could, say, type an answer twice).
    fn over_channel(
        &self,
        lines: &[String],
        limit: Duration,
        read_only: bool,
        args: &[String],
    ) -> Option<Result<String>> {
        let channel = self.control.as_ref()?;
        match channel.send(lines, limit) {
            Sent::Answered(replies) => {
                let mut out = String::new();
                for r in &replies {
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
            Sent::Lost => Some(Err(Error::Tmux {
                args: args.to_vec(),
                stderr:
                    "the control channel ended before tmux answered; the command may not have run"
                        .into(),
            })),
            Sent::TimedOut => Some(Err(Error::Timeout {
                program: format!("the tmux server on socket {}", self.socket),
                secs: limit.as_secs(),
                hint: format!(
                    "is it stopped? (`tmux -L {} list-sessions` hangs too); crewmux tries again",
                    self.socket
                ),
            })),
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
        count_call();
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
        count_call();
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

    /// Paste `text` into `pane` as one bracketed paste, then Enter as a separate key a
    /// moment later (docs/tmux.md "Input to a pane": no 16 KiB command limit, no swallowed
    /// Enter). The buffer is deleted after pasting.
    ///
    /// # Errors
    /// As [`paste_text`](Self::paste_text) and [`run`](Self::run) for the Enter key.
    pub fn paste(&self, pane: &str, text: &str) -> Result<()> {
        self.paste_text(pane, text)?;
        std::thread::sleep(Duration::from_millis(50));
        self.run(Tmux::new().add_command(SendKeys::new().target_pane(pane).key("Enter").build()))?;
        Ok(())
    }

    /// The text part of [`paste`](Self::paste): `load-buffer -` then `paste-buffer -d -p`,
    /// without the Enter.
    ///
    /// # Errors
    /// [`Error::Tmux`] when `load-buffer` or `paste-buffer` fails (no such pane),
    /// [`Error::Timeout`] when the server does not answer, [`Error::Other`] when tmux cannot start.
    pub fn paste_text(&self, pane: &str, text: &str) -> Result<()> {
        let buffer = format!(
            "crewmux-{}",
            &uuid::Uuid::new_v4().simple().to_string()[..8]
        );
        if self.control.is_some() {
            // No stdin to load from on the channel: the text goes on the command line,
            // escaped so it stays one line (`set-buffer` has no 16 KiB limit here: the
            // line does not travel as a client message).
            let text_arg = super::control::quote_line_arg(text).map_err(Error::Other)?;
            let lines = vec![
                format!("set-buffer -b {} -- {text_arg}", tmux_quote(&buffer)),
                format!(
                    "paste-buffer -d -p -b {} -t {}",
                    tmux_quote(&buffer),
                    tmux_quote(pane)
                ),
            ];
            let args = [
                "set-buffer",
                "-b",
                &buffer,
                "…",
                ";",
                "paste-buffer",
                "-t",
                pane,
            ]
            .map(String::from)
            .to_vec();
            if let Some(done) = self.over_channel(&lines, super::bounded::CALL_LIMIT, false, &args)
            {
                return done.map(|_| ());
            }
        }
        count_call();
        let cmd = Tmux::new()
            .socket_name(self.socket.as_str())
            .add_command(
                LoadBuffer::new()
                    .buffer_name(buffer.as_str())
                    .path("-")
                    .build(),
            )
            .into_command();
        let out = self.output(cmd, Some(text.as_bytes()), super::bounded::CALL_LIMIT)?;
        if !out.status.success() {
            return Err(Error::Tmux {
                args: ["-L", &self.socket, "load-buffer", "-b", &buffer, "-"]
                    .map(String::from)
                    .to_vec(),
                stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            });
        }
        self.run(
            Tmux::new().add_command(
                PasteBuffer::new()
                    .delete()
                    .bracket_codes()
                    .buffer_name(buffer.as_str())
                    .target_pane(pane)
                    .build(),
            ),
        )?;
        Ok(())
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
        count_call();
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

/// The commands of one tmux invocation (`a … ; b …`) as control-mode lines, one command
/// a line (a line that holds several gets one `%error` block when any fails to parse, so
/// replies could no longer be counted).
///
/// # Errors
/// An argument with a NUL byte.
fn channel_lines(commands: &[String]) -> Result<Vec<String>> {
    let mut lines = vec![];
    for cmd in commands.split(|a| a == ";").filter(|c| !c.is_empty()) {
        let words: std::result::Result<Vec<String>, String> = cmd
            .iter()
            .map(|a| super::control::quote_line_arg(a))
            .collect();
        lines.push(words.map_err(Error::Other)?.join(" "));
    }
    Ok(lines)
}

/// Commands that change nothing in the server: safe to run again as a process when the
/// channel ended before answering.
fn is_read_only(line: &str) -> bool {
    let name = line.split(' ').next().unwrap_or("").trim_matches('\'');
    matches!(
        name,
        "list-panes"
            | "list-sessions"
            | "list-windows"
            | "capture-pane"
            | "display-message"
            | "has-session"
            | "show-options"
            | "show-buffer"
    )
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_becomes_one_line_per_command() {
        let args: Vec<String> = [
            "list-panes",
            "-F",
            "#{pane_id}\t",
            ";",
            "capture-pane",
            "-p",
            "-t",
            "%1",
        ]
        .map(String::from)
        .to_vec();
        let lines = channel_lines(&args).unwrap();
        assert_eq!(
            lines,
            vec![
                "'list-panes' '-F' \"#{pane_id}\\t\"",
                "'capture-pane' '-p' '-t' '%1'"
            ]
        );
        assert!(lines.iter().all(|l| is_read_only(l)));
        assert!(!is_read_only("'paste-buffer' '-t' '%1'"));
    }

    #[test]
    fn versions_parse() {
        assert_eq!(parse_version("tmux 3.3a\n"), Some((3, 3)));
        assert_eq!(parse_version("tmux 3.4"), Some((3, 4)));
        assert_eq!(parse_version("tmux next-3.6"), Some((3, 6)));
        assert_eq!(parse_version("garbage"), None);
    }

    #[test]
    fn quoting_keeps_quotes_and_dollars_literal() {
        assert_eq!(tmux_quote("a b"), "'a b'");
        assert_eq!(tmux_quote("it's $HOME"), "\"it's \\$HOME\"");
    }
}
