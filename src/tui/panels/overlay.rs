//! Overlays drawn over the dashboard: the help (every action of every keymap, generated from
//! the `Action` tables) and the confirm dialog (cancel the run).

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Clear, Paragraph, Wrap};
use ratatui::Frame;

use super::truncate;
use crate::tui::action::{
    Action, Binding, CONFIRM, DIFF_VIEW, GLOBAL, INPUT, MERGE_CONFIRM, OUTPUT, ROSTER, SCROLL,
    WORKER,
};
use crate::tui::keys::Keys;
use crate::tui::state::{Confirm, View};

/// Width of the key column in the help.
const KEY_WIDTH: usize = 10;

/// The help's sections: heading and the bindings it lists (one row per action, keys merged).
fn sections(keys: &Keys) -> [(&'static str, Vec<Binding>); 5] {
    let movement = keys.apply(SCROLL);
    let workers: Vec<Binding> = [ROSTER, OUTPUT, WORKER, DIFF_VIEW]
        .iter()
        .flat_map(|m| keys.apply(m))
        .filter(|b| !movement.iter().any(|s| s.action == b.action))
        .collect();
    // Tab and Esc in the input line do what they do everywhere: listed once.
    let input: Vec<Binding> = keys
        .apply(INPUT)
        .into_iter()
        .filter(|b| {
            !matches!(
                b.action,
                Action::FocusNext | Action::FocusPrev | Action::Back
            )
        })
        .collect();
    // The merge dialog's own key (squash) after the keys every dialog has.
    let mut dialogs = keys.apply(CONFIRM);
    let extra: Vec<Binding> = keys
        .apply(MERGE_CONFIRM)
        .into_iter()
        .filter(|b| !dialogs.iter().any(|d| d.action == b.action))
        .collect();
    dialogs.extend(extra);
    [
        ("Everywhere", keys.apply(GLOBAL)),
        ("Move and scroll", movement),
        ("Selected worker", workers),
        ("Answer input", input),
        ("Dialogs", dialogs),
    ]
}

/// The action whose help row `a` shares (itself for most).
fn paired(a: Action) -> Action {
    match a {
        Action::PageDown => Action::PageUp,
        Action::PrevTab => Action::NextTab,
        Action::DeleteForward => Action::DeleteBack,
        Action::CursorRight => Action::CursorLeft,
        Action::CursorEnd => Action::CursorHome,
        Action::PrevFile => Action::NextFile,
        a => a,
    }
}

/// The help's rows of one section: per action its keys (`PgUp/PgDn`; only the first key of
/// each action when all do not fit the key column) and what it does.
fn section_rows(bindings: &[Binding]) -> Vec<(String, &'static str)> {
    // Per row: every key, the first key of each action in it (used when every key does not
    // fit the key column), and the row's action.
    let mut rows: Vec<(String, String, Action)> = Vec::new();
    for b in bindings {
        // The number keys of the tabs are one row: `1–6  show tab n (the tab strip)`.
        if let Action::SelectTab(n) = b.action {
            if n == 1 {
                let last = crate::tui::tabs::Tab::ALL.len();
                rows.push((format!("1–{last}"), String::new(), b.action));
            }
            continue;
        }
        // Two actions that are one motion share a row: `PgUp/PgDn  scroll a page`.
        let action = paired(b.action);
        let first_of_its_action = !bindings
            .iter()
            .take_while(|x| !std::ptr::eq(*x, b))
            .any(|x| x.action == b.action);
        match rows.iter_mut().find(|(_, _, a)| *a == action) {
            Some((keys, short, _)) if !keys.split('/').any(|k| k == b.label.as_ref()) => {
                keys.push('/');
                keys.push_str(&b.label);
                if first_of_its_action {
                    short.push('/');
                    short.push_str(&b.label);
                }
            }
            Some(_) => {}
            None => rows.push((b.label.to_string(), b.label.to_string(), action)),
        }
    }
    rows.into_iter()
        .map(|(keys, short, a)| {
            let keys = if keys.chars().count() > KEY_WIDTH && !short.is_empty() {
                short
            } else {
                keys
            };
            let said = match a {
                Action::SelectTab(_) => "show tab n of the tab strip",
                Action::PageUp => "scroll a page up / down",
                Action::NextTab => "next / previous tab",
                Action::DeleteBack => "delete back / forward",
                Action::CursorLeft => "cursor left / right",
                Action::CursorHome => "cursor to the start / end",
                Action::NextFile => "next / previous diff file",
                a => a.description(),
            };
            (keys, said)
        })
        .collect()
}

/// The help's sections as text, heading and `(keys, what they do)` rows, with the
/// person's own key bindings: what the help overlay shows, for the man page.
pub fn help_rows(keys: &Keys) -> Vec<(&'static str, Vec<(String, &'static str)>)> {
    sections(keys)
        .into_iter()
        .map(|(heading, bindings)| (heading, section_rows(&bindings)))
        .collect()
}

