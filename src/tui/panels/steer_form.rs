//! The steering forms over the dashboard: add a worker (id, role, provider, a `command`
//! worker's command line, task) and the line of text sent to a worker's pane.

use ratatui::layout::{Position, Rect};
use ratatui::style::{Color, Style, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Clear, Paragraph, Wrap};
use ratatui::Frame;
use unicode_width::UnicodeWidthStr;

use super::overlay::centered;
use crate::tui::state::View;
use crate::tui::steer::{
    AddForm, SendForm, SteerForm, FIELD_COMMAND, FIELD_ID, FIELD_PROVIDER, FIELD_ROLE, FIELD_TASK,
};

/// Width of the field names column.
const LABEL: usize = 10;

/// Draw the open form centred over `area`.
pub fn render(frame: &mut Frame, area: Rect, view: &View) {
    match &view.ui.form {
        Some(SteerForm::Add(f)) => add(frame, area, view, f),
        Some(SteerForm::Send(f)) => send(frame, area, f),
        None => {}
    }
}

fn key(k: &'static str) -> Span<'static> {
    Span::styled(k, Style::default().fg(Color::Cyan).bold())
}

fn frame_block(title: String) -> Block<'static> {
    Block::bordered()
        .border_type(BorderType::Double)
        .border_style(Style::default().fg(Color::Cyan))
        .title(Line::from(title).bold())
}

/// A ←/→ choice: `◀ name ▶  i/n`, the arrows lit when the field has focus.
fn choice(items: &[String], i: usize, focused: bool) -> Vec<Span<'static>> {
    let name = items.get(i).cloned().unwrap_or_else(|| "—".into());
    let arrows = Style::default().fg(if focused {
        Color::Cyan
    } else {
        Color::DarkGray
    });
    vec![
        Span::styled("◀ ", arrows),
        Span::raw(name).bold(),
        Span::styled(" ▶", arrows),
        Span::styled(
            format!("  {}/{}", i + 1, items.len()),
            Style::default().fg(Color::DarkGray),
        ),
    ]
}

/// The command field's value: the typed line, a hint, or a dash when the provider is not
/// `command`.
fn command_value(f: &AddForm) -> Vec<Span<'static>> {
    let dim = Style::default().fg(Color::DarkGray);
    if !f.runs_command() {
        vec![Span::styled("— (for provider command)", dim)]
    } else if f.command.is_empty() {
        vec![Span::styled(
            "the program and its arguments, e.g. pytest -q",
            dim,
        )]
    } else {
        vec![Span::raw(f.command.clone()).bold()]
    }
}

fn add(frame: &mut Frame, area: Rect, view: &View, f: &AddForm) {
    let popup = centered(area, 72, area.height.saturating_sub(4).clamp(12, 20));
    let block = frame_block(format!(" Add a worker to run {} ", view.run.run_id));
    let inner = block.inner(popup);
    let label = |i: usize, name: &'static str| {
        let style = if f.field == i {
            Style::default().fg(Color::Yellow).bold()
        } else {
            Style::default().fg(Color::Gray)
        };
        Span::styled(
            format!("{}{name:<LABEL$}", if f.field == i { "▶" } else { " " }),
            style,
        )
    };
    let dim = Style::default().fg(Color::DarkGray);
    let mut lines = vec![
        Line::from(vec![label(FIELD_ID, "id"), Span::raw(f.id.clone()).bold()]),
        Line::from(
            [
                vec![label(FIELD_ROLE, "role")],
                choice(&f.roles, f.role, f.field == FIELD_ROLE),
            ]
            .concat(),
        ),
        Line::from(
            [
                vec![label(FIELD_PROVIDER, "provider")],
                choice(&f.providers, f.provider, f.field == FIELD_PROVIDER),
            ]
            .concat(),
        ),
        Line::from([vec![label(FIELD_COMMAND, "command")], command_value(f)].concat()),
        Line::from(label(FIELD_TASK, "task")),
    ];
    let task_lines: Vec<&str> = f.task.split('\n').collect();
    let room = (inner.height as usize)
        .saturating_sub(lines.len() + 2)
        .max(1);
    let skip = task_lines.len().saturating_sub(room);
    for l in &task_lines[skip..] {
        lines.push(Line::from(format!("  {l}")));
    }
    if f.task.is_empty() {
        lines.push(Line::from(Span::styled(
            if f.runs_command() {
                "  what it is for (optional: it is told to run its command)"
            } else {
                "  what the worker should do (Enter starts a new line)"
            },
            dim,
        )));
    }
    let footer = Line::from(vec![
        key("Tab"),
        Span::raw(" field  "),
        key("←/→"),
        Span::raw(" choose  "),
        key("C-s"),
        Span::raw(" add (Enter outside the task)  "),
        key("Esc"),
        Span::raw(" cancel"),
    ]);
    frame.render_widget(Clear, popup);
    frame.render_widget(block.title_bottom(footer.centered()), popup);
    frame.render_widget(Paragraph::new(lines.clone()), inner);
    // The cursor sits at the end of the text being typed.
    let cursor = match f.field {
        FIELD_ID => Some((LABEL + 1 + f.id.width(), 0)),
        FIELD_COMMAND if f.runs_command() => Some((LABEL + 1 + f.command.width(), 3)),
        FIELD_TASK => {
            let last = task_lines.last().copied().unwrap_or("");
            let row = 5 + task_lines.len() - skip - 1;
            Some((2 + last.width(), row))
        }
        _ => None,
    };
    if let Some((x, y)) = cursor {
        let (x, y) = (inner.x + x as u16, inner.y + y as u16);
        if x < inner.right() && y < inner.bottom() {
            frame.set_cursor_position(Position::new(x, y));
        }
    }
}

fn send(frame: &mut Frame, area: Rect, f: &SendForm) {
    let popup = centered(area, 72, 6);
    let block = frame_block(format!(" Send text to {} ", f.worker));
    let inner = block.inner(popup);
    let text = vec![
        Line::from(vec![
            Span::raw("> "),
            Span::raw(f.line.text().to_string()).bold(),
        ]),
        Line::from(Span::styled(
            if f.ended {
                "it has ended: starts its next attempt, which goes on with its conversation"
            } else {
                "typed into its pane as an answer is: pasted, then Enter"
            },
            Style::default().fg(Color::Gray),
        )),
        Line::from(vec![
            key("Enter"),
            Span::raw(" send  "),
            key("Esc"),
            Span::raw(" cancel"),
        ]),
    ];
    frame.render_widget(Clear, popup);
    frame.render_widget(
        Paragraph::new(text).wrap(Wrap { trim: false }).block(block),
        popup,
    );
    let x = inner.x + 2 + f.line.cursor_width() as u16;
    if x < inner.right() {
        frame.set_cursor_position(Position::new(x, inner.y));
    }
}
