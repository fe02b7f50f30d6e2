//! The roster: one row per worker (worker, role, provider, host in a run that uses an SSH
//! host, status, attempt, elapsed, exit code), the selected row highlighted, a count of
//! statuses in the title.

use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Color, Modifier, Style, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, HighlightSpacing, Paragraph, Row, Table, TableState};
use ratatui::Frame;

use super::{elapsed, panel, status_style, status_symbol};
use crate::domain::{RunState, WorkerState, WorkerStatus};
use crate::tui::state::{Focus, View};

/// Below this inner width the role column is dropped (the output title still names it).
const ROLE_MIN_WIDTH: u16 = 70;
/// From this inner width a `note` column shows why a worker ended or what it asks.
const NOTE_MIN_WIDTH: u16 = 100;

/// Rows the roster wants: one per worker, a header row and the borders.
pub fn wanted_height(run: &RunState) -> u16 {
    run.workers.len().max(1) as u16 + 3
}

/// Draw the roster in `area`; columns drop from the right edge inwards (note, then role)
/// as the width shrinks.
/// Width of the `change` column, cells.
const DIFF_WIDTH: u16 = 18;

pub fn render(frame: &mut Frame, area: Rect, view: &View) {
    let run = view.run;
    let mut title = title(run);
    if view.ui.attention {
        title.spans.push(Span::styled(
            "· by attention ",
            Style::default().fg(Color::DarkGray),
        ));
    }
    let block = panel(title, view.ui.focus == Focus::Roster);
    if run.workers.is_empty() {
        let empty = Paragraph::new("no workers yet: the team is being planned").dark_gray();
        frame.render_widget(empty.block(block), area);
        return;
    }
    let inner_width = block.inner(area).width;
    // Where the note has no room of its own, a race's ranks and a parked worker's reset
    // take the role's place (the output's title still names the role).
    let note_over_role = (ROLE_MIN_WIDTH..NOTE_MIN_WIDTH).contains(&inner_width)
        && run
            .workers
            .iter()
            .any(|w| w.flow.candidate.is_some() || parked(w));
    let with_role = inner_width >= ROLE_MIN_WIDTH && !note_over_role;
    let with_note = inner_width >= NOTE_MIN_WIDTH || note_over_role;
    let role_width = run.workers.iter().map(|w| w.role.len()).max().unwrap_or(4) as u16;
    let id_width = id_width(run);

    // Where each worker runs, in a run that uses an SSH host; narrower where the role
    // (sharing the row's room) would not have its width beside it.
    let host_width = super::roster_host::width(run).map(|host| {
        if with_role && !with_note {
            super::roster_host::beside_role(host, inner_width, id_width, role_width)
        } else {
            host
        }
    });
    let mut header = vec!["worker"];
    let mut widths = vec![Constraint::Length(id_width)];
    if with_role {
        header.push("role");
        widths.push(if with_note {
            Constraint::Length(role_width)
        } else {
            Constraint::Fill(1)
        });
    }
    header.push("provider");
    widths.push(Constraint::Length(8));
    if let Some(w) = host_width {
        header.push("host");
        widths.push(Constraint::Length(w));
    }
    header.extend(["status", "attempt", "elapsed", "exit"]);
    widths.extend([
        Constraint::Length(11),
        Constraint::Length(7),
        Constraint::Length(7),
        Constraint::Length(4),
    ]);
    // With worktrees: each worker's change, `+added −removed · N files`.
    // (A race's why and the note's own room come before it where both do not fit.)
    let with_diff = with_note && !note_over_role && run.workspace.is_some();
    if with_diff {
        header.push("change");
        widths.push(Constraint::Length(DIFF_WIDTH));
    }
    // Once a CLI reported usage: each worker's tokens (and cost).
    let run_usage = crate::tui::usage::run_usage(run);
    let (usage, total) = (&run_usage.0, run_usage.1);
    // Shown only where the fixed columns, their gaps and the highlight mark still fit.
    let fixed = id_width + 8 + 11 + 7 + 7 + 4 + 6 + 2 + host_width.map_or(0, |w| w + 1);
    let with_usage = total.is_some() && inner_width > fixed + super::roster_usage::WIDTH;
    if with_usage {
        header.push("tokens");
        widths.push(Constraint::Length(super::roster_usage::WIDTH));
    }
    if with_note {
        header.push("note");
        widths.push(Constraint::Fill(1));
    }

    let order = crate::tui::attention::order(view.ui, run);
    let rows = order.iter().map(|&i| {
        let w = &run.workers[i];
        let mut r = row(w, with_role, with_note, with_diff, view);
        if host_width.is_some() {
            // After worker, (role,) provider.
            let cell = super::roster_host::cell(w, host_width.unwrap_or_default());
            r.insert(if with_role { 3 } else { 2 }, cell);
        }
        if with_usage {
            // The tokens cell goes before the note, the last cell when there is one.
            let note = if with_note { r.pop() } else { None };
            r.push(super::roster_usage::cell(usage.get(&w.id)));
            r.extend(note);
        }
        Row::new(r)
    });
    let highlight = highlight(view.ui.focus == Focus::Roster);
    let table = Table::new(rows, widths)
        .header(Row::new(header).style(Style::default().fg(Color::DarkGray)))
        .block(block)
        .row_highlight_style(highlight)
        .highlight_symbol(Span::styled("▶ ", Style::default().fg(Color::Cyan)))
        .highlight_spacing(HighlightSpacing::Always);
    let selected = view.ui.selected.min(run.workers.len() - 1);
    let at = order.iter().position(|&i| i == selected).unwrap_or(0);
    let mut state = TableState::default().with_selected(Some(at));
    frame.render_stateful_widget(table, area, &mut state);
}

