//! The dashboard's own small state (focus, selection, scroll offsets, the answer input line,
//! overlays) and the borrowed [`View`] that the draw function renders.

use chrono::{DateTime, Utc};
use ratatui::text::Line;
use tui_logger::TuiWidgetState;
use unicode_width::UnicodeWidthStr;

use std::path::PathBuf;

use super::tabs::{Doc, Finding, Tab};
use crate::domain::{RunState, WorkerState, WorkerStatus};

/// Which panel receives the keys (one keymap per focus, as in mprocs' `Scope`).
/// `Clarification` means the answer input line is active: printable keys are text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Focus {
    #[default]
    Roster,
    Output,
    Council,
    Clarification,
    Log,
}

impl Focus {
    /// Tab order. `Clarification` is skipped while no question is pending.
    pub const ORDER: [Focus; 5] = [
        Focus::Roster,
        Focus::Output,
        Focus::Council,
        Focus::Clarification,
        Focus::Log,
    ];

    /// The panel's name as the footer shows it before the key hints.
    pub fn label(self) -> &'static str {
        match self {
            Focus::Roster => "workers",
            Focus::Output => "output",
            Focus::Council => "council",
            Focus::Clarification => "typing an answer",
            Focus::Log => "log",
        }
    }
}

/// A modal question on top of the dashboard; while it is open only its keys work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Confirm {
    /// Cancel every live worker of the run (`y` confirms, `n`/Esc declines).
    CancelAll,
    /// Merge the run's result into the user's branch (`UiState::merge_offer` says what).
    Merge,
}

/// Whom an answer goes to: the run-level clarification gate or one waiting worker.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum AnswerTarget {
    Run,
    Worker(String),
}

/// A pending question as the clarification panel shows it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PendingQuestion<'a> {
    /// `None` for the run-level question (docs/design.md), else the waiting worker.
    pub worker: Option<&'a WorkerState>,
    /// The question text; `None` when a worker waits but no question text was captured.
    pub text: Option<&'a str>,
}

impl PendingQuestion<'_> {
    /// The target an answer to this question goes to.
    pub fn target(&self) -> AnswerTarget {
        match self.worker {
            Some(w) => AnswerTarget::Worker(w.id.clone()),
            None => AnswerTarget::Run,
        }
    }
}

/// One line of editable text with a cursor, for the clarification answer.
/// `cursor` counts chars (not bytes) from the start, `0..=text.chars().count()`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InputLine {
    text: String,
    cursor: usize,
}

impl InputLine {
    /// The typed text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Cursor position in chars.
    pub fn cursor(&self) -> usize {
        self.cursor
    }

    /// Display width (terminal cells) of the text before the cursor.
    pub fn cursor_width(&self) -> usize {
        self.text[..self.byte_at(self.cursor)].width()
    }

    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    fn byte_at(&self, char_index: usize) -> usize {
        self.text
            .char_indices()
            .nth(char_index)
            .map_or(self.text.len(), |(b, _)| b)
    }

    fn len_chars(&self) -> usize {
        self.text.chars().count()
    }

    /// Insert `c` at the cursor. Control characters are ignored (a pasted newline must not
    /// become an Enter in the worker's pane).
    pub fn insert(&mut self, c: char) {
        if c.is_control() {
            return;
        }
        let at = self.byte_at(self.cursor);
        self.text.insert(at, c);
        self.cursor += 1;
    }

    /// Delete the char before the cursor (Backspace).
    pub fn delete_back(&mut self) {
        if self.cursor == 0 {
            return;
        }
        self.cursor -= 1;
        let at = self.byte_at(self.cursor);
        self.text.remove(at);
    }

    /// Delete the char under the cursor (Delete).
    pub fn delete_forward(&mut self) {
        if self.cursor < self.len_chars() {
            let at = self.byte_at(self.cursor);
            self.text.remove(at);
        }
    }

    /// Move the cursor one char left (stops at the start).
    pub fn left(&mut self) {
        self.cursor = self.cursor.saturating_sub(1);
    }

    /// Move the cursor one char right (stops at the end).
    pub fn right(&mut self) {
        self.cursor = (self.cursor + 1).min(self.len_chars());
    }

    /// Cursor to the start of the line.
    pub fn home(&mut self) {
        self.cursor = 0;
    }

    /// Cursor to the end of the line.
    pub fn end(&mut self) {
        self.cursor = self.len_chars();
    }

