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
        w.question = Some("Bash wants to run: npm install react-datepicker".into());
        PendingQuestion {
            tool_call: Some("4242-2".into()),
            deadline: Some(fixtures::now() + Duration::seconds(272)),
            approval: Some(Approval {
                tool: "Bash".into(),
                input: "{\"command\":\"npm install react-datepicker\"}".into(),
                targets: None,
            }),
            ..PendingQuestion::default()
        }
    } else {
        PendingQuestion {
            tool_call: Some("4242-1".into()),
            choices: vec!["react-datepicker".into(), "the home-made one".into()],
            default: Some("react-datepicker".into()),
            deadline: Some(fixtures::now() + Duration::seconds(272)),
            ..PendingQuestion::default()
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

/// The demo's question: read from the screen, its agent takes its own default after 20 s,
/// long before the worker's `question_timeout_s` (600 s) would end the attempt.
#[test]
fn clarification_panel_screen_question_counts_down_to_the_agents_own_default() {
    let mut run = fixtures::crazy_run_worker_question();
    let w = run.worker_mut("frontend").unwrap();
    w.pending = Some(PendingQuestion {
        default: Some("react-datepicker".into()),
        deadline: Some(fixtures::now() + Duration::seconds(600)),
        agent_goes_on_at: Some(fixtures::now() + Duration::seconds(17)),
        ..PendingQuestion::default()
    });
    insta::assert_snapshot!(clarification_at(&run, 80));
}

/// A question the frontend's result ended with: its attempt is over, the answer starts
/// the next one; with no answer its result stands.
#[test]
fn clarification_panel_question_at_the_end_of_a_result() {
    let mut run = fixtures::crazy_run_worker_question();
    let w = run.worker_mut("frontend").unwrap();
    w.question = Some("Should the date picker also accept typed dates?".into());
    w.pending = Some(PendingQuestion {
        deadline: Some(fixtures::now() + Duration::seconds(541)),
        from_result: true,
        ..PendingQuestion::default()
    });
    insta::assert_snapshot!(clarification_at(&run, 80));
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
fn clarification_panel_asks_the_reason_after_n_on_an_approval() {
    let run = asked(true);
    let mut ui = UiState {
        selected: 2,
        focus: Focus::Roster,
        ..UiState::default()
    };
    super::approval::open_deny(&mut ui, &run);
    assert!(ui.denying);
    let v = fixtures::view(&run, &ui, &[]);
    let h = clarification::wanted_height(&v, 90);
    let mut terminal = Terminal::new(TestBackend::new(90, h)).unwrap();
    terminal
        .draw(|f| clarification::render(f, f.area(), &v))
        .unwrap();
    insta::assert_snapshot!(terminal.backend());
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

#[test]
fn y_n_and_a_answer_the_shown_approval_and_n_is_next_waiting_otherwise() {
    use super::update::{update, UiEffect};
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    let press = |c: char| KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE);
    let run = asked(true);
    let fresh = || UiState {
        selected: 2,
        ..UiState::default()
    };
    let keys = |ui: &mut UiState, typed: &str| -> Vec<UiEffect> {
        let mut out = vec![];
        for c in typed.chars() {
            let key = if c == '\n' {
                KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)
            } else {
                press(c)
            };
            let a = super::approval::map_key(ui, &run, key)
                .or_else(|| super::action::map_key(ui, key))
                .unwrap();
            out.extend(update(ui, &run, a));
        }
        out
    };
    let sent = |fx: Vec<UiEffect>| -> Vec<String> {
        fx.into_iter()
            .filter_map(|e| match e {
                UiEffect::Answer { worker_id, text } => {
                    assert_eq!(worker_id.as_deref(), Some("frontend"));
                    Some(text)
                }
                _ => None,
            })
            .collect()
    };
    assert_eq!(sent(keys(&mut fresh(), "y")), ["y"]);
    assert_eq!(sent(keys(&mut fresh(), "A")), ["A"]);
    assert_eq!(sent(keys(&mut fresh(), "n\n")), ["n"]);
    let mut ui = fresh();
    assert_eq!(sent(keys(&mut ui, "nnot on main\n")), ["n not on main"]);
    assert!(!ui.denying && ui.answering.is_none());
    // A plain question: `n` jumps to the next waiting worker, `y` means nothing.
    let run = asked(false);
    let ui = fresh();
    assert_eq!(super::approval::map_key(&ui, &run, press('n')), None);
    assert_eq!(
        super::action::map_key(&ui, press('n')),
        Some(super::action::Action::NextWaiting)
    );
}
