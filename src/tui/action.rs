//! Actions as data: the one `Action` enum, its descriptions, and the keymap per focus that
//! turns a key into an action. The same tables feed the footer's hints and the help overlay.

use std::borrow::Cow;

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use serde::{Deserialize, Serialize};

use super::state::{Focus, UiState};
use super::tabs::Tab;

/// Everything a person can ask of the dashboard. Serialised in kebab case
/// (`"next-waiting"`, `{"insert-char":"x"}`) so scripted tests and key configs can name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    /// Previous worker in the roster, or scroll up in the focused panel.
    Up,
    /// Next worker in the roster, or scroll down in the focused panel.
    Down,
    PageUp,
    PageDown,
    /// First worker, or the oldest line of the focused panel.
    Top,
    /// Last worker, or back to following the newest line.
    Bottom,
    /// Attach the terminal to the selected worker's tmux pane; detaching comes back.
    Attach,
    FocusNext,
    FocusPrev,
    ToggleHelp,
    /// Leave the dashboard; the run goes on, driven by its lead (`crewmux attach <run>`
    /// comes back).
    Quit,
    /// Open the answer input for the pending question.
    Answer,
    /// Select the next worker that waits for input.
    NextWaiting,
    /// Cancel the selected worker.
    CancelWorker,
    /// Ask to cancel the run, every worker of it (confirmed with `y`): the one key that
    /// ends a run, since `q` never does.
    CancelAll,
    /// `y` in a confirm dialog.
    Confirm,
    /// `s` in the merge dialog: take the result as one squashed commit
    /// (`crewmux merge --squash`).
    ConfirmSquash,
    /// Esc: close the dialog or help, leave the input line, return focus to the roster.
    Back,
    InsertChar(char),
    DeleteBack,
    DeleteForward,
    CursorLeft,
    CursorRight,
    CursorHome,
    CursorEnd,
    /// Send the typed answer.
    Submit,
    /// Ctrl-C in the input line: empty it and leave (a second Ctrl-C quits).
    ClearInput,
    /// Show tab `n` (1-based, [`crate::tui::tabs::Tab::ALL`]) in the main area.
    SelectTab(u8),
    /// The next tab of the main area.
    NextTab,
    /// The previous tab of the main area.
    PrevTab,
    /// Council tab: go to the worker or file the selected finding names.
    Jump,
    /// Wrap long output lines, or cut them at the panel's edge.
    ToggleWrap,
    /// Open the form that adds a worker to the run.
    AddWorker,
    /// Start a new attempt of the selected worker (it has ended).
    Retry,
    /// Edit the selected worker's task in `$EDITOR`, then retry it with the edit.
    EditRetry,
    /// Type a line of text into the selected worker's pane; for an agent's worker that has
    /// ended, start its next attempt with it.
    SendText,
    /// A shell in the selected worker's tree: a new window of the person's tmux, or the
    /// dashboard suspended outside tmux (`crate::tui::shell`).
    Shell,
    /// Order the roster by attention (waiting, failed, running, done), or as the team is.
    ToggleAttention,
    /// Show the selected worker's diff (the Diff tab, focused).
    ShowDiff,
    /// Diff tab: scroll to the next file of the diff.
    NextFile,
    /// Diff tab: scroll to the previous file of the diff.
    PrevFile,
    /// Merge the run's result into your branch (asks, with the diffstat).
    Merge,
    /// An approval is shown: allow it once (`y`).
    AllowOnce,
    /// An approval is shown: deny it, with an optional reason typed next (`n`).
    DenyApproval,
    /// An approval is shown: allow it and every later request of its kind (tool name)
    /// for the rest of the run (`A`).
    AllowAlways,
}

