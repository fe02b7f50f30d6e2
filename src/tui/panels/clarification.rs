//! The clarification panel, shown only while a question is pending: the run-level gate's
//! question or a waiting worker's, wrapped, and the answer input line with its cursor.

use ratatui::layout::{Position, Rect};
use ratatui::style::{Color, Modifier, Style, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Paragraph};
use ratatui::Frame;
use unicode_width::UnicodeWidthStr;

use crate::domain::{Stage, WorkerStatus};
use crate::tui::state::{Focus, PendingQuestion, View};

/// Most question lines shown; a longer question ends in `…` (attach to read it whole).
pub const MAX_QUESTION_LINES: usize = 4;
const PROMPT: &str = "› ";

/// Rows the panel needs at `width` columns, 0 when no question is pending.
pub fn wanted_height(view: &View, width: u16) -> u16 {
    match view.ui.pending_question(view.run) {
        None => 0,
        Some(q) => body(view, &q, width.saturating_sub(2) as usize).len() as u16 + 3,
    }
}

/// The question wrapped to `width`, and for the run-level gate a line naming what is missing.
fn body(view: &View, q: &PendingQuestion, width: usize) -> Vec<Line<'static>> {
    let text = q.text.unwrap_or(match q.worker {
        Some(_) => "(waiting for input; no question text was captured — Enter on the roster attaches to its pane)",
        None => "(the run is halted at a question the gate did not word)",
    });
    let mut wrapped: Vec<Line<'static>> = textwrap::wrap(text, width.max(10))
        .into_iter()
        .map(|l| Line::from(l.into_owned()))
        .collect();
    if wrapped.len() > MAX_QUESTION_LINES {
        wrapped.truncate(MAX_QUESTION_LINES);
        if let Some(last) = wrapped.last_mut() {
            last.push_span(Span::raw("…"));
        }
    }
    if let Some(p) = q.worker.and_then(|w| w.pending.as_ref()) {
        wrapped.extend(pending_lines(p, view.now));
    }
    if q.worker.is_none() {
        // The gate's question has no default: the run stays at it until someone answers.
        wrapped.push(Line::from(Span::styled(
            "no default · no time limit: the run waits for your answer",
            Style::default().fg(Color::Gray),
        )));
        if let Some(gate) = &view.run.clarification.gate {
            if !gate.missing_slots.is_empty() {
                wrapped.push(Line::from(Span::styled(
                    format!(
                        "intent {} · missing {}",
                        gate.intent_class,
                        gate.missing_slots.join(", ")
                    ),
                    Style::default().fg(Color::DarkGray),
                )));
            }
        }
    }
    wrapped
}

/// What a worker's question offers besides its text: the choices, the default and the time
/// left before `question_timeout_s` ends the wait (and what happens then), and for an
/// approval the keys that answer it.
fn pending_lines(
    p: &crate::domain::clarification::PendingQuestion,
    now: chrono::DateTime<chrono::Utc>,
) -> Vec<Line<'static>> {
    let dim = Style::default().fg(Color::DarkGray);
    let key = Style::default().fg(Color::Cyan).bold();
    let mut out = vec![];
    if !p.choices.is_empty() {
        let mut spans = vec![Span::styled("choices ", dim)];
        for (i, c) in p.choices.iter().enumerate() {
            if i > 0 {
                spans.push(Span::styled(" · ", dim));
            }
            spans.push(Span::raw(c.clone()));
        }
        out.push(Line::from(spans));
    }
    if let Some(a) = &p.approval {
        out.push(Line::from(vec![
            Span::styled("y", key),
            Span::styled(" allow once · ", dim),
            Span::styled("n", key),
            Span::styled(" deny (a reason may follow) · ", dim),
            Span::styled("A", key),
            Span::styled(format!(" allow {} for the rest of the run", a.tool), dim),
        ]));
    }
    if p.from_result {
        out.push(Line::from(Span::styled(
            "from its result: an answer starts its next attempt, resumed where its CLI can",
            dim,
        )));
    }
    let line = p.wait_line(now);
    out.push(Line::from(Span::styled(
        line,
        Style::default().fg(Color::Gray),
    )));
    out
}

