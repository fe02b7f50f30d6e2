//! The tmux backend (README "How it works", docs/tmux.md): a dedicated server socket (`tmux -L <socket>`),
//! one session per run, one window per attempt started with the wrapper as its argv,
//! `remain-on-exit on`, output streamed by `pipe-pane`, and one batched tmux call per poll.

mod bounded;
mod client;
pub mod control;
mod control_client;
mod panes;

use std::collections::HashMap;
use std::process::Command;
use std::time::Instant;

use tmux_interface::{
    CapturePane, DisplayMessage, KillSession, ListPanes, ListSessions, NewSession, PipePane,
    SetOption, Tmux, TmuxCommand,
};

pub use client::{client_calls, tmux_available, tmux_version, TmuxClient};
pub use control_client::ControlStats;
pub use panes::{parse_panes, PaneRow, PANE_FORMAT};

use crate::backend::{Liveness, Multiplexer, Poll, SpawnSpec, Spawned, Target};
use crate::domain::BackendKind;
use crate::error::{Error, Result};

/// Lines of history each pane keeps (set before panes are created; ~1 KB a line at most).
pub const HISTORY_LIMIT: u32 = 2000;
/// Pane size of detached windows: 200×50 keeps tmux cheap (docs/tmux.md "Cost").
pub const PANE_COLS: u32 = 200;
pub const PANE_ROWS: u32 = 50;
/// Lines of the focused pane captured for the output panel.
pub const CAPTURE_LINES: u32 = 200;

/// The tmux backend of one run.
pub struct TmuxBackend {
    client: TmuxClient,
    session: String,
    /// The events file the session's first window tails.
    home_argv: Vec<String>,
    /// Change signature of the focused pane at the last capture.
    last_sig: HashMap<String, String>,
    /// Change signature of each watched pane at its last tail capture.
    tail_sig: HashMap<String, String>,
    /// Watched panes whose last lines the next poll captures.
    pending_tails: Vec<String>,
    /// Signature of each watched pane at the previous poll.
    seen_sig: HashMap<String, String>,
    /// The session has this process's environment.
    env_synced: bool,
    last_kick: Instant,
}

impl TmuxBackend {
    /// `socket` is the `-L` name; `session` is `crewmux-<run id>`; `home_argv` is what the
    /// session's first window runs (a view of the run's events).
    pub fn new(socket: &str, session: &str, home_argv: Vec<String>) -> Self {
        TmuxBackend {
            client: TmuxClient::new(socket),
            session: session.to_string(),
            home_argv,
            last_sig: HashMap::new(),
            tail_sig: HashMap::new(),
            pending_tails: vec![],
            seen_sig: HashMap::new(),
            env_synced: false,
            last_kick: Instant::now(),
        }
    }

    pub fn client(&self) -> &TmuxClient {
        &self.client
    }

