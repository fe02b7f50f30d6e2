//! Drawing the home screen: a title line, the table of runs, a footer of keys, and on top
//! the clean confirmation, the new-run form or the help.

use chrono::{DateTime, Utc};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Row, Table, Wrap};
use ratatui::Frame;

use super::{FormField, Home, RunRow};
use crate::tui::panels::{council_badge, panel, run_status_style, truncate};

/// Draw `home` as of `now` (ages are measured to it).
pub fn draw(frame: &mut Frame, home: &Home, now: DateTime<Utc>) {
    let area = frame.area();
    if crate::tui::too_small(frame, area) {
        return;
    }
    // Wrapped, not cut: a refused start's message ends with its fix.
    let notice_text = home
        .notice
        .as_ref()
        .map(|n| format!(" ● {n}"))
        .or_else(|| lead_gone_line(home));
    let notice_lines: Vec<Line> = notice_text
        .as_deref()
        .map(|n| textwrap::wrap(n, usize::from(area.width.max(1))))
        .unwrap_or_default()
        .into_iter()
        .take(usize::from(area.height / 3).max(1))
        .map(|l| Line::from(l.into_owned()))
        .collect();
    let notice_rows = u16::try_from(notice_lines.len()).unwrap_or(1);
    let [title, body, notice, footer] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Fill(1),
        Constraint::Length(notice_rows.max(1)),
        Constraint::Length(1),
    ])
    .areas(area);
    let scope = if home.all {
        "runs of every project".to_string()
    } else {
        format!("runs of {}", home.project.display())
    };
    frame.render_widget(
        Line::from(vec![
            Span::raw(" crewmux ")
                .bold()
                .fg(Color::Black)
                .bg(Color::Cyan),
            Span::raw(format!("  {scope}  ")),
            Span::styled(
                match home.rows.len() {
                    1 => "1 run".to_string(),
                    n => format!("{n} runs"),
                },
                Style::default().fg(Color::DarkGray),
            ),
        ]),
        title,
    );
    table(frame, body, home, now);
    frame.render_widget(Paragraph::new(notice_lines).fg(Color::Yellow), notice);
    frame.render_widget(
        Line::from(vec![Span::styled(
            " ↑/↓ move  Enter open  n new run  r run again  x clean  ? help  q quit",
            Style::default().fg(Color::DarkGray),
        )]),
        footer,
    );
    if home.confirm_clean {
        if let Some(r) = home.selected_row() {
            confirm(frame, area, r);
        }
    }
    if home.form.is_some() {
        form(frame, area, home);
    }
    if home.help {
        help(frame, area);
    }
}

/// `3m`, `2h`, `5d`: how long ago `t` was.
pub fn age(t: Option<DateTime<Utc>>, now: DateTime<Utc>) -> String {
    let Some(t) = t else { return "—".into() };
    let s = (now - t).num_seconds().max(0);
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m", s / 60),
        3600..86400 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86400),
    }
}

/// The one line that says the selected run's lead is gone, and what brings one back.
fn lead_gone_line(home: &Home) -> Option<String> {
    let r = home.rows.get(home.selected).filter(|r| r.lead_gone)?;
    Some(format!(
        " ● run {} has not ended and its lead is gone: Enter starts a new one (crewmux attach {})",
        r.id, r.id
    ))
}

