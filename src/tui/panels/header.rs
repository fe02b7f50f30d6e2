//! The header: run id, team, backend, the run's tokens and cost (once reported), run
//! status, council badge, the stage flow with the
//! current stage highlighted and the fix round, and the problem (truncated).

use ratatui::layout::{Alignment, Rect};
use ratatui::style::{Color, Modifier, Style, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::{council_badge, run_status_style, truncate};
use crate::domain::{RunState, RunStatus, Stage};
use crate::tui::state::View;

/// Rows the header takes.
pub const HEIGHT: u16 = 3;

/// Draw the three header rows in `area` (nothing when it has fewer than [`HEIGHT`] rows).
pub fn render(frame: &mut Frame, area: Rect, view: &View) {
    let run = view.run;
    let dim = Style::default().fg(Color::DarkGray);
    let label = |s: &'static str| Span::styled(s, dim);

    let usage = crate::tui::usage::run_usage(run);
    let mut right = super::roster_usage::header_spans(usage.1.as_ref());
    if let Some(b) = &run.budget {
        // `budget 62 %` (yellow from the warning on, red once spent); the full line is in
        // the Log and `crewmux status`.
        let share = b.share();
        let style = if b.exhausted.is_some() || share >= 1.0 {
            Style::default().fg(Color::Red).bold()
        } else if share >= crate::domain::budget::WARN_AT {
            Style::default().fg(Color::Yellow).bold()
        } else {
            Style::default()
        };
        right.extend([
            label("budget "),
            Span::styled(
                format!(
                    "{:.0} %{}",
                    share * 100.0,
                    if b.spent.estimated { "~" } else { "" }
                ),
                style,
            ),
            Span::raw("  "),
        ]);
    }
    right.extend([
        Span::styled(run.status.as_str(), run_status_style(run.status)),
        label("  council "),
        council_badge(run.council.status),
        Span::raw(" "),
    ]);
    let right = Line::from(right);
    let mut left = vec![
        Span::styled(
            " crewmux ",
            Style::default().fg(Color::Black).bg(Color::Cyan).bold(),
        ),
        label("  run "),
        Span::raw(run.run_id.clone()).bold(),
    ];
    // Team and backend are shown only where they fit beside the status.
    let mut optional = vec![vec![label("  team "), Span::raw(run.team.clone())]];
    let mut backend = vec![label("  backend "), Span::raw(view.backend.to_string())];
    if view.backend == "tmux" {
        backend.push(Span::styled(format!(" -L {}", view.tmux_socket), dim));
    }
    optional.push(backend);
    let mut used = Line::from(left.clone()).width() + right.width() + 1;
    for part in optional {
        let w = Line::from(part.clone()).width();
        if used + w <= area.width as usize {
            used += w;
            left.extend(part);
        }
    }

    if area.height < HEIGHT {
        return;
    }
    let rows = [
        Rect { height: 1, ..area },
        Rect {
            y: area.y + 1,
            height: 1,
            ..area
        },
        Rect {
            y: area.y + 2,
            height: 1,
            ..area
        },
    ];
    frame.render_widget(Paragraph::new(Line::from(left)), rows[0]);
    frame.render_widget(Paragraph::new(right).alignment(Alignment::Right), rows[0]);

    let mut flow = vec![label(" stage   ")];
    flow.extend(stage_flow(run));
    frame.render_widget(Paragraph::new(Line::from(flow)), rows[1]);

    let room = (area.width as usize).saturating_sub(10);
    let problem = Line::from(vec![
        label(" problem "),
        Span::raw(truncate(&one_line(&run.problem), room)).italic(),
    ]);
    frame.render_widget(Paragraph::new(problem), rows[2]);
}

/// `team-plan ✓ → team-exec ✓ → [team-verify] → team-fix 0/1 → done`: stages before the
/// current one are ticked, the current one is a coloured block (yellow when halted, red
/// when failed), team-fix shows `round/max` (or `off` with no fix rounds).
pub fn stage_flow(run: &RunState) -> Vec<Span<'static>> {
    let arrow = Span::styled(" → ", Style::default().fg(Color::DarkGray));
    let mut spans = Vec::new();
    for (i, stage) in Stage::FLOW.iter().copied().enumerate() {
        if i > 0 {
            spans.push(arrow.clone());
        }
        let mut name = stage.as_str().to_string();
        if stage == Stage::TeamFix {
            if run.max_fix_rounds == 0 {
                name.push_str(" off");
            } else {
                name.push_str(&format!(" {}/{}", run.fix_round, run.max_fix_rounds));
            }
        }
        let current = stage == run.stage;
        let visited = stage < run.stage && (stage != Stage::TeamFix || run.fix_round > 0)
            || (stage == Stage::TeamFix && run.fix_round > 0 && !current);
        if current {
            let bg = match run.status {
                RunStatus::Halted => Color::Yellow,
                RunStatus::Failed | RunStatus::Cancelled => Color::Red,
                RunStatus::Done => Color::Green,
                _ => Color::Cyan,
            };
            spans.push(Span::styled(
                format!(" {name} "),
                Style::default()
                    .fg(Color::Black)
                    .bg(bg)
                    .add_modifier(Modifier::BOLD),
            ));
        } else if visited {
            spans.push(Span::styled(
                format!("{name} ✓"),
                Style::default().fg(Color::Green),
            ));
        } else {
            spans.push(Span::styled(name, Style::default().fg(Color::DarkGray)));
        }
    }
    spans
}

/// The problem on one line: newlines and runs of spaces become one space.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
