//! The dashboard's steering: the add-worker form, retry, edit-and-retry, send text, and
//! the attention order (with a mouse click on the reordered roster).

use std::path::PathBuf;

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

use super::fixtures;
use super::model::{Model, Msg};
use super::steer::SteerForm;
use super::update::UiEffect;
use crate::engine::steer::Steer;

fn key(c: KeyCode) -> Msg {
    Msg::Term(Event::Key(KeyEvent::new(c, KeyModifiers::NONE)))
}

fn ctrl(c: char) -> Msg {
    Msg::Term(Event::Key(KeyEvent::new(
        KeyCode::Char(c),
        KeyModifiers::CONTROL,
    )))
}

fn typed(m: &mut Model, text: &str) {
    for c in text.chars() {
        m.handle(key(KeyCode::Char(c)));
    }
}

/// The crazy run: architect completed, backend running, frontend waiting, security failed,
/// testing crashed.
fn model() -> Model {
    Model::new(fixtures::crazy_run(), PathBuf::from("/p/.crewmux/runs/r"))
}

fn select(m: &mut Model, id: &str) {
    m.ui.selected = m.run.workers.iter().position(|w| w.id == id).unwrap();
}

fn screen(m: &Model, w: u16, h: u16) -> TestBackend {
    let view = crate::tui::fixtures::view(&m.run, &m.ui, &m.output);
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| super::draw(f, &view)).unwrap();
    t.backend().clone()
}

#[test]
fn plus_opens_a_form_and_ctrl_s_adds_the_worker() {
    let mut m = model();
    m.handle(key(KeyCode::Char('+')));
    let Some(SteerForm::Add(f)) = &m.ui.form else {
        panic!("no form: {:?}", m.ui.form)
    };
    assert_eq!(f.id, "added-1");
    assert_eq!(f.providers[0], "sim", "the team's first provider first");
    // Letters are text in the form: `q` does not quit, `r` does not retry.
    typed(&mut m, "Write the quota tests");
    m.handle(key(KeyCode::Enter));
    typed(&mut m, "for the admin API");
    m.handle(key(KeyCode::BackTab));
    m.handle(key(KeyCode::Right)); // provider: the next one
    let step = m.handle(ctrl('s'));
    let Some(UiEffect::Steer(Steer::AddWorker {
        id, provider, task, ..
    })) = step.effects.first()
    else {
        panic!("{:?}", step.effects)
    };
    assert_eq!(id, "added-1");
    assert_eq!(provider, "codex");
    assert_eq!(task, "Write the quota tests\nfor the admin API");
    assert!(m.ui.form.is_none());
    assert!(!m.quitting);
}

#[test]
fn a_taken_id_keeps_the_form_open_with_the_reason() {
    let mut m = model();
    m.handle(key(KeyCode::Char('+')));
    typed(&mut m, "task");
    m.handle(key(KeyCode::Tab)); // task → id
    for _ in 0.."added-1".len() {
        m.handle(key(KeyCode::Backspace));
    }
    typed(&mut m, "backend");
    let step = m.handle(key(KeyCode::Enter));
    assert!(step.effects.is_empty());
    assert!(m.ui.form.is_some());
    assert!(m.ui.notice.as_deref().unwrap().contains("exists already"));
    m.handle(key(KeyCode::Esc));
    assert!(m.ui.form.is_none());
}

#[test]
fn r_retries_an_ended_worker_and_says_why_not_for_a_running_one() {
    let mut m = model();
    select(&mut m, "security");
    let step = m.handle(key(KeyCode::Char('r')));
    assert_eq!(
        step.effects,
        vec![UiEffect::Steer(Steer::Retry {
            worker: "security".into(),
            task: None
        })]
    );
    assert_eq!(
        m.ui.notice.as_deref(),
        Some("retrying security as attempt 3")
    );
    select(&mut m, "backend");
    let step = m.handle(key(KeyCode::Char('r')));
    assert!(step.effects.is_empty());
    assert!(m.ui.notice.as_deref().unwrap().contains("cancel it first"));
}

#[test]
fn e_asks_the_app_to_edit_the_task_of_an_ended_worker() {
    let mut m = model();
    select(&mut m, "testing");
    let step = m.handle(key(KeyCode::Char('e')));
    assert_eq!(
        step.effects,
        vec![UiEffect::EditRetry {
            worker_id: "testing".into()
        }]
    );
}

#[test]
fn s_types_a_line_into_a_running_worker() {
    let mut m = model();
    // An agent's worker that has ended takes the line for its next attempt.
    select(&mut m, "architect");
    m.handle(key(KeyCode::Char('s')));
    assert!(
        matches!(&m.ui.form, Some(crate::tui::steer::SteerForm::Send(f)) if f.ended),
        "{:?}",
        m.ui.form
    );
    m.handle(key(KeyCode::Esc));
    select(&mut m, "backend");
    m.handle(key(KeyCode::Char('s')));
    typed(&mut m, "also cover the admin API");
    let step = m.handle(key(KeyCode::Enter));
    assert_eq!(
        step.effects,
        vec![UiEffect::Steer(Steer::SendText {
            worker: "backend".into(),
            text: "also cover the admin API".into()
        })]
    );
}

#[test]
fn the_add_form_at_80x24() {
    let mut m = model();
    m.handle(key(KeyCode::Char('+')));
    typed(&mut m, "Write the quota tests");
    insta::assert_snapshot!(screen(&m, 80, 24));
}

