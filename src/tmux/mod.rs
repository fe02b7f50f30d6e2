//! The tmux backend (README "How it works", docs/tmux.md): a dedicated server socket (`tmux -L <socket>`),
//! one session per run, one window per attempt started with the wrapper as its argv,
//! `remain-on-exit on`, output streamed by `pipe-pane`, and one batched tmux call per poll.

mod bounded;
mod client;
mod command_line;
pub mod control;
mod control_client;
pub mod locale;
mod panes;
mod paste;
mod poll;
mod remote;
mod spawn;
mod version;

use std::collections::HashMap;
use std::process::Command;
use std::time::Instant;

use tmux_interface::{DisplayMessage, ListPanes, Tmux};

pub use bounded::output_within;
pub use client::{client_calls, TmuxClient};
pub use control_client::ControlStats;
pub use panes::{parse_panes, same_server, split_pane_ref, PaneRow, PANE_FORMAT};
pub use remote::{RemoteShell, REMOTE_CALL_LIMIT};
pub use spawn::ENV_VALUE_MAX;
pub use version::{tmux_available, tmux_version};

use crate::backend::{Multiplexer, Poll, SpawnSpec, Spawned, Target};
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
    /// The server instance the last poll reached (`<pid>.<start time>`).
    server: Option<String>,
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
            server: None,
            last_kick: Instant::now(),
        }
    }

    pub fn client(&self) -> &TmuxClient {
        &self.client
    }

    fn target_session(&self) -> String {
        format!("={}", self.session)
    }

    /// False when `pane_ref` is known to belong to another server instance than the one
    /// the last poll reached (nothing of it is captured then).
    fn may_be_here(&self, pane_ref: &str) -> bool {
        self.server
            .as_deref()
            .is_none_or(|s| same_server(pane_ref, s))
    }

    /// The tmux pane id of `pane_ref` when that pane is there now on the server instance
    /// it names (one tmux call); `None` when it is gone or the server does not answer.
    fn live_pane<'r>(&self, pane_ref: &'r str) -> Option<&'r str> {
        let (pane, _) = split_pane_ref(pane_ref);
        let out = self
            .client
            .run(
                Tmux::new().add_command(
                    DisplayMessage::new()
                        .print()
                        .target_pane(pane)
                        .message(format!("#{{pane_id}} {}", panes::SERVER_FORMAT))
                        .build(),
                ),
            )
            .ok()?;
        let (id, server) = out.trim().split_once(' ')?;
        (id == pane && same_server(pane_ref, server)).then_some(pane)
    }

    /// The pane of the run session's window named `window`, live or dead, with the
    /// process tmux started in it (one `list-panes` call); `None` when there is no such
    /// window or the server does not answer.
    fn window_pane(&self, window: &str) -> Option<Spawned> {
        let out = self
            .client
            .run(
                Tmux::new().add_command(
                    ListPanes::new()
                        .session()
                        .target(self.target_session())
                        .format(format!(
                            "{}\t#{{pane_pid}}\t#{{window_name}}",
                            panes::PANE_REF_FORMAT
                        ))
                        .build(),
                ),
            )
            .ok()?;
        out.lines().find_map(|line| {
            let mut f = line.splitn(3, '\t');
            let (pane, pid, name) = (f.next()?, f.next()?, f.next()?);
            (name == window).then(|| Spawned {
                pane_id: Some(pane.to_string()),
                pid: pid.parse().ok(),
            })
        })
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

    fn spawn_many(&mut self, specs: &[SpawnSpec]) -> Vec<Result<Spawned>> {
        self.spawn_windows(specs)
    }

    fn launcher(&mut self) -> Option<Box<dyn crate::backend::Launcher>> {
        Some(Box::new(self.launch_handle()))
    }

    fn polls_off_loop(&self) -> bool {
        true
    }

    fn poll(&mut self, targets: &[Target], focus: Option<&Target>) -> Poll {
        self.poll_panes(targets, focus)
    }

    fn send_text(&mut self, target: &Target, text: &str) -> Result<()> {
        let pane_ref = target
            .pane_id
            .as_deref()
            .ok_or_else(|| Error::Other(format!("{} has no pane", target.worker)))?;
        let pane = self.live_pane(pane_ref).ok_or_else(|| {
            Error::Other(format!(
                "{}'s pane {} is gone (its tmux server was restarted or the pane was killed)",
                target.worker,
                split_pane_ref(pane_ref).0
            ))
        })?;
        self.client.paste(pane, text)
    }

    /// `None` when the attempt's pane is gone: killed, or on a server instance that is no
    /// longer running (a pane with the same id on a restarted server is another one).
    fn attach_command(&self, target: &Target) -> Option<Command> {
        let pane = self.live_pane(target.pane_id.as_deref()?)?;
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

    fn find_window(&mut self, window: &str) -> Option<Spawned> {
        self.window_pane(window)
    }
}
