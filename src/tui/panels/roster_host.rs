//! The roster's `host` column: where each worker runs (`local`, or the `hosts.toml` name of
//! its SSH host; `local (box lost)` for a worker moved here when its host was lost). Shown only in a run that uses a host other than this machine, so a run
//! that never leaves it keeps its columns.

use ratatui::style::{Color, Style};
use ratatui::text::Span;
use ratatui::widgets::Cell;

use crate::domain::{RunState, WorkerState};
use crate::hosts::LOCAL;

/// The column's width in cells when `run` uses an SSH host (a worker on one now, or an
/// attempt that ran on one, e.g. before its host was lost); `None` otherwise.
pub fn width(run: &RunState) -> Option<u16> {
    let hosts = run
        .workers
        .iter()
        .filter_map(|w| {
            w.host
                .clone()
                .or_else(|| w.moved_from.as_deref().map(moved))
        })
        .chain(run.dispatches.iter().filter_map(|d| d.host.clone()));
    let mut widest = None;
    for h in hosts {
        widest = Some(widest.unwrap_or(LOCAL.len()).max(h.chars().count()));
    }
    widest.map(|w| w.min(MAX_WIDTH) as u16)
}

/// The host column's width (`host` at most) that leaves the role column `role` cells in a
/// roster `inner` cells wide whose worker column is `id` wide, with the provider, status,
/// attempt, elapsed and exit columns, the 7 gaps between the 8 columns and the highlight
/// mark; [`MIN_WIDTH`] at least.
pub fn beside_role(host: u16, inner: u16, id: u16, role: u16) -> u16 {
    let others = id + 8 + host + 11 + 7 + 7 + 4 + 7 + 2;
    let room = inner.saturating_sub(others);
    host.saturating_sub(role.saturating_sub(room))
        .max(MIN_WIDTH)
        .min(host)
}

/// The column's narrowest, when the role needs its room: `local` whole.
pub const MIN_WIDTH: u16 = LOCAL.len() as u16;

/// The column's widest: `local (<host> lost)` of a host name of up to 17 characters
/// whole; a longer name is cut.
const MAX_WIDTH: usize = 28;

/// The cell of `w` in a column `width` cells wide (a longer host name cut with `…`): its
/// host, `local` in grey, `local (box lost)` in yellow for a worker moved here when its
/// host was lost (`local` in yellow where that does not fit).
pub fn cell(w: &WorkerState, width: u16) -> Cell<'static> {
    let fit = |s: &str| super::truncate(s, width as usize);
    match (&w.host, &w.moved_from) {
        (Some(h), _) => Cell::from(Span::styled(fit(h), Style::default().fg(Color::Cyan))),
        // Too narrow for the lost host's name: `local`, yellow still.
        (None, Some(lost)) => Cell::from(Span::styled(
            Some(moved(lost))
                .filter(|m| m.chars().count() <= width as usize)
                .unwrap_or_else(|| fit(LOCAL)),
            Style::default().fg(Color::Yellow),
        )),
        (None, None) => Cell::from(Span::styled(LOCAL, Style::default().fg(Color::Gray))),
    }
}

/// The cell text of a worker moved here off the lost host `lost`.
fn moved(lost: &str) -> String {
    format!("{LOCAL} ({lost} lost)")
}

#[cfg(test)]
mod tests {
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    use crate::tui::{fixtures, UiState};

    fn draw(run: &crate::domain::RunState, width: u16) -> TestBackend {
        let ui = UiState::default();
        let view = fixtures::view(run, &ui, &[]);
        let mut terminal = Terminal::new(TestBackend::new(width, 10)).unwrap();
        terminal
            .draw(|f| super::super::roster::render(f, f.area(), &view))
            .unwrap();
        terminal.backend().clone()
    }

    #[test]
    fn a_run_with_workers_on_an_ssh_host_shows_where_each_runs() {
        let mut run = fixtures::crazy_run();
        for w in run.workers.iter_mut().skip(1).step_by(2) {
            w.host = Some("buildbox".into());
        }
        let screen = draw(&run, 120);
        let text = format!("{screen}");
        assert!(text.contains("host") && text.contains("buildbox"), "{text}");
        insta::assert_snapshot!(screen);
    }