    /// Empty the line and return what it held.
    pub fn take(&mut self) -> String {
        self.cursor = 0;
        std::mem::take(&mut self.text)
    }
}

/// The dashboard's UI state: everything the view needs that is not the run itself.
/// Changed only by [`crate::tui::update`]; read by [`crate::tui::draw`].
pub struct UiState {
    /// The question the person was typing an answer to went away while they typed (it was
    /// answered elsewhere or timed out): the keys that follow keep going into the kept text,
    /// never to the roster as hotkeys, until Enter or Esc, which send nothing.
    pub typing_on: bool,
    pub focus: Focus,
    /// Index into `RunState::workers` of the selected worker (clamped when drawing).
    pub selected: usize,
    /// Output panel: lines scrolled up from the newest line; 0 follows the tail.
    pub output_scroll: usize,
    /// Number of output lines of the selected worker, set by the app loop when a capture
    /// arrives; `update` clamps `output_scroll` to it.
    pub output_len: usize,
    /// Council panel: lines scrolled down from the top.
    pub council_scroll: usize,
    /// The clarification answer being typed.
    pub input: InputLine,
    /// The question the input line answers, fixed when the input was opened so that a
    /// selection change cannot redirect a half-typed answer.
    pub answering: Option<AnswerTarget>,
    /// The input line holds the reason for denying the shown approval (`n`): Enter sends
    /// it, empty or not.
    pub denying: bool,
    pub help: bool,
    pub confirm: Option<Confirm>,
    /// One line shown in the footer until the next key (e.g. "answer sent to backend").
    pub notice: Option<String>,
    /// The SSH hosts that do not answer now (the driver's `Update::HostsDown`): their live
    /// workers' liveness is unknown, and Enter does not try to attach there.
    pub hosts_down: std::collections::BTreeSet<String>,
    /// Scroll and filter state of the tui-logger log panel.
    pub log: TuiWidgetState,
    /// The main area's tab; it sticks while the selection moves between workers.
    pub tab: Tab,
    /// Document tabs (Result, Prompt, Report, a jumped-to file): lines scrolled down.
    pub doc_scroll: usize,
    /// Lines of the shown document, set by the app loop when it loads one.
    pub doc_len: usize,
    /// Every finding of the council, with what each names (recomputed with the run).
    pub findings: Vec<Finding>,
    /// Council tab: the selected finding (index into `findings`).
    pub finding: usize,
    /// A file a finding named, shown in the main area until Esc.
    pub file: Option<PathBuf>,
    /// Esc with nothing to close leaves the dashboard (opened from the home screen).
    pub esc_leaves: bool,
    /// Output lines are cut at the panel's edge instead of wrapped (`w` toggles).
    pub nowrap: bool,
    /// A steering form (add a worker, send text) open over the dashboard; it takes the keys.
    pub form: Option<super::steer::SteerForm>,
    /// The person's key bindings (config file) over the default keymaps.
    pub keys: super::keys::Keys,
    /// The roster is ordered by attention (waiting, failed, running, done) (`o` toggles).
    pub attention: bool,
    /// Colours of the person's theme (config file); drawing maps the defaults through it.
    pub theme: super::theme::Theme,
    /// Providers the add-worker form offers after the run's own.
    pub providers: Vec<String>,
    /// What the open merge confirmation would merge.
    pub merge_offer: Option<super::merge::MergeOffer>,
    /// Lines of the shown diff where a file starts (`{`/`}` jump between them).
    pub doc_files: Vec<usize>,
    /// The dashboard runs inside the person's own tmux (`$TMUX`): an attached pane is then a
    /// client nested in theirs, and their prefix goes to the outer tmux, so coming back
    /// takes the prefix twice (tmux binds prefix-prefix to `send-prefix` by default).
    pub nested_tmux: bool,
}

impl UiState {
    /// How to detach from an attached pane back to the dashboard: `prefix d (C-b d)`, or
    /// inside the person's own tmux `prefix twice, d (C-b C-b d)`.
    pub fn detach_keys(&self) -> &'static str {
        if self.nested_tmux {
            "prefix twice, then d (C-b C-b d)"
        } else {
            "prefix d (C-b d)"
        }
    }
}

