//! The tmux backend (SPEC §4, TMUX-NOTES): a dedicated server socket (`tmux -L <socket>`),
//! one session per run, one window per attempt started with the wrapper as its argv,
//! `remain-on-exit on`, output streamed by `pipe-pane`, and one batched tmux call per poll.

mod client;
mod panes;

use std::collections::HashMap;
use std::process::Command;
use std::time::Instant;

use tmux_interface::{
    CapturePane, DisplayMessage, KillSession, ListPanes, NewSession, PipePane, SetOption, Tmux,
    TmuxCommand,
};

pub use client::{tmux_available, tmux_version, TmuxClient};
pub use panes::{parse_panes, PaneRow, PANE_FORMAT};

use crate::backend::{Liveness, Multiplexer, Poll, SpawnSpec, Spawned, Target};
use crate::domain::BackendKind;
use crate::error::{Error, Result};

/// Lines of history each pane keeps (set before panes are created; ~1 KB a line at most).
pub const HISTORY_LIMIT: u32 = 2000;
/// Pane size of detached windows: 200×50 keeps tmux cheap (TMUX-NOTES "Cost").
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
            last_kick: Instant::now(),
        }
    }

    pub fn client(&self) -> &TmuxClient {
        &self.client
    }

    /// Create the run's session if it does not exist (after a server death too), with
    /// `remain-on-exit` and `history-limit` set before any worker pane is created.
    pub fn ensure_session(&self) -> Result<()> {
        if self.client.has_session(&self.session) {
            return Ok(());
        }
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
        self.ensure_session()?;
        // new-window with the wrapper as argv (never a shell string), then pipe-pane on
        // the new pane in the same invocation; the wrapper waits for output.log to exist.
        let mut new_window = TmuxCommand::new();
        new_window.name("new-window");
        new_window.push_flag("-d");
        new_window.push_flag("-P");
        new_window.push_option("-F", "#{pane_id}\t#{pane_pid}");
        new_window.push_option("-t", format!("{}:", self.target_session()));
        new_window.push_option("-n", spec.window.clone());
        new_window.push_option("-c", spec.cwd.display().to_string());
        for (k, v) in &spec.env {
            new_window.push_option("-e", format!("{k}={v}"));
        }
        new_window.push_param("sh");
        new_window.push_param(spec.launch.display().to_string());
        let target = format!("{}:={}", self.target_session(), spec.window);
        let log = shlex::try_quote(&spec.log.display().to_string())
            .map_err(|_| Error::Other("log path has a NUL byte".into()))?
            .into_owned();
        let pipe = PipePane::new()
            .open()
            .target_pane(target)
            .shell_command(format!("cat >> {log}"))
            .build();
        let out = if spec.secret_env.is_empty() {
            self.client
                .run(Tmux::new().add_command(new_window).add_command(pipe))?
        } else {
            // Secrets travel on the tmux client's stdin (`source-file -`), never on argv.
            self.client
                .run_with_secret_env(new_window, pipe, &spec.secret_env)?
        };
        let first = out.lines().next().unwrap_or_default();
        let (pane, pid) = first.split_once('\t').ok_or_else(|| {
            Error::Other(format!(
                "tmux new-window printed {first:?}, expected pane id and pid"
            ))
        })?;
        Ok(Spawned {
            pane_id: Some(pane.to_string()),
            pid: pid.trim().parse().ok(),
        })
    }

    fn poll(&mut self, targets: &[Target], focus: Option<&Target>) -> Poll {
        let sep = self.client.separator().to_string();
        let mut tmux = Tmux::new().add_command(
            ListPanes::new()
                .session()
                .target(self.target_session())
                .format(PANE_FORMAT)
                .build(),
        );
        let focus_pane = focus.and_then(|f| f.pane_id.clone());
        if let Some(pane) = &focus_pane {
            tmux = tmux
                .add_command(DisplayMessage::new().print().message(sep.clone()).build())
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
            Err(e) => {
                let msg = e.to_string();
                // No server or no session: every pane is gone. A capture of a pane that has
                // just been removed also fails; retry the listing alone before deciding.
                let listing = self.client.run(
                    Tmux::new().add_command(
                        ListPanes::new()
                            .session()
                            .target(self.target_session())
                            .format(PANE_FORMAT)
                            .build(),
                    ),
                );
                match listing {
                    Ok(out) => {
                        return self.liveness_from(&out, targets, None, &mut None);
                    }
                    Err(_) => {
                        return Poll {
                            liveness: vec![Liveness::Gone; targets.len()],
                            screen: None,
                            tails: vec![],
                            server_down: Some(msg),
                        }
                    }
                }
            }
        };
        let (listing, screen) = match out.split_once(&format!("{sep}\n")) {
            Some((l, s)) => (l.to_string(), Some(without_dead_banner(s))),
            None => (out, None),
        };
        let mut screen = screen;
        let mut poll = self.liveness_from(&listing, targets, focus_pane.as_deref(), &mut screen);
        poll.tails = self.changed_tails(&listing, targets, &poll.liveness);
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

    fn forget_screen(&mut self) {
        self.last_sig.clear();
    }
}

impl TmuxBackend {
    /// The last lines of every live, watched pane whose signature moved since its last
    /// capture, in one more batched tmux call (none when nothing moved, the idle case).
    fn changed_tails(
        &mut self,
        listing: &str,
        targets: &[Target],
        liveness: &[Liveness],
    ) -> Vec<Option<String>> {
        let rows = parse_panes(listing);
        let sig: HashMap<&str, &str> = rows
            .iter()
            .map(|r| (r.pane_id.as_str(), r.signature.as_str()))
            .collect();
        let mut want: Vec<(usize, String)> = vec![];
        for (i, t) in targets.iter().enumerate() {
            let (Some(pane), true, Some(Liveness::Alive)) =
                (t.pane_id.as_deref(), t.watch_screen, liveness.get(i))
            else {
                continue;
            };
            let now = sig.get(pane).copied().unwrap_or_default();
            if self.tail_sig.get(pane).map(String::as_str) != Some(now) {
                self.tail_sig.insert(pane.to_string(), now.to_string());
                want.push((i, pane.to_string()));
            }
        }
        let mut tails = vec![None; targets.len()];
        if want.is_empty() {
            return tails;
        }
        let sep = self.client.separator().to_string();
        let mut tmux = Tmux::new();
        for (_, pane) in &want {
            tmux = tmux
                .add_command(DisplayMessage::new().print().message(sep.clone()).build())
                .add_command(
                    CapturePane::new()
                        .stdout()
                        .join()
                        .start_line(format!("-{}", crate::backend::TAIL_LINES))
                        .target_pane(pane.clone())
                        .build(),
                );
        }
        let Ok(out) = self.client.run(tmux) else {
            return tails;
        };
        let delimiter = format!("{sep}\n");
        let chunks = out.split(delimiter.as_str()).skip(1);
        for ((i, _), chunk) in want.iter().zip(chunks) {
            tails[*i] = Some(without_dead_banner(chunk));
        }
        tails
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
        // when a dead pane has no status, and every 2 s as a backstop (TMUX-NOTES).
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

#[cfg(test)]
mod tests {
    #[test]
    fn the_dead_banner_and_the_gap_above_it_are_dropped() {
        let s = "out 1\nout 2\n\n\n\nPane is dead (status 0, Mon Nov 30 07:11:03 2026)\n";
        assert_eq!(super::without_dead_banner(s), "out 1\nout 2");
        assert_eq!(super::without_dead_banner("live\n\n"), "live\n");
    }
}
