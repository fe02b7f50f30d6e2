//! The dashboard's `m`: take the run's result into the user's branch with the same code as
//! `crewmux merge` ([`crate::workspace::take`]), after a confirmation that shows the target
//! branch and the diffstat, with `y` to merge keeping the run's commits or `s` to squash
//! them into one (`crewmux merge --squash`). Offered once the council is `ok` or `attention`; a refusal is
//! the same one line `crewmux merge` prints, shown as the notice.

use ratatui::layout::Rect;
use ratatui::style::{Color, Style, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Clear, Paragraph};
use ratatui::Frame;

use super::model::Model;
use super::state::{Confirm, View};
use super::update::UiEffect;
use crate::domain::{CouncilStatus, RunState};
use crate::workspace::take::{take, TakeOptions, TakeOutcome};

/// Diffstat lines shown in the dialog; a longer stat keeps its summary line.
const STAT_LINES: usize = 12;

/// What `y` would merge: the branch, the user's branch and `git diff --stat` of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergeOffer {
    pub branch: String,
    pub into: String,
    pub stat: Vec<String>,
    /// Commits on `branch` that `into` lacks (what `y` keeps and `s` squashes into one).
    pub commits: u32,
}

/// Whether `m` may offer a merge now (pure): the run has worktrees and its council is `ok`
/// or `attention`; else the notice that says why not.
///
/// # Errors
/// The one-line reason, for the notice.
pub fn can_offer(run: &RunState) -> Result<(), String> {
    if run.workspace.is_none() {
        return Err(
            "this run worked in your project directory: its changes are already in your tree"
                .into(),
        );
    }
    match run.council.status {
        CouncilStatus::Ok | CouncilStatus::Attention => Ok(()),
        // The way out is on the command line, where --force is typed on purpose.
        CouncilStatus::Blocked => Err(format!(
            "m merges once the council is ok or attention (it is blocked; the Council tab says why): crewmux merge {} --force takes it anyway",
            run.run_id
        )),
        s => Err(format!(
            "m merges once the council is ok or attention (it is {})",
            s.as_str()
        )),
    }
}

impl Model {
    /// Carry out [`UiEffect::OfferMerge`] (a dry run: open the dialog, or say why not) or
    /// [`UiEffect::Merge`] (merge and say what happened). Git runs here, in the app loop,
    /// never in `handle`.
    pub fn carry_out_merge(&mut self, effect: &UiEffect) {
        match effect {
            UiEffect::OfferMerge => self.offer_merge(),
            UiEffect::Merge { squash } => {
                self.ui.merge_offer = None;
                let opts = TakeOptions {
                    squash: *squash,
                    ..TakeOptions::default()
                };
                self.ui.notice = Some(match take(&self.run, &self.run_dir, &opts) {
                    Ok(TakeOutcome::Merged {
                        branch, into, stat, ..
                    }) => format!(
                        "merged {branch} into {into}{}: {}",
                        if *squash {
                            " as one squashed commit"
                        } else {
                            ""
                        },
                        stat.lines().last().unwrap_or("no change").trim()
                    ),
                    Ok(other) => other.lines().join("; "),
                    Err(e) => e.to_string(),
                });
            }
            _ => {}
        }
    }

    fn offer_merge(&mut self) {
        let dry = TakeOptions {
            dry_run: true,
            ..TakeOptions::default()
        };
        match take(&self.run, &self.run_dir, &dry) {
            Ok(TakeOutcome::WouldMerge { branch, into, stat }) if stat.trim().is_empty() => {
                self.ui.notice = Some(format!(
                    "nothing to merge: {branch} has no change that {into} lacks"
                ));
            }
            Ok(TakeOutcome::WouldMerge { branch, into, stat }) => {
                let commits = self
                    .run
                    .workspace
                    .as_ref()
                    .and_then(|ws| {
                        crate::workspace::commit::commit_count(&ws.repo, &into, &branch).ok()
                    })
                    .unwrap_or(0);
                self.ui.merge_offer = Some(MergeOffer {
                    branch,
                    into,
                    stat: stat.lines().map(str::to_string).collect(),
                    commits,
                });
                self.ui.confirm = Some(Confirm::Merge);
            }
            Ok(other) => self.ui.notice = Some(other.lines().join("; ")),
            Err(e) => self.ui.notice = Some(e.to_string()),
        }
    }
}