    #[test]
    fn a_run_only_on_this_machine_has_no_host_column() {
        let run = fixtures::crazy_run();
        assert_eq!(super::width(&run), None);
        let screen = draw(&run, 120);
        let text = format!("{screen}");
        assert!(!text.contains("host") && !text.contains("local"), "{text}");
        insta::assert_snapshot!(screen);
    }

    #[test]
    fn a_host_that_was_lost_keeps_the_column_for_the_attempts_that_ran_there() {
        let mut run = fixtures::crazy_run();
        run.dispatches.push(crate::domain::DispatchRecord {
            worker_id: run.workers[0].id.clone(),
            prompt_path: "prompt.md".into(),
            attempt: 1,
            backend: "tmux".into(),
            status: crate::domain::WorkerStatus::Crashed,
            reason: Some("host lost: box unreachable for 120 s".into()),
            nonce: "n".into(),
            pane_id: Some("box:%1@1.2".into()),
            exit_code: None,
            exit_source: None,
            started_at: fixtures::now(),
            ended_at: None,
            credential_label: None,
            host: Some("box".into()),
            left_on_host: false,
            moved_from: None,
            session: None,
            resumed: None,
        });
        assert_eq!(super::width(&run), Some(5));
    }

    #[test]
    fn a_worker_moved_off_a_lost_host_reads_local_and_the_host_it_lost() {
        let mut run = fixtures::crazy_run();
        run.workers[0].moved_from = Some("box".into());
        assert_eq!(super::width(&run), Some("local (box lost)".len() as u16));
        let text = format!("{}", draw(&run, 140));
        let row = text
            .lines()
            .find(|l| l.contains(&run.workers[0].id))
            .unwrap();
        assert!(row.contains("local (box lost)"), "{row}");
        // A longer host name is not cut while the columns beside have room.
        run.workers[0].moved_from = Some("trybox".into());
        let text = format!("{}", draw(&run, 220));
        let row = text
            .lines()
            .find(|l| l.contains(&run.workers[0].id))
            .unwrap();
        assert!(row.contains("local (trybox lost)"), "{row}");
    }

    #[test]
    fn at_80_columns_the_role_keeps_its_width_and_the_host_column_gives_way() {
        let mut run = fixtures::crazy_run();
        let i = run
            .workers
            .iter()
            .position(|w| w.role == "backend-engineer")
            .unwrap();
        run.workers[i].moved_from = Some("box".into());
        let screen = draw(&run, 80);
        let text = format!("{screen}");
        let row = text
            .lines()
            .find(|l| l.contains(&run.workers[i].id))
            .unwrap();
        insta::assert_snapshot!(screen);
        // Every role whole (the longest sets the room the host column gives up).
        for w in &run.workers {
            assert!(
                text.contains(&format!(" {} ", w.role)),
                "{}: {text}",
                w.role
            );
        }
        assert!(row.contains(" local ● running"), "{row}");
        // With room, the whole host text.
        let text = format!("{}", draw(&run, 99));
        let row = text
            .lines()
            .find(|l| l.contains(&run.workers[i].id))
            .unwrap();
        assert!(
            row.contains("backend-engineer") && row.contains("local (box lost)"),
            "{row}"
        );
    }

    #[test]
    fn a_live_worker_on_a_host_that_does_not_answer_reads_unknown() {
        let mut run = fixtures::crazy_run();
        let i = run.workers.iter().position(|w| w.status.is_live()).unwrap();
        run.workers[i].host = Some("box".into());
        let mut ui = UiState::default();
        ui.hosts_down.insert("box".into());
        let view = fixtures::view(&run, &ui, &[]);
        let mut terminal = Terminal::new(TestBackend::new(140, 10)).unwrap();
        terminal
            .draw(|f| super::super::roster::render(f, f.area(), &view))
            .unwrap();
        let text = format!("{}", terminal.backend());
        let row = text
            .lines()
            .find(|l| l.contains(&run.workers[i].id))
            .unwrap();
        assert!(
            row.contains("? running") && row.contains("host box not answering"),
            "{row}"
        );
        insta::assert_snapshot!(terminal.backend());
    }
}
