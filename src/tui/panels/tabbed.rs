//! The main area: a one-row tab strip (`1 Output  2 Result  3 Prompt  4 Report  5 Council`)
//! over the chosen tab — the selected worker's live output, a rendered document (its result
//! or prompt, the run's report, a file a finding named), or every finding of the council.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};
use ratatui::Frame;

use super::{council_badge, output, panel, truncate, verdict_style, verdict_symbol};
use crate::tui::state::{Focus, View};
use crate::tui::tabs::Tab;

/// Draw the tab strip and the chosen tab in `area`.
pub fn render(frame: &mut Frame, area: Rect, view: &View) {
    if area.height < 3 {
        output::render(frame, area, view);
        return;
    }
    let [strip, body] = Layout::vertical([Constraint::Length(1), Constraint::Fill(1)]).areas(area);
    frame.render_widget(tab_strip(view, strip.width as usize), strip);
    if view.ui.file.is_some() {
        document(frame, body, view);
        return;
    }
    match view.ui.tab {
        Tab::Output => output::render(frame, body, view),
        Tab::Council => council(frame, body, view),
        Tab::Result | Tab::Diff | Tab::Prompt | Tab::Report => document(frame, body, view),
    }
}

fn tab_strip(view: &View, width: usize) -> Line<'static> {
    let dim = Style::default().fg(Color::DarkGray);
    let mut spans = Vec::new();
    for t in Tab::ALL {
        let active = t == view.ui.tab && view.ui.file.is_none();
        let style = if active {
            Style::default()
                .fg(Color::Black)
                .bg(Color::Cyan)
                .add_modifier(Modifier::BOLD)
        } else {
            Style::default()
        };
        spans.push(Span::styled(
            format!(" {} {} ", t.number(), t.label()),
            style,
        ));
        if t == Tab::Prompt {
            spans.push(Span::styled(" │", dim));
        }
    }
    if let Some(f) = &view.ui.file {
        let name = truncate(&f.display().to_string(), width.saturating_sub(60).max(10));
        spans.push(Span::styled(
            format!(" file {name} (Esc) "),
            Style::default().fg(Color::Black).bg(Color::Yellow),
        ));
    } else {
        spans.push(Span::styled("  [ ] switch", dim));
    }
    Line::from(spans)
}

/// A rendered document with its file in the title, wrapped, scrolled by `doc_scroll`.
fn document(frame: &mut Frame, area: Rect, view: &View) {
    let focused = view.ui.focus == Focus::Output;
    let dim = Style::default().fg(Color::DarkGray);
    let mut title = vec![Span::raw(format!(" {} ", what(view)))];
    if let Some(d) = view.doc {
        title.push(Span::styled(format!("· {} ", d.path.display()), dim));
    }
    let mut block = panel(Line::from(title), focused);
    let Some(doc) = view.doc else {
        let note = match (view.ui.tab, view.ui.selected_worker(view.run)) {
            (Tab::Result | Tab::Diff | Tab::Prompt, None) => "no worker selected",
            _ => "reading…",
        };
        frame.render_widget(Paragraph::new(note).dark_gray().italic().block(block), area);
        return;
    };
    // Scrolled to (or past) the end, the last page is shown full: a scroll position kept
    // from before (End, `}` to the last file, a longer document) never leaves the panel
    // showing only the last line, e.g. a diff's last new file without the changes above it.
    let inner = block.inner(area);
    let rows = inner.height as usize;
    // A markdown table wider than the panel: one record per row, not rows the wrap breaks.
    let fitted = doc
        .markdown
        .as_deref()
        .filter(|md| crate::tui::md_table::has_wide_table(md, inner.width as usize))
        .map(|md| {
            crate::tui::md_table::fit(md, inner.width as usize, &crate::tui::tabs::markdown_lines)
        });
    let lines = fitted.as_ref().unwrap_or(&doc.lines);
    let scroll = view
        .ui
        .doc_scroll
        .min(lines.len().saturating_sub(rows.max(1)));
    if scroll > 0 {
        block = block.title_bottom(
            Line::from(format!(" line {} of {} · g top ", scroll + 1, lines.len()))
                .style(Style::default().fg(Color::Yellow)),
        );
    }
    let p = Paragraph::new(lines.clone())
        .block(block)
        .wrap(Wrap { trim: false })
        .scroll((scroll.min(u16::MAX as usize) as u16, 0));
    frame.render_widget(p, area);
}

