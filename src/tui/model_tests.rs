//! The model's handling of every message kind, and scripted whole-app runs (keys and
//! driver updates in sequence, then a snapshot of the screen), as gitui tests its app.

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

use super::{Model, Msg, Step};
use crate::domain::{RunStatus, WorkerStatus};
use crate::lead::Update;
use crate::tui::fixtures;
use crate::tui::update::UiEffect;
use crate::tui::Focus;

fn key(c: KeyCode) -> Msg {
    Msg::Term(Event::Key(KeyEvent::new(c, KeyModifiers::NONE)))
}

fn snapshot(run: crate::domain::RunState, screen: Option<&str>) -> Msg {
    Msg::Driver(Update::Snapshot {
        state: std::sync::Arc::new(run),
        screen: screen.map(str::to_string),
    })
}

fn screen(model: &Model, w: u16, h: u16) -> TestBackend {
    let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
    let view = crate::tui::fixtures::view(&model.run, &model.ui, &model.output);
    terminal.draw(|f| crate::tui::draw(f, &view)).unwrap();
    terminal.backend().clone()
}

#[test]
fn a_snapshot_replaces_the_run_and_the_output_and_clamps_the_selection() {
    let mut m = Model::new(
        fixtures::crazy_run(),
        std::path::PathBuf::from("/nonexistent/run"),
    );
    m.ui.selected = 99;
    let step = m.handle(snapshot(fixtures::done_run(), Some("line one\nline two\n")));
    assert!(step.dirty);
    assert_eq!(m.run.status, RunStatus::Done);
    assert!(m.finished, "the run became final while watched");
    assert!(m
        .ui
        .notice
        .as_deref()
        .unwrap()
        .contains("q leaves the dashboard"));
    assert_eq!(m.ui.selected, m.run.workers.len() - 1);
    assert_eq!(m.ui.output_len, m.output.len());
    assert!(m.output.len() >= 2);
}

#[test]
fn a_notice_is_shown_and_an_event_redraws_on_the_next_tick() {
    let mut m = Model::new(
        fixtures::done_run(),
        std::path::PathBuf::from("/nonexistent/run"),
    );
    assert!(
        m.handle(Msg::Clock).dirty,
        "the first tick draws the replayed history"
    );
    assert!(
        !m.handle(Msg::Clock).dirty,
        "nothing live, nothing new: no redraw"
    );
    m.handle(Msg::Driver(Update::Notice("paste failed".into())));
    assert_eq!(m.ui.notice.as_deref(), Some("paste failed"));
    // Good news is shown the same, and logged as information, not as a warning.
    let (_, logged) = crate::logging::info_lines(|| {
        m.handle(Msg::Driver(Update::Info("host box answers again".into())))
    });
    assert_eq!(m.ui.notice.as_deref(), Some("host box answers again"));
    assert!(
        logged.contains(" INFO ")
            && logged.contains("host box answers again")
            && !logged.contains(" WARN "),
        "{logged}"
    );
    let ev: crate::domain::RunEvent = serde_json::from_value(serde_json::json!({
        "ts": "2026-11-30T06:00:05Z", "kind": "worker-started", "worker": "backend",
        "source": "driver", "message": "started"
    }))
    .unwrap();
    assert!(m.handle(Msg::Driver(Update::Event(ev))).dirty);
    assert!(
        m.handle(Msg::Clock).dirty,
        "tui-logger filled its buffer meanwhile"
    );
    assert!(!m.handle(Msg::Clock).dirty);
}

#[test]
fn the_clock_redraws_while_a_worker_is_live() {
    let mut m = Model::new(
        fixtures::crazy_run(),
        std::path::PathBuf::from("/nonexistent/run"),
    );
    m.handle(Msg::Clock);
    assert!(m.handle(Msg::Clock).dirty);
}

#[test]
fn the_driver_stopping_unasked_is_an_error_but_not_after_quit() {
    let mut m = Model::new(
        fixtures::crazy_run(),
        std::path::PathBuf::from("/nonexistent/run"),
    );
    m.handle(Msg::Driver(Update::Stopped { finished: false }));
    assert!(m.stopped);
    assert_eq!(m.driver_error.as_deref(), Some("the run driver stopped"));

    let mut m = Model::new(
        fixtures::crazy_run(),
        std::path::PathBuf::from("/nonexistent/run"),
    );
    let step = m.handle(key(KeyCode::Char('q')));
    assert_eq!(step.effects, vec![UiEffect::Quit]);
    assert!(m.quitting);
    m.handle(Msg::Driver(Update::Stopped { finished: false }));
    assert_eq!(m.driver_error, None);
}

#[test]
fn a_signal_quits_like_q_and_is_remembered() {
    let mut m = Model::new(
        fixtures::crazy_run(),
        std::path::PathBuf::from("/nonexistent/run"),
    );
    let step = m.handle(Msg::Signal("SIGTERM"));
    assert_eq!(step.effects, vec![UiEffect::Quit]);
    assert!(m.quitting);
    assert_eq!(m.signal, Some("SIGTERM"));
}

