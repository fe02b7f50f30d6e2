//! Snapshots of each panel and of the whole screen at fixed sizes (ratatui `TestBackend` +
//! insta), from the hand-made runs of `fixtures`.

use ratatui::backend::TestBackend;
use ratatui::layout::Rect;
use ratatui::Terminal;

use super::fixtures::{self, backend_output};
use super::panels::{clarification, council, footer, header, log, output, roster};
use super::{draw, Focus, UiState, View};
use crate::domain::RunState;

fn view<'a>(
    run: &'a RunState,
    ui: &'a UiState,
    out: &'a [ratatui::text::Line<'static>],
) -> View<'a> {
    fixtures::view(run, ui, out)
}

type Panel = fn(&mut ratatui::Frame, Rect, &View);

fn render_panel(panel: Panel, width: u16, height: u16, view: &View) -> TestBackend {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|f| panel(f, f.area(), view)).unwrap();
    terminal.backend().clone()
}

fn render_screen(width: u16, height: u16, view: &View) -> TestBackend {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|f| draw(f, view)).unwrap();
    terminal.backend().clone()
}

#[test]
fn header_panel() {
    let run = fixtures::crazy_run();
    let ui = UiState::default();
    insta::assert_snapshot!(render_panel(header::render, 100, 3, &view(&run, &ui, &[])));
}

/// A run past the budget's warning: `budget 83 %~` in yellow (part of it estimated).
#[test]
fn header_panel_with_a_budget_past_its_warning() {
    let mut run = fixtures::crazy_run();
    run.budget = Some(crate::domain::BudgetState {
        limit: crate::domain::Budget {
            usd: Some(5.0),
            tokens: Some(2_000_000),
        },
        spent: crate::domain::Spend {
            tokens: 1_660_000,
            usd: 1.2,
            estimated: true,
        },
        warned: true,
        exhausted: None,
    });
    let ui = UiState::default();
    insta::assert_snapshot!(render_panel(header::render, 120, 3, &view(&run, &ui, &[])));
}

#[test]
fn header_panel_halted_at_team_plan() {
    let run = fixtures::halted_run();
    let ui = UiState::default();
    insta::assert_snapshot!(render_panel(header::render, 100, 3, &view(&run, &ui, &[])));
}

#[test]
fn header_panel_done_after_a_fix_round() {
    let run = fixtures::done_run();
    let ui = UiState::default();
    insta::assert_snapshot!(render_panel(header::render, 100, 3, &view(&run, &ui, &[])));
}

#[test]
fn roster_panel() {
    let run = fixtures::crazy_run();
    let ui = UiState {
        selected: 1,
        ..UiState::default()
    };
    insta::assert_snapshot!(render_panel(roster::render, 90, 8, &view(&run, &ui, &[])));
}

#[test]
fn a_resumed_attempt_is_marked_in_the_roster() {
    let mut run = fixtures::crazy_run();
    // `security` failed its first attempt; its second continues that conversation.
    let w = run.workers.iter_mut().find(|w| w.id == "security").unwrap();
    w.status = crate::domain::WorkerStatus::Running;
    w.attempt = 2;
    w.ended_at = None;
    w.exit_code = None;
    w.reason = None;
    w.flow.resumed = true;
    let ui = UiState::default();
    let text = render_panel(roster::render, 120, 8, &view(&run, &ui, &[]));
    insta::assert_snapshot!(text);
}

#[test]
fn roster_panel_narrow_drops_the_role_column() {
    let run = fixtures::crazy_run();
    let ui = UiState {
        selected: 2,
        ..UiState::default()
    };
    insta::assert_snapshot!(render_panel(roster::render, 60, 8, &view(&run, &ui, &[])));
}

#[test]
fn output_panel() {
    let run = fixtures::crazy_run();
    let ui = UiState {
        selected: 1,
        ..UiState::default()
    };
    let out = backend_output();
    insta::assert_snapshot!(render_panel(output::render, 80, 10, &view(&run, &ui, &out)));
}

#[test]
fn output_panel_scrolled_up() {
    let run = fixtures::crazy_run();
    let out = backend_output();
    let ui = UiState {
        selected: 1,
        focus: Focus::Output,
        output_scroll: 4,
        ..UiState::default()
    };
    insta::assert_snapshot!(render_panel(output::render, 80, 10, &view(&run, &ui, &out)));
}

#[test]
fn output_panel_failed_worker_without_output() {
    let run = fixtures::crazy_run();
    let ui = UiState {
        selected: 3,
        ..UiState::default()
    };
    insta::assert_snapshot!(render_panel(output::render, 80, 6, &view(&run, &ui, &[])));
}

