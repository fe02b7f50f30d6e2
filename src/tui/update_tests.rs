//! Unit tests of `update`: selection, focus, the answer flow, next-waiting, cancel.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::*;
use crate::tui::action::map_key;
use crate::tui::fixtures::{crazy_run, crazy_run_worker_question, done_run};

/// Map each key through the keymap and apply it, collecting the effects.
fn keys(ui: &mut UiState, run: &RunState, codes: &[KeyCode]) -> Vec<UiEffect> {
    let mut effects = Vec::new();
    for code in codes {
        if let Some(action) = map_key(ui, KeyEvent::new(*code, KeyModifiers::NONE)) {
            effects.extend(update(ui, run, action));
        }
    }
    effects
}

fn typed(text: &str) -> Vec<KeyCode> {
    text.chars().map(KeyCode::Char).collect()
}

#[test]
fn answering_the_run_level_question() {
    let run = crazy_run();
    let mut ui = UiState::default();
    assert!(keys(&mut ui, &run, &[KeyCode::Char('a')]).is_empty());
    assert_eq!(ui.focus, Focus::Clarification);
    assert_eq!(ui.answering, Some(AnswerTarget::Run));
    // `q`, `n` and `a` are text here, not commands.
    let mut k = typed("per key, queue");
    k.extend([KeyCode::Backspace; 5]);
    k.extend(typed("reject with 429"));
    k.push(KeyCode::Enter);
    let effects = keys(&mut ui, &run, &k);
    assert_eq!(
        effects,
        vec![UiEffect::Answer {
            worker_id: None,
            text: "per key, reject with 429".into()
        }]
    );
    assert!(ui.input.is_empty());
    assert_eq!(ui.focus, Focus::Roster);
    assert_eq!(ui.answering, None);
}

#[test]
fn answering_a_waiting_worker_goes_to_that_worker() {
    let run = crazy_run_worker_question();
    let mut ui = UiState::default();
    let mut k = vec![KeyCode::Char('a')];
    k.extend(typed("react-datepicker"));
    k.push(KeyCode::Enter);
    assert_eq!(
        keys(&mut ui, &run, &k),
        vec![UiEffect::Answer {
            worker_id: Some("frontend".into()),
            text: "react-datepicker".into()
        }]
    );
}

#[test]
fn an_empty_answer_is_not_sent() {
    let run = crazy_run();
    let mut ui = UiState::default();
    let effects = keys(
        &mut ui,
        &run,
        &[KeyCode::Char('a'), KeyCode::Char(' '), KeyCode::Enter],
    );
    assert!(effects.is_empty());
    assert_eq!(ui.focus, Focus::Clarification);
    assert!(ui.notice.as_deref().unwrap().contains("type an answer"));
}

#[test]
fn an_answer_to_a_question_that_went_away_is_kept_not_sent() {
    let mut run = crazy_run_worker_question();
    let mut ui = UiState::default();
    let mut k = vec![KeyCode::Char('a')];
    k.extend(typed("react"));
    keys(&mut ui, &run, &k);
    run.worker_mut("frontend").unwrap().status = WorkerStatus::Running;
    assert!(keys(&mut ui, &run, &[KeyCode::Enter]).is_empty());
    assert_eq!(ui.input.text(), "react");
    assert!(ui.notice.as_deref().unwrap().contains("no longer waiting"));
}

#[test]
fn answer_without_a_question_says_so() {
    let run = done_run();
    let mut ui = UiState::default();
    keys(&mut ui, &run, &[KeyCode::Char('a')]);
    assert_eq!(ui.focus, Focus::Roster);
    assert_eq!(ui.notice.as_deref(), Some("no question is pending"));
}

#[test]
fn escape_leaves_every_focus_and_overlay() {
    let run = crazy_run();
    for focus in Focus::ORDER {
        let mut ui = UiState {
            focus,
            ..UiState::default()
        };
        keys(&mut ui, &run, &[KeyCode::Esc]);
        assert_eq!(ui.focus, Focus::Roster, "from {focus:?}");
    }
    let mut ui = UiState::default();
    keys(&mut ui, &run, &[KeyCode::Char('?')]);
    assert!(ui.help);
    keys(&mut ui, &run, &[KeyCode::Esc]);
    assert!(!ui.help);
}