impl Action {
    /// A short phrase (at most 30 cells) for the help overlay.
    pub fn description(self) -> &'static str {
        match self {
            Action::Up => "previous worker / scroll up",
            Action::Down => "next worker / scroll down",
            Action::PageUp => "scroll a page up",
            Action::PageDown => "scroll a page down",
            Action::Top => "first worker / oldest line",
            Action::Bottom => "last worker / follow output",
            Action::Attach => "attach to the worker's pane",
            Action::FocusNext => "focus the next panel",
            Action::FocusPrev => "focus the previous panel",
            Action::ToggleHelp => "show or hide this help",
            Action::Quit => "leave; the run goes on",
            Action::Answer => "answer the pending question",
            Action::NextWaiting => "jump to next waiting worker",
            Action::CancelWorker => "cancel the selected worker",
            Action::CancelAll => "cancel the run (asks)",
            Action::Confirm => "yes, do it",
            Action::ConfirmSquash => "merge as one commit",
            Action::Back => "close / leave input / back",
            Action::InsertChar(_) => "type into the answer",
            Action::DeleteBack => "delete before the cursor",
            Action::DeleteForward => "delete under the cursor",
            Action::CursorLeft => "cursor left",
            Action::CursorRight => "cursor right",
            Action::CursorHome => "cursor to the start",
            Action::CursorEnd => "cursor to the end",
            Action::Submit => "send the answer",
            Action::ClearInput => "clear the answer and leave",
            Action::SelectTab(_) => "show that tab",
            Action::NextTab => "next tab",
            Action::PrevTab => "previous tab",
            Action::Jump => "go to what the finding names",
            Action::ToggleWrap => "wrap long output lines or not",
            Action::AddWorker => "add a worker to the run",
            Action::Retry => "retry the ended worker",
            Action::EditRetry => "edit its task, then retry",
            Action::SendText => "send it a line of text",
            Action::Shell => "a shell in its tree",
            Action::ToggleAttention => "order workers by attention",
            Action::ShowDiff => "show the worker's diff",
            Action::NextFile => "next file of the diff",
            Action::PrevFile => "previous file of the diff",
            Action::Merge => "merge the result (asks)",
            Action::AllowOnce => "approval: allow once",
            Action::DenyApproval => "approval: deny (reason next)",
            Action::AllowAlways => "approval: allow kind for run",
        }
    }

    /// One or two words for the footer's key hints.
    pub fn hint(self) -> &'static str {
        match self {
            Action::Up | Action::Down => "move",
            Action::PageUp | Action::PageDown => "page",
            Action::Top | Action::Bottom => "ends",
            Action::Attach => "attach",
            Action::FocusNext | Action::FocusPrev => "focus",
            Action::ToggleHelp => "help",
            Action::Quit => "quit",
            Action::Answer => "answer",
            Action::NextWaiting => "next waiting",
            Action::CancelWorker => "cancel",
            Action::CancelAll => "cancel run",
            Action::Confirm => "yes",
            Action::ConfirmSquash => "squash",
            Action::Back => "back",
            Action::InsertChar(_) => "type",
            Action::DeleteBack | Action::DeleteForward => "delete",
            Action::CursorLeft | Action::CursorRight => "cursor",
            Action::CursorHome | Action::CursorEnd => "home/end",
            Action::Submit => "send",
            Action::ClearInput => "clear",
            Action::SelectTab(_) => "tab",
            Action::NextTab | Action::PrevTab => "tabs",
            Action::Jump => "go to",
            Action::ToggleWrap => "wrap",
            Action::AddWorker => "add worker",
            Action::Retry => "retry",
            Action::EditRetry => "edit+retry",
            Action::SendText => "send text",
            Action::Shell => "shell",
            Action::ToggleAttention => "order",
            Action::ShowDiff => "diff",
            Action::NextFile | Action::PrevFile => "files",
            Action::Merge => "merge",
            Action::AllowOnce => "allow",
            Action::DenyApproval => "deny",
            Action::AllowAlways => "allow always",
        }
    }
}

/// One key of a keymap. `label` is how the key is written in hints (`↑`, `C-c`, `Tab`).
/// `hint` marks the bindings the footer shows; the help overlay shows all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    pub code: KeyCode,
    pub mods: KeyModifiers,
    pub label: Cow<'static, str>,
    pub action: Action,
    pub hint: bool,
}

const fn key(code: KeyCode, label: &'static str, action: Action, hint: bool) -> Binding {
    Binding {
        code,
        mods: KeyModifiers::NONE,
        label: Cow::Borrowed(label),
        action,
        hint,
    }
}

const fn ctrl(c: char, label: &'static str, action: Action) -> Binding {
    Binding {
        code: KeyCode::Char(c),
        mods: KeyModifiers::CONTROL,
        label: Cow::Borrowed(label),
        action,
        hint: false,
    }
}

use Action as A;
use KeyCode as K;

/// Keys that work in every focus except the input line.
pub const GLOBAL: &[Binding] = &[
    key(K::Tab, "Tab", A::FocusNext, true),
    key(K::BackTab, "S-Tab", A::FocusPrev, false),
    key(K::Char('a'), "a", A::Answer, true),
    key(K::Char('n'), "n", A::NextWaiting, true),
    key(K::Char('C'), "C", A::CancelAll, true),
    key(K::Char(']'), "]", A::NextTab, true),
    key(K::Char('['), "[", A::PrevTab, false),
    key(K::Char('1'), "1", A::SelectTab(1), false),
    key(K::Char('2'), "2", A::SelectTab(2), false),
    key(K::Char('3'), "3", A::SelectTab(3), false),
    key(K::Char('4'), "4", A::SelectTab(4), false),
    key(K::Char('5'), "5", A::SelectTab(5), false),
    key(K::Char('6'), "6", A::SelectTab(6), false),
    key(K::Char('w'), "w", A::ToggleWrap, false),
    key(K::Char('+'), "+", A::AddWorker, true),
    key(K::Char('o'), "o", A::ToggleAttention, false),
    key(K::Char('m'), "m", A::Merge, false),
    key(K::Char('?'), "?", A::ToggleHelp, true),
    key(K::Char('q'), "q", A::Quit, true),
    ctrl('c', "C-c", A::Quit),
    key(K::Esc, "Esc", A::Back, false),
];