#[test]
fn council_panel() {
    let run = fixtures::crazy_run();
    let ui = UiState::default();
    insta::assert_snapshot!(render_panel(council::render, 70, 12, &view(&run, &ui, &[])));
}

#[test]
fn council_panel_focused_shows_every_finding() {
    let run = fixtures::crazy_run();
    let ui = UiState {
        focus: Focus::Council,
        ..UiState::default()
    };
    insta::assert_snapshot!(render_panel(council::render, 70, 12, &view(&run, &ui, &[])));
}

#[test]
fn council_panel_pending() {
    let run = fixtures::halted_run();
    let ui = UiState::default();
    insta::assert_snapshot!(render_panel(council::render, 70, 4, &view(&run, &ui, &[])));
}

#[test]
fn clarification_panel_run_level() {
    let run = fixtures::crazy_run();
    let ui = UiState::default();
    let v = view(&run, &ui, &[]);
    let h = clarification::wanted_height(&v, 80);
    insta::assert_snapshot!(render_panel(clarification::render, 80, h, &v));
}

#[test]
fn clarification_panel_worker_question_while_typing() {
    let run = fixtures::crazy_run_worker_question();
    let mut ui = UiState {
        selected: 2,
        focus: Focus::Clarification,
        ..UiState::default()
    };
    for c in "react-datepicker, it is already themed".chars() {
        ui.input.insert(c);
    }
    let v = view(&run, &ui, &[]);
    let h = clarification::wanted_height(&v, 80);
    let mut terminal = Terminal::new(TestBackend::new(80, h)).unwrap();
    terminal
        .draw(|f| clarification::render(f, f.area(), &v))
        .unwrap();
    // The cursor sits after the typed text: border + "› " + 38 chars.
    let cursor = terminal.get_cursor_position().unwrap();
    assert_eq!((cursor.x, cursor.y), (1 + 2 + 38, h - 2));
    insta::assert_snapshot!(terminal.backend());
}

#[test]
fn log_panel_empty() {
    let run = fixtures::crazy_run();
    let ui = UiState::default();
    insta::assert_snapshot!(render_panel(log::render, 60, 4, &view(&run, &ui, &[])));
}

#[test]
fn footer_panel() {
    let run = fixtures::crazy_run();
    let ui = UiState::default();
    insta::assert_snapshot!(render_panel(footer::render, 120, 2, &view(&run, &ui, &[])));
}

#[test]
fn full_screen_120x40() {
    let run = fixtures::crazy_run();
    let out = backend_output();
    let ui = UiState {
        selected: 1,
        ..UiState::default()
    };
    insta::assert_snapshot!(render_screen(120, 40, &view(&run, &ui, &out)));
}

#[test]
fn full_screen_80x24() {
    let run = fixtures::crazy_run();
    let out = backend_output();
    let ui = UiState {
        selected: 1,
        ..UiState::default()
    };
    insta::assert_snapshot!(render_screen(80, 24, &view(&run, &ui, &out)));
}

#[test]
fn full_screen_200x50() {
    let run = fixtures::crazy_run();
    let out = backend_output();
    let ui = UiState {
        selected: 1,
        ..UiState::default()
    };
    insta::assert_snapshot!(render_screen(200, 50, &view(&run, &ui, &out)));
}

#[test]
fn full_screen_worker_question_120x40() {
    let run = fixtures::crazy_run_worker_question();
    let ui = UiState {
        selected: 2,
        ..UiState::default()
    };
    insta::assert_snapshot!(render_screen(120, 40, &view(&run, &ui, &[])));
}

#[test]
fn full_screen_done_120x40() {
    let run = fixtures::done_run();
    let out = backend_output();
    let ui = UiState::default();
    insta::assert_snapshot!(render_screen(120, 40, &view(&run, &ui, &out)));
}

#[test]
fn help_overlay_120x40() {
    let run = fixtures::crazy_run();
    let ui = UiState {
        help: true,
        ..UiState::default()
    };
    insta::assert_snapshot!(render_screen(120, 40, &view(&run, &ui, &[])));
}

#[test]
fn help_overlay_80x24() {
    let run = fixtures::crazy_run();
    let ui = UiState {
        help: true,
        ..UiState::default()
    };
    insta::assert_snapshot!(render_screen(80, 24, &view(&run, &ui, &[])));
}

#[test]
fn confirm_cancel_all_80x24() {
    let run = fixtures::crazy_run();
    let ui = UiState {
        confirm: Some(super::Confirm::CancelAll),
        ..UiState::default()
    };
    insta::assert_snapshot!(render_screen(80, 24, &view(&run, &ui, &[])));
}

