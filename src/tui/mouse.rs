//! The mouse in the dashboard: a click selects a worker in the roster, a tab in the tab
//! strip, or the panel under it; the wheel scrolls the panel under the pointer (three lines a
//! notch). Reported by the terminal because the dashboard turns mouse capture on.

use crossterm::event::{MouseButton, MouseEvent, MouseEventKind};
use ratatui::layout::{Position, Rect};

use super::action::Action;
use super::state::{Focus, UiState};
use super::tabs::Tab;
use super::update::{update, UiEffect};
use super::Areas;
use crate::domain::RunState;

/// Lines one wheel notch scrolls.
pub const WHEEL_LINES: usize = 3;

/// Apply `ev` given where the panels are (`areas`, from [`super::layout`]).
pub fn on_mouse(ui: &mut UiState, run: &RunState, areas: &Areas, ev: MouseEvent) -> Vec<UiEffect> {
    if ui.help || ui.confirm.is_some() || ui.form.is_some() || ui.focus == Focus::Clarification {
        return Vec::new();
    }
    let at = Position::new(ev.column, ev.row);
    let Some(focus) = panel_at(areas, at) else {
        return Vec::new();
    };
    match ev.kind {
        MouseEventKind::Down(MouseButton::Left) => {
            let before = ui.selected_worker(run).map(|w| w.id.clone());
            ui.focus = focus;
            if focus == Focus::Roster {
                let order = super::attention::order(ui, run);
                let shown = order.iter().position(|&i| i == ui.selected).unwrap_or(0);
                if let Some(row) = roster_row(areas.roster, shown, order.len(), at.y) {
                    ui.selected = order[row];
                    ui.output_scroll = 0;
                    ui.doc_scroll = 0;
                }
            } else if focus == Focus::Output && at.y == areas.output.y {
                if let Some(t) = tab_at(areas.output.x, at.x) {
                    return update(ui, run, Action::SelectTab(t.number() as u8));
                }
            }
            match ui.selected_worker(run) {
                Some(w) if before.as_deref() != Some(w.id.as_str()) => vec![UiEffect::Select {
                    worker_id: w.id.clone(),
                }],
                _ => Vec::new(),
            }
        }
        MouseEventKind::ScrollUp | MouseEventKind::ScrollDown => {
            ui.focus = focus;
            let action = if ev.kind == MouseEventKind::ScrollUp {
                Action::Up
            } else {
                Action::Down
            };
            let n = if focus == Focus::Roster {
                1
            } else {
                WHEEL_LINES
            };
            let mut effects = Vec::new();
            for _ in 0..n {
                effects.extend(update(ui, run, action));
            }
            effects
        }
        _ => Vec::new(),
    }
}

fn panel_at(areas: &Areas, at: Position) -> Option<Focus> {
    if areas.roster.contains(at) {
        Some(Focus::Roster)
    } else if areas.output.contains(at) {
        Some(Focus::Output)
    } else if areas.council.is_some_and(|a| a.contains(at)) {
        Some(Focus::Council)
    } else if areas.log.is_some_and(|a| a.contains(at)) {
        Some(Focus::Log)
    } else {
        None
    }
}

/// The worker on screen row `y` of the roster (border, header, then one row per worker,
/// scrolled so that the selected one is visible).
fn roster_row(area: Rect, selected: usize, workers: usize, y: u16) -> Option<usize> {
    let first = area.y + 2;
    let visible = area.height.saturating_sub(3) as usize;
    if y < first || visible == 0 {
        return None;
    }
    let offset = selected.saturating_sub(visible - 1);
    let i = offset + (y - first) as usize;
    (i < workers).then_some(i)
}

/// The tab under column `x` of the tab strip starting at `left` (the strip's own layout:
/// ` n Label ` per tab, ` │` after Prompt).
fn tab_at(left: u16, x: u16) -> Option<Tab> {
    let mut start = left;
    for t in Tab::ALL {
        let w = (t.label().len() + 4) as u16;
        if x >= start && x < start + w {
            return Some(t);
        }
        start += w;
        if t == Tab::Prompt {
            start += 2;
        }
    }
    None
}
