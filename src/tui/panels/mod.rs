//! The dashboard's panels, each a thin view of [`View`](super::View), and the colours and
//! formats they share (status colours, verdict badges, elapsed times).

pub mod clarification;
pub mod council;
pub mod footer;
pub mod header;
pub mod log;
pub mod output;
pub mod overlay;
pub mod roster;
mod roster_diff;
mod roster_host;
mod roster_usage;
pub mod steer_form;
pub mod tabbed;

use chrono::{DateTime, Utc};
use ratatui::style::{Color, Modifier, Style, Stylize};
use ratatui::text::Span;
use ratatui::widgets::{Block, BorderType};

use crate::domain::{CouncilStatus, RunStatus, Verdict, WorkerStatus};

/// A panel's frame: rounded borders, bold title; the focused panel's border is cyan and
/// thick so the focus is visible without colour too.
pub fn panel<'a>(title: impl Into<ratatui::text::Line<'a>>, focused: bool) -> Block<'a> {
    let block = Block::bordered().title(title.into().bold());
    if focused {
        block
            .border_type(BorderType::Thick)
            .border_style(Style::default().fg(Color::Cyan))
    } else {
        block
            .border_type(BorderType::Rounded)
            .border_style(Style::default().fg(Color::DarkGray))
    }
}

/// Colour of a worker status: live states blue/yellow, good green, bad red, idle grey.
pub fn status_style(status: WorkerStatus) -> Style {
    match status {
        WorkerStatus::Pending | WorkerStatus::NotRun | WorkerStatus::Skipped => {
            Style::default().fg(Color::DarkGray)
        }
        WorkerStatus::Starting => Style::default().fg(Color::Blue),
        WorkerStatus::Running => Style::default().fg(Color::Cyan),
        WorkerStatus::Waiting => Style::default()
            .fg(Color::Yellow)
            .add_modifier(Modifier::BOLD),
        WorkerStatus::Completed => Style::default().fg(Color::Green),
        WorkerStatus::Failed | WorkerStatus::Timeout => Style::default().fg(Color::Red),
        WorkerStatus::Crashed => Style::default()
            .fg(Color::LightRed)
            .add_modifier(Modifier::BOLD),
        WorkerStatus::Cancelled => Style::default().fg(Color::Gray),
    }
}

/// A one-cell symbol before the status word, so statuses read without colour.
pub fn status_symbol(status: WorkerStatus) -> &'static str {
    match status {
        WorkerStatus::Pending => "·",
        WorkerStatus::Starting => "◌",
        WorkerStatus::Running => "●",
        WorkerStatus::Waiting => "?",
        WorkerStatus::Completed => "✓",
        WorkerStatus::Failed => "✗",
        WorkerStatus::Timeout => "⧖",
        WorkerStatus::Cancelled => "⊘",
        WorkerStatus::Crashed => "!",
        WorkerStatus::NotRun => "-",
        WorkerStatus::Skipped => "↷",
    }
}

/// Colour of a critic's verdict: pass green, warn yellow, fail bold red.
pub fn verdict_style(v: Verdict) -> Style {
    match v {
        Verdict::Pass => Style::default().fg(Color::Green),
        Verdict::Warn => Style::default().fg(Color::Yellow),
        Verdict::Fail => Style::default().fg(Color::Red).add_modifier(Modifier::BOLD),
    }
}

/// A one-cell symbol before the verdict word.
pub fn verdict_symbol(v: Verdict) -> &'static str {
    match v {
        Verdict::Pass => "✓",
        Verdict::Warn => "▲",
        Verdict::Fail => "✗",
    }
}

/// The council status as a coloured badge, e.g. `✗ blocked`.
pub fn council_badge(status: CouncilStatus) -> Span<'static> {
    let (sym, style) = match status {
        CouncilStatus::Ok => ("✓", Style::default().fg(Color::Green)),
        CouncilStatus::Attention => ("▲", Style::default().fg(Color::Yellow)),
        CouncilStatus::Blocked => ("✗", Style::default().fg(Color::Red)),
        CouncilStatus::Pending => ("…", Style::default().fg(Color::DarkGray)),
    };
    Span::styled(format!("{sym} {}", status.as_str()), style.bold())
}