#[test]
fn escape_keeps_a_half_typed_answer_and_ctrl_c_clears_it() {
    let run = crazy_run();
    let mut ui = UiState::default();
    let mut k = vec![KeyCode::Char('a')];
    k.extend(typed("both"));
    k.push(KeyCode::Esc);
    keys(&mut ui, &run, &k);
    assert_eq!((ui.focus, ui.input.text()), (Focus::Roster, "both"));
    keys(&mut ui, &run, &[KeyCode::Char('a')]);
    assert_eq!(ui.focus, Focus::Clarification);
    let action = map_key(
        &ui,
        KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL),
    )
    .unwrap();
    assert!(update(&mut ui, &run, action).is_empty());
    assert_eq!((ui.focus, ui.input.text()), (Focus::Roster, ""));
}

#[test]
fn next_waiting_jumps_and_wraps() {
    let mut run = crazy_run();
    run.workers[0].status = WorkerStatus::Waiting;
    let mut ui = UiState {
        selected: 1,
        ..UiState::default()
    };
    keys(&mut ui, &run, &[KeyCode::Char('n')]);
    assert_eq!(ui.selected, 2, "frontend is the next waiting worker");
    keys(&mut ui, &run, &[KeyCode::Char('n')]);
    assert_eq!(ui.selected, 0, "wraps to architect");
    let done = done_run();
    keys(&mut ui, &done, &[KeyCode::Char('n')]);
    assert_eq!(ui.selected, 0);
    assert_eq!(ui.notice.as_deref(), Some("no worker is waiting for input"));
}

#[test]
fn cancel_all_needs_confirmation() {
    let run = crazy_run();
    let mut ui = UiState::default();
    assert!(keys(&mut ui, &run, &[KeyCode::Char('C')]).is_empty());
    assert_eq!(ui.confirm, Some(Confirm::CancelAll));
    // Other keys do nothing while the dialog is open.
    assert!(keys(&mut ui, &run, &[KeyCode::Char('q'), KeyCode::Enter]).is_empty());
    assert!(keys(&mut ui, &run, &[KeyCode::Char('n')]).is_empty());
    assert_eq!(ui.confirm, None);
    keys(&mut ui, &run, &[KeyCode::Char('C')]);
    assert_eq!(
        keys(&mut ui, &run, &[KeyCode::Char('y')]),
        vec![UiEffect::Cancel { worker_id: None }]
    );
    assert_eq!(ui.confirm, None);
}

#[test]
fn cancel_all_on_a_finished_run_does_not_ask() {
    let mut ui = UiState::default();
    keys(&mut ui, &done_run(), &[KeyCode::Char('C')]);
    assert_eq!(ui.confirm, None);
}

#[test]
fn cancel_selected_worker_only_when_it_has_not_ended() {
    let run = crazy_run();
    let mut ui = UiState {
        selected: 1,
        ..UiState::default()
    };
    assert_eq!(
        keys(&mut ui, &run, &[KeyCode::Char('c')]),
        vec![UiEffect::Cancel {
            worker_id: Some("backend".into())
        }]
    );
    ui.selected = 0;
    assert!(keys(&mut ui, &run, &[KeyCode::Char('c')]).is_empty());
    assert!(ui.notice.as_deref().unwrap().contains("already ended"));
}

#[test]
fn selection_moves_within_the_roster_and_resets_output_scroll() {
    let run = crazy_run();
    let mut ui = UiState {
        output_scroll: 7,
        ..UiState::default()
    };
    keys(&mut ui, &run, &[KeyCode::Char('k')]);
    assert_eq!(
        (ui.selected, ui.output_scroll),
        (0, 7),
        "no move at the top, scroll kept"
    );
    keys(&mut ui, &run, &[KeyCode::Char('j'), KeyCode::Down]);
    assert_eq!((ui.selected, ui.output_scroll), (2, 0));
    keys(&mut ui, &run, &[KeyCode::Char('G'), KeyCode::Down]);
    assert_eq!(ui.selected, 4, "clamped at the last worker");
    keys(&mut ui, &run, &[KeyCode::Char('g')]);
    assert_eq!(ui.selected, 0);
}