fn table(frame: &mut Frame, area: Rect, home: &Home, now: DateTime<Utc>) {
    let block = panel(" Runs (newest first) ", true);
    if home.rows.is_empty() {
        let p = Paragraph::new(vec![
            Line::from("no runs here yet"),
            Line::from(""),
            Line::from("n starts one: type the problem, then Tab and Enter (or C-s)"),
        ])
        .wrap(Wrap { trim: false })
        .dark_gray()
        .block(block);
        frame.render_widget(p, area);
        return;
    }
    let problem_w = area
        .width
        .saturating_sub(if home.all { 90 } else { 62 })
        .max(12) as usize;
    let rows = home.rows.iter().enumerate().map(|(i, r)| {
        let mut cells = vec![
            Line::from(if i == home.selected { "▶" } else { " " }),
            Line::from(r.id.clone()),
        ];
        if home.all {
            let name = r
                .project
                .file_name()
                .map(|n| n.to_string_lossy().into_owned());
            cells.push(Line::from(truncate(&name.unwrap_or_default(), 24)));
        }
        match (&r.error, r.status, r.council) {
            (Some(e), _, _) => {
                cells.push(Line::from(truncate(&format!("unreadable: {e}"), problem_w)).red());
                cells.extend([Line::from(""), Line::from(""), Line::from("")]);
            }
            (None, Some(s), Some(c)) => {
                cells.push(Line::from(truncate(
                    &r.problem.replace('\n', " "),
                    problem_w,
                )));
                if r.lead_gone {
                    cells.push(Line::from("no lead").red());
                } else {
                    cells.push(Line::styled(s.as_str(), run_status_style(s)));
                }
                cells.push(Line::from(council_badge(c)));
                cells.push(Line::from(format!("{}/{}", r.done, r.total)));
            }
            _ => cells.extend([
                Line::from(""),
                Line::from(""),
                Line::from(""),
                Line::from(""),
            ]),
        }
        cells.push(Line::from(age(r.created_at, now)));
        let row = Row::new(cells);
        if i == home.selected {
            row.style(Style::default().add_modifier(Modifier::REVERSED))
        } else {
            row
        }
    });
    let mut widths = vec![Constraint::Length(1), Constraint::Length(20)];
    let mut header = vec!["", "run"];
    if home.all {
        widths.push(Constraint::Length(24));
        header.push("project");
    }
    widths.extend([
        Constraint::Fill(1),
        Constraint::Length(9),
        Constraint::Length(13),
        Constraint::Length(7),
        Constraint::Length(4),
    ]);
    header.extend(["problem", "status", "council", "workers", "age"]);
    let t = Table::new(rows, widths)
        .header(Row::new(header).bold().fg(Color::DarkGray))
        .block(block);
    let mut state = ratatui::widgets::TableState::default().with_selected(Some(home.selected));
    frame.render_stateful_widget(t, area, &mut state);
}

fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    }
}

fn confirm(frame: &mut Frame, area: Rect, r: &RunRow) {
    let a = centered(area, 68, 7);
    frame.render_widget(Clear, a);
    let p = Paragraph::new(vec![
        Line::from(format!("Clean run {}?", r.id)).bold(),
        Line::from(vec![
            Span::raw("y runs "),
            Span::raw(format!("crewmux clean --run {} --purge", r.id)).cyan(),
            Span::raw(":"),
        ]),
        Line::from("its session, merged worktrees and run folder go; a worktree with"),
        Line::from("unmerged or uncommitted work keeps the run and says how to take it."),
        Line::from(vec![
            Span::raw("y").cyan(),
            Span::raw(" clean   "),
            Span::raw("n/Esc").cyan(),
            Span::raw(" keep"),
        ]),
    ])
    .block(panel(" Clean ", true));
    frame.render_widget(p, a);
}

fn form(frame: &mut Frame, area: Rect, home: &Home) {
    let Some(f) = &home.form else { return };
    let a = centered(area, 90, 22);
    frame.render_widget(Clear, a);
    let title = match (&f.again_of, &f.project) {
        (Some(id), Some(p)) => format!(" Run again: {id} (in {}) ", p.display()),
        (Some(id), None) => format!(" Run again: {id} "),
        (None, _) => " New run ".to_string(),
    };
    let block = panel(title, true);
    let inner = block.inner(a);
    frame.render_widget(block, a);
    let fields = home.form_fields();
    let mut rows = vec![Constraint::Length(1), Constraint::Fill(1)];
    rows.extend(fields.iter().skip(1).map(|_| Constraint::Length(1)));
    rows.push(Constraint::Length(2));
    let areas = Layout::vertical(rows).split(inner);
    let focus = |field: FormField| {
        if f.field == field {
            Style::default()
                .fg(Color::Cyan)
                .add_modifier(Modifier::BOLD)
        } else {
            Style::default().fg(Color::DarkGray)
        }
    };
    frame.render_widget(
        Line::styled("Problem (Enter: new line)", focus(FormField::Problem)),
        areas[0],
    );
    let mut text = f.problem.clone();
    if f.field == FormField::Problem {
        text.push('▏');
    }
    frame.render_widget(
        Paragraph::new(text)
            .wrap(Wrap { trim: false })
            .block(panel("", f.field == FormField::Problem)),
        areas[1],
    );
    for (field, row) in fields.iter().skip(1).zip(areas.iter().skip(2)) {
        let Some((label, value)) = field_line(home, f, *field) else {
            continue;
        };
        let mut line = vec![Span::styled(format!("{label:<12}"), focus(*field))];
        line.extend(value);
        frame.render_widget(Line::from(line), *row);
    }
    frame.render_widget(
        Paragraph::new(vec![
            Line::from(
                "Tab field · ←/→ choose · C-s (or Enter off the problem) starts · Esc cancels",
            ),
            Line::from("The clarification gate may ask a question first, as `crewmux run` does."),
        ])
        .dark_gray(),
        areas[areas.len() - 1],
    );
}

