//! Starting attempts in tmux: the run's session (created with `remain-on-exit` and
//! `history-limit` before any worker pane), one window per attempt with the wrapper as its
//! argv, `pipe-pane` streaming its output, and the session's environment. Every window of a
//! launch goes through one `source-file -` script (docs/tmux.md).

use tmux_interface::{KillSession, NewSession, PipePane, SendKeys, SetOption, Tmux, TmuxCommand};

use super::{command_line, TmuxBackend, HISTORY_LIMIT, PANE_COLS, PANE_ROWS};
use crate::backend::{SpawnSpec, Spawned};
use crate::error::{Error, Result};

impl TmuxBackend {
    /// Create the run's session if it does not exist (after a server death too), with
    /// `remain-on-exit` and `history-limit` set before any worker pane is created.
    ///
    /// # Errors
    /// [`Error::Tmux`] when tmux refuses (its stderr), [`Error::Timeout`] when the server does not
    /// answer, [`Error::Other`] when tmux cannot be started.
    pub fn ensure_session(&mut self) -> Result<()> {
        // The control channel attaches to the run's session: until it is up, the session
        // is asked for and made by tmux processes, so that no attach is tried before the
        // session exists (a failed one holds the channel down for its back-off, and every
        // call meanwhile is a process of its own).
        let client = self.client.channel_or_processes();
        if client.has_session(&self.session) {
            return Ok(());
        }
        // A new session here gets crewmux's environment again; one on another machine
        // keeps that host's own (this machine's variables mean nothing there, and its
        // secrets must not reach the host's tmux: a launch carries what a pane needs).
        self.env_synced = self.client.is_remote();
        match self.new_session(&client) {
            // With no server yet, the question above (or the control channel's first
            // `attach-session`) starts one that finds no session and exits; a call that
            // reaches it meanwhile hears "server exited unexpectedly" (tmux 3.3a). Seen
            // under load when a run's first local window comes after its remote ones. The
            // next call starts a server of its own.
            Err(e) if e.to_string().contains("server exited unexpectedly") => {
                tracing::debug!(
                    "tmux -L {}: {e}; creating the session again",
                    self.client.socket()
                );
                std::thread::sleep(std::time::Duration::from_millis(50));
                self.new_session(&client)
            }
            r => r,
        }
    }

    /// `new-session` of the run's session, with its options set first, through `client`.
    fn new_session(&self, client: &super::TmuxClient) -> Result<()> {
        let mut new = NewSession::new()
            .detached()
            .session_name(self.session.as_str())
            .window_name("crewmux")
            .width(PANE_COLS as usize)
            .height(PANE_ROWS as usize)
            .build();
        for a in &self.home_argv {
            new.push_param(a.clone());
        }
        client.run(
            Tmux::new()
                .add_command(
                    SetOption::new()
                        .global()
                        .option("history-limit")
                        .value(HISTORY_LIMIT.to_string())
                        .build(),
                )
                .add_command(
                    SetOption::new()
                        .global()
                        .window()
                        .option("remain-on-exit")
                        .value("on")
                        .build(),
                )
                .add_command(new),
        )?;
        Ok(())
    }

    /// All windows in one script: per attempt, `new-window` with the wrapper as argv
    /// (never a shell string) and its secrets as `-e`, then `pipe-pane` on the new pane,
    /// then the key the wrapper waits for before it starts the agent
    /// ([`LOG_ATTACHED_KEY`](crate::launch::LOG_ATTACHED_KEY)). Nothing travels on argv.
    pub(super) fn spawn_windows(&mut self, specs: &[SpawnSpec]) -> Vec<Result<Spawned>> {
        let mut results: Vec<Option<Result<Spawned>>> = specs.iter().map(|_| None).collect();
        self.spawn_windows_each(specs, &mut |i, r| results[i] = Some(r));
        results
            .into_iter()
            .map(|r| r.unwrap_or_else(|| Err(Error::Other("tmux started nothing".into()))))
            .collect()
    }