/// Draw the merge confirmation centred over `area`.
pub fn render_confirm(frame: &mut Frame, area: Rect, view: &View) {
    let Some(offer) = &view.ui.merge_offer else {
        return;
    };
    let key = |k: &'static str| Span::styled(k, Style::default().fg(Color::Cyan).bold());
    let mut text = vec![
        Line::from(vec![
            Span::raw("into your branch "),
            Span::raw(offer.into.clone()).bold(),
            Span::raw(" (checked out, clean) from "),
            Span::raw(offer.branch.clone()).bold(),
        ]),
        Line::raw(""),
    ];
    let stat = &offer.stat;
    let shown = if stat.len() > STAT_LINES {
        let mut s: Vec<&String> = stat.iter().take(STAT_LINES - 2).collect();
        s.push(stat.last().unwrap_or(&offer.into));
        s
    } else {
        stat.iter().collect()
    };
    if stat.len() > STAT_LINES {
        text.extend(
            shown[..shown.len() - 1]
                .iter()
                .map(|l| Line::raw((*l).clone())),
        );
        text.push(Line::styled(
            format!("  … {} more files", stat.len() - STAT_LINES + 1),
            Style::default().fg(Color::Gray),
        ));
        text.push(Line::raw(shown[shown.len() - 1].clone()));
    } else {
        text.extend(shown.iter().map(|l| Line::raw((*l).clone())));
    }
    text.push(Line::raw(""));
    let commits = match offer.commits {
        1 => "its 1 commit".to_string(),
        n => format!("its {n} commits"),
    };
    text.push(
        Line::from(vec![
            key("y"),
            Span::raw(format!(" merge, keeping {commits}    ")),
            key("s"),
            Span::raw(" squash into one commit"),
        ])
        .centered(),
    );
    text.push(
        Line::from(vec![
            key("n"),
            Span::raw("/"),
            key("Esc"),
            Span::raw(" not now (crewmux merge [--squash] does it later)"),
        ])
        .centered(),
    );
    let width = text
        .iter()
        .map(Line::width)
        .max()
        .unwrap_or(40)
        .clamp(50, 100) as u16
        + 4;
    let height = text.len() as u16 + 2;
    let popup = Rect {
        x: area.x + area.width.saturating_sub(width) / 2,
        y: area.y + area.height.saturating_sub(height) / 2,
        width: width.min(area.width),
        height: height.min(area.height),
    };
    let block = Block::bordered()
        .border_type(BorderType::Double)
        .border_style(Style::default().fg(Color::Green))
        .title(Line::from(" Merge the run's result? ").bold().green());
    frame.render_widget(Clear, popup);
    frame.render_widget(
        Paragraph::new(text).block(block.padding(ratatui::widgets::Padding::horizontal(1))),
        popup,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::RunWorkspace;
    use crate::tui::fixtures;
    use crate::tui::state::UiState;
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    fn workspace() -> RunWorkspace {
        RunWorkspace {
            repo: "/p".into(),
            prefix: Default::default(),
            base: "0123456789abcdef".into(),
            base_ref: "HEAD".into(),
            user_branch: Some("main".into()),
            uncommitted: false,
            root: "/p/.crewmux/worktrees/r".into(),
            copy: vec![],
            setup: None,
            workers: Default::default(),
            pending: vec![],
            integration: None,
            integrated_round: None,
        }
    }

    #[test]
    fn the_confirmation_shows_the_target_branch_and_the_diffstat() {
        let run = fixtures::done_run();
        let ui = UiState {
            confirm: Some(Confirm::Merge),
            merge_offer: Some(MergeOffer {
                branch: "crewmux/r/integration".into(),
                into: "main".into(),
                stat: vec![
                    " src/limit.rs | 3 ++-".into(),
                    " src/api.rs   | 9 +++++++++".into(),
                    " 2 files changed, 11 insertions(+), 1 deletion(-)".into(),
                ],
                commits: 7,
            }),
            ..Default::default()
        };
        let view = crate::tui::fixtures::view(&run, &ui, &[]);
        let mut terminal = Terminal::new(TestBackend::new(80, 14)).unwrap();
        terminal
            .draw(|f| render_confirm(f, f.area(), &view))
            .unwrap();
        insta::assert_snapshot!(terminal.backend().clone());
    }

    #[test]
    fn m_is_offered_only_with_worktrees_and_an_ok_or_attention_council() {
        let mut run = fixtures::done_run();
        assert!(can_offer(&run)
            .unwrap_err()
            .contains("already in your tree"));
        run.workspace = Some(workspace());
        for (status, ok) in [
            (CouncilStatus::Ok, true),
            (CouncilStatus::Attention, true),
            (CouncilStatus::Blocked, false),
            (CouncilStatus::Pending, false),
        ] {
            run.council.status = status;
            assert_eq!(can_offer(&run).is_ok(), ok, "{status:?}");
        }
        run.council.status = CouncilStatus::Blocked;
        assert_eq!(
            can_offer(&run).unwrap_err(),
            format!("m merges once the council is ok or attention (it is blocked; the Council tab says why): crewmux merge {} --force takes it anyway", run.run_id)
        );
    }
}