#[test]
fn the_send_line_at_80x24() {
    let mut m = model();
    select(&mut m, "backend");
    m.handle(key(KeyCode::Char('s')));
    typed(&mut m, "also cover the admin API");
    insta::assert_snapshot!(screen(&m, 80, 24));
}

fn click(column: u16, row: u16) -> Msg {
    Msg::Term(Event::Mouse(MouseEvent {
        kind: crossterm::event::MouseEventKind::Down(MouseButton::Left),
        column,
        row,
        modifiers: KeyModifiers::NONE,
    }))
}

#[test]
fn o_orders_the_roster_by_attention_and_the_selection_follows_its_worker() {
    let mut m = model();
    m.size = ratatui::layout::Rect::new(0, 0, 120, 40);
    select(&mut m, "architect");
    m.handle(key(KeyCode::Char('o')));
    assert!(m.ui.attention);
    let order: Vec<&str> = super::attention::order(&m.ui, &m.run)
        .into_iter()
        .map(|i| m.run.workers[i].id.as_str())
        .collect();
    assert_eq!(
        order,
        ["frontend", "security", "testing", "backend", "architect"],
        "waiting, failed, crashed, running, done"
    );
    assert_eq!(m.ui.selected_worker(&m.run).unwrap().id, "architect");
    // Up moves to the row above on screen: backend.
    m.handle(key(KeyCode::Up));
    assert_eq!(m.ui.selected_worker(&m.run).unwrap().id, "backend");
    // A click on the first row selects the first worker on screen.
    let a = m.areas();
    let step = m.handle(click(a.roster.x + 5, a.roster.y + 2));
    assert_eq!(m.ui.selected_worker(&m.run).unwrap().id, "frontend");
    assert_eq!(
        step.effects,
        vec![UiEffect::Select {
            worker_id: "frontend".into()
        }]
    );
    let shown = format!("{:?}", screen(&m, 120, 40).buffer());
    assert!(shown.contains("by attention"), "the roster says so");
    m.handle(key(KeyCode::Char('o')));
    assert!(!m.ui.attention);
}

#[test]
fn the_add_form_defaults_to_the_provider_the_command_line_picks() {
    let mut m = model();
    for w in &mut m.run.workers {
        w.provider = "command".into();
    }
    m.ui.providers = vec!["aider".into(), "codex".into()];
    m.handle(key(KeyCode::Char('+')));
    let Some(SteerForm::Add(f)) = &m.ui.form else {
        panic!("no form: {:?}", m.ui.form)
    };
    assert_eq!(f.providers[f.provider], "sim");
    assert_eq!(
        f.providers[f.provider],
        crate::engine::steer::default_added_provider(&m.run)
    );
    m.run.workers[1].provider = "gemini".into();
    m.ui.form = None;
    m.handle(key(KeyCode::Char('+')));
    let Some(SteerForm::Add(f)) = &m.ui.form else {
        panic!("no form: {:?}", m.ui.form)
    };
    assert_eq!(f.providers[f.provider], "gemini");
}

#[test]
fn plus_adds_a_command_worker_with_its_command_line() {
    let mut m = model();
    for w in &mut m.run.workers {
        w.provider = "command".into();
    }
    m.handle(key(KeyCode::Char('+')));
    let Some(SteerForm::Add(f)) = &m.ui.form else {
        panic!("no form: {:?}", m.ui.form)
    };
    // A team of command workers offers `command` right after the default.
    assert_eq!(f.providers[..2], ["sim".to_string(), "command".into()]);
    // task → provider (the command field is skipped while the provider is sim).
    m.handle(key(KeyCode::BackTab));
    m.handle(key(KeyCode::Right));
    m.handle(key(KeyCode::Tab));
    typed(&mut m, "sh -c 'echo hi'");
    insta::assert_snapshot!("steer_add_command_worker_100x30", screen(&m, 100, 30));
    let step = m.handle(key(KeyCode::Enter));
    let Some(UiEffect::Steer(Steer::AddWorker {
        provider, command, ..
    })) = step.effects.first()
    else {
        panic!("{:?} {:?}", step.effects, m.ui.notice)
    };
    assert_eq!(provider, "command");
    assert_eq!(
        command.as_deref().unwrap(),
        ["sh".to_string(), "-c".into(), "echo hi".into()]
    );
    assert_eq!(
        m.ui.notice.as_deref(),
        Some("adding added-1 running sh -c echo hi")
    );
    // A program that is not there keeps the form open with the reason.
    m.handle(key(KeyCode::Char('+')));
    m.handle(key(KeyCode::BackTab));
    m.handle(key(KeyCode::Right));
    m.handle(key(KeyCode::Tab));
    typed(&mut m, "nosuch-program-xyz");
    assert!(m.handle(key(KeyCode::Enter)).effects.is_empty());
    assert!(m.ui.form.is_some());
    assert!(
        m.ui.notice
            .as_deref()
            .unwrap()
            .contains("`nosuch-program-xyz` not found"),
        "{:?}",
        m.ui.notice
    );
}

#[test]
fn bang_asks_for_a_shell_in_the_selected_workers_tree() {
    let mut m = model();
    select(&mut m, "security");
    let step = m.handle(key(KeyCode::Char('!')));
    assert_eq!(
        step.effects,
        vec![UiEffect::Shell {
            worker_id: "security".into()
        }]
    );
}
