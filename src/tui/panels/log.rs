//! The log panel: crewmux's own `tracing` events as collected by tui-logger (the app loop
//! installs `tui_logger::TuiTracingSubscriberLayer`), newest at the bottom, scrollable.

use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::Frame;
use tui_logger::{TuiLoggerLevelOutput, TuiLoggerWidget};

use super::panel;
use crate::tui::state::{Focus, View};

/// Draw the log. The events come from tui-logger's process-wide buffer; nothing is read
/// from disk. The scroll position lives in `UiState::log`.
pub fn render(frame: &mut Frame, area: Rect, view: &View) {
    let widget = TuiLoggerWidget::default()
        .block(panel(" Log ", view.ui.focus == Focus::Log))
        .output_timestamp(Some("%H:%M:%S".into()))
        .output_level(Some(TuiLoggerLevelOutput::Abbreviated))
        .output_separator(' ')
        .output_target(false)
        .output_file(false)
        .output_line(false)
        .style(Style::default().fg(Color::Gray))
        .style_error(Style::default().fg(Color::Red))
        .style_warn(Style::default().fg(Color::Yellow))
        .style_info(Style::default().fg(Color::Gray))
        .style_debug(Style::default().fg(Color::DarkGray))
        .style_trace(Style::default().fg(Color::DarkGray))
        .state(&view.ui.log);
    frame.render_widget(widget, area);
}