/// The worker column's width: the longest id (at least 6), and room for the fence's mark
/// after it in a run with a fenced worker.
fn id_width(run: &RunState) -> u16 {
    let fenced = run
        .workers
        .iter()
        .any(|w| !crate::domain::sandbox::fence_of(run, w).is_none());
    let mark = if fenced {
        FENCE_MARK.chars().count()
    } else {
        0
    };
    run.workers
        .iter()
        .map(|w| w.id.len() + mark)
        .max()
        .unwrap_or(6)
        .max(6) as u16
}

/// After the id of a worker whose agent runs in a fence (`[sandbox]`, README "Sandbox").
/// Two columns: a space and the mark.
pub const FENCE_MARK: &str = " ▣";

/// The selected row's style: on a dark grey while the roster has the focus (xterm 237, on
/// which every status colour stays readable), bold.
fn highlight(focused: bool) -> Style {
    let bold = Style::default().add_modifier(Modifier::BOLD);
    if focused {
        bold.bg(Color::Indexed(237))
    } else {
        bold
    }
}

fn row<'a>(
    w: &'a WorkerState,
    with_role: bool,
    with_note: bool,
    with_diff: bool,
    view: &View,
) -> Vec<Cell<'a>> {
    // A live worker on a host that does not answer: its liveness is unknown until it does.
    let unknown_on = w
        .host
        .as_ref()
        .filter(|h| w.status.is_live() && view.ui.hosts_down.contains(*h));
    let style = if unknown_on.is_some() {
        Style::default().fg(Color::DarkGray)
    } else {
        status_style(w.status)
    };
    let fence = crate::domain::sandbox::fence_of(view.run, w);
    let mut cells = vec![if fence.is_none() {
        Cell::from(w.id.as_str())
    } else {
        Cell::from(Line::from(vec![
            Span::raw(w.id.as_str()),
            Span::styled(FENCE_MARK, Style::default().fg(Color::DarkGray)),
        ]))
    }];
    if with_role {
        cells.push(Cell::from(Span::styled(
            w.role.as_str(),
            Style::default().fg(Color::Gray),
        )));
    }
    let attempt = if w.attempt == 0 {
        format!("-/{}", w.max_attempts)
    } else {
        format!("{}/{}", w.attempt, w.max_attempts)
    };
    let last_try = w.attempt >= w.max_attempts && w.status == WorkerStatus::Failed;
    let blocked = !crate::engine::graph::blocked_on(view.run, w).is_empty();
    let exit = match w.exit_code {
        Some(0) => Span::styled("0", Style::default().fg(Color::Green)),
        Some(code) => Span::styled(code.to_string(), Style::default().fg(Color::Red).bold()),
        None if w.status == WorkerStatus::Crashed => {
            Span::styled("—", Style::default().fg(Color::Red))
        }
        None => Span::raw(""),
    };
    cells.extend([
        Cell::from(w.provider.as_str()),
        Cell::from(Line::from(vec![
            Span::styled(
                if unknown_on.is_some() {
                    "?"
                } else {
                    status_symbol(w.status)
                },
                style,
            ),
            Span::raw(" "),
            Span::styled(status_word(w, blocked), style),
        ])),
        Cell::from(Span::styled(
            attempt,
            if last_try {
                Style::default().fg(Color::Red)
            } else {
                Style::default()
            },
        )),
        Cell::from(elapsed(w.started_at, w.ended_at, view.now)),
        Cell::from(exit),
    ]);
    if with_diff {
        cells.push(super::roster_diff::cell(view.run, w));
    }
    if with_note {
        let note = match w.status {
            WorkerStatus::Waiting => w.question.as_deref().map(|q| {
                let q = q.split_whitespace().collect::<Vec<_>>().join(" ");
                // A question the agent's own hooks announced says so.
                if w.pending.as_ref().is_some_and(|p| p.from_hooks) {
                    format!("hooks: {q}")
                } else {
                    q
                }
            }),
            s if s.is_terminal() => w.reason.clone(),
            _ if unknown_on.is_some() => unknown_on.map(|h| format!("host {h} not answering")),
            // What the agent's own hooks last said (its status's source), and its own
            // `progress` line (MCP), when the flow has nothing to say.
            _ => flow_note(view.run, w, view.now).or_else(|| {
                match (w.signal.as_ref().map(|s| s.line()), w.progress.clone()) {
                    (Some(s), Some(p)) => Some(format!("{s} · {p}")),
                    (s, p) => s.or(p),
                }
            }),
        };
        let note = with_prefixes(view.run, w, note);
        cells.push(Cell::from(Span::styled(
            note.unwrap_or_default(),
            Style::default().fg(Color::Gray),
        )));
    }
    cells
}

