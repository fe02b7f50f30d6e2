//! The log panel: crewmux's own `tracing` events as collected by tui-logger (the app loop
//! installs `tui_logger::TuiTracingSubscriberLayer`), newest at the bottom, scrollable.
//!
//! When a dashboard opens, the buffer is emptied (a dashboard opened before it in this
//! process, from the home screen, showed another run) and the run's recent events are
//! replayed into it under [`HISTORY_TARGET`]; each keeps the time it happened at, which
//! tui-logger cannot stamp on a record, so the line carries it (see [`history_line`]).

use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::Line;
use ratatui::Frame;
use tui_logger::{ExtLogRecord, LevelFilter, LogFormatter, TuiLoggerWidget};

use super::panel;
use crate::tui::state::{Focus, View};

pub use crate::logging::{history_line, HISTORY_TARGET};

/// Draw the log. The events come from tui-logger's process-wide buffer; nothing is read
/// from disk. The scroll position lives in `UiState::log`.
pub fn render(frame: &mut Frame, area: Rect, view: &View) {
    let widget = TuiLoggerWidget::default()
        .block(panel(" Log ", view.ui.focus == Focus::Log))
        .formatter(Box::new(LogLines))
        .style(Style::default().fg(Color::Gray))
        .state(&view.ui.log);
    frame.render_widget(widget, area);
}

/// Formats one record as `HH:MM:SS L message`, wrapped to the panel with the message's
/// continuation lines indented under it; never zero lines (tui-logger needs at least one).
struct LogLines;

impl LogFormatter for LogLines {
    fn min_width(&self) -> u16 {
        13
    }

    fn format(&self, width: usize, evt: &ExtLogRecord) -> Vec<Line<'_>> {
        let logged = evt.timestamp.strftime("%H:%M:%S").to_string();
        let (time, text) = time_and_text(evt.target(), evt.msg(), &logged);
        // `log`'s levels order from Error (most severe) to Trace and compare with filters.
        let (style, level) = if evt.level <= LevelFilter::Error {
            (Style::default().fg(Color::Red), 'E')
        } else if evt.level <= LevelFilter::Warn {
            (Style::default().fg(Color::Yellow), 'W')
        } else if evt.level <= LevelFilter::Info {
            (Style::default().fg(Color::Gray), 'I')
        } else {
            (Style::default().fg(Color::DarkGray), 'D')
        };
        wrapped(&format!("{time} {level} "), text, width)
            .into_iter()
            .map(|l| Line::styled(l, style))
            .collect()
    }
}

/// The time a line shows and its text: a replayed event's own time (the first word of its
/// message), else the time it was logged at. tracing's layer starts messages with a space.
fn time_and_text<'a>(target: &str, msg: &'a str, logged: &'a str) -> (&'a str, &'a str) {
    let msg = msg.trim_start();
    if target == HISTORY_TARGET {
        if let Some((time, text)) = msg.split_once(' ') {
            return (time, text);
        }
    }
    (logged, msg)
}

/// `head` then `text`, wrapped to `width` columns, lines after the first indented by the
/// width of `head`; at least one line.
fn wrapped(head: &str, text: &str, width: usize) -> Vec<String> {
    let indent = " ".repeat(unicode_width::UnicodeWidthStr::width(head));
    let options = textwrap::Options::new(width.max(1))
        .initial_indent(head)
        .subsequent_indent(&indent);
    let lines: Vec<String> = text
        .lines()
        .flat_map(|l| textwrap::wrap(l, &options))
        .map(|l| l.into_owned())
        .collect();
    if lines.is_empty() {
        vec![head.trim_end().to_string()]
    } else {
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replayed_event_shows_the_time_it_happened_at() {
        let e = crate::domain::RunEvent {
            ts: "2026-11-30T06:00:05Z".parse().unwrap(),
            kind: crate::domain::EventKind::WorkerStarted,
            worker: Some("alpha".into()),
            attempt: Some(1),
            source: "engine".into(),
            message: "pane %3".into(),
        };
        let line = history_line(&e);
        let own =
            e.ts.with_timezone(&chrono::Local)
                .format("%H:%M:%S")
                .to_string();
        assert_eq!(line, format!("{own} alpha: worker-started pane %3"));
        assert_eq!(
            time_and_text(HISTORY_TARGET, &line, "19:59:59"),
            (own.as_str(), "alpha: worker-started pane %3")
        );
        // A live record keeps the time it was logged at.
        assert_eq!(
            time_and_text(
                "crewmux::run",
                " alpha: worker-completed exit 0",
                "19:59:59"
            ),
            ("19:59:59", "alpha: worker-completed exit 0")
        );
    }

    #[test]
    fn long_lines_wrap_under_the_message_and_an_empty_one_is_still_a_line() {
        let lines = wrapped("06:00:05 I ", "one two three four five six", 20);
        assert_eq!(
            lines,
            vec![
                "06:00:05 I one two",
                "           three",
                "           four five",
                "           six"
            ]
        );
        assert_eq!(wrapped("06:00:05 I ", "", 20), vec!["06:00:05 I"]);
    }
}
