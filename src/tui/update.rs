//! The dashboard's pure update: apply one [`Action`] to the [`UiState`] and return the
//! effects the app loop must carry out (attach, answer, cancel, quit). No I/O, no clock.

use tui_logger::TuiWidgetEvent;

use super::action::Action;
use super::panels::council;
use super::state::{question_for, AnswerTarget, Confirm, Focus, UiState};
use super::tabs::Tab;
use crate::domain::{RunState, WorkerStatus};

/// Lines moved by PageUp/PageDown in the output and council panels.
pub const PAGE_LINES: usize = 10;

/// What the app loop must do after an action. Produced only by [`update`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "effect", rename_all = "kebab-case")]
pub enum UiEffect {
    /// The selected worker changed: show its output (the driver's `Control::Focus`). The
    /// lines of the previous worker should be dropped until the new capture arrives.
    Select { worker_id: String },
    /// Suspend the dashboard and attach the terminal to this worker's pane; redraw on detach.
    Attach { worker_id: String },
    /// Deliver an answer: `worker_id: None` answers the run-level clarification (as
    /// `crewmux answer <run> "<text>"` does), `Some(id)` is pasted into that worker's pane.
    Answer {
        worker_id: Option<String>,
        text: String,
    },
    /// Cancel one worker (`Some`) or every worker of the run (`None`).
    Cancel { worker_id: Option<String> },
    /// Add a worker, retry one or send it text (the driver's `Control::Steer`).
    Steer(crate::engine::steer::Steer),
    /// Suspend the dashboard, open this worker's task in `$EDITOR`, and retry it with the
    /// edited task when the editor exits.
    EditRetry { worker_id: String },
    /// Open a shell in this worker's tree (the app loop: [`crate::tui::shell`]).
    Shell { worker_id: String },
    /// Leave the dashboard; workers keep running.
    Quit,
    /// Work out what `m` would merge (a dry run) and open the confirmation, or say why not
    /// (the app loop runs git: [`crate::tui::merge`]).
    OfferMerge,
    /// Merge the run's result into the user's branch (confirmed); `squash`: as one
    /// commit (`crewmux merge --squash`).
    Merge { squash: bool },
}

/// Apply `action` to `ui` given the current `run`; pure. Sets `ui.notice` to say why an
/// action did nothing (no pane to attach, no question pending, ...).
pub fn update(ui: &mut UiState, run: &RunState, action: Action) -> Vec<UiEffect> {
    let before = ui.selected_worker(run).map(|w| w.id.clone());
    let mut effects = if ui.typing_on && typed_on(ui, action) {
        Vec::new()
    } else {
        apply(ui, run, action)
    };
    if let Some(now) = ui.selected_worker(run) {
        if before.as_deref() != Some(now.id.as_str()) {
            effects.insert(
                0,
                UiEffect::Select {
                    worker_id: now.id.clone(),
                },
            );
        }
    }
    effects
}

/// While [`UiState::typing_on`]: the key goes into the kept text (true), or ends the
/// typing (Enter, Esc: true, nothing sent; any other key: false, it acts as usual).
fn typed_on(ui: &mut UiState, action: Action) -> bool {
    match action {
        Action::InsertChar(c) => ui.input.insert(c),
        Action::DeleteBack => ui.input.delete_back(),
        Action::Back => {
            ui.typing_on = false;
            ui.notice = Some(
                "not sent: nothing waits for that answer any more; your text is kept (a to reuse, Ctrl-C clears)"
                    .into(),
            );
        }
        _ => {
            ui.typing_on = false;
            return false;
        }
    }
    true
}