/// The worker roster.
pub const ROSTER: &[Binding] = &[
    key(K::Up, "↑", A::Up, true),
    key(K::Char('k'), "k", A::Up, false),
    key(K::Down, "↓", A::Down, true),
    key(K::Char('j'), "j", A::Down, false),
    key(K::Home, "Home", A::Top, false),
    key(K::Char('g'), "g", A::Top, false),
    key(K::End, "End", A::Bottom, false),
    key(K::Char('G'), "G", A::Bottom, false),
    key(K::Enter, "Enter", A::Attach, true),
    key(K::Char('c'), "c", A::CancelWorker, true),
];

/// Acting on the selected worker: in every focus but the input line (the roster keeps its
/// selection while another panel has focus), so `d` shows its diff from the council too.
pub const WORKER: &[Binding] = &[
    key(K::Char('r'), "r", A::Retry, true),
    key(K::Char('e'), "e", A::EditRetry, false),
    key(K::Char('s'), "s", A::SendText, true),
    key(K::Char('c'), "c", A::CancelWorker, false),
    key(K::Char('d'), "d", A::ShowDiff, false),
    key(K::Char('!'), "!", A::Shell, false),
];

/// The selected worker's output, the council and the log: scrolling.
pub const SCROLL: &[Binding] = &[
    key(K::Up, "↑", A::Up, true),
    key(K::Char('k'), "k", A::Up, false),
    key(K::Down, "↓", A::Down, true),
    key(K::Char('j'), "j", A::Down, false),
    key(K::PageUp, "PgUp", A::PageUp, false),
    key(K::PageDown, "PgDn", A::PageDown, false),
    key(K::Home, "Home", A::Top, false),
    key(K::Char('g'), "g", A::Top, false),
    key(K::End, "End", A::Bottom, true),
    key(K::Char('G'), "G", A::Bottom, false),
];

/// The output panel adds attach and cancel of the worker it shows.
pub const OUTPUT: &[Binding] = &[
    key(K::Enter, "Enter", A::Attach, true),
    key(K::Char('c'), "c", A::CancelWorker, false),
];

/// The main area on the Council tab: Enter goes to what the selected finding names.
pub const COUNCIL_VIEW: &[Binding] = &[key(K::Enter, "Enter", A::Jump, true)];

/// The main area on the Diff tab: jump between the diff's files.
pub const DIFF_VIEW: &[Binding] = &[
    key(K::Char('}'), "}", A::NextFile, true),
    key(K::Char('{'), "{", A::PrevFile, false),
];

/// The answer input line. Printable chars without Ctrl/Alt are typed (see [`map_key`]).
pub const INPUT: &[Binding] = &[
    key(K::Enter, "Enter", A::Submit, true),
    key(K::Esc, "Esc", A::Back, true),
    ctrl('c', "C-c", A::ClearInput),
    key(K::Backspace, "Bksp", A::DeleteBack, false),
    key(K::Delete, "Del", A::DeleteForward, false),
    key(K::Left, "←", A::CursorLeft, false),
    key(K::Right, "→", A::CursorRight, false),
    key(K::Home, "Home", A::CursorHome, false),
    ctrl('a', "C-a", A::CursorHome),
    key(K::End, "End", A::CursorEnd, false),
    ctrl('e', "C-e", A::CursorEnd),
    key(K::Tab, "Tab", A::FocusNext, false),
    key(K::BackTab, "S-Tab", A::FocusPrev, false),
];

/// The help overlay: any of these closes it.
pub const HELP: &[Binding] = &[
    key(K::Esc, "Esc", A::Back, true),
    key(K::Char('?'), "?", A::Back, false),
    key(K::Char('q'), "q", A::Back, false),
    ctrl('c', "C-c", A::Back),
];

/// A confirm dialog: `y` confirms, `n`, Esc or Ctrl-C declines.
pub const CONFIRM: &[Binding] = &[
    key(K::Char('y'), "y", A::Confirm, true),
    key(K::Char('n'), "n", A::Back, true),
    key(K::Esc, "Esc", A::Back, false),
    ctrl('c', "C-c", A::Back),
];

