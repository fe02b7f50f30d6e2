//! The tmux backend (README "How it works", docs/tmux.md): a dedicated server socket (`tmux -L <socket>`),
//! one session per run, one window per attempt started with the wrapper as its argv,
//! `remain-on-exit on`, output streamed by `pipe-pane`, and one batched tmux call per poll.

mod bounded;
mod client;
pub mod control;
mod control_client;
mod panes;
mod poll;
mod spawn;

use std::collections::HashMap;
use std::process::Command;
use std::time::Instant;

pub use client::{client_calls, tmux_available, tmux_version, TmuxClient};
pub use control_client::ControlStats;
pub use panes::{parse_panes, PaneRow, PANE_FORMAT};
pub use spawn::ENV_VALUE_MAX;

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

    fn spawn_many(&mut self, specs: &[SpawnSpec]) -> Vec<Result<Spawned>> {
        self.spawn_windows(specs)
    }

    fn launcher(&mut self) -> Option<Box<dyn crate::backend::Launcher>> {
        Some(Box::new(self.launch_handle()))
    }

    fn poll(&mut self, targets: &[Target], focus: Option<&Target>) -> Poll {
        self.poll_panes(targets, focus)
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