    /// Create the run's session if it does not exist (after a server death too), with
    /// `remain-on-exit` and `history-limit` set before any worker pane is created.
    pub fn ensure_session(&mut self) -> Result<()> {
        if self.client.has_session(&self.session) {
            return Ok(());
        }
        self.env_synced = false;
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
        let out = self.client.run(
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
        let _ = out;
        Ok(())
    }

    fn target_session(&self) -> String {
        format!("={}", self.session)
    }
}

impl Multiplexer for TmuxBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Tmux
    }

    fn spawn(&mut self, spec: &SpawnSpec) -> Result<Spawned> {
        self.spawn_many(std::slice::from_ref(spec))
            .pop()
            .unwrap_or_else(|| Err(Error::Other("tmux started nothing".into())))
    }

    /// All windows in one `source-file -` script: per attempt, `new-window` with the
    /// wrapper as argv (never a shell string) and its secrets as `-e`, then `pipe-pane` on
    /// the new pane (the wrapper waits for output.log to exist). Nothing travels on argv.
    fn spawn_many(&mut self, specs: &[SpawnSpec]) -> Vec<Result<Spawned>> {
        let fail = |e: &Error| {
            specs
                .iter()
                .map(|_| Err(Error::Other(e.to_string())))
                .collect()
        };
        if let Err(e) = self.ensure_session().and_then(|_| self.sync_env()) {
            return fail(&e);
        }
        let mut script = String::new();
        let mut secrets: Vec<&str> = vec![];
        for spec in specs {
            match self.window_lines(spec) {
                Ok(lines) => script.push_str(&lines),
                Err(e) => return fail(&e),
            }
            secrets.extend(spec.secret_env.iter().map(|(_, v)| v.as_str()));
        }
        let out = match self.client.run_script(&script, &secrets) {
            Ok(out) => out,
            Err(e) => return fail(&e),
        };
        let mut lines = out.lines().filter(|l| l.contains('\t'));
        specs
            .iter()
            .map(|spec| {
                let line = lines.next().ok_or_else(|| {
                    Error::Other(format!("tmux did not start window {}", spec.window))
                })?;
                let (pane, pid) = line.split_once('\t').unwrap_or_default();
                Ok(Spawned {
                    pane_id: Some(pane.to_string()),
                    pid: pid.trim().parse().ok(),
                })
            })
            .collect()
    }

    fn poll(&mut self, targets: &[Target], focus: Option<&Target>) -> Poll {
        // One tmux process per tick: the pane listing, the last lines of the watched panes
        // whose signature moved at the previous tick, and the focused pane's screen.
        let sep = self.client.separator().to_string();
        let mut tmux = Tmux::new().add_command(self.list_panes());
        let watched: Vec<String> = std::mem::take(&mut self.pending_tails)
            .into_iter()
            .filter(|p| {
                targets
                    .iter()
                    .any(|t| t.watch_screen && t.pane_id.as_deref() == Some(p))
            })
            .collect();
        for pane in &watched {
            tmux = tmux
                .add_command(
                    DisplayMessage::new()
                        .print()
                        .message(format!("{sep}T{pane}"))
                        .build(),
                )
                .add_command(
                    CapturePane::new()
                        .stdout()
                        .join()
                        .start_line(format!("-{}", crate::backend::TAIL_LINES))
                        .target_pane(pane.clone())
                        .build(),
                );
        }
        let focus_pane = focus.and_then(|f| f.pane_id.clone());
        if let Some(pane) = &focus_pane {
            tmux = tmux
                .add_command(
                    DisplayMessage::new()
                        .print()
                        .message(format!("{sep}F"))
                        .build(),
                )
                .add_command(
                    CapturePane::new()
                        .stdout()
                        .escape_sequences()
                        .join()
                        .start_line(format!("-{CAPTURE_LINES}"))
                        .target_pane(pane.clone())
                        .build(),
                );
        }
        let out = match self.client.run(tmux) {
            Ok(out) => out,
            Err(e @ Error::Timeout { .. }) => return not_answering(targets, &e),
            Err(_) => {
                // No server or no session: every pane is gone. A capture of a pane that has
                // just been removed also fails; retry the listing alone before deciding.
                return match self.client.run(Tmux::new().add_command(self.list_panes())) {
                    Ok(out) => self.liveness_from(&out, targets, None, &mut None),
                    Err(e @ Error::Timeout { .. }) => not_answering(targets, &e),
                    Err(e) => Poll {
                        liveness: vec![Liveness::Gone; targets.len()],
                        screen: None,
                        tails: vec![],
                        server_down: Some(self.why_gone(&e.to_string())),
                    },
                };
            }
        };
        let (listing, tail_text, mut screen) = split_batch(&out, &sep);
        let mut poll = self.liveness_from(&listing, targets, focus_pane.as_deref(), &mut screen);
        poll.tails = targets
            .iter()
            .map(|t| {
                t.pane_id
                    .as_deref()
                    .and_then(|p| tail_text.iter().find(|(id, _)| id == p))
                    .map(|(_, text)| text.clone())
            })
            .collect();
        self.pending_tails = self.changed_panes(&listing, targets, &poll.liveness);
        poll
    }

    fn send_text(&mut self, target: &Target, text: &str) -> Result<()> {
        let pane = target
            .pane_id
            .as_deref()
            .ok_or_else(|| Error::Other(format!("{} has no pane", target.worker)))?;
        self.client.paste(pane, text)
    }

    fn attach_command(&self, target: &Target) -> Option<Command> {
        let pane = target.pane_id.as_deref()?;
        Some(self.client.attach_command(&self.session, pane))
    }

    fn remove_run(&mut self) -> Result<Option<String>> {
        if !self.client.has_session(&self.session) {
            return Ok(None);
        }
        self.kill_session()?;
        Ok(Some(format!("tmux session {}", self.session)))
    }

    fn forget_screen(&mut self) {
        self.last_sig.clear();
    }
}

