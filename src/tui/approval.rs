//! Answering an approval in the dashboard: while the clarification panel shows a worker's
//! approval request (its agent CLI asks to run a tool), `y` allows it once, `n` opens a
//! one-line reason (Enter with nothing denies with no reason) and `A` allows that kind of
//! action (the tool name) for the rest of the run. These keys come before the others, so
//! `n` denies here instead of jumping to the next waiting worker.

use crossterm::event::{KeyCode as K, KeyEvent, KeyEventKind, KeyModifiers};

use super::action::{Action, Binding};
use super::state::{AnswerTarget, Focus, UiState};
use super::update::UiEffect;
use crate::domain::clarification::Approval;
use crate::domain::{RunState, WorkerState};

/// The keys of a shown approval (rebindable as `allow-once`, `deny-approval`,
/// `allow-always`).
pub const APPROVAL: &[Binding] = &[
    Binding {
        code: K::Char('y'),
        mods: KeyModifiers::NONE,
        label: std::borrow::Cow::Borrowed("y"),
        action: Action::AllowOnce,
        hint: true,
    },
    Binding {
        code: K::Char('n'),
        mods: KeyModifiers::NONE,
        label: std::borrow::Cow::Borrowed("n"),
        action: Action::DenyApproval,
        hint: true,
    },
    Binding {
        code: K::Char('A'),
        mods: KeyModifiers::NONE,
        label: std::borrow::Cow::Borrowed("A"),
        action: Action::AllowAlways,
        hint: true,
    },
];

/// The approval the clarification panel shows now, with its worker: `None` when it shows
/// nothing, the run's question or a worker's plain question.
pub fn shown<'r>(ui: &UiState, run: &'r RunState) -> Option<(&'r WorkerState, &'r Approval)> {
    let w = ui.pending_question(run)?.worker?;
    let a = w.pending.as_ref()?.approval.as_ref()?;
    Some((w, a))
}

/// The approval action of `key`, when an approval is shown and the keys are not taken by
/// the input line, a form, a dialog or the help.
pub fn map_key(ui: &UiState, run: &RunState, key: KeyEvent) -> Option<Action> {
    if key.kind == KeyEventKind::Release
        || ui.form.is_some()
        || ui.confirm.is_some()
        || ui.help
        || ui.focus == Focus::Clarification
    {
        return None;
    }
    shown(ui, run)?;
    let mods = key.modifiers & (KeyModifiers::CONTROL | KeyModifiers::ALT);
    ui.keys
        .apply(APPROVAL)
        .into_iter()
        .find(|b| b.code == key.code && b.mods == mods)
        .map(|b| b.action)
}

/// `y` (`always`: `A`): the shown approval is answered at once.
pub fn allow(ui: &mut UiState, run: &RunState, always: bool) -> Vec<UiEffect> {
    let Some((w, a)) = shown(ui, run) else {
        ui.notice = Some("no approval is waiting".into());
        return Vec::new();
    };
    ui.notice = Some(if always {
        format!(
            "{} allowed for {}; later {} requests are allowed for the rest of the run",
            a.tool, w.id, a.tool
        )
    } else {
        format!("{} allowed once for {}", a.tool, w.id)
    });
    vec![UiEffect::Answer {
        worker_id: Some(w.id.clone()),
        text: if always { "A" } else { "y" }.into(),
    }]
}

/// `n`: the input line opens for the reason (Enter with nothing denies with no reason).
pub fn open_deny(ui: &mut UiState, run: &RunState) {
    let Some((w, _)) = shown(ui, run) else {
        ui.notice = Some("no approval is waiting".into());
        return;
    };
    ui.answering = Some(AnswerTarget::Worker(w.id.clone()));
    ui.denying = true;
    ui.focus = Focus::Clarification;
}

/// The answer Enter sends while denying: `n`, then the reason when one was typed.
pub fn deny_text(reason: &str) -> String {
    let reason = reason.trim();
    if reason.is_empty() {
        "n".into()
    } else {
        format!("n {reason}")
    }
}