fn apply(ui: &mut UiState, run: &RunState, action: Action) -> Vec<UiEffect> {
    if !matches!(action, Action::InsertChar(_)) {
        ui.notice = None;
    }
    if ui.confirm.is_some() {
        return confirm(ui, run, action);
    }
    match action {
        Action::Up => move_by(ui, run, -1),
        Action::Down => move_by(ui, run, 1),
        Action::PageUp => move_by(ui, run, -(PAGE_LINES as isize)),
        Action::PageDown => move_by(ui, run, PAGE_LINES as isize),
        Action::Top => move_by(ui, run, isize::MIN),
        Action::Bottom => move_by(ui, run, isize::MAX),
        Action::Attach => return attach(ui, run),
        Action::FocusNext => cycle_focus(ui, run, true),
        Action::FocusPrev => cycle_focus(ui, run, false),
        Action::ToggleHelp => ui.help = !ui.help,
        Action::Quit => return vec![UiEffect::Quit],
        Action::Answer => open_answer(ui, run),
        Action::NextWaiting => next_waiting(ui, run),
        Action::CancelWorker => return cancel_selected(ui, run),
        Action::CancelAll => {
            if run.workers.iter().any(|w| !w.status.is_terminal()) {
                ui.confirm = Some(Confirm::CancelAll);
            } else {
                ui.notice = Some("every worker has already ended".into());
            }
        }
        Action::Confirm | Action::ConfirmSquash => {}
        Action::Back
            if ui.esc_leaves
                && !ui.help
                && ui.file.is_none()
                && ui.focus == Focus::Roster
                && ui.input.is_empty() =>
        {
            return vec![UiEffect::Quit];
        }
        Action::Back => {
            back(ui);
            if ui.esc_leaves && ui.focus == Focus::Roster && !ui.help {
                ui.notice = Some("Esc again goes back to the list of runs".into());
            }
        }
        Action::InsertChar(c) => ui.input.insert(c),
        Action::DeleteBack => ui.input.delete_back(),
        Action::DeleteForward => ui.input.delete_forward(),
        Action::CursorLeft => ui.input.left(),
        Action::CursorRight => ui.input.right(),
        Action::CursorHome => ui.input.home(),
        Action::CursorEnd => ui.input.end(),
        Action::Submit => return submit(ui, run),
        Action::ClearInput => {
            ui.input.take();
            leave_input(ui);
        }
        Action::SelectTab(n) => match Tab::nth(n as usize) {
            Some(t) => show_tab(ui, t),
            None => ui.notice = Some(format!("there is no tab {n}")),
        },
        Action::NextTab => show_tab(ui, ui.tab.cycle(true)),
        Action::PrevTab => show_tab(ui, ui.tab.cycle(false)),
        Action::Jump => jump(ui, run),
        Action::AddWorker => super::steer::open_add(ui, run),
        Action::Retry => return super::steer::retry(ui, run),
        Action::EditRetry => return super::steer::edit_retry(ui, run),
        Action::SendText => super::steer::open_send(ui, run),
        Action::Shell => match ui.selected_worker(run) {
            Some(w) => {
                return vec![UiEffect::Shell {
                    worker_id: w.id.clone(),
                }]
            }
            None => {
                ui.notice = Some("no worker selected: its tree is where the shell opens".into())
            }
        },
        Action::ToggleAttention => super::attention::toggle(ui),
        Action::ShowDiff => show_tab(ui, Tab::Diff),
        Action::NextFile => super::diff::jump_file(ui, true),
        Action::PrevFile => super::diff::jump_file(ui, false),
        Action::AllowOnce => return super::approval::allow(ui, run, false),
        Action::AllowAlways => return super::approval::allow(ui, run, true),
        Action::DenyApproval => super::approval::open_deny(ui, run),
        Action::Merge => match super::merge::can_offer(run) {
            Ok(()) => return vec![UiEffect::OfferMerge],
            Err(why) => ui.notice = Some(why),
        },
        Action::ToggleWrap => {
            ui.nowrap = !ui.nowrap;
            ui.notice = Some(if ui.nowrap {
                "long output lines are cut at the edge (w wraps them)".into()
            } else {
                "long output lines wrap (w cuts them)".into()
            });
        }
    }
    Vec::new()
}

