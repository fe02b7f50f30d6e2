//! The dashboard end to end: crewmux runs in the pane of a session `v` on a viewer tmux
//! server of its own (its workers on a second private server), keys go in with
//! `send-keys`, and the screen is read with `capture-pane`.

use std::path::Path;
use std::time::Duration;

use super::{wait_for, TmuxServer};

/// A viewer server whose session `v` runs one shell command in a pane of a fixed size.
pub struct Viewer {
    pub server: TmuxServer,
}

impl Viewer {
    /// A new viewer server tagged `tag` running `cmd` (through the shell) in a `width` ×
    /// `height` pane (cells). Panics with tmux's stderr when the session does not start.
    pub fn start(tag: &str, (width, height): (u16, u16), cmd: &str) -> Self {
        let server = TmuxServer::new(tag);
        let (w, h) = (width.to_string(), height.to_string());
        let out = server.tmux(&["new-session", "-d", "-s", "v", "-x", &w, "-y", &h, cmd]);
        assert!(
            out.status.success(),
            "the viewer session did not start: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Viewer { server }
    }

    /// The pane's visible text now.
    pub fn screen(&self) -> String {
        String::from_utf8_lossy(&self.server.tmux(&["capture-pane", "-p", "-t", "v"]).stdout)
            .into_owned()
    }

    /// Wait until the screen shows `what`; returns that screen. Panics after `limit` with
    /// the last screen.
    pub fn wait_screen(&self, what: &str, limit: Duration) -> String {
        let mut last = String::new();
        let shown = wait_for(
            || {
                last = self.screen();
                last.contains(what)
            },
            limit,
        );
        assert!(shown, "{what:?} never appeared within {limit:?}:\n{last}");
        last
    }

    /// Press `keys` one after the other (tmux key names: `Enter`, `C-s`, `q`…).
    pub fn keys(&self, keys: &[&str]) {
        for k in keys {
            self.server.tmux(&["send-keys", "-t", "v", k]);
        }
    }

    /// Type `text` literally (`send-keys -l`).
    pub fn type_text(&self, text: &str) {
        self.server.tmux(&["send-keys", "-t", "v", "-l", text]);
    }

    /// `tmux display -p -t v format`, trimmed.
    pub fn display(&self, format: &str) -> String {
        let out = self.server.tmux(&["display", "-p", "-t", "v", format]);
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }
}

/// The shell command that runs the dashboard on `team` in `project` with its workers on
/// `workers`, then prints `EXITED <code>` and `after` (more shell, may be empty) and stays
/// a minute so the screen can be read. `env` goes before crewmux (`NAME=value …`).
pub fn dashboard_cmd(
    project: &Path,
    workers: &TmuxServer,
    env: &str,
    team: &Path,
    problem: &str,
    after: &str,
) -> String {
    format!(
        "cd {} && {env} CREWMUX_TMUX_SOCKET={} {} run --team {} --no-clarify '{problem}'; echo EXITED $?; {after} sleep 60",
        project.display(),
        workers.socket,
        env!("CARGO_BIN_EXE_crewmux"),
        team.display()
    )
}
