//! Unit tests of the keymaps and `map_key`.

use super::*;
use crate::tui::state::Confirm;

fn press(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn ctrl_c() -> KeyEvent {
    KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL)
}

fn ui_in(focus: Focus) -> UiState {
    UiState {
        focus,
        ..UiState::default()
    }
}

#[test]
fn roster_keys_move_attach_and_cancel() {
    let ui = ui_in(Focus::Roster);
    assert_eq!(map_key(&ui, press(K::Char('j'))), Some(A::Down));
    assert_eq!(map_key(&ui, press(K::Down)), Some(A::Down));
    assert_eq!(map_key(&ui, press(K::Char('k'))), Some(A::Up));
    assert_eq!(map_key(&ui, press(K::Enter)), Some(A::Attach));
    assert_eq!(map_key(&ui, press(K::Char('c'))), Some(A::CancelWorker));
    assert_eq!(map_key(&ui, press(K::Char('C'))), Some(A::CancelAll));
    assert_eq!(
        map_key(&ui, KeyEvent::new(K::Char('C'), KeyModifiers::SHIFT)),
        Some(A::CancelAll),
        "terminals report uppercase letters with SHIFT"
    );
    assert_eq!(map_key(&ui, press(K::Char('x'))), None);
}

#[test]
fn input_line_takes_printable_chars_including_command_letters() {
    let ui = ui_in(Focus::Clarification);
    for c in ['q', 'a', 'n', 'C', '?', 'j', ' ', 'é'] {
        assert_eq!(map_key(&ui, press(K::Char(c))), Some(A::InsertChar(c)));
    }
    assert_eq!(map_key(&ui, press(K::Enter)), Some(A::Submit));
    assert_eq!(map_key(&ui, press(K::Backspace)), Some(A::DeleteBack));
    assert_eq!(map_key(&ui, ctrl_c()), Some(A::ClearInput));
    assert_eq!(
        map_key(&ui, KeyEvent::new(K::Char('x'), KeyModifiers::ALT)),
        None,
        "Alt chords are not text"
    );
}

#[test]
fn escape_works_from_every_focus_and_overlay() {
    for focus in Focus::ORDER {
        assert_eq!(
            map_key(&ui_in(focus), press(K::Esc)),
            Some(A::Back),
            "{focus:?}"
        );
    }
    let mut ui = ui_in(Focus::Clarification);
    ui.help = true;
    assert_eq!(map_key(&ui, press(K::Esc)), Some(A::Back));
    ui.help = false;
    ui.confirm = Some(Confirm::CancelAll);
    assert_eq!(map_key(&ui, press(K::Esc)), Some(A::Back));
}

#[test]
fn ctrl_c_never_traps_the_user() {
    // Outside the input line it quits; inside it leaves the input; in overlays it closes.
    for focus in [Focus::Roster, Focus::Output, Focus::Council, Focus::Log] {
        assert_eq!(map_key(&ui_in(focus), ctrl_c()), Some(A::Quit));
    }
    assert_eq!(
        map_key(&ui_in(Focus::Clarification), ctrl_c()),
        Some(A::ClearInput)
    );
    let mut ui = ui_in(Focus::Roster);
    ui.confirm = Some(Confirm::CancelAll);
    assert_eq!(map_key(&ui, ctrl_c()), Some(A::Back));
}

#[test]
fn confirm_dialog_only_takes_yes_or_no() {
    let mut ui = ui_in(Focus::Roster);
    ui.confirm = Some(Confirm::CancelAll);
    assert_eq!(map_key(&ui, press(K::Char('y'))), Some(A::Confirm));
    assert_eq!(map_key(&ui, press(K::Char('n'))), Some(A::Back));
    assert_eq!(map_key(&ui, press(K::Char('q'))), None);
    assert_eq!(map_key(&ui, press(K::Enter)), None);
}

#[test]
fn scroll_panels_scroll_and_output_attaches() {
    let ui = ui_in(Focus::Output);
    assert_eq!(map_key(&ui, press(K::Char('k'))), Some(A::Up));
    assert_eq!(map_key(&ui, press(K::PageUp)), Some(A::PageUp));
    assert_eq!(map_key(&ui, press(K::End)), Some(A::Bottom));
    assert_eq!(map_key(&ui, press(K::Enter)), Some(A::Attach));
    assert_eq!(map_key(&ui_in(Focus::Log), press(K::Enter)), None);
}

#[test]
fn key_releases_are_ignored() {
    let mut k = press(K::Char('q'));
    k.kind = KeyEventKind::Release;
    assert_eq!(map_key(&ui_in(Focus::Roster), k), None);
}

#[test]
fn descriptions_fit_the_help_column() {
    let all = [GLOBAL, ROSTER, SCROLL, OUTPUT, INPUT, HELP, CONFIRM];
    for b in all.iter().flat_map(|m| m.iter()) {
        let d = b.action.description();
        assert!(
            !d.is_empty() && d.chars().count() <= 30,
            "{:?}: {d}",
            b.action
        );
    }
}

#[test]
fn no_keymap_binds_one_key_twice() {
    for map in [GLOBAL, ROSTER, SCROLL, OUTPUT, INPUT, HELP, CONFIRM] {
        for (i, a) in map.iter().enumerate() {
            let dup = map[i + 1..]
                .iter()
                .find(|b| b.code == a.code && b.mods == a.mods);
            assert!(dup.is_none(), "{} bound twice", a.label);
        }
    }
}

#[test]
fn actions_serialise_in_kebab_case() {
    assert_eq!(
        serde_json::to_string(&A::NextWaiting).unwrap(),
        "\"next-waiting\""
    );
    let typed: Action = serde_json::from_str("{\"insert-char\":\"x\"}").unwrap();
    assert_eq!(typed, A::InsertChar('x'));
}

#[test]
fn the_selected_workers_keys_work_from_every_focus_but_the_input_line() {
    for tab in [Tab::Output, Tab::Diff, Tab::Council, Tab::Report] {
        for focus in [Focus::Roster, Focus::Output, Focus::Council, Focus::Log] {
            let ui = UiState {
                focus,
                tab,
                ..UiState::default()
            };
            for (c, action) in [
                ('d', A::ShowDiff),
                ('c', A::CancelWorker),
                ('r', A::Retry),
                ('e', A::EditRetry),
                ('s', A::SendText),
            ] {
                assert_eq!(
                    map_key(&ui, press(K::Char(c))),
                    Some(action),
                    "{c} in {focus:?} on {tab:?}"
                );
            }
        }
    }
    let typing = ui_in(Focus::Clarification);
    assert_eq!(
        map_key(&typing, press(K::Char('d'))),
        Some(A::InsertChar('d'))
    );
}