/// What a pending or live worker's note says about its flow: `after a, b` (the `after`
/// upstreams it still waits for; `blocked` is the council's word only), `until 15:04
/// (claude's usage limit)` (parked), `retry in 42s` (a back-off), `rate-limited` (the
/// last rate-limit line of the attempt).
fn flow_note(
    run: &RunState,
    w: &WorkerState,
    now: chrono::DateTime<chrono::Utc>,
) -> Option<String> {
    let blocked = crate::engine::graph::blocked_on(run, w);
    if !blocked.is_empty() {
        return Some(format!("after {}", blocked.join(", ")));
    }
    if let Some(p) = w.flow.parked.as_ref().filter(|_| parked(w)) {
        return Some(format!(
            "until {} ({}'s usage limit)",
            crate::engine::parking::clock(p.until, now),
            p.provider
        ));
    }
    if let Some(at) = w
        .flow
        .retry_at
        .filter(|_| w.status == WorkerStatus::Pending)
    {
        let secs = ((at - now).num_milliseconds().max(0) as u64).div_ceil(1000);
        return Some(format!("retry in {secs}s"));
    }
    w.flow
        .rate_limited
        .as_ref()
        .filter(|_| w.status.is_live())
        .map(|line| format!("rate-limited: {line}"))
}

/// The note with what comes first: `resumed` for an attempt that continues the worker's
/// earlier conversation, and a race's candidate's place ([`candidate_note`]).
fn with_prefixes(run: &RunState, w: &WorkerState, note: Option<String>) -> Option<String> {
    let note = match (w.flow.resumed && w.attempt > 1, note) {
        (true, Some(n)) => Some(format!("resumed · {n}")),
        (true, None) => Some("resumed".to_string()),
        (false, n) => n,
    };
    // Once ranked, the why stands in for an ended candidate's reason.
    match (candidate_note(run, w), note) {
        (Some(c), Some(n)) if !w.status.is_terminal() || c.starts_with("candidate") => {
            Some(format!("{c} · {n}"))
        }
        (Some(c), _) => Some(c),
        (None, n) => n,
    }
}

/// What a race's candidate's note starts with: `#1 picked · completed · checks 1/1 · +1 −0
/// in 1 file` once its race is ranked (the why replaces its reason), else `candidate 2/3`.
fn candidate_note(run: &RunState, w: &WorkerState) -> Option<String> {
    let c = w.flow.candidate.as_ref()?;
    let race = run.races.get(&c.task);
    match race.and_then(|r| r.place(&w.id)) {
        // The row's status says completed: the why goes on from there.
        Some((place, why)) => Some(format!(
            "{place} · {}",
            why.strip_prefix("completed · ").unwrap_or(why)
        )),
        // Every candidate has ended and the race is not ranked: the team's checks run on them.
        None if race.is_some_and(|r| {
            r.candidates
                .iter()
                .all(|id| run.worker(id).is_none_or(|x| x.status.is_terminal()))
        }) && !run.checks.is_empty() =>
        {
            Some(format!("candidate {}/{} · checks running", c.n, c.of))
        }
        None => Some(format!("candidate {}/{}", c.n, c.of)),
    }
}