    /// As [`spawn_windows`](Self::spawn_windows), handing each window's result to `each`
    /// (its index, in order, once each) as soon as it is known. Over the control channel
    /// that is when tmux has answered the window's `pipe-pane`, while it makes the next
    /// windows (16 windows take 100–700 ms on a busy server, and an attempt that ends
    /// meanwhile is recorded only once its start is); each window's result is its own
    /// (tmux runs every line of the channel however the one before went). Through a tmux
    /// process (`source-file -`), when the script has run.
    pub(super) fn spawn_windows_each(
        &mut self,
        specs: &[SpawnSpec],
        each: &mut dyn FnMut(usize, Result<Spawned>),
    ) {
        let fail_from = |from: usize, e: &Error, each: &mut dyn FnMut(usize, Result<Spawned>)| {
            for i in from..specs.len() {
                each(i, Err(Error::Other(e.to_string())));
            }
        };
        if let Err(e) = self.ensure_session().and_then(|_| self.sync_env()) {
            return fail_from(0, &e, each);
        }
        let mut lines: Vec<String> = vec![];
        let mut secrets: Vec<&str> = vec![];
        for spec in specs {
            match self.window_lines(spec) {
                Ok(pair) => lines.extend(pair),
                Err(e) => return fail_from(0, &e, each),
            }
            secrets.extend(spec.secret_env.iter().map(|(_, v)| v.as_str()));
        }
        let mut made: Option<std::result::Result<String, String>> = None;
        let mut reported = 0;
        let streamed = self.client.script_each(&lines, &secrets, &mut |i, reply| {
            let w = i / WINDOW_LINES;
            match (i % WINDOW_LINES, &reply) {
                (0, _) => {
                    made = Some(reply);
                    return;
                }
                (1, _) => {}
                (_, Ok(_)) => return,
                (_, Err(e)) => {
                    // Only a pane that is gone already refuses a key: nothing waits there.
                    tracing::warn!("tmux: window {}: send-keys: {e}", specs[w].window);
                    return;
                }
            }
            let r = match (made.take(), reply) {
                (Some(Ok(out)), Ok(_)) => spawned(&out, &specs[w]),
                (Some(Err(e)), _) | (_, Err(e)) => Err(Error::Tmux {
                    args: vec!["new-window".into(), specs[w].window.clone()],
                    stderr: e,
                }),
                (None, Ok(_)) => Err(Error::Other(format!(
                    "tmux did not start window {}",
                    specs[w].window
                ))),
            };
            each(w, r);
            reported = w + 1;
        });
        match streamed {
            Some(Ok(())) => fail_from(
                reported,
                &Error::Other("tmux gave no answer for this window".into()),
                each,
            ),
            Some(Err(e)) => fail_from(reported, &e, each),
            None => self.script_windows(specs, &lines, &secrets, each),
        }
    }

    /// The windows' script through one tmux process, each result handed to `each` when it
    /// has run (all failed when it fails).
    fn script_windows(
        &self,
        specs: &[SpawnSpec],
        lines: &[String],
        secrets: &[&str],
        each: &mut dyn FnMut(usize, Result<Spawned>),
    ) {
        let script: String = lines.iter().map(|l| format!("{l}\n")).collect();
        let out = match self.client.run_script(&script, secrets) {
            Ok(out) => out,
            Err(e) => {
                for i in 0..specs.len() {
                    each(i, Err(Error::Other(e.to_string())));
                }
                return;
            }
        };
        let mut made = out.lines().filter(|l| l.contains('\t'));
        for (i, spec) in specs.iter().enumerate() {
            let r = match made.next() {
                Some(line) => spawned(line, spec),
                None => Err(Error::Other(format!(
                    "tmux did not start window {}",
                    spec.window
                ))),
            };
            each(i, r);
        }
    }

    /// The script lines ([`WINDOW_LINES`]) that start one attempt's window, stream its
    /// output, then let its wrapper start the agent.
    fn window_lines(&self, spec: &SpawnSpec) -> Result<[String; WINDOW_LINES]> {
        let mut new_window = TmuxCommand::new();
        new_window.name("new-window");
        new_window.push_flag("-d");
        new_window.push_flag("-P");
        new_window.push_option(
            "-F",
            format!("{}\t#{{pane_pid}}", super::panes::PANE_REF_FORMAT),
        );
        new_window.push_option("-t", format!("{}:", self.target_session()));
        new_window.push_option("-n", spec.window.clone());
        new_window.push_option("-c", spec.cwd.display().to_string());
        new_window.push_param("sh");
        new_window.push_param(spec.launch.display().to_string());
        let mut env = spec.env.clone();
        env.extend(spec.secret_env.iter().cloned());
        let log = shlex::try_quote(&spec.log.display().to_string())
            .map_err(|_| Error::Other("log path has a NUL byte".into()))?
            .into_owned();
        // tmux runs the command with `sh -c`; `exec` leaves one `cat` instead of a shell
        // waiting on it (dash forks for a lone command). A dead pane keeps its pipe (and so
        // this process) while it remains on exit, so each one left counts twice as many
        // processes without it.
        let pane = format!("{}:={}", self.target_session(), spec.window);
        let pipe = PipePane::new()
            .open()
            .target_pane(pane.clone())
            .shell_command(format!("exec cat >> {log}"))
            .build();
        // After the pipe: tmux runs a script's lines in order, so the agent's first byte
        // is printed with the pipe attached.
        let go = SendKeys::new()
            .target_pane(pane)
            .key(crate::launch::LOG_ATTACHED_KEY)
            .build();
        Ok([
            command_line::command_line(new_window, &env)?,
            command_line::command_line(pipe, &[])?,
            command_line::command_line(go, &[])?,
        ])
    }

