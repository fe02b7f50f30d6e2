//! tmux on another machine: every tmux client process — the persistent control-mode
//! client included — runs as `ssh <options> <dest> -- '<tmux>' <args…>`, each argument
//! quoted for the shell there (ssh joins its arguments into one command line for the
//! remote login shell). The control-mode protocol is the same over the SSH channel: the
//! client's stdin and stdout are ssh's. Nothing else changes, so the reader, the deadlines
//! and the fallback to processes apply as locally.
//!
//! Every call runs `tmux -u`: without a UTF-8 locale (an SSH session often has none)
//! tmux writes the control characters of `-F` output as `_`.
//! Every call also runs in `sh -c` on the host, which first gives tmux a UTF-8 locale
//! by the rule of `super::locale` (`UTF8_LOCALE`): the server a call starts, and so
//! the panes of the host's workers, have one as they do here.
//!
//! Two local shortcuts do not apply to a remote server and are replaced: the session
//! does not receive crewmux's own environment (it is this machine's), and the SIGCHLD
//! kick for a pane death tmux missed goes through `run-shell` on the host instead of
//! `kill(2)` here (a pid of that host means nothing on this one).
//!
//! A control-mode client whose SSH connection died can live on on the host (its sshd
//! session lingers), and such an orphan wedged its server: every other client then got
//! "server exited unexpectedly". Only one process drives a run, so when the channel
//! (re)connects, any earlier control-mode client of the run's session on that server is
//! an orphan: it is ended (SIGKILL, found with `pgrep -f` on the exact command line
//! crewmux runs) just before the new client starts, in the same ssh call.
//!
//! The new client starts only once the server has dropped the orphans (`list-clients` no
//! longer names their pids; bounded at 5 s): tmux 3.3a tells every control client that
//! another one detached, and a control client still identifying itself has no control
//! state yet, so the server dereferences NULL and dies (`control_write`; tmux later
//! checks `control_state` in `CONTROL_SHOULD_NOTIFY_CLIENT`). Started at once after the
//! kill, the new client met that notice now and then under load and took the host's
//! server, and every worker on it, down.

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
        let script = format!("{UTF8_LOCALE}exec {}", join(&words, &self.host)?);
        // `sh`: the login shell on the host may not be a POSIX one.
        self.ssh_line(join(
            &["sh".to_string(), "-c".to_string(), script],
            &self.host,
        )?)
    }
}

/// Run on the host before tmux: the rule of `super::locale::utf8_fix` in `sh`. When the
/// first of `LC_ALL`, `LC_CTYPE` and `LANG` that is set names no UTF-8 locale (an SSH
/// session often has none: `SendEnv` and `AcceptEnv` decide), `C.UTF-8` goes in that
/// variable (`LC_CTYPE` when none is set), so a server started by this call, and the
/// panes it runs, have a UTF-8 locale as they do here.
const UTF8_LOCALE: &str = "case \"${LC_ALL:-${LC_CTYPE:-$LANG}}\" in \
     *[Uu][Tt][Ff]-8*|*[Uu][Tt][Ff]8*) ;; \
     *) if [ -n \"$LC_ALL\" ]; then export LC_ALL=C.UTF-8; else export LC_CTYPE=C.UTF-8; fi;; \
     esac; ";

impl RemoteShell {
    /// The control-mode client `cmd` (`tmux -L <socket> -C attach-session -t =<session>
    /// …`, built for this machine) run on the host after every earlier control-mode
    /// client of the same server and session is ended (see the module docs).
    ///
    /// # Errors
    /// An argument with a NUL byte.
    pub fn wrap_control(&self, cmd: &Command, socket: &str, session: &str) -> Result<Command> {
        let mut words = vec![self.tmux.clone(), "-u".to_string()];
        words.extend(cmd.get_args().map(|a| a.to_string_lossy().into_owned()));
        let client = join(&words, &self.host)?;
        // Anchored on the program: the `sh -c` running this line (and pkill itself) name
        // the pattern in their own command lines, but do not start with tmux.
        let pattern = format!(
            "^{} -u -L {} -C attach-session -t ={}( |$)",
            ere_escape(&self.tmux),
            ere_escape(socket),
            ere_escape(session)
        );
        let list_clients = join(
            &[
                self.tmux.clone(),
                "-u".to_string(),
                "-L".to_string(),
                socket.to_string(),
                "list-clients".to_string(),
                "-F".to_string(),
                "#{client_pid}".to_string(),
            ],
            &self.host,
        )?;
        // One command a line (the unit test reads them back): the orphans' pids, their
        // SIGKILL, the wait until the server has dropped them (see the module docs).
        let script = format!(
            "{UTF8_LOCALE}\npat={}\nold=$(pgrep -f -- \"$pat\")\nif [ -n \"$old\" ]; then\n\
             kill -KILL $old 2>/dev/null\nn=0\n\
             while [ $n -lt 50 ] && {list_clients} 2>/dev/null | grep -qxF \"$old\"; do sleep 0.1; n=$((n+1)); done\n\
             fi\nexec {client}",
            join(&[pattern], &self.host)?
        );
        // `sh`: the login shell on the host may not be a POSIX one.
        self.ssh_line(join(
            &["sh".to_string(), "-c".to_string(), script],
            &self.host,
        )?)
    }