/// The merge dialog: `y` merges (`--no-ff`, the run's commits kept), `s` squashes them
/// into one commit (`crewmux merge --squash`), `n`, Esc or Ctrl-C declines.
pub const MERGE_CONFIRM: &[Binding] = &[
    key(K::Char('y'), "y", A::Confirm, true),
    key(K::Char('s'), "s", A::ConfirmSquash, true),
    key(K::Char('n'), "n", A::Back, true),
    key(K::Esc, "Esc", A::Back, false),
    ctrl('c', "C-c", A::Back),
];

/// The steering forms (`+` add a worker, `s` send text): their keys are read by the form
/// itself (see `tui::steer`); this table gives the footer and help their hints.
pub const FORM: &[Binding] = &[
    Binding {
        code: K::Char('s'),
        mods: KeyModifiers::CONTROL,
        label: Cow::Borrowed("C-s"),
        action: A::Submit,
        hint: true,
    },
    key(K::Esc, "Esc", A::Back, true),
];

/// The send-text line (`s`): one line, so Enter sends it (as `C-s` does); read by the form
/// itself (see `tui::steer`), this table gives the footer and help their hints.
pub const SEND_FORM: &[Binding] = &[
    key(K::Enter, "Enter", A::Submit, true),
    Binding {
        code: K::Char('s'),
        mods: KeyModifiers::CONTROL,
        label: Cow::Borrowed("C-s"),
        action: A::Submit,
        hint: false,
    },
    key(K::Esc, "Esc", A::Back, true),
];

/// The default keymaps active for the current UI state, most specific first (the steering
/// keys last: the footer shows hints in this order while they fit). Overlays
/// replace everything; the input line replaces the global keys so `q` and `a` can be typed.
pub fn default_keymaps(ui: &UiState) -> Vec<&'static [Binding]> {
    match ui.form {
        Some(super::steer::SteerForm::Send(_)) => return vec![SEND_FORM],
        Some(_) => return vec![FORM],
        None => {}
    }
    if ui.confirm == Some(super::state::Confirm::Merge) {
        return vec![MERGE_CONFIRM];
    }
    if ui.confirm.is_some() {
        return vec![CONFIRM];
    }
    if ui.help {
        return vec![HELP];
    }
    match ui.focus {
        Focus::Roster => vec![ROSTER, GLOBAL, WORKER],
        Focus::Output if ui.tab == Tab::Council && ui.file.is_none() => {
            vec![COUNCIL_VIEW, SCROLL, GLOBAL, WORKER]
        }
        Focus::Output if ui.tab == Tab::Diff && ui.file.is_none() => {
            vec![DIFF_VIEW, SCROLL, GLOBAL, WORKER]
        }
        Focus::Output if ui.tab == Tab::Output && ui.file.is_none() => {
            vec![OUTPUT, SCROLL, GLOBAL, WORKER]
        }
        Focus::Output => vec![SCROLL, GLOBAL, WORKER],
        Focus::Council | Focus::Log => vec![SCROLL, GLOBAL, WORKER],
        Focus::Clarification => vec![INPUT],
    }
}

/// The keymaps in force for the current UI state: the defaults with the person's key
/// bindings (`ui.keys`, from the config file) applied.
pub fn keymaps(ui: &UiState) -> Vec<Vec<Binding>> {
    default_keymaps(ui)
        .into_iter()
        .map(|m| ui.keys.apply(m))
        .collect()
}

/// The action for `key` in the current UI state, or `None` when the key means nothing here.
/// Key releases are ignored (Windows and the kitty protocol report them). In the input line
/// every printable char (Shift allowed, Ctrl/Alt not) becomes [`Action::InsertChar`].
pub fn map_key(ui: &UiState, key: KeyEvent) -> Option<Action> {
    if key.kind == KeyEventKind::Release {
        return None;
    }
    // Terminals report BackTab with or without SHIFT and uppercase letters with SHIFT:
    // compare on Ctrl/Alt only.
    let mods = key.modifiers & (KeyModifiers::CONTROL | KeyModifiers::ALT);
    if ui.typing_on && mods.is_empty() {
        match key.code {
            KeyCode::Char(c) => return Some(Action::InsertChar(c)),
            KeyCode::Backspace => return Some(Action::DeleteBack),
            KeyCode::Enter | KeyCode::Esc => return Some(Action::Back),
            _ => {}
        }
    }
    for map in keymaps(ui) {
        if let Some(b) = map.iter().find(|b| b.code == key.code && b.mods == mods) {
            return Some(b.action);
        }
    }
    if ui.focus == Focus::Clarification && ui.confirm.is_none() && !ui.help && mods.is_empty() {
        if let KeyCode::Char(c) = key.code {
            return Some(Action::InsertChar(c));
        }
    }
    None
}

#[cfg(test)]
#[path = "action_tests.rs"]
mod tests;