    /// Give the run's session crewmux's own environment (once per process), so its panes
    /// start as a child process would: a pane otherwise starts from the server's
    /// environment, frozen when the server started. Sent through `source-file -`.
    fn sync_env(&mut self) -> Result<()> {
        if self.env_synced {
            return Ok(());
        }
        let mut script = String::new();
        for (k, v) in inherited_env() {
            script.push_str(&format!(
                "set-environment -t {} {} {}\n",
                command_line::tmux_quote(&self.target_session()),
                command_line::tmux_quote(&k),
                command_line::tmux_quote(&v)
            ));
        }
        self.client.run_script(&script, &[])?;
        self.env_synced = true;
        Ok(())
    }

    /// Remove the run's session (used by `clean`).
    ///
    /// # Errors
    /// As [`TmuxClient::run`](super::TmuxClient::run) (no such session is a tmux error too).
    pub fn kill_session(&self) -> Result<()> {
        self.client
            .run(
                Tmux::new().add_command(
                    KillSession::new()
                        .target_session(self.target_session())
                        .build(),
                ),
            )
            .map(|_| ())
    }
}

/// Script lines per window: `new-window`, `pipe-pane`, `send-keys`.
const WINDOW_LINES: usize = 3;

/// Longest environment value passed to a pane, bytes.
pub const ENV_VALUE_MAX: usize = 8 * 1024;

/// crewmux's environment for a new pane: every variable except tmux's own (`TMUX`,
/// `TMUX_PANE`), the credential store's passphrase, and values with control characters or
/// over [`ENV_VALUE_MAX`] bytes (they cannot be passed through tmux's command language).
/// Variables set in the tmux server but unset here stay set (tmux `new-window -e` only adds).
fn inherited_env() -> Vec<(String, String)> {
    std::env::vars()
        .filter(|(k, v)| {
            !matches!(k.as_str(), "TMUX" | "TMUX_PANE")
                && !k.starts_with("CREWMUX_CREDENTIAL")
                && !k.is_empty()
                && v.len() <= ENV_VALUE_MAX
                && !k.chars().chain(v.chars()).any(|c| c.is_control())
                && !k.contains('=')
        })
        .collect()
}

/// The launch thread's handle: a second backend on the same server and control channel
/// that only starts attempts while the driver's own backend polls.
impl crate::backend::Launcher for TmuxBackend {
    fn spawn_many(&mut self, specs: &[SpawnSpec]) -> Vec<Result<Spawned>> {
        self.spawn_windows(specs)
    }

    fn spawn_each(&mut self, specs: &[SpawnSpec], each: &mut dyn FnMut(usize, Result<Spawned>)) {
        self.spawn_windows_each(specs, each);
    }
}

/// The started window in `new-window -P`'s output (`<pane ref>\t<pid>`).
fn spawned(out: &str, spec: &SpawnSpec) -> Result<Spawned> {
    let line = out
        .lines()
        .find(|l| l.contains('\t'))
        .ok_or_else(|| Error::Other(format!("tmux did not start window {}", spec.window)))?;
    let (pane, pid) = line.split_once('\t').unwrap_or_default();
    Ok(Spawned {
        pane_id: Some(pane.to_string()),
        pid: pid.trim().parse().ok(),
    })
}

impl TmuxBackend {
    /// A backend sharing this one's client (and so its control channel), for launching.
    pub(super) fn launch_handle(&self) -> TmuxBackend {
        let mut b = TmuxBackend::new(self.client.socket(), &self.session, self.home_argv.clone());
        b.client = self.client.clone();
        b
    }
}
