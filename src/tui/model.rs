//! The dashboard's whole model and the one function that applies every message to it:
//! terminal keys and pastes, the run driver's updates, the clock and the signals that end
//! the dashboard. Pure (no terminal, no tmux, no clock): the app loop feeds it and carries
//! out the [`UiEffect`]s it returns, so a scripted sequence of messages can be tested and
//! snapshotted without a terminal.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crossterm::event::{Event, KeyEventKind};
use ratatui::text::Line;

use super::action::map_key;
use super::diff;
use super::mouse;
use super::panels::output::capture_to_lines;
use super::state::UiState;
use super::tabs::{findings, load, stamp, wanted_doc, Doc, Tab};

/// How often the Diff tab takes a new diff of a live worker.
pub const DIFF_REFRESH: Duration = Duration::from_secs(3);
use super::update::{paste, reconcile, update, UiEffect};
use crate::domain::RunState;
use crate::lead::Update;

/// One message for the app loop.
#[derive(Debug)]
pub enum Msg {
    /// A terminal event (key, paste, resize, mouse).
    Term(Event),
    /// A message of the run driver.
    Driver(Update),
    /// The one-second clock: elapsed times move.
    Clock,
    /// The agent providers the add-worker form offers, known once the driver is built.
    Providers(Vec<String>),
    /// A signal asked the dashboard to end (`SIGTERM`, `SIGINT`, `SIGHUP`, `SIGQUIT`): it
    /// leaves as after `q`, the run detached and resumable.
    Signal(&'static str),
}

/// What one message did: whether the screen must be redrawn, and what the app loop must
/// carry out, in order.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Step {
    pub dirty: bool,
    pub effects: Vec<UiEffect>,
}

/// The dashboard's model: the run as the driver last reported it, the UI state, and the
/// focused worker's output converted once per capture.
#[derive(Debug)]
pub struct Model {
    pub run: RunState,
    pub ui: UiState,
    /// The focused worker's screen, newest line last.
    pub output: Vec<Line<'static>>,
    /// The person (or a signal) asked to leave; the driver is told to stop.
    pub quitting: bool,
    /// The run reached a final status while the dashboard watched.
    pub finished: bool,
    /// The driver's loop ended; the app loop leaves after this message.
    pub stopped: bool,
    /// Why the driver stopped when nobody asked it to.
    pub driver_error: Option<String>,
    /// The signal that ended the dashboard, if one did.
    pub signal: Option<&'static str>,
    /// The run's directory (`.crewmux/runs/<id>`), where its documents are.
    pub run_dir: PathBuf,
    /// The document the main area shows, as last read by [`Model::refresh_doc`].
    pub doc: Option<Doc>,
    /// The terminal's size, for mouse hit tests (set by the app and on resize).
    pub size: ratatui::layout::Rect,
    /// When the shown diff was taken.
    diff_at: Instant,
    /// Whether a path is a file; findings name only files that exist (a fake in tests).
    pub is_file: fn(&Path) -> bool,
    /// Events reached tui-logger's buffer since the last redraw (it fills on its own
    /// thread, so the next clock tick redraws once more).
    events_pending: bool,
    /// The driver saves the run's state next to an unreadable `state.json` (its
    /// `state-saved-aside` event); the footer keeps saying so.
    pub state_aside: bool,
}

impl Model {
    /// A model showing `run` with nothing selected yet but the first worker.
    pub fn new(run: RunState, run_dir: PathBuf) -> Model {
        let mut m = Model {
            run,
            ui: UiState::default(),
            output: Vec::new(),
            quitting: false,
            finished: false,
            stopped: false,
            driver_error: None,
            signal: None,
            run_dir,
            doc: None,
            diff_at: Instant::now(),
            size: ratatui::layout::Rect::new(0, 0, 120, 40),
            is_file: |p| p.is_file(),
            events_pending: true,
            state_aside: false,
        };
        m.refresh_findings();
        m
    }

    /// Where the panels are on the current terminal size.
    pub fn areas(&self) -> super::Areas {
        let view = super::state::View {
            run: &self.run,
            output: &self.output,
            now: chrono::Utc::now(),
            ui: &self.ui,
            backend: self.run.backend.as_str(),
            tmux_socket: &self.run.tmux_socket,
            attach_hint: true,
            doc: self.doc.as_ref(),
        };
        super::layout(self.size, &view)
    }

    fn refresh_findings(&mut self) {
        self.ui.findings = findings(&self.run, &self.run_dir, &self.is_file);
    }

    /// The file the main area should show now, if any.
    pub fn wanted_doc(&self) -> Option<PathBuf> {
        wanted_doc(
            self.ui.tab,
            self.ui.file.as_deref(),
            self.ui.selected_worker(&self.run),
            &self.run_dir,
        )
    }

    /// Read the wanted document when it is another file or the file changed since it was
    /// read (the app loop calls this after each burst of messages); true when the screen
    /// must be redrawn. The only filesystem access of the model, kept out of `handle`.
    pub fn refresh_doc(&mut self) -> bool {
        if self.ui.tab == Tab::Diff && self.ui.file.is_none() {
            return self.refresh_diff();
        }
        let Some(path) = self.wanted_doc() else {
            return self.doc.take().is_some();
        };
        if let Some(d) = &self.doc {
            if d.path == path && d.stamp == stamp(&path) {
                return false;
            }
        }
        self.show_doc(load(&path));
        true
    }