    /// `ssh … <dest> <line>`.
    fn ssh_line(&self, line: String) -> Result<Command> {
        let (program, args) = self
            .ssh
            .split_first()
            .ok_or_else(|| Error::Other(format!("no ssh command for host {}", self.host)))?;
        let mut out = Command::new(program);
        out.args(args).arg(line);
        Ok(out)
    }
}

/// `words` as one command line for the shell on `host`.
fn join(words: &[String], host: &str) -> Result<String> {
    shlex::try_join(words.iter().map(String::as_str)).map_err(|_| {
        Error::Usage(format!(
            "cannot pass an argument with a NUL byte to tmux on host {host}"
        ))
    })
}

/// `s` matched literally in a POSIX extended regular expression (pkill(1) `-f`).
fn ere_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if "\\.[]()*+?{}|^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
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
        let line = shlex::split(&args[4]).unwrap();
        assert_eq!(line[..2], ["sh", "-c"]);
        let (_, tmux) = line[2].split_once("exec ").unwrap();
        assert_eq!(
            shlex::split(tmux).unwrap(),
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

    #[test]
    fn a_host_without_a_utf8_locale_gets_c_utf8_in_the_variable_in_force() {
        let run = |vars: &[(&str, &str)]| {
            let out = Command::new("sh")
                .arg("-c")
                .arg(format!("{UTF8_LOCALE}echo \"$LC_ALL|$LC_CTYPE|$LANG\""))
                .env_clear()
                .envs(vars.iter().copied())
                .output()
                .unwrap();
            String::from_utf8_lossy(&out.stdout).trim().to_string()
        };
        assert_eq!(run(&[]), "|C.UTF-8|");
        assert_eq!(run(&[("LANG", "C")]), "|C.UTF-8|C");
        assert_eq!(run(&[("LANG", "de_DE.utf8")]), "||de_DE.utf8");
        assert_eq!(
            run(&[("LC_CTYPE", "en_US.UTF-8"), ("LANG", "C")]),
            "|en_US.UTF-8|C"
        );
        assert_eq!(run(&[("LC_ALL", "POSIX")]), "C.UTF-8||");
    }

    #[test]
    fn a_new_control_client_on_a_host_first_ends_the_earlier_ones_of_its_session_only() {
        let shell = RemoteShell {
            ssh: ["ssh", "--", "me@box"].map(String::from).to_vec(),
            tmux: "/opt/tmux.3".into(),
            host: "box".into(),
        };
        let mut cmd = Command::new("tmux");
        cmd.args(["-L", "s.1", "-C", "attach-session", "-t", "=crewmux-r1"])
            .args(["-f", "no-output,ignore-size"]);
        let wrapped = shell.wrap_control(&cmd, "s.1", "crewmux-r1").unwrap();
        let args: Vec<String> = wrapped
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let line = shlex::split(&args[2]).unwrap();
        assert_eq!(line[..2], ["sh", "-c"]);
        let step = |start: &str| {
            let l = line[2].lines().find(|l| l.starts_with(start)).unwrap();
            shlex::split(l).unwrap()
        };
        let pat = step("pat=");
        let re = regex::Regex::new(pat[0].strip_prefix("pat=").unwrap()).unwrap();
        assert_eq!(step("old=")[..4], ["old=$(pgrep", "-f", "--", "$pat)"]);
        assert_eq!(step("kill ")[..3], ["kill", "-KILL", "$old"]);
        // The new client waits until the server no longer lists the orphans.
        let wait = step("while ").join(" ");
        assert!(
            wait.contains("/opt/tmux.3 -u -L s.1 list-clients -F #{client_pid}")
                && wait.contains("grep -qxF $old"),
            "{wait}"
        );
        // What ps shows of a process: its arguments joined by spaces.
        let client = step("exec ")[1..].join(" ");
        assert!(client.ends_with("-f no-output,ignore-size"), "{client}");
        assert!(re.is_match(&client), "{} / {client}", &pat[0]);
        for other in [
            format!("sh -c {}", line[2]),
            client.replace("=crewmux-r1", "=crewmux-r10"),
            client.replace("-L s.1", "-L sx1"),
            client.replace("/opt/tmux.3", "/opt/tmux"),
        ] {
            assert!(!re.is_match(&other), "{other}");
        }
    }
}