#[test]
fn any_screen_size_draws_without_panicking_and_panels_stay_inside() {
    let run = fixtures::crazy_run();
    let out = backend_output();
    let mut typing = UiState {
        focus: Focus::Clarification,
        ..UiState::default()
    };
    for c in "a fairly long answer that will need to scroll sideways in a small box".chars() {
        typing.input.insert(c);
    }
    let states = [
        UiState::default(),
        typing,
        UiState {
            help: true,
            ..UiState::default()
        },
        UiState {
            confirm: Some(super::Confirm::CancelAll),
            ..UiState::default()
        },
    ];
    for ui in &states {
        let v = view(&run, ui, &out);
        for (w, h) in [
            (0, 0),
            (1, 1),
            (10, 3),
            (20, 5),
            (40, 10),
            (60, 15),
            (80, 24),
            (139, 30),
            (140, 30),
            (220, 60),
        ] {
            let screen = Rect::new(0, 0, w, h);
            let areas = super::layout(screen, &v);
            let panels = [
                Some(areas.header),
                Some(areas.roster),
                Some(areas.output),
                areas.council,
                areas.clarification,
                areas.log,
                Some(areas.footer),
            ];
            let panels: Vec<Rect> = panels
                .into_iter()
                .flatten()
                .filter(|r| r.area() > 0)
                .collect();
            for (i, a) in panels.iter().enumerate() {
                assert_eq!(screen.intersection(*a), *a, "{a:?} leaves {w}x{h}");
                for b in &panels[i + 1..] {
                    assert!(!a.intersects(*b), "{a:?} overlaps {b:?} at {w}x{h}");
                }
            }
            render_screen(w, h, &v);
        }
    }
}

#[test]
fn no_question_means_no_clarification_panel() {
    let run = fixtures::done_run();
    let ui = UiState::default();
    let v = view(&run, &ui, &[]);
    assert_eq!(clarification::wanted_height(&v, 120), 0);
    assert_eq!(
        super::layout(Rect::new(0, 0, 120, 40), &v).clarification,
        None
    );
}

#[test]
fn the_wide_layout_puts_output_right_of_the_roster() {
    let run = fixtures::crazy_run();
    let ui = UiState::default();
    let v = view(&run, &ui, &[]);
    let wide = super::layout(Rect::new(0, 0, 200, 50), &v);
    assert!(wide.output.x > wide.roster.x && wide.output.y == wide.roster.y);
    assert!(wide
        .council
        .is_some_and(|c| c.y > wide.roster.y && c.x == wide.roster.x));
    let narrow = super::layout(Rect::new(0, 0, 120, 40), &v);
    assert!(narrow.output.y > narrow.roster.y);
    let small = super::layout(Rect::new(0, 0, 80, 24), &v);
    assert_eq!(
        small.roster.height, 8,
        "every worker of the team is visible at 80x24"
    );
    assert!(
        small.output.height >= 4,
        "the output keeps a few lines at 80x24"
    );
}

#[test]
fn full_screen_halted_at_the_gate_80x24() {
    let run = fixtures::halted_run();
    let ui = UiState::default();
    insta::assert_snapshot!(render_screen(80, 24, &view(&run, &ui, &[])));
}

#[test]
fn full_screen_typing_an_answer_with_a_notice_120x40() {
    let run = fixtures::crazy_run();
    let out = backend_output();
    let mut ui = UiState {
        selected: 1,
        ..UiState::default()
    };
    let run_ref = &run;
    for action in [super::Action::Answer].into_iter().chain(
        "per API key; reject with 429"
            .chars()
            .map(super::Action::InsertChar),
    ) {
        super::update(&mut ui, run_ref, action);
    }
    ui.notice = Some("cancelling backend".into());
    insta::assert_snapshot!(render_screen(120, 40, &view(&run, &ui, &out)));
}

/// The style of the first cell of `needle` on the screen.
fn style_of(backend: &TestBackend, needle: &str) -> ratatui::style::Style {
    let buf = backend.buffer();
    for y in 0..buf.area.height {
        let row: String = (0..buf.area.width).map(|x| buf[(x, y)].symbol()).collect();
        if let Some(byte) = row.find(needle) {
            let x = row[..byte].chars().count() as u16;
            return buf[(x, y)].style();
        }
    }
    panic!("{needle:?} is not on the screen");
}