/// Bring `ui` in line with a new `run` state; the app loop calls it whenever the run state
/// changes (a worker ends, a question is answered from the command line). It clamps the
/// selection, and when the question being answered is no longer pending it forgets the
/// target and leaves the input (typed text is kept, a notice says so), so keys never go to
/// a panel that is no longer shown.
pub fn reconcile(ui: &mut UiState, run: &RunState) {
    ui.selected = ui.selected.min(run.workers.len().saturating_sub(1));
    ui.council_scroll = ui.council_scroll.min(council::line_count(run));
    ui.finding = ui.finding.min(ui.findings.len().saturating_sub(1));
    if let Some(target) = &ui.answering {
        if question_for(run, target).is_none() {
            let who = match target {
                AnswerTarget::Run => "the run".to_string(),
                AnswerTarget::Worker(id) => id.clone(),
            };
            ui.answering = None;
            ui.denying = false;
            let typing = ui.focus == Focus::Clarification && !ui.input.is_empty();
            if ui.focus == Focus::Clarification {
                ui.focus = Focus::Roster;
            }
            if !ui.input.is_empty() {
                ui.notice = Some(format!(
                    "{who} no longer needs an answer; your text is kept (a to reuse, Ctrl-C clears){}",
                    if typing { "; Enter or Esc finishes it, nothing is sent" } else { "" }
                ));
            }
            // Keys still on their way belong to the text, not to the roster.
            ui.typing_on = typing;
        }
    }
    if ui.focus == Focus::Clarification && ui.pending_question(run).is_none() {
        ui.focus = Focus::Roster;
    }
}

/// Type `text` (a bracketed paste) into the answer input when it has the focus. Line breaks
/// and tabs become spaces so a paste never sends an early Enter to a worker's pane.
pub fn paste(ui: &mut UiState, text: &str) {
    if ui.focus != Focus::Clarification || ui.help || ui.confirm.is_some() {
        return;
    }
    for c in text.chars() {
        ui.input.insert(if c.is_whitespace() { ' ' } else { c });
    }
}

fn confirm(ui: &mut UiState, run: &RunState, action: Action) -> Vec<UiEffect> {
    match (ui.confirm, action) {
        (Some(Confirm::CancelAll), Action::Confirm) => {
            ui.confirm = None;
            let live = run.workers.iter().filter(|w| !w.status.is_terminal());
            ui.notice = Some(format!("cancelling {} workers", live.count()));
            vec![UiEffect::Cancel { worker_id: None }]
        }
        (Some(Confirm::Merge), Action::Confirm | Action::ConfirmSquash) => {
            ui.confirm = None;
            vec![UiEffect::Merge {
                squash: action == Action::ConfirmSquash,
            }]
        }
        (Some(Confirm::Merge), Action::Back | Action::Quit) => {
            ui.confirm = None;
            ui.merge_offer = None;
            ui.notice = Some("nothing merged (m asks again, crewmux merge does it later)".into());
            Vec::new()
        }
        (_, Action::Back) | (_, Action::Quit) => {
            ui.confirm = None;
            ui.notice = Some("nothing cancelled".into());
            Vec::new()
        }
        _ => Vec::new(),
    }
}

/// Up/Down/Page/Top/Bottom by `delta` lines, on whatever the focus is.
fn move_by(ui: &mut UiState, run: &RunState, delta: isize) {
    match ui.focus {
        Focus::Roster => {
            let before = ui.selected;
            let order = super::attention::order(ui, run);
            let last = order.len().saturating_sub(1);
            let at = order.iter().position(|&i| i == ui.selected).unwrap_or(0);
            ui.selected = order.get(offset(at, delta, last)).copied().unwrap_or(0);
            if ui.selected != before {
                ui.output_scroll = 0;
                ui.doc_scroll = 0;
            }
        }
        Focus::Output if ui.file.is_some() || ui.tab.is_document() => {
            ui.doc_scroll = offset(ui.doc_scroll, delta, ui.doc_len.saturating_sub(1));
        }
        Focus::Output if ui.tab == Tab::Council => {
            ui.finding = offset(ui.finding, delta, ui.findings.len().saturating_sub(1));
        }
        // The output scroll counts up from the newest line: Up is +1.
        Focus::Output => ui.output_scroll = offset(ui.output_scroll, -delta, ui.output_len),
        Focus::Council => {
            ui.council_scroll = offset(ui.council_scroll, delta, council::line_count(run))
        }
        Focus::Log => ui.log.transition(match delta {
            isize::MAX => TuiWidgetEvent::EscapeKey,
            d if d < 0 => TuiWidgetEvent::PrevPageKey,
            _ => TuiWidgetEvent::NextPageKey,
        }),
        Focus::Clarification => {}
    }
}

