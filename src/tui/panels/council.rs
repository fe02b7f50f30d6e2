//! The council panel: each critic's verdict and confidence with its first findings, and the
//! council status (docs/design.md) in the title. Focused, it shows every finding and scrolls.

use ratatui::layout::Rect;
use ratatui::style::{Color, Style, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::{council_badge, panel, truncate, verdict_style, verdict_symbol};
use crate::domain::{RunState, Stage};
use crate::tui::state::{Focus, View};

/// Findings shown per critic while the panel is not focused.
pub const FIRST_FINDINGS: usize = 2;

/// Lines the panel holds with every finding shown (the scroll range when focused).
pub fn line_count(run: &RunState) -> usize {
    lines(run, usize::MAX, usize::MAX).len()
}

/// The panel's lines: per critic a verdict line and up to `findings` findings (then
/// `+N more`), each cut to `width` cells.
pub fn lines(run: &RunState, findings: usize, width: usize) -> Vec<Line<'static>> {
    let dim = Style::default().fg(Color::DarkGray);
    let verdicts = &run.council.verdicts;
    if verdicts.is_empty() {
        let note = if run.stage < Stage::TeamVerify {
            "no verdicts yet: the council sits when the team's work is done (team-verify)"
        } else {
            "critics are reading the team's results…"
        };
        return vec![Line::from(Span::styled(
            truncate(note, width),
            dim.italic(),
        ))];
    }
    let name_width = verdicts.iter().map(|v| v.critic.len()).max().unwrap_or(0);
    let mut out = Vec::new();
    for v in verdicts {
        let style = verdict_style(v.verdict);
        out.push(Line::from(vec![
            Span::styled(
                format!("{} {:<4} ", verdict_symbol(v.verdict), v.verdict.as_str()),
                style,
            ),
            Span::raw(format!("{:<name_width$} ", v.critic)).bold(),
            Span::styled(format!("{:.2}", v.confidence), dim),
        ]));
        for f in v.findings.iter().take(findings) {
            out.push(Line::from(vec![
                Span::styled("    · ", dim),
                Span::raw(truncate(f, width.saturating_sub(6))),
            ]));
        }
        let hidden = v.findings.len().saturating_sub(findings);
        if hidden > 0 {
            out.push(Line::from(Span::styled(
                format!("    +{hidden} more (Tab to the council)"),
                dim,
            )));
        }
    }
    out
}

/// Draw the council in `area`; focused, every finding and `UiState::council_scroll`.
pub fn render(frame: &mut Frame, area: Rect, view: &View) {
    let run = view.run;
    let focused = view.ui.focus == Focus::Council;
    let title = Line::from(vec![
        Span::raw(" Council "),
        council_badge(run.council.status),
        Span::raw(" "),
    ]);
    let block = panel(title, focused);
    let inner = block.inner(area);
    let findings = if focused { usize::MAX } else { FIRST_FINDINGS };
    let lines = lines(run, findings, inner.width as usize);
    let scroll = if focused {
        view.ui
            .council_scroll
            .min(lines.len().saturating_sub(inner.height as usize))
    } else {
        0
    };
    let paragraph = Paragraph::new(lines)
        .block(block)
        .scroll((scroll as u16, 0));
    frame.render_widget(paragraph, area);
}
