//! Tokens and cost in the dashboard, as each worker's CLI reported them (summed over its
//! attempts, from the attempts' `usage.json`; `providers::output::run_usage`): the roster's
//! `tokens` column and the run's total in the header. Both appear only once some worker
//! has reported usage. The files are read once per draw; they are a few small files and
//! the dashboard draws about once a second.

use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Cell;

use crate::providers::output::{dollars, tokens, Usage};

/// Width of the `tokens` column, cells.
pub const WIDTH: u16 = 16;

/// `12.3k/4.1k $0.42`: tokens in/out, and the cost when the CLI reports one.
pub fn cell(u: Option<&Usage>) -> Cell<'static> {
    let Some(u) = u else {
        return Cell::from("");
    };
    let mut spans = vec![Span::raw(format!(
        "{}/{}",
        tokens(u.input_tokens),
        tokens(u.output_tokens)
    ))];
    if let Some(c) = u.cost_usd {
        spans.push(Span::styled(
            format!(" {}", dollars(c)),
            Style::default().fg(Color::Yellow),
        ));
    }
    Cell::from(Line::from(spans))
}

/// The header's `tokens 12.3k in / 4.1k out, $0.42 ` (empty when nothing reported usage).
pub fn header_spans(total: Option<&Usage>) -> Vec<Span<'static>> {
    let Some(u) = total else {
        return Vec::new();
    };
    vec![
        Span::styled("tokens ", Style::default().fg(Color::DarkGray)),
        Span::raw(u.short()),
        Span::raw("  "),
    ]
}

#[cfg(test)]
mod tests {
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    use crate::providers::output::{Usage, USAGE_FILE};
    use crate::tui::panels::{header, roster};
    use crate::tui::{fixtures, UiState, View};

    /// The crazy run with usage files for its first two workers (the second over two
    /// attempts, one with a cost) under a temporary run directory.
    fn run_with_usage() -> (tempfile::TempDir, crate::domain::RunState) {
        let dir = tempfile::tempdir().unwrap();
        let mut run = fixtures::crazy_run();
        run.run_dir = dir.path().to_path_buf();
        let write = |id: &str, n: u32, u: Usage| {
            let d = dir.path().join(format!("workers/{id}/attempt-{n}"));
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join(USAGE_FILE), serde_json::to_vec(&u).unwrap()).unwrap();
        };
        let first = run.workers[0].id.clone();
        write(
            &first,
            run.workers[0].attempt.max(1),
            Usage {
                input_tokens: 12_345,
                output_tokens: 678,
                cost_usd: None,
            },
        );
        let second = run.workers[1].id.clone();
        run.workers[1].attempt = 2;
        for n in 1..=2 {
            write(
                &second,
                n,
                Usage {
                    input_tokens: 1_000,
                    output_tokens: 28,
                    cost_usd: Some(0.0023),
                },
            );
        }
        (dir, run)
    }

    fn draw(
        panel: fn(&mut ratatui::Frame, ratatui::layout::Rect, &View),
        w: u16,
        h: u16,
    ) -> TestBackend {
        let (_dir, run) = run_with_usage();
        let ui = UiState::default();
        let view = crate::tui::fixtures::view(&run, &ui, &[]);
        let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
        terminal.draw(|f| panel(f, f.area(), &view)).unwrap();
        terminal.backend().clone()
    }

    #[test]
    fn roster_with_the_tokens_column() {
        insta::assert_snapshot!(draw(roster::render, 140, 8));
    }

    #[test]
    fn a_narrow_roster_keeps_the_tokens_column_without_squeezing_status() {
        insta::assert_snapshot!(draw(roster::render, 80, 8));
    }

    #[test]
    fn header_with_the_runs_tokens_and_cost() {
        insta::assert_snapshot!(draw(header::render, 120, 3));
    }
}