/// The label and value of one line of the form (`None` for the problem, drawn apart).
fn field_line(
    home: &Home,
    f: &super::Form,
    field: FormField,
) -> Option<(&'static str, Vec<Span<'static>>)> {
    let dim = Style::default().fg(Color::DarkGray);
    let typed = |value: &str, field: FormField, empty: &str| -> Vec<Span<'static>> {
        let mut v = vec![Span::raw(value.to_string())];
        if f.field == field {
            v.push(Span::raw("▏"));
        }
        if value.is_empty() {
            v.push(Span::styled(empty.to_string(), dim));
        }
        v
    };
    Some(match field {
        FormField::Team => {
            let project = f.project.as_deref().unwrap_or(&home.project);
            let name = home
                .modes
                .get(f.mode)
                .map(|m| m.label(project))
                .unwrap_or_default();
            let mut v = vec![Span::raw(format!("◀ {name} ▶"))];
            v.push(Span::styled(
                if f.team_path.trim().is_empty() {
                    format!("   ({} of {})", f.mode + 1, home.modes.len())
                } else {
                    "   (not used: the team file below is)".to_string()
                },
                dim,
            ));
            ("Team", v)
        }
        FormField::TeamPath => (
            "Team file",
            typed(&f.team_path, field, "a path, or empty for the team above"),
        ),
        FormField::Provider => {
            let prov = f.provider.clone().unwrap_or_else(|| {
                if home.probing {
                    "auto (the routing decides) · checking the agent CLIs…".into()
                } else {
                    "auto (the routing decides)".into()
                }
            });
            ("Provider", vec![Span::raw(format!("◀ {prov} ▶"))])
        }
        FormField::Base => (
            "Base",
            typed(&f.base, field, "HEAD (the commit worktrees start from)"),
        ),
        FormField::Uncommitted => (
            "Uncommitted",
            vec![Span::raw(if f.include_uncommitted {
                "◀ yes: your uncommitted changes go into the base ▶"
            } else {
                "◀ no: the base as committed ▶"
            })],
        ),
        FormField::Hosts => {
            let label = match home.hosts.get(f.hosts) {
                Some(c) if !c.is_empty() => format!("spread over {}", c.join(", ")),
                _ => "as the team file says".to_string(),
            };
            ("Hosts", vec![Span::raw(format!("◀ {label} ▶"))])
        }
        FormField::Problem => return None,
    })
}

fn help(frame: &mut Frame, area: Rect) {
    let a = centered(area, 70, 15);
    frame.render_widget(Clear, a);
    let p = Paragraph::new(vec![
        Line::from("↑/↓ j/k   move between runs"),
        Line::from("Enter     open the run's dashboard (a detached run is driven again)"),
        Line::from("          q or Esc in the dashboard comes back here"),
        Line::from("n         start a new run here: problem, team, provider, base"),
        Line::from("r         run the selected run again: the form filled from it"),
        Line::from("x         clean a finished run: crewmux clean --run ID --purge (asks)"),
        Line::from("q / Esc   quit"),
        Line::from(""),
        Line::from("crewmux --all lists the runs of every project crewmux has run in."),
        Line::from("Any key closes this help."),
    ])
    .block(panel(" Help ", true));
    frame.render_widget(p, a);
}
