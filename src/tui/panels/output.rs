//! The output panel: the selected worker's live screen (its tmux pane's capture), the newest
//! lines fit to the height, scrollable; and the conversion of a capture into styled lines.
#![allow(
    clippy::expect_used,
    reason = "regex literals compiled once; a bad one fails every test of this module"
)]

use std::sync::LazyLock;

use ansi_to_tui::IntoText;
use ratatui::layout::{Alignment, Rect};
use ratatui::style::{Color, Style, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};
use ratatui::Frame;
use regex::Regex;

use super::{panel, status_style, status_symbol};
use crate::domain::WorkerStatus;
use crate::tui::state::{Focus, View};

/// CSI and OSC escape sequences, stripped when a capture cannot be parsed as ANSI.
static ESCAPES: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)|\x1b.")
        .expect("static regex")
});

/// Convert tmux `capture-pane -p -J -e` output (text with SGR escapes) into styled lines,
/// dropping the blank rows below the last printed line. Call it once per capture, not per
/// frame. Bytes that are not valid ANSI fall back to the plain text with escapes removed.
pub fn capture_to_lines(capture: &[u8]) -> Vec<Line<'static>> {
    let mut lines = match capture.into_text() {
        Ok(text) => text.lines,
        Err(_) => {
            let plain = String::from_utf8_lossy(capture);
            ESCAPES
                .replace_all(&plain, "")
                .lines()
                .map(|l| Line::from(l.to_string()))
                .collect()
        }
    };
    while lines
        .last()
        .is_some_and(|l| l.spans.iter().all(|s| s.content.trim().is_empty()))
    {
        lines.pop();
    }
    lines
}

/// Draw the selected worker's output in `area`: the newest lines that fit, or
/// `UiState::output_scroll` lines higher; status, reason and the attach hint on the border.
pub fn render(frame: &mut Frame, area: Rect, view: &View) {
    let focused = view.ui.focus == Focus::Output;
    let Some(worker) = view.ui.selected_worker(view.run) else {
        let empty = Paragraph::new("no worker selected").dark_gray();
        frame.render_widget(empty.block(panel(" Output ", focused)), area);
        return;
    };
    let dim = Style::default().fg(Color::DarkGray);
    let mut title = vec![
        Span::raw(" Output "),
        Span::styled("· ", dim),
        Span::raw(worker.id.clone()).bold(),
        Span::styled(format!(" ({} · {})", worker.role, worker.provider), dim),
    ];
    if worker.attempt > 0 {
        title.push(Span::styled(
            format!(" · attempt {}/{}", worker.attempt, worker.max_attempts),
            dim,
        ));
    }
    if let Some(pane) = &worker.pane_id {
        let id = crate::domain::pane_label(pane);
        title.push(Span::styled(format!(" · pane {id}"), dim));
    }
    title.push(Span::raw(" "));
    let mut block = panel(Line::from(title), focused);

    let status = status_style(worker.status);
    let mut state = vec![
        Span::raw(" "),
        Span::styled(status_symbol(worker.status), status),
        Span::styled(format!(" {}", worker.status), status),
    ];
    if let Some(reason) = worker
        .reason
        .as_deref()
        .filter(|_| worker.status.is_terminal())
    {
        state.push(Span::styled(format!(": {reason}"), status));
    }
    state.push(Span::raw(" "));
    block = block.title_bottom(Line::from(state));

    let inner = block.inner(area);
    let height = inner.height as usize;
    let total = view.output.len();
    let scroll = view.ui.output_scroll.min(total.saturating_sub(height));
    if scroll > 0 {
        block = block.title_bottom(
            Line::from(format!(" ↑ {scroll} lines up · End follows "))
                .style(Style::default().fg(Color::Yellow)),
        );
    }
    if view.attach_hint && worker.pane_id.is_some() {
        block = block.title_bottom(
            Line::from(vec![
                Span::styled(" Enter", Style::default().fg(Color::Cyan)),
                Span::styled(
                    if view.ui.nested_tmux {
                        " attach · prefix twice, d comes back "
                    } else {
                        " attach · tmux detach (prefix d) comes back "
                    },
                    dim,
                ),
            ])
            .alignment(Alignment::Right),
        );
    }
    frame.render_widget(block, area);

    if total == 0 {
        let note = match worker.status {
            WorkerStatus::Pending => "not started yet",
            WorkerStatus::Starting => "starting…",
            _ => "no output yet",
        };
        frame.render_widget(Paragraph::new(note).dark_gray().italic(), inner);
        return;
    }
    let end = total - scroll;
    if !view.ui.nowrap {
        // Wrapped: the newest lines whose wrapped rows fit, so the end of a long line (an
        // error at its end) is on screen.
        let w = (inner.width as usize).max(1);
        let rows = |l: &Line| l.width().max(1).div_ceil(w);
        let (mut start, mut used) = (end, 0);
        while start > 0 && used + rows(&view.output[start - 1]) <= height {
            start -= 1;
            used += rows(&view.output[start]);
        }
        let p = Paragraph::new(view.output[start..end].to_vec()).wrap(Wrap { trim: false });
        frame.render_widget(p, inner);
        return;
    }
    let start = end.saturating_sub(height);
    for (row, line) in view.output[start..end].iter().enumerate() {
        let line_area = Rect {
            y: inner.y + row as u16,
            height: 1,
            ..inner
        };
        frame.render_widget(line, line_area);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::style::Color;

    #[test]
    fn capture_keeps_colours_and_drops_trailing_blank_rows() {
        let lines = capture_to_lines(b"plain\n\x1b[31mred\x1b[0m text\n\n   \n\n");
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0].to_string(), "plain");
        assert_eq!(lines[1].to_string(), "red text");
        assert_eq!(lines[1].spans[0].style.fg, Some(Color::Red));
    }

    #[test]
    fn capture_of_nothing_is_no_lines() {
        assert!(capture_to_lines(b"").is_empty());
        assert!(capture_to_lines(b"\n\n\n").is_empty());
    }
}