/// One line per action: `keys  description`.
fn section_lines(heading: &'static str, bindings: &[Binding], width: usize) -> Vec<Line<'static>> {
    let mut lines = vec![Line::from(Span::styled(
        heading,
        Style::default().fg(Color::Yellow).bold(),
    ))];
    for (keys, said) in section_rows(bindings) {
        lines.push(Line::from(vec![
            Span::styled(
                format!(" {keys:<KEY_WIDTH$}"),
                Style::default().fg(Color::Cyan).bold(),
            ),
            Span::raw(truncate(said, width.saturating_sub(KEY_WIDTH + 1))),
        ]));
    }
    lines
}

/// A `width`×`height` rectangle centred in `area` (clipped to it).
pub fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let width = width.min(area.width);
    let height = height.min(area.height);
    Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height - height) / 2,
        width,
        height,
    }
}

/// Remove blank separator lines from the end of `column` backwards until it has at most
/// `rows` lines (or no blank line is left).
fn drop_blank_lines_to_fit(column: &mut Vec<Line<'static>>, rows: usize) {
    while column.len() > rows {
        let Some(i) = column.iter().rposition(|l| l.width() == 0) else {
            return;
        };
        column.remove(i);
    }
}

/// Draw the help centred over `area`: two columns from 76 cells, one below.
pub fn render_help(frame: &mut Frame, area: Rect, view: &View) {
    // Two columns of up to 42 cells when the screen allows (80 columns do), else one.
    let two_columns = area.width >= 76;
    let column_width: u16 = if two_columns {
        ((area.width - 3) / 2).min(42)
    } else {
        area.width.saturating_sub(2).min(42)
    };
    let w = column_width as usize;
    let [a, b, c, d, e] = sections(&view.ui.keys);
    let mut left = section_lines(a.0, &a.1, w);
    left.push(Line::raw(""));
    left.extend(section_lines(b.0, &b.1, w));
    let mut right = section_lines(c.0, &c.1, w);
    right.push(Line::raw(""));
    right.extend(section_lines(d.0, &d.1, w));
    right.push(Line::raw(""));
    right.extend(section_lines(e.0, &e.1, w));
    right.push(Line::raw(""));
    right.push(Line::from(Span::styled(
        "Attached to a pane (Enter)",
        Style::default().fg(Color::Yellow).bold(),
    )));
    if view.ui.nested_tmux {
        // Inside the person's own tmux the pane is a nested client (see `detach_keys`).
        right.push(Line::from(truncate(" prefix twice, then d", w)));
        right.push(Line::from(truncate(" (C-b C-b d) comes back here", w)));
    } else {
        right.push(Line::from(truncate(
            &format!(" {} comes back here", view.ui.detach_keys()),
            w,
        )));
    }
    // A screen too short for every row loses the blank lines between sections first
    // (the bold headings still part them), so the last rows are never cut off.
    let rows = area.height.saturating_sub(2) as usize;
    for column in [&mut left, &mut right] {
        drop_blank_lines_to_fit(column, rows);
    }
    let (width, body_height) = if two_columns {
        (2 * column_width + 3, left.len().max(right.len()) as u16)
    } else {
        left.push(Line::raw(""));
        left.append(&mut right);
        (column_width + 2, left.len() as u16)
    };
    let popup = centered(area, width, body_height + 2);
    let block = Block::bordered()
        .border_type(BorderType::Double)
        .border_style(Style::default().fg(Color::Cyan))
        .title(Line::from(" crewmux keys ").bold())
        .title_bottom(
            Line::from(vec![
                Span::styled(" Esc", Style::default().fg(Color::Cyan)),
                Span::raw(format!(
                    " closes · after q, crewmux attach {} comes back ",
                    view.run.run_id
                )),
            ])
            .centered(),
        );
    let inner = block.inner(popup);
    frame.render_widget(Clear, popup);
    frame.render_widget(block, popup);
    if two_columns {
        let [l, r] = Layout::horizontal([Constraint::Length(column_width), Constraint::Fill(1)])
            .spacing(1)
            .areas(inner);
        frame.render_widget(Paragraph::new(left), l);
        frame.render_widget(Paragraph::new(right), r);
    } else {
        frame.render_widget(Paragraph::new(left), inner);
    }
}

