//! Telling the person that a run needs them or has ended, with no screen required: the
//! run's lead notifies from its own session, and every dashboard open on the run rings its
//! own terminal (docs/design.md "Notifications").
//!
//! Which events notify, once each (the event's once-check in `events.jsonl`, see
//! `lead::once`, so a second lead after `attach` does not notify again): a worker that
//! asks (`worker-waiting`), a run halted at a clarification (`run-halted`), a council that
//! blocks (`council` with `blocked`), a run that ends (`run-done`, `run-failed`,
//! `run-cancelled`). Each becomes a [`Notification`], sent in every way the config's
//! `[notify]` table allows ([`NotifyWays`]):
//! - the bell and the OSC 9 / OSC 777 desktop sequence on a terminal ([`terminal`]): the
//!   driving process's standard error when it is one (`--headless`), and each dashboard's;
//! - `notify-send`, where it is installed;
//! - a `display-message` on every client of the person's own tmux server ([`tmux`]);
//! - `[notify] command`, with the notification as JSON on its standard input ([`command`]).

pub mod command;
pub mod terminal;
pub mod tmux;

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use crate::domain::{EventKind, RunEvent};

/// Which ways of telling the person fire (each on unless the config turns it off), and the
/// command a person forwards notifications to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotifyWays {
    /// The terminal bell (BEL).
    pub bell: bool,
    /// The OSC 9 / OSC 777 desktop notification sequence.
    pub osc: bool,
    /// `notify-send`, where it is installed.
    pub notify_send: bool,
    /// `tmux display-message` on every client of the person's own tmux server.
    pub tmux: bool,
    /// `[notify] command`: argv (no shell) run once per notification; `None`: none.
    pub command: Option<Vec<String>>,
    /// How long the command may run before it is killed (`command-timeout-s`).
    pub command_timeout: Duration,
}

/// Default of [`NotifyWays::command_timeout`]: long enough for a web hook over a slow
/// link, short enough that a hung command is noticed in the log.
pub const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_secs(10);

impl Default for NotifyWays {
    fn default() -> Self {
        NotifyWays {
            bell: true,
            osc: true,
            notify_send: true,
            tmux: true,
            command: None,
            command_timeout: DEFAULT_COMMAND_TIMEOUT,
        }
    }
}

/// One thing the person is told, as `[notify] command` reads it on its standard input
/// (one JSON object, then a newline):
///
/// ```json
/// {"kind":"question","run":"20260102-101500-ab12","worker":"asker","attempt":1,
///  "event":"worker-waiting","message":"asker asks: Which colour should the badge be?",
///  "at":"2026-01-02T10:16:03.123Z"}
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Notification {
    /// `question`, `clarification`, `budget` (its warning and its end), `council-blocked` or
    /// `run-ended`; also the command's
    /// `CREWMUX_EVENT`.
    pub kind: &'static str,
    /// The run's id; also the command's `CREWMUX_RUN`.
    pub run: String,
    /// The worker that asks (`question`); `null` otherwise.
    pub worker: Option<String>,
    /// The worker's attempt (`question`); `null` otherwise.
    pub attempt: Option<u32>,
    /// The `events.jsonl` kind it comes from (`worker-waiting`, `run-halted`, `council`,
    /// `run-done`, `run-failed`, `run-cancelled`).
    pub event: String,
    /// One line for a person, as the bell's desktop notification shows it.
    pub message: String,
    /// When the event happened (RFC 3339, UTC).
    pub at: chrono::DateTime<chrono::Utc>,
}