#[test]
fn selecting_another_worker_drops_the_previous_output() {
    let mut m = Model::new(
        fixtures::crazy_run(),
        std::path::PathBuf::from("/nonexistent/run"),
    );
    m.handle(snapshot(fixtures::crazy_run(), Some("old worker's line\n")));
    assert!(!m.output.is_empty());
    let step = m.handle(key(KeyCode::Down));
    assert!(matches!(step.effects.as_slice(), [UiEffect::Select { .. }]));
    assert!(m.output.is_empty());
    assert_eq!(m.ui.output_len, 0);
}

#[test]
fn key_releases_and_unbound_keys_change_nothing() {
    let mut m = Model::new(
        fixtures::crazy_run(),
        std::path::PathBuf::from("/nonexistent/run"),
    );
    let mut release = KeyEvent::new(KeyCode::Down, KeyModifiers::NONE);
    release.kind = crossterm::event::KeyEventKind::Release;
    assert_eq!(m.handle(Msg::Term(Event::Key(release))), Step::default());
    assert_eq!(m.handle(key(KeyCode::F(9))), Step::default());
    assert_eq!(m.ui.selected, 0);
}

#[test]
fn a_paste_goes_into_the_answer_line() {
    let mut m = Model::new(
        fixtures::crazy_run(),
        std::path::PathBuf::from("/nonexistent/run"),
    );
    m.handle(key(KeyCode::Char('a')));
    assert_eq!(m.ui.focus, Focus::Clarification);
    m.handle(Msg::Term(Event::Paste("Amber".into())));
    assert_eq!(m.ui.input.text(), "Amber");
}

/// A whole session, scripted: the run arrives, the person moves to a worker, a worker
/// starts waiting, `n` jumps to it, an answer is typed and sent; then the screen.
#[test]
fn scripted_session_answering_a_worker() {
    let mut m = Model::new(
        fixtures::crazy_run(),
        std::path::PathBuf::from("/nonexistent/run"),
    );
    let mut effects = Vec::new();
    let mut asking = fixtures::crazy_run_worker_question();
    asking.clarification.pending = false;
    let script = vec![
        snapshot(fixtures::crazy_run(), Some("planning the rollout\n")),
        key(KeyCode::Down),
        snapshot(asking.clone(), None),
        key(KeyCode::Char('n')),
        key(KeyCode::Char('a')),
        Msg::Term(Event::Paste("Amber".into())),
        key(KeyCode::Enter),
    ];
    for msg in script {
        effects.extend(m.handle(msg).effects);
    }
    let waiting = asking
        .workers
        .iter()
        .find(|w| w.status == WorkerStatus::Waiting)
        .unwrap()
        .id
        .clone();
    assert!(
        effects.contains(&UiEffect::Answer {
            worker_id: Some(waiting.clone()),
            text: "Amber".into()
        }),
        "{effects:?}"
    );
    insta::assert_snapshot!(screen(&m, 120, 40));
}

#[test]
fn opened_from_home_esc_leaves_once_nothing_is_open() {
    let mut m = Model::new(
        fixtures::crazy_run(),
        std::path::PathBuf::from("/nonexistent/run"),
    );
    m.ui.esc_leaves = true;
    m.handle(key(KeyCode::Char('2')));
    let step = m.handle(key(KeyCode::Esc));
    assert!(step.effects.is_empty(), "the first Esc only leaves the tab");
    assert!(m.ui.notice.as_deref().unwrap().contains("Esc again"));
    let step = m.handle(key(KeyCode::Esc));
    assert_eq!(step.effects, vec![UiEffect::Quit]);

    let mut m = Model::new(
        fixtures::crazy_run(),
        std::path::PathBuf::from("/nonexistent/run"),
    );
    assert!(
        m.handle(key(KeyCode::Esc)).effects.is_empty(),
        "not from home: Esc never quits"
    );
}

#[test]
fn state_saved_aside_stays_in_the_footer_through_the_end_of_the_run() {
    let mut m = Model::new(
        fixtures::crazy_run(),
        std::path::PathBuf::from("/nonexistent/run"),
    );
    let said = "/r/state.json was changed by another program: …";
    m.handle(Msg::Driver(Update::Event(crate::domain::RunEvent {
        ts: chrono::Utc::now(),
        kind: crate::domain::EventKind::StateSavedAside,
        worker: None,
        attempt: None,
        source: "driver".into(),
        message: said.into(),
    })));
    assert_eq!(m.ui.notice.as_deref(), Some(said));
    m.handle(snapshot(fixtures::done_run(), None));
    let notice = m.ui.notice.clone().unwrap_or_default();
    assert!(
        notice.contains("run done") && notice.contains("state.json.crewmux-saved"),
        "{notice}"
    );
}