#[test]
fn output_scroll_is_clamped_to_the_output_length() {
    let run = crazy_run();
    let mut ui = UiState {
        focus: Focus::Output,
        output_len: 12,
        ..UiState::default()
    };
    keys(&mut ui, &run, &[KeyCode::Up, KeyCode::Up]);
    assert_eq!(ui.output_scroll, 2);
    keys(&mut ui, &run, &[KeyCode::PageUp, KeyCode::PageUp]);
    assert_eq!(ui.output_scroll, 12);
    keys(&mut ui, &run, &[KeyCode::End]);
    assert_eq!(ui.output_scroll, 0, "End follows the newest line again");
}

#[test]
fn tab_cycles_focus_and_skips_the_answer_without_a_question() {
    let run = done_run();
    let mut ui = UiState::default();
    let mut seen = vec![];
    for _ in 0..4 {
        keys(&mut ui, &run, &[KeyCode::Tab]);
        seen.push(ui.focus);
    }
    assert_eq!(
        seen,
        [Focus::Output, Focus::Council, Focus::Log, Focus::Roster]
    );
    keys(&mut ui, &run, &[KeyCode::BackTab]);
    assert_eq!(ui.focus, Focus::Log);

    let run = crazy_run();
    let mut ui = UiState {
        focus: Focus::Council,
        ..UiState::default()
    };
    keys(&mut ui, &run, &[KeyCode::Tab]);
    assert_eq!(
        (ui.focus, ui.answering.clone()),
        (Focus::Clarification, Some(AnswerTarget::Run))
    );
    keys(&mut ui, &run, &[KeyCode::Tab]);
    assert_eq!(ui.focus, Focus::Log, "Tab leaves the input line too");
}

#[test]
fn attach_needs_a_tmux_pane() {
    let mut run = crazy_run();
    let mut ui = UiState {
        selected: 1,
        ..UiState::default()
    };
    assert_eq!(
        keys(&mut ui, &run, &[KeyCode::Enter]),
        vec![UiEffect::Attach {
            worker_id: "backend".into()
        }]
    );
    run.workers[1].pane_id = None;
    assert!(keys(&mut ui, &run, &[KeyCode::Enter]).is_empty());
    assert!(ui.notice.as_deref().unwrap().contains("no pane yet"));
    run.backend = crate::domain::BackendKind::Process;
    assert!(keys(&mut ui, &run, &[KeyCode::Enter]).is_empty());
    assert!(ui.notice.as_deref().unwrap().contains("process backend"));
}

#[test]
fn quit_is_an_effect_and_ctrl_c_quits_outside_the_input() {
    let run = crazy_run();
    let mut ui = UiState::default();
    assert_eq!(
        keys(&mut ui, &run, &[KeyCode::Char('q')]),
        vec![UiEffect::Quit]
    );
    let action = map_key(
        &ui,
        KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL),
    )
    .unwrap();
    assert_eq!(update(&mut ui, &run, action), vec![UiEffect::Quit]);
}

#[test]
fn input_line_edits_at_the_cursor_with_multibyte_text() {
    let mut ui = UiState {
        focus: Focus::Clarification,
        ..UiState::default()
    };
    let run = crazy_run();
    let mut k = typed("naïve");
    k.extend([
        KeyCode::Left,
        KeyCode::Left,
        KeyCode::Backspace,
        KeyCode::Home,
        KeyCode::Delete,
    ]);
    k.extend(typed("N"));
    k.push(KeyCode::End);
    k.extend(typed("!"));
    keys(&mut ui, &run, &k);
    assert_eq!(ui.input.text(), "Nave!");
    assert_eq!(ui.input.cursor(), 5);
}