/// Show `tab` in the main area and give it the keys; a jumped-to file closes.
fn show_tab(ui: &mut UiState, tab: Tab) {
    if ui.tab != tab || ui.file.is_some() {
        ui.doc_scroll = 0;
    }
    ui.tab = tab;
    ui.file = None;
    leave_input_to(ui, Focus::Output);
}

/// Council tab, Enter: a finding naming a worker selects it and shows its Result; one
/// naming a file shows that file (Esc comes back to the council).
fn jump(ui: &mut UiState, run: &RunState) {
    let Some(f) = ui.findings.get(ui.finding).cloned() else {
        ui.notice = Some("the council has no findings yet".into());
        return;
    };
    if let Some(id) = &f.worker {
        if let Some(i) = run.workers.iter().position(|w| &w.id == id) {
            ui.selected = i;
            ui.output_scroll = 0;
            show_tab(ui, Tab::Result);
            ui.notice = Some(format!("{id}'s result (the finding names {id})"));
            return;
        }
    }
    if let Some(path) = f.file {
        ui.doc_scroll = 0;
        ui.notice = Some(format!("{} — Esc comes back", path.display()));
        ui.file = Some(path);
        ui.focus = Focus::Output;
        return;
    }
    ui.notice = Some("this finding names no worker or file".into());
}

fn offset(value: usize, delta: isize, max: usize) -> usize {
    value.saturating_add_signed(delta).min(max)
}

fn attach(ui: &mut UiState, run: &RunState) -> Vec<UiEffect> {
    let Some(worker) = ui.selected_worker(run) else {
        ui.notice = Some("no worker to attach to".into());
        return Vec::new();
    };
    if run.backend != crate::domain::BackendKind::Tmux {
        ui.notice = Some(format!(
            "{} runs on the {} backend: there is no pane to attach to",
            worker.id,
            run.backend.as_str()
        ));
        return Vec::new();
    }
    if let Some(host) = worker.host.as_ref().filter(|h| ui.hosts_down.contains(*h)) {
        ui.notice = Some(format!(
            "host {host} does not answer; Enter attaches once it does"
        ));
        return Vec::new();
    }
    if worker.pane_id.is_none() {
        let had_one = run.dispatches.iter().any(|d| {
            d.worker_id == worker.id && d.attempt == worker.attempt && d.pane_id.is_some()
        });
        ui.notice = Some(if had_one {
            format!(
                "{}'s pane is gone ({}): its output is kept in the Output tab and output.log",
                worker.id, worker.status
            )
        } else {
            format!("{} has no pane yet ({})", worker.id, worker.status)
        });
        return Vec::new();
    }
    vec![UiEffect::Attach {
        worker_id: worker.id.clone(),
    }]
}

fn has_question(ui: &UiState, run: &RunState) -> bool {
    ui.pending_question(run).is_some()
}

fn cycle_focus(ui: &mut UiState, run: &RunState, forward: bool) {
    let order = Focus::ORDER;
    let mut i = order.iter().position(|f| *f == ui.focus).unwrap_or(0);
    loop {
        i = if forward {
            (i + 1) % order.len()
        } else {
            (i + order.len() - 1) % order.len()
        };
        if order[i] != Focus::Clarification || has_question(ui, run) {
            break;
        }
    }
    if order[i] == Focus::Clarification {
        open_answer(ui, run);
    } else {
        leave_input_to(ui, order[i]);
    }
}

fn open_answer(ui: &mut UiState, run: &RunState) {
    match ui.pending_question(run) {
        Some(q) => {
            ui.answering = Some(q.target());
            ui.denying = false;
            ui.focus = Focus::Clarification;
        }
        None => ui.notice = Some("no question is pending".into()),
    }
}