/// The status column's word: `queued` for a pending worker that waits for its `after`
/// upstreams (`blocked`), `parked` for one that waits for a usage limit, else the status.
fn status_word(w: &WorkerState, blocked: bool) -> &'static str {
    if blocked {
        "queued"
    } else if parked(w) {
        "parked"
    } else {
        w.status.as_str()
    }
}

/// A pending worker waiting for its provider's usage limit to reset (`engine::parking`):
/// its row reads `parked`.
fn parked(w: &WorkerState) -> bool {
    w.status == WorkerStatus::Pending && w.flow.parked.is_some()
}

/// ` Workers 5 · 1 running · 1 waiting · 1 done · 2 failed `: every worker is in one
/// count (failed holds timeouts and crashes; skipped holds not-run).
fn title(run: &RunState) -> Line<'static> {
    let count = |f: fn(WorkerStatus) -> bool| run.workers.iter().filter(|w| f(w.status)).count();
    // A pending worker that waits for its `after` upstreams reads `queued` in its row:
    // counted so too.
    let blocked = run
        .workers
        .iter()
        .filter(|w| !crate::engine::graph::blocked_on(run, w).is_empty())
        .count();
    let parked = run
        .workers
        .iter()
        .filter(|w| parked(w) && crate::engine::graph::blocked_on(run, w).is_empty())
        .count();
    let parts = [
        (
            count(|s| matches!(s, WorkerStatus::Running | WorkerStatus::Starting)),
            "running",
            Color::Cyan,
        ),
        (
            count(|s| s == WorkerStatus::Waiting),
            "waiting",
            Color::Yellow,
        ),
        (
            count(|s| s == WorkerStatus::Completed),
            "done",
            Color::Green,
        ),
        (
            count(|s| {
                matches!(
                    s,
                    WorkerStatus::Failed | WorkerStatus::Timeout | WorkerStatus::Crashed
                )
            }),
            "failed",
            Color::Red,
        ),
        (
            count(|s| s == WorkerStatus::Cancelled),
            "cancelled",
            Color::Magenta,
        ),
        (
            count(|s| matches!(s, WorkerStatus::Skipped | WorkerStatus::NotRun)),
            "skipped",
            Color::DarkGray,
        ),
        (blocked, "queued", Color::DarkGray),
        (parked, "parked", Color::Yellow),
        (
            count(|s| s == WorkerStatus::Pending) - blocked - parked,
            "pending",
            Color::DarkGray,
        ),
    ];
    let mut spans = vec![Span::raw(format!(" Workers {} ", run.workers.len()))];
    for (n, word, colour) in parts {
        if n > 0 {
            spans.push(Span::styled("· ", Style::default().fg(Color::DarkGray)));
            spans.push(Span::styled(
                format!("{n} {word} "),
                Style::default().fg(colour),
            ));
        }
    }
    Line::from(spans)
}

#[cfg(test)]
mod title_tests {
    use super::title;
    use crate::domain::WorkerStatus;

    #[test]
    fn every_worker_is_counted_in_the_title_cancelled_ones_too() {
        let mut run = crate::engine::tests::run(4, 4);
        let statuses = [
            WorkerStatus::Completed,
            WorkerStatus::Timeout,
            WorkerStatus::Cancelled,
            WorkerStatus::NotRun,
        ];
        for (w, s) in run.workers.iter_mut().zip(statuses) {
            w.status = s;
        }
        let text: String = title(&run)
            .spans
            .iter()
            .map(|s| s.content.as_ref())
            .collect();
        assert_eq!(
            text,
            " Workers 4 · 1 done · 1 failed · 1 cancelled · 1 skipped "
        );
    }

    #[test]
    fn a_pending_worker_that_waits_for_others_counts_as_queued_as_its_row_reads() {
        let mut run = crate::engine::tests::run(3, 3);
        run.workers[0].status = WorkerStatus::Running;
        run.workers[1].status = WorkerStatus::Pending;
        run.workers[2].status = WorkerStatus::Pending;
        run.workers[2].flow.after = vec![run.workers[0].id.clone()];
        let text: String = title(&run)
            .spans
            .iter()
            .map(|s| s.content.as_ref())
            .collect();
        assert_eq!(text, " Workers 3 · 1 running · 1 queued · 1 pending ");
    }
}