/// Draw the pending question and the input line in `area` (nothing when none is pending).
/// With the focus, the terminal cursor is placed in the input line.
pub fn render(frame: &mut Frame, area: Rect, view: &View) {
    let Some(q) = view.ui.pending_question(view.run) else {
        return;
    };
    let focused = view.ui.focus == Focus::Clarification;
    let mut title = match q.worker {
        Some(w) => vec![
            Span::raw(" ? "),
            Span::raw(w.id.clone()).bold(),
            Span::raw(
                if w.pending.as_ref().is_some_and(|p| p.approval.is_some()) {
                    " asks for your approval "
                } else if w.waits_on_its_result() {
                    " ended with a question for you "
                } else {
                    " is waiting for your answer "
                },
            ),
        ],
        None if view.run.stage == Stage::TeamPlan => {
            vec![Span::raw(" ? Clarification needed before the team starts ")]
        }
        None => vec![Span::raw(" ? The run needs your answer to go on ")],
    };
    let others = view
        .run
        .workers
        .iter()
        .filter(|w| w.status == WorkerStatus::Waiting)
        .filter(|w| q.worker.is_none_or(|x| x.id != w.id))
        .count();
    if others > 0 {
        title.push(Span::styled(
            format!("(+{others} waiting · n next) "),
            Style::default().fg(Color::Gray),
        ));
    }
    let border = Style::default().fg(Color::Yellow);
    let block = Block::bordered()
        .title(Line::from(title).style(Style::default().fg(Color::Yellow).bold()))
        .border_type(if focused {
            BorderType::Thick
        } else {
            BorderType::Rounded
        })
        .border_style(border);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    if inner.height == 0 {
        return;
    }

    let mut lines = body(view, &q, inner.width as usize);
    let room = inner.height as usize - 1;
    lines.truncate(room);
    let question_area = Rect {
        height: lines.len() as u16,
        ..inner
    };
    frame.render_widget(Paragraph::new(lines), question_area);

    let input_area = Rect {
        y: inner.y + inner.height - 1,
        height: 1,
        ..inner
    };
    render_input(frame, input_area, view, focused);
}

/// `› text` with the cursor; a text longer than the line scrolls so the cursor stays visible.
fn render_input(frame: &mut Frame, area: Rect, view: &View, focused: bool) {
    let input = &view.ui.input;
    let prompt = Span::styled(
        PROMPT,
        Style::default()
            .fg(Color::Yellow)
            .add_modifier(Modifier::BOLD),
    );
    let dim = Style::default().fg(Color::DarkGray);
    let key = Style::default().fg(Color::Cyan).bold();
    if input.is_empty() && !focused {
        let hint = match crate::tui::approval::shown(view.ui, view.run) {
            Some(_) => Line::from(vec![
                prompt,
                Span::styled("press ", dim),
                Span::styled("y", key),
                Span::styled(", ", dim),
                Span::styled("n", key),
                Span::styled(" or ", dim),
                Span::styled("A", key),
            ]),
            None => Line::from(vec![
                prompt,
                Span::styled("press ", dim),
                Span::styled("a", key),
                Span::styled(" to answer", dim),
            ]),
        };
        frame.render_widget(Paragraph::new(hint), area);
        return;
    }
    if input.is_empty() && view.ui.denying {
        let hint = Line::from(vec![
            prompt.clone(),
            Span::styled("reason for denying (Enter with none: no reason)", dim),
        ]);
        frame.render_widget(Paragraph::new(hint), area);
        if area.width > 0 {
            let x = area.x + (PROMPT.width() as u16).min(area.width - 1);
            frame.set_cursor_position(Position { x, y: area.y });
        }
        return;
    }
    let room = (area.width as usize).saturating_sub(PROMPT.width() + 1);
    // Skip leading chars until the cursor fits on the line.
    let mut skip_width = input.cursor_width().saturating_sub(room);
    let mut shown = input.text();
    while skip_width > 0 {
        let mut chars = shown.chars();
        let c = chars.next().unwrap_or(' ');
        skip_width = skip_width.saturating_sub(
            unicode_width::UnicodeWidthChar::width(c)
                .unwrap_or(0)
                .max(1),
        );
        shown = chars.as_str();
    }
    let skipped = input.text().len() - shown.len();
    let text_style = if focused {
        Style::default()
    } else {
        Style::default().fg(Color::Gray)
    };
    frame.render_widget(
        Paragraph::new(Line::from(vec![prompt, Span::styled(shown, text_style)])),
        area,
    );
    if focused && area.width > 0 {
        let before = input.cursor_width() - input.text()[..skipped].width();
        let x = area.x + (PROMPT.width() + before).min(area.width as usize - 1) as u16;
        frame.set_cursor_position(Position { x, y: area.y });
    }
}