#[test]
fn colours_carry_status_verdict_and_current_stage() {
    use ratatui::style::Color;
    let run = fixtures::crazy_run();
    let ui = UiState::default();
    let v = view(&run, &ui, &[]);
    let roster = render_panel(roster::render, 90, 8, &v);
    assert_eq!(style_of(&roster, "failed").fg, Some(Color::Red));
    assert_eq!(style_of(&roster, "waiting").fg, Some(Color::Yellow));
    assert_eq!(style_of(&roster, "completed").fg, Some(Color::Green));
    assert_eq!(style_of(&roster, "running").fg, Some(Color::Cyan));
    let council = render_panel(council::render, 70, 12, &v);
    assert_eq!(style_of(&council, "✗ fail").fg, Some(Color::Red));
    assert_eq!(style_of(&council, "▲ warn").fg, Some(Color::Yellow));
    assert_eq!(style_of(&council, "blocked").fg, Some(Color::Red));
    let header = render_panel(header::render, 100, 3, &v);
    assert_eq!(
        style_of(&header, "team-verify").bg,
        Some(Color::Cyan),
        "current stage"
    );
    assert_eq!(
        style_of(&header, "team-exec").fg,
        Some(Color::Green),
        "stage done"
    );
    assert_eq!(
        style_of(&header, "done").fg,
        Some(Color::DarkGray),
        "stage to come"
    );
}

#[test]
fn the_focused_panel_has_a_cyan_border() {
    use ratatui::style::Color;
    let run = fixtures::crazy_run();
    let ui = UiState {
        focus: Focus::Council,
        ..UiState::default()
    };
    let screen = render_screen(120, 40, &view(&run, &ui, &[]));
    assert_eq!(style_of(&screen, "┏ Council").fg, Some(Color::Cyan));
    assert_eq!(style_of(&screen, "╭ Workers").fg, Some(Color::DarkGray));
}

#[test]
fn a_narrow_footer_keeps_the_help_key_and_the_way_back() {
    let run = fixtures::crazy_run();
    let ui = UiState::default();
    let footer = render_panel(footer::render, 50, 2, &view(&run, &ui, &[]));
    let text: String = footer.buffer().content.iter().map(|c| c.symbol()).collect();
    assert!(text.contains("? help"), "{text}");
    assert!(text.contains("crewmux attach 20261130-0600-7f3a"), "{text}");
}

#[test]
fn a_long_roster_scrolls_to_keep_the_selected_worker_visible() {
    let mut run = fixtures::done_run();
    for i in 0..12 {
        let mut w = fixtures::worker(
            &format!("fixer-{i}"),
            "fixer",
            crate::domain::WorkerStatus::Running,
        );
        w.round = 1;
        run.workers.push(w);
    }
    let ui = UiState {
        selected: run.workers.len() - 1,
        ..UiState::default()
    };
    let screen = render_screen(80, 24, &view(&run, &ui, &[]));
    let text: String = screen.buffer().content.iter().map(|c| c.symbol()).collect();
    assert!(
        text.contains("▶ fixer-11"),
        "the selected worker is on screen"
    );
    assert!(!text.contains("architect"), "the first rows scrolled away");
}

/// A themed render: the same screen as the default one, with the person's colours in place
/// of the palette's (the snapshot is the buffer with its styles), and the worker's output
/// in the colours it printed.
#[test]
fn full_screen_with_a_theme_80x24() {
    let run = fixtures::crazy_run();
    let out = backend_output();
    let mut themed = UiState::default();
    for (role, colour) in [
        ("accent", ratatui::style::Color::Magenta),
        ("ok", ratatui::style::Color::Rgb(0x5f, 0xd7, 0x87)),
        ("dim", ratatui::style::Color::Indexed(244)),
    ] {
        themed.theme.set(role, colour).unwrap();
    }
    let plain = render_screen(80, 24, &view(&run, &UiState::default(), &out));
    let coloured = render_screen(80, 24, &view(&run, &themed, &out));
    let text = |b: &TestBackend| {
        let buf = b.buffer();
        buf.content().iter().map(|c| c.symbol()).collect::<String>()
    };
    assert_eq!(
        text(&plain),
        text(&coloured),
        "a theme changes colours only"
    );
    let fgs = |b: &TestBackend| {
        b.buffer()
            .content()
            .iter()
            .map(|c| c.fg)
            .collect::<std::collections::HashSet<_>>()
    };
    assert!(!fgs(&coloured).contains(&ratatui::style::Color::Cyan));
    assert!(fgs(&coloured).contains(&ratatui::style::Color::Magenta));
    insta::assert_debug_snapshot!(coloured.buffer());
}
