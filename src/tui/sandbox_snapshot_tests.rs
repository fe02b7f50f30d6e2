//! The roster of a run with fenced workers (`[sandbox]`): a small mark after each fenced
//! worker's id, none after an unfenced one's.

use ratatui::backend::TestBackend;
use ratatui::Terminal;

use super::fixtures;
use super::panels::roster;
use super::UiState;
use crate::domain::{Sandbox, SandboxMode, SandboxNetwork};

#[test]
fn roster_marks_the_fenced_workers() {
    let mut run = fixtures::crazy_run();
    let fence = Sandbox {
        mode: SandboxMode::Bwrap,
        network: SandboxNetwork::None,
        image: None,
    };
    for w in run.workers.iter_mut().take(2) {
        w.flow.sandbox = fence.clone();
    }
    let ui = UiState::default();
    let view = fixtures::view(&run, &ui, &[]);
    let mut terminal = Terminal::new(TestBackend::new(90, 8)).unwrap();
    terminal
        .draw(|f| roster::render(f, f.area(), &view))
        .unwrap();
    let screen: TestBackend = terminal.backend().clone();
    let text = format!("{screen}");
    let marked: Vec<&str> = text.lines().filter(|l| l.contains('▣')).collect();
    assert_eq!(marked.len(), 2, "{text}");
    insta::assert_snapshot!(screen);
}