/// Draw the open confirm dialog (see [`Confirm`]) centred over `area`.
pub fn render_confirm(frame: &mut Frame, area: Rect, view: &View) {
    if view.ui.confirm == Some(Confirm::Merge) {
        return crate::tui::merge::render_confirm(frame, area, view);
    }
    let Some(Confirm::CancelAll) = view.ui.confirm else {
        return;
    };
    let live: Vec<&str> = view
        .run
        .workers
        .iter()
        .filter(|w| !w.status.is_terminal())
        .map(|w| w.id.as_str())
        .collect();
    let key = |k: &'static str| Span::styled(k, Style::default().fg(Color::Cyan).bold());
    let text = vec![
        Line::from(vec![
            Span::raw(format!("{} workers have not ended: ", live.len())),
            Span::raw(live.join(", ")).bold(),
        ]),
        Line::from(Span::styled(
            "Each gets SIGTERM, then SIGKILL after a grace period; the run ends cancelled (q only leaves the dashboard).",
            Style::default().fg(Color::Gray),
        )),
        Line::raw(""),
        Line::from(vec![
            key("y"),
            Span::raw(" cancel them all      "),
            key("n"),
            Span::raw("/"),
            key("Esc"),
            Span::raw(" keep them running"),
        ])
        .centered(),
    ];
    let popup = centered(area, 60, 8);
    let block = Block::bordered()
        .border_type(BorderType::Double)
        .border_style(Style::default().fg(Color::Red))
        .title(Line::from(" Cancel the run? ").bold().red());
    frame.render_widget(Clear, popup);
    frame.render_widget(
        Paragraph::new(text)
            .wrap(Wrap { trim: true })
            .block(block.padding(ratatui::widgets::Padding::horizontal(1))),
        popup,
    );
}

#[cfg(test)]
mod tests {
    use crate::tui::{fixtures, UiState};

    fn help_text(width: u16, height: u16) -> String {
        help_text_nested(width, height, false)
    }

    fn help_text_nested(width: u16, height: u16, nested_tmux: bool) -> String {
        let run = fixtures::crazy_run();
        let ui = UiState {
            help: true,
            nested_tmux,
            ..UiState::default()
        };
        let mut terminal =
            ratatui::Terminal::new(ratatui::backend::TestBackend::new(width, height)).unwrap();
        terminal
            .draw(|f| crate::tui::draw(f, &fixtures::view(&run, &ui, &[])))
            .unwrap();
        let buffer = terminal.backend().buffer().clone();
        (0..height)
            .map(|y| {
                (0..width)
                    .map(|x| buffer[(x, y)].symbol().to_string())
                    .collect::<String>()
                    + "\n"
            })
            .collect()
    }

    #[test]
    fn the_help_lists_the_diff_file_keys_and_still_ends_with_the_way_back_at_80x24() {
        for (w, h) in [(80, 24), (120, 40)] {
            let text = help_text(w, h);
            assert!(
                text.contains("}/{") && text.contains("next / previous diff file"),
                "{w}×{h}:\n{text}"
            );
            assert!(
                text.contains("prefix d (C-b d) comes back here"),
                "{w}×{h}:\n{text}"
            );
            assert!(text.contains("yes, do it"), "{w}×{h}:\n{text}");
        }
    }

    #[test]
    fn inside_the_persons_own_tmux_the_way_back_takes_the_prefix_twice() {
        for (w, h) in [(80, 24), (120, 40)] {
            let text = help_text_nested(w, h, true);
            assert!(text.contains("C-b C-b d) comes back"), "{w}×{h}:\n{text}");
        }
    }
}
