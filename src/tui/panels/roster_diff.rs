//! The roster's `change` column in a run with worktrees: each worker's
//! `+added −removed · N files` against the run's base (green/red counts), `shared` for a
//! worker without a worktree, empty before the first figure (and before its worktree is
//! made).

use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Cell;

use crate::domain::{RunState, WorkerKind, WorkerState};

/// The cell of `w`.
pub fn cell(run: &RunState, w: &WorkerState) -> Cell<'static> {
    let Some(ws) = &run.workspace else {
        return Cell::from("");
    };
    let diff = match w.kind {
        WorkerKind::Worker => match ws.workers.get(&w.id) {
            Some(x) => x.diff,
            // Its worktree is made when the run's first worker launches.
            None if ws.pending.contains(&w.id) => None,
            None => return Cell::from(Span::styled("shared", Style::default().fg(Color::Gray))),
        },
        _ => None,
    };
    let Some(d) = diff else {
        return Cell::from("");
    };
    Cell::from(Line::from(vec![
        Span::styled(format!("+{}", d.added), Style::default().fg(Color::Green)),
        Span::raw(" "),
        Span::styled(format!("−{}", d.removed), Style::default().fg(Color::Red)),
        Span::styled(
            format!(" · {} file{}", d.files, if d.files == 1 { "" } else { "s" }),
            Style::default().fg(Color::Gray),
        ),
    ]))
}

#[cfg(test)]
mod tests {
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    use crate::domain::{DiffStat, RunWorkspace, WorkerWorkspace};
    use crate::tui::{fixtures, UiState};

    #[test]
    fn roster_with_the_change_column() {
        let mut run = fixtures::crazy_run();
        let mut workers = std::collections::BTreeMap::new();
        for (i, w) in run.workers.iter().take(3).enumerate() {
            workers.insert(
                w.id.clone(),
                WorkerWorkspace {
                    path: format!("/p/.crewmux/worktrees/r/{}", w.id).into(),
                    branch: format!("crewmux/r/{}", w.id),
                    diff: (i < 2).then_some(DiffStat {
                        added: 12 * (i as u64 + 1),
                        removed: 3,
                        files: i as u64 + 1,
                    }),
                    commits: 1,
                    head: None,
                    start: None,
                    upstreams: Default::default(),
                    host: None,
                },
            );
        }
        run.workspace = Some(RunWorkspace {
            repo: "/p".into(),
            prefix: Default::default(),
            base: "0123456789abcdef".into(),
            base_ref: "HEAD".into(),
            user_branch: Some("main".into()),
            uncommitted: false,
            root: "/p/.crewmux/worktrees/r".into(),
            copy: vec![],
            setup: None,
            workers,
            // Not launched yet: its worktree is still to be made, it is not shared.
            pending: vec!["testing".into()],
            integration: None,
            integrated_round: None,
        });
        let ui = UiState::default();
        let view = crate::tui::fixtures::view(&run, &ui, &[]);
        let mut terminal = Terminal::new(TestBackend::new(140, 10)).unwrap();
        terminal
            .draw(|f| super::super::roster::render(f, f.area(), &view))
            .unwrap();
        insta::assert_snapshot!(terminal.backend().clone());
    }
}