impl TmuxBackend {
    /// The two script lines that start one attempt's window and stream its output.
    fn window_lines(&self, spec: &SpawnSpec) -> Result<String> {
        let mut new_window = TmuxCommand::new();
        new_window.name("new-window");
        new_window.push_flag("-d");
        new_window.push_flag("-P");
        new_window.push_option("-F", "#{pane_id}\t#{pane_pid}");
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
        let pipe = PipePane::new()
            .open()
            .target_pane(format!("{}:={}", self.target_session(), spec.window))
            .shell_command(format!("cat >> {log}"))
            .build();
        Ok(format!(
            "{}\n{}\n",
            client::command_line(new_window, &env)?,
            client::command_line(pipe, &[])?
        ))
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
                client::tmux_quote(&self.target_session()),
                client::tmux_quote(&k),
                client::tmux_quote(&v)
            ));
        }
        self.client.run_script(&script, &[])?;
        self.env_synced = true;
        Ok(())
    }

    fn list_panes(&self) -> TmuxCommand<'static> {
        ListPanes::new()
            .session()
            .target(self.target_session())
            .format(PANE_FORMAT)
            .build()
    }

    /// Live, watched panes that settled at a new signature; their last lines are captured in
    /// the next tick's batch (none when nothing changed, and none while panes stay busy).
    fn changed_panes(
        &mut self,
        listing: &str,
        targets: &[Target],
        liveness: &[Liveness],
    ) -> Vec<String> {
        let rows = parse_panes(listing);
        let sig: HashMap<&str, &str> = rows
            .iter()
            .map(|r| (r.pane_id.as_str(), r.signature.as_str()))
            .collect();
        let mut want = vec![];
        for (i, t) in targets.iter().enumerate() {
            let (Some(pane), true, Some(Liveness::Alive)) =
                (t.pane_id.as_deref(), t.watch_screen, liveness.get(i))
            else {
                continue;
            };
            let now = sig.get(pane).copied().unwrap_or_default();
            // A question only matters once the screen holds still: capture a pane that did
            // not move since the previous poll and was not captured at this signature yet.
            // A busy pane (a spinner, streaming output) is never captured.
            let still = self.seen_sig.get(pane).map(String::as_str) == Some(now);
            self.seen_sig.insert(pane.to_string(), now.to_string());
            if still && self.tail_sig.get(pane).map(String::as_str) != Some(now) {
                self.tail_sig.insert(pane.to_string(), now.to_string());
                want.push(pane.to_string());
            }
        }
        want
    }

    fn liveness_from(
        &mut self,
        listing: &str,
        targets: &[Target],
        focus_pane: Option<&str>,
        screen: &mut Option<String>,
    ) -> Poll {
        let rows = parse_panes(listing);
        let by_id: HashMap<&str, &PaneRow> = rows.iter().map(|r| (r.pane_id.as_str(), r)).collect();
        let mut lost_sigchld = false;
        let liveness = targets
            .iter()
            .map(|t| match t.pane_id.as_deref().and_then(|p| by_id.get(p)) {
                None => Liveness::Gone,
                Some(r) if r.dead => {
                    if r.dead_status.is_none() {
                        lost_sigchld = true;
                    }
                    Liveness::Dead {
                        status: r.dead_status,
                    }
                }
                Some(_) => Liveness::Alive,
            })
            .collect();
        // tmux < 3.6 (libutempter builds) can lose a dying pane's SIGCHLD: kick the server
        // when a dead pane has no status, and every 2 s as a backstop (docs/tmux.md).
        if lost_sigchld || self.last_kick.elapsed().as_millis() > 2000 {
            if let Some(pid) = rows.first().map(|r| r.server_pid) {
                self.client.kick_sigchld(pid);
            }
            self.last_kick = Instant::now();
        }
        // Hand the screen over only when the focused pane's signature moved.
        let screen = match (focus_pane, screen.take()) {
            (Some(p), Some(s)) => {
                let sig = by_id
                    .get(p)
                    .map(|r| r.signature.clone())
                    .unwrap_or_default();
                let changed = self.last_sig.get(p) != Some(&sig);
                self.last_sig.insert(p.to_string(), sig);
                changed.then_some(s)
            }
            _ => None,
        };
        Poll {
            liveness,
            screen,
            tails: vec![],
            server_down: None,
        }
    }

    /// Why the run's panes are gone, for the person: the whole server, or only the run's
    /// session (killed by hand or by `kill-session`), told apart by asking the server.
    fn why_gone(&self, error: &str) -> String {
        let socket = self.client.socket();
        if self
            .client
            .run(Tmux::new().add_command(ListSessions::new().build()))
            .is_ok()
        {
            format!(
                "the tmux session {} on socket {socket} was killed; its workers are marked crashed",
                self.session
            )
        } else {
            format!(
                "the tmux server on socket {socket} is gone ({error}); its workers are marked crashed"
            )
        }
    }

    /// Remove the run's session (used by `clean`).
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