/// Colour of the run status in the header.
pub fn run_status_style(status: RunStatus) -> Style {
    match status {
        RunStatus::Running => Style::default().fg(Color::Cyan),
        RunStatus::Halted => Style::default().fg(Color::Yellow),
        RunStatus::Done => Style::default().fg(Color::Green),
        RunStatus::Failed => Style::default().fg(Color::Red),
        RunStatus::Cancelled | RunStatus::Detached => Style::default().fg(Color::Gray),
    }
    .add_modifier(Modifier::BOLD)
}

/// Elapsed time from `start` to `end` (or `now` while running) as `mm:ss`, or `h:mm:ss`
/// past an hour; `—` before the worker started.
pub fn elapsed(
    start: Option<DateTime<Utc>>,
    end: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> String {
    let Some(start) = start else {
        return "—".into();
    };
    let secs = (end.unwrap_or(now) - start).num_seconds().max(0);
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    if h > 0 {
        format!("{h}:{m:02}:{s:02}")
    } else {
        format!("{m:02}:{s:02}")
    }
}

/// `text` cut to `max` display cells, ending in `…` when cut.
pub fn truncate(text: &str, max: usize) -> String {
    use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};
    if text.width() <= max {
        return text.to_string();
    }
    let mut out = String::new();
    let mut width = 0;
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if width + w + 1 > max {
            break;
        }
        width += w;
        out.push(c);
    }
    if max > 0 {
        out.push('…');
    }
    out
}

/// `text` cut to `max` display cells at the end of a word, ending in `…` when cut (and
/// without the `;`, `,` or `:` the cut word had); within a word only when the first word
/// alone is longer than half of `max` ([`truncate`]).
pub fn truncate_words(text: &str, max: usize) -> String {
    use unicode_width::UnicodeWidthStr;
    if text.width() <= max {
        return text.to_string();
    }
    let cut = truncate(text, max);
    let kept = cut.trim_end_matches('…');
    // The cut fell inside a word unless the next character of `text` is a space.
    let whole = text[kept.len()..].starts_with(' ');
    let at_word = if whole {
        Some(kept)
    } else {
        kept.rfind(' ').map(|i| &kept[..i])
    };
    match at_word.map(|k| k.trim_end().trim_end_matches([';', ',', ':', ' ', '·'])) {
        Some(k) if k.width() * 2 >= max => format!("{k}…"),
        _ => cut,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn truncate_words_cuts_at_a_word() {
        let said = "host box does not answer (no reply for 5 s); its workers' state is unknown until it does";
        assert_eq!(truncate_words(said, 200), said);
        assert_eq!(
            truncate_words(said, 60),
            "host box does not answer (no reply for 5 s); its workers'…"
        );
        assert_eq!(
            truncate_words(said, 47),
            "host box does not answer (no reply for 5 s)…"
        );
        assert_eq!(
            truncate_words("averyveryverylongword and", 10),
            "averyvery…"
        );
        for max in 1..said.len() {
            assert!(
                unicode_width::UnicodeWidthStr::width(truncate_words(said, max).as_str()) <= max
            );
        }
    }

    #[test]
    fn elapsed_formats_minutes_and_hours() {
        let t = |s| Utc.timestamp_opt(s, 0).single();
        let now = Utc.timestamp_opt(10_000, 0).unwrap();
        assert_eq!(elapsed(None, None, now), "—");
        assert_eq!(elapsed(t(10_000 - 75), None, now), "01:15");
        assert_eq!(elapsed(t(0), t(3_725), now), "1:02:05");
        assert_eq!(
            elapsed(t(20_000), None, now),
            "00:00",
            "a clock skew never goes negative"
        );
    }

    #[test]
    fn truncate_cuts_with_an_ellipsis_only_when_needed() {
        assert_eq!(truncate("short", 10), "short");
        assert_eq!(truncate("exactly10!", 10), "exactly10!");
        assert_eq!(truncate("a longer problem", 8), "a longe…");
        assert_eq!(truncate("日本語のテキスト", 7), "日本語…");
    }
}
