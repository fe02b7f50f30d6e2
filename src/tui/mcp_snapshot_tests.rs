//! Snapshots of what a worker's MCP server brings to the screen: an `ask` with choices, a
//! default and its countdown, an approval with its keys, and `progress` in the roster.

use chrono::Duration;
use ratatui::backend::TestBackend;
use ratatui::Terminal;

use super::fixtures;
use super::panels::{clarification, roster};
use super::{Focus, UiState};
use crate::domain::clarification::{Approval, PendingQuestion};
use crate::domain::RunState;

/// [`fixtures::crazy_run_worker_question`] with the frontend's question asked through `ask`
/// (or an approval), 4 min 32 s before its deadline.
fn asked(approval: bool) -> RunState {
    let mut run = fixtures::crazy_run_worker_question();
    let w = run.worker_mut("frontend").unwrap();
    w.pending = Some(if approval {
        w.question = Some("allow Bash: {\"command\":\"npm install react-datepicker\"}".into());
        PendingQuestion {
            tool_call: Some("4242-2".into()),
            deadline: Some(fixtures::now() + Duration::seconds(272)),
            approval: Some(Approval {
                tool: "Bash".into(),
                input: "{\"command\":\"npm install react-datepicker\"}".into(),
            }),
            ..PendingQuestion::default()
        }
    } else {
        PendingQuestion {
            tool_call: Some("4242-1".into()),
            choices: vec!["react-datepicker".into(), "the home-made one".into()],
            default: Some("react-datepicker".into()),
            deadline: Some(fixtures::now() + Duration::seconds(272)),
            approval: None,
        }
    });
    run
}

fn clarification_at(run: &RunState, width: u16) -> TestBackend {
    let ui = UiState {
        selected: 2,
        focus: Focus::Roster,
        ..UiState::default()
    };
    let v = fixtures::view(run, &ui, &[]);
    let h = clarification::wanted_height(&v, width);
    let mut terminal = Terminal::new(TestBackend::new(width, h)).unwrap();
    terminal
        .draw(|f| clarification::render(f, f.area(), &v))
        .unwrap();
    terminal.backend().clone()
}

#[test]
fn clarification_panel_ask_with_choices_default_and_countdown() {
    insta::assert_snapshot!(clarification_at(&asked(false), 80));
}

#[test]
fn clarification_panel_approval_with_its_keys() {
    insta::assert_snapshot!(clarification_at(&asked(true), 90));
}

#[test]
fn the_countdown_runs_and_a_screen_question_says_it_ends_the_attempt() {
    let mut run = asked(false);
    let w = run.worker_mut("frontend").unwrap();
    let p = w.pending.as_mut().unwrap();
    p.deadline = Some(fixtures::now() + Duration::seconds(61));
    let text = format!("{:?}", clarification_at(&run, 80));
    assert!(
        text.contains("1:01 left · then the default applies"),
        "{text}"
    );
    let p = run
        .worker_mut("frontend")
        .unwrap()
        .pending
        .as_mut()
        .unwrap();
    p.tool_call = None;
    p.choices.clear();
    p.default = None;
    p.deadline = Some(fixtures::now() - Duration::seconds(5));
    let text = format!("{:?}", clarification_at(&run, 80));
    assert!(
        text.contains("0:00 left · then the attempt ends unanswered"),
        "{text}"
    );
}

#[test]
fn roster_shows_a_running_workers_progress_line() {
    let mut run = fixtures::crazy_run_worker_question();
    run.worker_mut("backend").unwrap().progress = Some("migrating the limits table".into());
    let ui = UiState::default();
    let v = fixtures::view(&run, &ui, &[]);
    let mut terminal = Terminal::new(TestBackend::new(120, 12)).unwrap();
    terminal.draw(|f| roster::render(f, f.area(), &v)).unwrap();
    insta::assert_snapshot!(terminal.backend());
}