/// A poll of a server that did not answer in time: a target whose wrapper pid is known is
/// alive or gone by that pid (so a cancel still sees its attempts end), any other is
/// `Unknown` and decided at a later poll.
fn not_answering(targets: &[Target], e: &Error) -> Poll {
    Poll {
        liveness: targets
            .iter()
            .map(|t| match t.pid {
                Some(pid) if crate::backend::pid_alive(pid) => Liveness::Alive,
                Some(_) => Liveness::Gone,
                None => Liveness::Unknown,
            })
            .collect(),
        screen: None,
        tails: vec![],
        server_down: Some(format!("{e}; worker liveness unknown meanwhile")),
    }
}

/// A dead pane's screen without tmux's `Pane is dead (status N, <time>)` line and the blank
/// rows above it, so the output panel ends with the agent's last lines (the status is shown
/// in the roster).
fn without_dead_banner(screen: &str) -> String {
    let mut lines: Vec<&str> = screen.lines().collect();
    if lines
        .last()
        .is_some_and(|l| crate::launch::strip_ansi(l).starts_with("Pane is dead"))
    {
        lines.pop();
        while lines.last().is_some_and(|l| l.trim().is_empty()) {
            lines.pop();
        }
    }
    lines.join("\n")
}

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

/// Split one batched poll's output: the pane listing, `(pane id, last lines)` of each tail
/// capture, and the focused screen (dead-pane banner removed).
fn split_batch(out: &str, sep: &str) -> (String, Vec<(String, String)>, Option<String>) {
    let mut listing = String::new();
    let mut tails: Vec<(String, String)> = vec![];
    let mut screen: Option<String> = None;
    enum Part {
        Listing,
        Tail(usize),
        Screen,
    }
    let mut part = Part::Listing;
    let mut buf = String::new();
    fn flush(
        part: &Part,
        buf: &mut String,
        listing: &mut String,
        tails: &mut [(String, String)],
        screen: &mut Option<String>,
    ) {
        let text = std::mem::take(buf);
        match part {
            Part::Listing => *listing = text,
            Part::Tail(i) => tails[*i].1 = without_dead_banner(&text),
            Part::Screen => *screen = Some(without_dead_banner(&text)),
        }
    }
    for line in out.split_inclusive('\n') {
        let bare = line.trim_end_matches('\n');
        if let Some(rest) = bare.strip_prefix(sep) {
            flush(&part, &mut buf, &mut listing, &mut tails, &mut screen);
            part = match rest.strip_prefix('T') {
                Some(pane) => {
                    tails.push((pane.to_string(), String::new()));
                    Part::Tail(tails.len() - 1)
                }
                None => Part::Screen,
            };
            continue;
        }
        buf.push_str(line);
    }
    flush(&part, &mut buf, &mut listing, &mut tails, &mut screen);
    (listing, tails, screen)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_batch_splits_into_listing_tails_and_screen() {
        let out = "%1\tx\n%2\ty\nSEPT%2\nprompt? (y/n)\nSEPF\nscreen line\n";
        let (listing, tails, screen) = super::split_batch(out, "SEP");
        assert_eq!(listing, "%1\tx\n%2\ty\n");
        assert_eq!(tails, vec![("%2".to_string(), "prompt? (y/n)".to_string())]);
        assert_eq!(screen.as_deref(), Some("screen line"));
    }

    #[test]
    fn the_dead_banner_and_the_gap_above_it_are_dropped() {
        let s = "out 1\nout 2\n\n\n\nPane is dead (status 0, Mon Nov 30 07:11:03 2026)\n";
        assert_eq!(super::without_dead_banner(s), "out 1\nout 2");
        assert_eq!(super::without_dead_banner("live\n\n"), "live\n");
    }
}
