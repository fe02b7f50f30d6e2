//! A worker whose pane is gone (its tmux server restarted, or the pane was killed): the
//! footer stops offering `Enter attach`, and Enter says why instead of flashing a tmux error.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

use super::fixtures::{self, crazy_run};
use super::panels::footer;
use super::update::{update, UiEffect};
use super::{map_key, UiState, View};
use crate::domain::{DispatchRecord, RunState, WorkerStatus};

/// The crazy run with `testing` (crashed) selected and its pane gone: the worker holds no
/// pane reference, its dispatch record still names the one it had.
fn with_gone_pane() -> (RunState, UiState) {
    let mut run = crazy_run();
    let i = run.workers.iter().position(|w| w.id == "testing").unwrap();
    let w = &mut run.workers[i];
    w.pane_id = None;
    run.dispatches.push(DispatchRecord {
        worker_id: "testing".into(),
        prompt_path: "prompt.md".into(),
        attempt: w.attempt,
        backend: "tmux".into(),
        status: WorkerStatus::Crashed,
        reason: None,
        nonce: "n".into(),
        pane_id: Some("%5@4242.1764500000".into()),
        exit_code: None,
        exit_source: None,
        started_at: fixtures::now(),
        ended_at: None,
        credential_label: None,
        host: None,
        left_on_host: false,
        moved_from: None,
        session: None,
        resumed: None,
    });
    // The roster's order is not the state's: select `testing` by what the roster shows.
    let selected = (0..run.workers.len())
        .find(|&n| {
            let ui = UiState {
                selected: n,
                ..UiState::default()
            };
            ui.selected_worker(&run).is_some_and(|w| w.id == "testing")
        })
        .unwrap();
    let ui = UiState {
        selected,
        ..UiState::default()
    };
    (run, ui)
}

fn footer_text(run: &RunState, ui: &UiState) -> (TestBackend, String) {
    let view = View {
        run,
        output: &[],
        now: fixtures::now(),
        ui,
        backend: "tmux",
        tmux_socket: "crewmux",
        attach_hint: true,
        doc: None,
    };
    let mut terminal = Terminal::new(TestBackend::new(200, 2)).unwrap();
    terminal
        .draw(|f| footer::render(f, f.area(), &view))
        .unwrap();
    let backend = terminal.backend().clone();
    let text = backend
        .buffer()
        .content
        .iter()
        .map(|c| c.symbol())
        .collect();
    (backend, text)
}

#[test]
fn a_gone_pane_is_not_offered_and_enter_says_it_is_gone() {
    let (run, mut ui) = with_gone_pane();
    let (_, with_pane) = footer_text(&crazy_run(), &ui);
    assert!(
        with_pane.contains("Enter attach"),
        "a live pane is offered: {with_pane}"
    );

    let (backend, text) = footer_text(&run, &ui);
    assert!(!text.contains("Enter attach"), "{text}");
    insta::assert_snapshot!(backend);

    let action = map_key(&ui, KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)).unwrap();
    let effects: Vec<UiEffect> = update(&mut ui, &run, action);
    assert!(effects.is_empty(), "nothing to attach to: {effects:?}");
    assert_eq!(
        ui.notice.as_deref(),
        Some(
            "testing's pane is gone (crashed): its output is kept in the Output tab and output.log"
        )
    );
    let (backend, text) = footer_text(&run, &ui);
    assert!(text.contains("pane is gone"), "{text}");
    insta::assert_snapshot!("notice", backend);
}