impl Default for UiState {
    fn default() -> Self {
        UiState {
            typing_on: false,
            focus: Focus::Roster,
            selected: 0,
            output_scroll: 0,
            output_len: 0,
            council_scroll: 0,
            input: InputLine::default(),
            answering: None,
            denying: false,
            help: false,
            confirm: None,
            notice: None,
            hosts_down: Default::default(),
            log: TuiWidgetState::new(),
            tab: Tab::default(),
            doc_scroll: 0,
            doc_len: 0,
            findings: Vec::new(),
            finding: 0,
            file: None,
            esc_leaves: false,
            nowrap: false,
            form: None,
            keys: Default::default(),
            attention: false,
            theme: Default::default(),
            providers: Vec::new(),
            merge_offer: None,
            doc_files: Vec::new(),
            nested_tmux: false,
        }
    }
}

impl std::fmt::Debug for UiState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UiState")
            .field("focus", &self.focus)
            .field("selected", &self.selected)
            .field("output_scroll", &self.output_scroll)
            .field("council_scroll", &self.council_scroll)
            .field("input", &self.input)
            .field("answering", &self.answering)
            .field("help", &self.help)
            .field("confirm", &self.confirm)
            .field("notice", &self.notice)
            .field("tab", &self.tab)
            .field("doc_scroll", &self.doc_scroll)
            .field("finding", &self.finding)
            .field("file", &self.file)
            .field("form", &self.form)
            .field("attention", &self.attention)
            .finish_non_exhaustive()
    }
}

impl UiState {
    /// The selected worker, with the index clamped to the roster.
    pub fn selected_worker<'r>(&self, run: &'r RunState) -> Option<&'r WorkerState> {
        if run.workers.is_empty() {
            None
        } else {
            run.workers.get(self.selected.min(run.workers.len() - 1))
        }
    }

    /// The question the clarification panel shows and an answer goes to, in this order:
    /// the question the input was opened for (while still pending); the run-level pending
    /// question; the selected worker if it is waiting; the first waiting worker.
    pub fn pending_question<'r>(&self, run: &'r RunState) -> Option<PendingQuestion<'r>> {
        if let Some(target) = &self.answering {
            if let Some(q) = question_for(run, target) {
                return Some(q);
            }
        }
        if let Some(q) = question_for(run, &AnswerTarget::Run) {
            return Some(q);
        }
        let waiting = |w: &&WorkerState| w.status == WorkerStatus::Waiting;
        let worker = self
            .selected_worker(run)
            .filter(waiting)
            .or_else(|| run.workers.iter().find(waiting))?;
        Some(PendingQuestion {
            worker: Some(worker),
            text: worker.question.as_deref(),
        })
    }
}

/// The pending question of `target`, if it is still pending in `run`.
pub fn question_for<'r>(run: &'r RunState, target: &AnswerTarget) -> Option<PendingQuestion<'r>> {
    match target {
        AnswerTarget::Run => {
            let c = &run.clarification;
            let text = c
                .prompt
                .as_deref()
                .or_else(|| c.gate.as_ref().and_then(|g| g.prompt.as_deref()));
            (c.pending).then_some(PendingQuestion { worker: None, text })
        }
        AnswerTarget::Worker(id) => run
            .worker(id)
            .filter(|w| w.status == WorkerStatus::Waiting)
            .map(|w| PendingQuestion {
                worker: Some(w),
                text: w.question.as_deref(),
            }),
    }
}

/// Everything one frame shows, borrowed from the app loop. Drawing reads only this: no
/// clock, no filesystem, no tmux.
pub struct View<'a> {
    /// The whole run: workers, council, clarification, stage, status.
    pub run: &'a RunState,
    /// The selected worker's screen, newest line last: tmux `capture-pane -p -J -e` text
    /// converted once per capture with [`crate::tui::panels::output::capture_to_lines`].
    pub output: &'a [Line<'static>],
    /// The instant elapsed times are measured to (the app loop reads the clock, not draw).
    pub now: DateTime<Utc>,
    pub ui: &'a UiState,
    /// Backend the run uses now, e.g. `tmux` or `process`.
    pub backend: &'a str,
    /// tmux server socket name (`-L`), e.g. `crewmux`.
    pub tmux_socket: &'a str,
    /// Show how to attach to the selected pane and come back (off when attaching is not
    /// possible, e.g. on the process backend).
    pub attach_hint: bool,
    /// The document the main area shows (Result, Prompt, Report or a jumped-to file), as
    /// the app loop last read it; `None` on the Output and Council tabs.
    pub doc: Option<&'a Doc>,
}