/// What the document panel shows, for its title.
fn what(view: &View) -> String {
    if view.ui.file.is_some() {
        return "File".into();
    }
    let worker = view
        .ui
        .selected_worker(view.run)
        .map(|w| w.id.as_str())
        .unwrap_or("—");
    match view.ui.tab {
        Tab::Result => format!("Result · {worker}"),
        Tab::Diff => format!("Diff · {worker}"),
        Tab::Prompt => format!("Prompt · {worker}"),
        _ => "Report".into(),
    }
}

/// Every finding of every critic under its verdict; the selected one marked, with what
/// Enter goes to.
fn council(frame: &mut Frame, area: Rect, view: &View) {
    let run = view.run;
    let focused = view.ui.focus == Focus::Output;
    let dim = Style::default().fg(Color::DarkGray);
    let title = Line::from(vec![
        Span::raw(" Council "),
        council_badge(run.council.status),
        Span::styled(
            match view.ui.findings.len() {
                1 => " · 1 finding ".to_string(),
                n => format!(" · {n} findings "),
            },
            dim,
        ),
    ]);
    let mut block = panel(title, focused);
    if !view.ui.findings.is_empty() {
        block = block.title_bottom(Line::from(vec![
            Span::styled(" ↑/↓", Style::default().fg(Color::Cyan)),
            Span::styled(" finding · ", dim),
            Span::styled("Enter", Style::default().fg(Color::Cyan)),
            Span::styled(" go to the worker or file it names ", dim),
        ]));
    }
    let inner = block.inner(area);
    let width = inner.width as usize;
    let mut lines = Vec::new();
    let mut selected_row = 0;
    let mut index = 0;
    for (vi, v) in run.council.verdicts.iter().enumerate() {
        lines.push(Line::from(vec![
            Span::styled(
                format!("{} {:<4} ", verdict_symbol(v.verdict), v.verdict.as_str()),
                verdict_style(v.verdict),
            ),
            Span::raw(v.critic.clone()).bold(),
            Span::styled(format!(" {:.2}", v.confidence), dim),
        ]));
        for f in view.ui.findings.iter().filter(|f| f.verdict == vi) {
            let here = index == view.ui.finding;
            if here {
                selected_row = lines.len();
            }
            let target = match (&f.worker, &f.file) {
                (Some(w), _) => format!("  → {w}"),
                (None, Some(p)) => format!(
                    "  → {}",
                    p.file_name()
                        .map(|n| n.to_string_lossy())
                        .unwrap_or_default()
                ),
                _ => String::new(),
            };
            let text = truncate(&f.text, width.saturating_sub(6 + target.len()));
            let mark = if here && focused { "  ▶ " } else { "    " };
            let style = if here && focused {
                Style::default().add_modifier(Modifier::REVERSED)
            } else {
                Style::default()
            };
            lines.push(Line::from(vec![
                Span::styled(mark, Style::default().fg(Color::Cyan)),
                Span::styled(text, style),
                Span::styled(target, Style::default().fg(Color::Cyan)),
            ]));
            index += 1;
        }
    }
    if lines.is_empty() {
        lines = super::council::lines(run, 0, width);
    }
    let height = inner.height as usize;
    let scroll = selected_row.saturating_sub(height.saturating_sub(2));
    frame.render_widget(
        Paragraph::new(lines)
            .block(block)
            .scroll((scroll as u16, 0)),
        area,
    );
}
