//! Markdown tables that fit the panel: a table wider than the document panel would have
//! each row broken by the panel's wrap in the middle of its cells (the Report tab at 88
//! columns), so such a table is laid out as one record per row instead: the row's first
//! cell on a line of its own, then `header: cell` for each other column, each wrapped as a
//! paragraph. Tables that fit stay as `tui-markdown` draws them. Tables are found with
//! `pulldown-cmark` (GitHub tables, the extension `tui-markdown` renders).

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

/// One table of the text: its byte range, header cells and body rows (cell text only).
struct Table {
    range: std::ops::Range<usize>,
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// Width in cells as `tui-markdown` draws it: each column as wide as its widest cell,
    /// one space either side and a border between and around columns.
    fn width(&self) -> usize {
        let cols = self
            .rows
            .iter()
            .chain(std::iter::once(&self.header))
            .map(Vec::len)
            .max()
            .unwrap_or(0);
        let col = |i: usize| {
            self.rows
                .iter()
                .chain(std::iter::once(&self.header))
                .filter_map(|r| r.get(i))
                .map(|c| Span::raw(c.as_str()).width())
                .max()
                .unwrap_or(0)
        };
        (0..cols).map(|i| col(i) + 3).sum::<usize>() + 1
    }
}

fn tables(text: &str) -> Vec<Table> {
    let mut out = Vec::new();
    let mut current: Option<Table> = None;
    let mut row: Vec<String> = Vec::new();
    let mut cell = String::new();
    let mut in_head = false;
    for (event, range) in Parser::new_ext(text, Options::ENABLE_TABLES).into_offset_iter() {
        match event {
            Event::Start(Tag::Table(_)) => {
                current = Some(Table {
                    range,
                    header: Vec::new(),
                    rows: Vec::new(),
                })
            }
            Event::Start(Tag::TableHead) => in_head = true,
            Event::Start(Tag::TableCell) => cell.clear(),
            Event::End(TagEnd::TableCell) => row.push(cell.trim().to_string()),
            Event::End(TagEnd::TableHead) => {
                in_head = false;
                if let Some(t) = current.as_mut() {
                    t.header = std::mem::take(&mut row);
                }
            }
            Event::End(TagEnd::TableRow) if !in_head => {
                if let Some(t) = current.as_mut() {
                    t.rows.push(std::mem::take(&mut row));
                }
            }
            Event::End(TagEnd::Table) => out.extend(current.take()),
            Event::Text(s) | Event::Code(s) if current.is_some() => cell.push_str(&s),
            Event::SoftBreak | Event::HardBreak if current.is_some() => cell.push(' '),
            _ => {}
        }
    }
    out
}

/// Whether `text` has a table wider than `width` cells (then [`fit`] lays it out).
pub fn has_wide_table(text: &str, width: usize) -> bool {
    text.contains('|') && tables(text).iter().any(|t| t.width() > width)
}

/// `text` rendered by `render` (the tab's markdown renderer), except that each table wider
/// than `width` cells is one record per row (see the module comment).
pub fn fit(
    text: &str,
    width: usize,
    render: &dyn Fn(&str) -> Vec<Line<'static>>,
) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    let mut at = 0;
    for t in tables(text).into_iter().filter(|t| t.width() > width) {
        out.extend(render(&text[at..t.range.start]));
        if out.last().is_some_and(|l: &Line| l.width() > 0) {
            out.push(Line::raw(""));
        }
        out.extend(records(&t));
        at = t.range.end;
    }
    out.extend(render(&text[at..]));
    out
}

fn records(t: &Table) -> Vec<Line<'static>> {
    let head = Style::default().add_modifier(Modifier::BOLD);
    let name = Style::default().fg(Color::Cyan);
    let mut out = Vec::new();
    for r in &t.rows {
        let first = r.first().cloned().unwrap_or_default();
        let label = t.header.first().cloned().unwrap_or_default();
        out.push(Line::from(vec![
            Span::styled("▸ ", name),
            Span::styled(format!("{label}: "), name),
            Span::styled(first, head),
        ]));
        for (i, c) in r.iter().enumerate().skip(1) {
            let label = t.header.get(i).cloned().unwrap_or_default();
            out.push(Line::from(vec![
                Span::raw("  "),
                Span::styled(format!("{label}: "), name),
                Span::raw(c.clone()),
            ]));
        }
    }
    out.push(Line::raw(""));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &str = "# R\n\n| worker | status | summary |\n|---|---|---|\n| backend | completed | a long summary of what changed |\n| web | failed | x |\n\nAfter.\n";

    #[test]
    fn a_table_is_wide_by_its_drawn_width_and_a_wide_one_becomes_records() {
        // Columns 7, 9 and 30 cells wide, each with 3 of padding and borders, and one more.
        assert!(!has_wide_table(TABLE, 56));
        assert!(has_wide_table(TABLE, 55));
        let plain = |s: &str| s.lines().map(|l| Line::raw(l.to_string())).collect();
        let text: Vec<String> = fit(TABLE, 40, &plain)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert!(text.contains(&"▸ worker: backend".to_string()), "{text:?}");
        assert!(text.contains(&"  status: failed".to_string()), "{text:?}");
        assert!(
            text.contains(&"  summary: a long summary of what changed".to_string()),
            "{text:?}"
        );
        assert!(text.first().is_some_and(|l| l == "# R"), "{text:?}");
        assert!(text.iter().any(|l| l == "After."), "{text:?}");
    }
}