#[test]
fn effects_serialise_for_scripts() {
    let e = UiEffect::Answer {
        worker_id: None,
        text: "yes".into(),
    };
    assert_eq!(
        serde_json::to_string(&e).unwrap(),
        r#"{"effect":"answer","worker_id":null,"text":"yes"}"#
    );
}

#[test]
fn reconcile_leaves_the_input_when_its_question_was_answered_elsewhere() {
    let mut run = crazy_run();
    let mut ui = UiState::default();
    let mut k = vec![KeyCode::Char('a')];
    k.extend(typed("both"));
    keys(&mut ui, &run, &k);
    // `crewmux answer` resolved the run-level question meanwhile.
    run.clarification.pending = false;
    reconcile(&mut ui, &run);
    assert_eq!(ui.focus, Focus::Roster);
    assert_eq!(ui.answering, None);
    assert_eq!(ui.input.text(), "both");
    assert!(ui
        .notice
        .as_deref()
        .unwrap()
        .contains("the run no longer needs an answer"));
    // The keys still on their way go into the kept text, never to the roster as hotkeys
    // (`s` would open the send line, `c` cancel); Enter finishes it and sends nothing.
    let mut k = typed(" sides");
    k.push(KeyCode::Enter);
    let fx = keys(&mut ui, &run, &k);
    assert!(fx.is_empty(), "{fx:?}");
    assert_eq!(ui.input.text(), "both sides");
    assert!(ui.form.is_none());
    assert!(
        ui.notice.as_deref().unwrap().starts_with("not sent"),
        "{:?}",
        ui.notice
    );
    // The waiting worker's question is next; `a` opens it with the kept text.
    keys(&mut ui, &run, &[KeyCode::Char('a')]);
    assert_eq!(ui.answering, Some(AnswerTarget::Worker("frontend".into())));
    assert_eq!(ui.input.text(), "both sides");
}

#[test]
fn reconcile_clamps_the_selection_when_workers_go_away() {
    let mut run = crazy_run();
    let mut ui = UiState {
        selected: 4,
        ..UiState::default()
    };
    run.workers.truncate(2);
    reconcile(&mut ui, &run);
    assert_eq!(ui.selected, 1);
}

#[test]
fn paste_types_into_the_input_without_line_breaks() {
    let run = crazy_run();
    let mut ui = UiState::default();
    paste(&mut ui, "ignored: the input is not focused");
    assert!(ui.input.is_empty());
    keys(&mut ui, &run, &[KeyCode::Char('a')]);
    paste(&mut ui, "per key\nreject\twith 429");
    assert_eq!(ui.input.text(), "per key reject with 429");
}

#[test]
fn a_new_selection_asks_for_that_workers_output() {
    let run = crazy_run();
    let mut ui = UiState::default();
    assert_eq!(
        keys(&mut ui, &run, &[KeyCode::Char('j')]),
        vec![UiEffect::Select {
            worker_id: "backend".into()
        }]
    );
    assert_eq!(
        keys(&mut ui, &run, &[KeyCode::Char('n')]),
        vec![UiEffect::Select {
            worker_id: "frontend".into()
        }]
    );
    assert!(
        keys(&mut ui, &run, &[KeyCode::Char('n')]).is_empty(),
        "still frontend"
    );
    ui.focus = Focus::Output;
    assert!(
        keys(&mut ui, &run, &[KeyCode::Char('j')]).is_empty(),
        "scrolling is not selecting"
    );
}

#[test]
fn enter_on_a_worker_whose_host_does_not_answer_says_so_at_once() {
    let mut run = crazy_run();
    run.workers[1].host = Some("box".into());
    let mut ui = UiState {
        selected: 1,
        ..UiState::default()
    };
    ui.hosts_down.insert("box".into());
    assert!(keys(&mut ui, &run, &[KeyCode::Enter]).is_empty());
    assert_eq!(
        ui.notice.as_deref(),
        Some("host box does not answer; Enter attaches once it does")
    );
    ui.hosts_down.clear();
    assert_eq!(
        keys(&mut ui, &run, &[KeyCode::Enter]),
        vec![UiEffect::Attach {
            worker_id: "backend".into()
        }]
    );
}