impl Notification {
    /// The notification `e`, an event of run `run`, calls for; `None` for an event that
    /// notifies nobody.
    pub fn of_event(run: &str, e: &RunEvent) -> Option<Notification> {
        let (kind, message, worker) = match &e.kind {
            EventKind::WorkerWaiting => {
                let w = e.worker.clone().unwrap_or_default();
                ("question", format!("{w} asks: {}", e.message), Some(w))
            }
            EventKind::RunHalted => ("clarification", e.message.clone(), None),
            EventKind::BudgetWarning | EventKind::BudgetSpent => {
                ("budget", e.message.clone(), None)
            }
            EventKind::Council if e.message == "blocked" => {
                ("council-blocked", "the council blocked".to_string(), None)
            }
            EventKind::RunDone | EventKind::RunFailed | EventKind::RunCancelled => {
                let status = e.kind.as_str().trim_start_matches("run-");
                ("run-ended", format!("run {status}: {}", e.message), None)
            }
            _ => return None,
        };
        Some(Notification {
            kind,
            run: run.to_string(),
            attempt: worker.as_ref().and(e.attempt),
            worker,
            event: e.kind.to_string(),
            message,
            at: e.ts,
        })
    }

    /// The notification as one line of JSON (what the command reads, with a newline).
    pub fn json(&self) -> String {
        // A struct of strings, numbers and a time always serialises.
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// Sends notifications in every way allowed, from a driving process: the terminal's ways
/// only when its standard error is a terminal, the person's tmux server named when it was
/// started (or `$TMUX`), the command on a thread of its own so the run never waits for it.
pub struct Notifier {
    ways: NotifyWays,
    quiet: bool,
    /// The person's own tmux server's socket; `None`: not known (no tmux message).
    user_tmux: Option<PathBuf>,
    commands: command::Commands,
}

impl Notifier {
    /// A notifier for `ways`; `quiet` sends nothing at all (`--quiet`); `user_tmux` is the
    /// socket of the person's tmux server.
    pub fn new(ways: NotifyWays, quiet: bool, user_tmux: Option<PathBuf>) -> Notifier {
        let commands = command::Commands::new(ways.command.clone(), ways.command_timeout);
        Notifier {
            ways,
            quiet,
            user_tmux,
            commands,
        }
    }

    /// Tell the person `n` in every way allowed; each is a courtesy and never stops the
    /// run (failures of the command come back from [`Notifier::failures`]).
    pub fn send(&mut self, n: &Notification) {
        if self.quiet {
            return;
        }
        terminal::ring_stderr(&n.message, &self.ways);
        if self.ways.notify_send && which::which("notify-send").is_ok() {
            let mut c = std::process::Command::new("notify-send");
            c.arg("crewmux").arg(&n.message);
            quiet_io(&mut c);
            if let Err(e) = c.spawn().map(|child| reap(child, "notify-send")) {
                tracing::debug!("notify-send: {e}");
            }
        }
        if self.ways.tmux {
            if let Some(socket) = &self.user_tmux {
                tmux::tell_clients(socket, &format!("crewmux: {}", n.message));
            }
        }
        self.commands.send(n);
    }

    /// What went wrong with the command since the last call, one line each (not found, an
    /// exit status, killed at the timeout), for the run's log.
    pub fn failures(&mut self) -> Vec<String> {
        self.commands.failures()
    }

    /// Wait (each at most its timeout) for the commands still running, then return the
    /// failures not yet returned: a run that ends has its last notification delivered
    /// before its process exits.
    pub fn finish(&mut self) -> Vec<String> {
        self.commands.finish()
    }
}

/// No standard input, output or error: a courtesy process says nothing on the screen.
pub(crate) fn quiet_io(c: &mut std::process::Command) {
    use std::process::Stdio;
    c.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
}

/// Collect `child` when it exits, off the caller's thread (no zombie is left).
pub(crate) fn reap(mut child: std::process::Child, what: &'static str) {
    let spawned = std::thread::Builder::new()
        .name("crewmux-notify-reap".into())
        .spawn(move || {
            if let Err(e) = child.wait() {
                tracing::debug!("{what}: {e}");
            }
        });
    if let Err(e) = spawned {
        tracing::debug!("{what}: {e}");
    }
}

#[cfg(test)]
mod tests;