    fn show_doc(&mut self, doc: Doc) {
        // A table laid out as records ([`super::md_table`]) may be longer than drawn as a
        // table: scrolling reaches the end of the longer one.
        self.ui.doc_len = doc.lines.len().max(
            doc.markdown
                .as_deref()
                .filter(|md| super::md_table::has_wide_table(md, 0))
                .map_or(0, |md| {
                    super::md_table::fit(md, 0, &super::tabs::markdown_lines).len()
                }),
        );
        self.ui.doc_files = if doc.diff_of.is_some() {
            diff::file_starts(&doc.lines)
        } else {
            Vec::new()
        };
        self.ui.doc_scroll = self.ui.doc_scroll.min(self.ui.doc_len.saturating_sub(1));
        self.doc = Some(doc);
        self.diff_at = Instant::now();
    }

    /// The Diff tab: take the selected worker's diff when the worker, its attempt or its
    /// status changed, and every [`DIFF_REFRESH`] while it is live.
    fn refresh_diff(&mut self) -> bool {
        let Some(w) = self.ui.selected_worker(&self.run) else {
            return self.doc.take().is_some();
        };
        let key = diff::key(w);
        let fresh = self.diff_at.elapsed() < DIFF_REFRESH || !w.status.is_live();
        if let Some(d) = &self.doc {
            if d.diff_of.as_deref() == Some(key.as_str()) && fresh {
                return false;
            }
        }
        let doc = diff::load(&self.run, w);
        let changed = self
            .doc
            .as_ref()
            .is_none_or(|d| d.lines != doc.lines || d.diff_of != doc.diff_of);
        self.show_doc(doc);
        changed
    }

    /// Apply one message. The effects are for the app loop (tell the driver, attach, quit);
    /// the model has already done its own part of them (a new selection drops the previous
    /// worker's lines).
    pub fn handle(&mut self, msg: Msg) -> Step {
        match msg {
            Msg::Clock => {
                // Elapsed times move only while some worker is live.
                let dirty =
                    self.run.workers.iter().any(|w| w.status.is_live()) || self.events_pending;
                self.events_pending = false;
                Step {
                    dirty,
                    effects: Vec::new(),
                }
            }
            Msg::Driver(u) => self.driver(u),
            Msg::Providers(p) => {
                self.ui.providers = p;
                Step::default()
            }
            Msg::Signal(name) => {
                self.signal = Some(name);
                self.quitting = true;
                Step {
                    dirty: false,
                    effects: vec![UiEffect::Quit],
                }
            }
            Msg::Term(ev) => self.terminal(ev),
        }
    }

    fn driver(&mut self, u: Update) -> Step {
        match u {
            Update::Snapshot { state, screen } => {
                let was_final = self.run.status.is_final();
                self.run = std::sync::Arc::unwrap_or_clone(state);
                if self.run.status.is_final() && !was_final {
                    self.finished = true;
                    let aside = if self.state_aside {
                        "; state.json cannot be read, its state is in state.json.crewmux-saved (see the Log)"
                    } else {
                        ""
                    };
                    self.ui.notice = Some(format!(
                        "run {} (council {}){aside} — q leaves the dashboard",
                        self.run.status.as_str(),
                        self.run.council.status.as_str()
                    ));
                }
                if let Some(s) = screen {
                    self.output = capture_to_lines(s.as_bytes());
                    self.ui.output_len = self.output.len();
                }
                self.refresh_findings();
                reconcile(&mut self.ui, &self.run);
            }
            Update::Notice(n) => {
                tracing::warn!("{n}");
                self.ui.notice = Some(n);
            }
            Update::Info(n) => {
                tracing::info!("{n}");
                self.ui.notice = Some(n);
            }
            Update::Event(e) => {
                if e.kind == crate::domain::EventKind::StateSavedAside {
                    self.state_aside = true;
                    self.ui.notice = Some(e.message);
                }
                self.events_pending = true;
            }
            Update::HostsDown(hosts) => self.ui.hosts_down = hosts,
            Update::Stopped { finished } => {
                self.finished |= finished;
                self.stopped = true;
                if !self.quitting {
                    self.driver_error = Some("the run driver stopped".to_string());
                }
            }
        }
        Step {
            dirty: true,
            effects: Vec::new(),
        }
    }

    fn terminal(&mut self, ev: Event) -> Step {
        let effects = match ev {
            Event::Key(key) if key.kind == KeyEventKind::Press && self.ui.form.is_some() => {
                super::steer::form_key(&mut self.ui, &self.run, key)
            }
            Event::Key(key) if key.kind == KeyEventKind::Press => {
                let Some(action) = super::approval::map_key(&self.ui, &self.run, key)
                    .or_else(|| map_key(&self.ui, key))
                else {
                    return Step::default();
                };
                update(&mut self.ui, &self.run, action)
            }
            Event::Paste(text) if self.ui.form.is_some() => {
                super::steer::form_paste(&mut self.ui, &text);
                Vec::new()
            }
            Event::Paste(text) => {
                paste(&mut self.ui, &text);
                Vec::new()
            }
            Event::Resize(w, h) => {
                self.size = ratatui::layout::Rect::new(0, 0, w, h);
                Vec::new()
            }
            Event::Mouse(m) => {
                let areas = self.areas();
                mouse::on_mouse(&mut self.ui, &self.run, &areas, m)
            }
            _ => return Step::default(),
        };
        for e in &effects {
            match e {
                UiEffect::Select { .. } => {
                    self.output.clear();
                    self.ui.output_len = 0;
                }
                UiEffect::Quit => self.quitting = true,
                _ => {}
            }
        }
        Step {
            dirty: true,
            effects,
        }
    }
}

#[cfg(test)]
#[path = "model_tests.rs"]
mod tests;