fn next_waiting(ui: &mut UiState, run: &RunState) {
    let n = run.workers.len();
    let start = ui.selected.min(n.saturating_sub(1));
    let found = (1..=n)
        .map(|step| (start + step) % n)
        .find(|&i| run.workers[i].status == WorkerStatus::Waiting);
    match found {
        Some(i) => {
            if i != ui.selected {
                ui.output_scroll = 0;
            }
            ui.selected = i;
            ui.focus = Focus::Roster;
            if ui.answering.is_some() && ui.input.is_empty() {
                ui.answering = None;
            }
        }
        None => ui.notice = Some("no worker is waiting for input".into()),
    }
}

fn cancel_selected(ui: &mut UiState, run: &RunState) -> Vec<UiEffect> {
    let Some(worker) = ui.selected_worker(run) else {
        return Vec::new();
    };
    if worker.status.is_terminal() {
        ui.notice = Some(format!(
            "{} has already ended ({})",
            worker.id, worker.status
        ));
        return Vec::new();
    }
    ui.notice = Some(format!("cancelling {}", worker.id));
    vec![UiEffect::Cancel {
        worker_id: Some(worker.id.clone()),
    }]
}

fn back(ui: &mut UiState) {
    if ui.help {
        ui.help = false;
    } else if ui.file.is_some() {
        ui.file = None;
        ui.doc_scroll = 0;
    } else if ui.focus == Focus::Log {
        ui.log.transition(TuiWidgetEvent::EscapeKey);
        ui.focus = Focus::Roster;
    } else {
        leave_input(ui);
    }
}

fn leave_input(ui: &mut UiState) {
    leave_input_to(ui, Focus::Roster);
}

/// Move focus; a half-typed answer is kept (Esc then `a` resumes it), an empty one forgets
/// its target so the panel follows the selection again.
fn leave_input_to(ui: &mut UiState, focus: Focus) {
    if ui.input.is_empty() {
        ui.answering = None;
        ui.denying = false;
    }
    ui.focus = focus;
}

fn submit(ui: &mut UiState, run: &RunState) -> Vec<UiEffect> {
    if ui.denying {
        return submit_denial(ui, run);
    }
    let text = ui.input.text().trim();
    if text.is_empty() {
        ui.notice = Some("type an answer first (Esc leaves the input)".into());
        return Vec::new();
    }
    let target = match &ui.answering {
        Some(t) => t.clone(),
        None => match ui.pending_question(run) {
            Some(q) => q.target(),
            None => {
                ui.notice = Some("no question is pending; the answer was not sent".into());
                return Vec::new();
            }
        },
    };
    if question_for(run, &target).is_none() {
        ui.notice = Some(match &target {
            AnswerTarget::Run => "the run's question was already answered; not sent".into(),
            AnswerTarget::Worker(id) => {
                format!("{id} is no longer waiting; the answer was not sent")
            }
        });
        return Vec::new();
    }
    let text = text.to_string();
    ui.input.take();
    ui.answering = None;
    ui.focus = Focus::Roster;
    let worker_id = match target {
        AnswerTarget::Run => None,
        AnswerTarget::Worker(id) => Some(id),
    };
    ui.notice = Some(match &worker_id {
        Some(id) => format!("answer sent to {id}"),
        None => "answer sent; the clarification gate runs again".into(),
    });
    vec![UiEffect::Answer { worker_id, text }]
}

/// Enter while the input holds the reason for denying the shown approval: `n` (with the
/// reason when one was typed) goes to the worker the input was opened for.
fn submit_denial(ui: &mut UiState, run: &RunState) -> Vec<UiEffect> {
    let target = ui.answering.clone();
    ui.denying = false;
    ui.answering = None;
    ui.focus = Focus::Roster;
    let waiting = target
        .as_ref()
        .and_then(|t| question_for(run, t))
        .and_then(|q| q.worker)
        .filter(|w| w.pending.as_ref().is_some_and(|p| p.approval.is_some()));
    let Some(w) = waiting else {
        ui.notice = Some("that approval is no longer waiting; nothing was sent".into());
        return Vec::new();
    };
    let text = super::approval::deny_text(&ui.input.take());
    ui.notice = Some(format!("denied for {}", w.id));
    vec![UiEffect::Answer {
        worker_id: Some(w.id.clone()),
        text,
    }]
}

#[cfg(test)]
#[path = "update_tests.rs"]
mod tests;
