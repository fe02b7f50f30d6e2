//! The Diff tab's source: a worker's change in its git worktree against its own base (the
//! run's base, or the commit with its upstreams' work merged in: `RunWorkspace::own_base`;
//! committed and not, as `git diff <base>` in the worktree shows it, plus the names of new
//! untracked files), coloured by line kind. Read by the app loop, never by draw.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;

use super::tabs::{Doc, MAX_DOC_BYTES};
use crate::domain::{RunState, WorkerState};
use crate::workspace::git::Git;

/// The key a diff was taken at: a new one is taken when the worker, its attempt or its
/// status changes.
pub fn key(w: &WorkerState) -> String {
    format!("{}#{}#{}", w.id, w.attempt, w.status)
}

/// Take `w`'s diff now. A run without worktrees, or a worker without one, gives a one-line
/// explanation instead; a git failure gives its message.
pub fn load(run: &RunState, w: &WorkerState) -> Doc {
    let (path, lines) = match run
        .workspace
        .as_ref()
        .and_then(|ws| ws.workers.get(&w.id).map(|ww| (ws, ww)))
    {
        None => (
            run.project_dir.clone(),
            vec![Line::from(if run.workspace.is_none() {
                no_worktrees(&run.project_dir)
            } else {
                format!(
                    "{} has no worktree (it works in the project directory)",
                    w.id
                )
            })],
        ),
        Some((ws, ww)) if !ww.path.exists() => (ww.path.clone(), vec![cleaned(run, ws, ww)]),
        Some((ws, ww)) => {
            let mut lines = diff_lines(&Git::new(&ww.path), ws.own_base(&w.id));
            // A worker on an SSH host writes its worktree there; this one has its branch as
            // last fetched back (`crate::hosts::git`).
            if let Some(host) = ww
                .host
                .as_deref()
                .filter(|h| w.status.is_live() && w.host.as_deref() == Some(*h))
            {
                lines.insert(
                    0,
                    Line::styled(
                        format!(
                            "{} works on host {host}: its changes come here when its attempt ends",
                            w.id
                        ),
                        Style::default().fg(Color::Yellow),
                    ),
                );
            }
            (ww.path.clone(), lines)
        }
    };
    Doc {
        path,
        stamp: None,
        lines,
        diff_of: Some(key(w)),
        markdown: None,
    }
}

/// The line for a worker whose worktree is gone: `crewmux clean` removed it (and what is
/// left, [`crate::workspace::gone`]), or it was deleted by hand while its branch stays.
fn cleaned(
    run: &RunState,
    ws: &crate::domain::RunWorkspace,
    ww: &crate::domain::WorkerWorkspace,
) -> Line<'static> {
    use crate::workspace::gone;
    if !gone::is_gone(&ws.repo, &ww.branch).unwrap_or(true) {
        return Line::from(format!(
            "the worktree {} was deleted; its branch {} stays: `crewmux diff {} --worker …` shows its change",
            ww.path.display(),
            ww.branch,
            run.run_id
        ));
    }
    let run_dir = crate::store::runs_root(&run.project_dir).join(&run.run_id);
    let kept = gone::kept_merge(&ws.repo, &run_dir, &ww.branch).unwrap_or(None);
    Line::from(gone::cleaned_line(&run.run_id, &ww.branch, kept.as_ref()))
}

/// Why a run has no worktrees, said as the one of the two it is: the project is not in a
/// git repository (`crate::workspace::plan` then shares it), or it is and the run's workers
/// share the project directory by their team's choice (`[workspace] mode = "shared"`; the
/// demo's simulated agents change no files, so it shares too).
fn no_worktrees(project: &std::path::Path) -> String {
    let in_git = Git::new(project)
        .output(&["rev-parse", "--is-inside-work-tree"])
        .is_ok_and(|o| o.ok() && o.stdout.trim() == "true");
    if in_git {
        "this run's workers share the project directory ([workspace] mode = \"shared\"), so \
         no worker has a diff of its own: `git diff` in the project shows what changed"
            .to_string()
    } else {
        format!(
            "{} is not a git repository, so its workers share it and have no diff: `git init` \
             and a first commit give each worker a worktree of its own",
            project.display()
        )
    }
}

/// How the diff names a new file that is not committed yet.
const NEW_FILE: &str = "new file, not yet committed: ";

fn diff_lines(git: &Git, base: &str) -> Vec<Line<'static>> {
    let text = match git.run(&["diff", "--no-color", "--no-renames", base]) {
        Ok(t) => t,
        Err(e) => return vec![Line::from(format!("git diff failed: {e}"))],
    };
    let untracked = git
        .run(&["ls-files", "--others", "--exclude-standard"])
        .unwrap_or_default();
    let mut lines = colour(&text);
    for f in untracked.lines().filter(|f| !f.is_empty()) {
        lines.push(Line::styled(
            format!("{NEW_FILE}{f}"),
            Style::default().fg(Color::Green),
        ));
    }
    if lines.is_empty() {
        lines.push(Line::from("no change yet against the run's base"));
    }
    lines
}

/// Colour a unified diff by line kind: file headers bold, hunks cyan, additions green,
/// deletions red. At most [`MAX_DOC_BYTES`] of it; a longer diff says where it was cut.
pub fn colour(text: &str) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    let mut bytes = 0usize;
    for l in text.lines() {
        bytes += l.len() + 1;
        if bytes as u64 > MAX_DOC_BYTES {
            out.push(Line::from(format!(
                "… cut at {} KiB: `crewmux diff --worker …` shows all of it",
                MAX_DOC_BYTES / 1024
            )));
            break;
        }
        let style = if l.starts_with("diff --git") || l.starts_with("+++") || l.starts_with("---") {
            Style::default().add_modifier(Modifier::BOLD)
        } else if l.starts_with("@@") {
            Style::default().fg(Color::Cyan)
        } else if l.starts_with('+') {
            Style::default().fg(Color::Green)
        } else if l.starts_with('-') {
            Style::default().fg(Color::Red)
        } else if l.starts_with("index ") || l.starts_with("new file") {
            Style::default().fg(Color::DarkGray)
        } else {
            Style::default()
        };
        out.push(Line::styled(l.to_string(), style));
    }
    out
}

/// The lines of a diff where a file starts: each `diff --git` header and each line naming
/// a new untracked file.
pub fn file_starts(lines: &[Line<'_>]) -> Vec<usize> {
    lines
        .iter()
        .enumerate()
        .filter(|(_, l)| {
            let text: String = l.spans.iter().map(|s| s.content.as_ref()).collect();
            text.starts_with("diff --git ") || text.starts_with(NEW_FILE)
        })
        .map(|(i, _)| i)
        .collect()
}

/// `}` (`forward`) or `{`: scroll the diff so the next (previous) file starts at the top;
/// at the last (first) file, a notice says so.
pub fn jump_file(ui: &mut super::state::UiState, forward: bool) {
    let here = ui.doc_scroll;
    let to = if forward {
        ui.doc_files.iter().copied().find(|&i| i > here)
    } else {
        ui.doc_files.iter().copied().rev().find(|&i| i < here)
    };
    match to {
        Some(i) => {
            let n = ui.doc_files.iter().position(|&f| f == i).unwrap_or(0);
            ui.doc_scroll = i;
            ui.notice = Some(format!("file {} of {}", n + 1, ui.doc_files.len()));
        }
        None if ui.doc_files.is_empty() => ui.notice = Some("no file in this diff".into()),
        None if forward => ui.notice = Some("this is the last file of the diff".into()),
        None => ui.notice = Some("this is the first file of the diff".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::fixtures;

    #[test]
    fn braces_jump_between_the_files_of_a_diff() {
        let lines = colour(
            "diff --git a/x b/x\n@@ -1 +1 @@\n-a\n+b\ndiff --git a/y b/y\n@@ -1 +1 @@\n-c\n+d\n",
        );
        let mut lines = lines;
        lines.push(Line::from(format!("{NEW_FILE}z.rs")));
        let mut ui = super::super::state::UiState {
            doc_files: file_starts(&lines),
            ..Default::default()
        };
        assert_eq!(ui.doc_files, vec![0, 4, 8]);
        jump_file(&mut ui, true);
        assert_eq!(ui.doc_scroll, 4);
        assert_eq!(ui.notice.as_deref(), Some("file 2 of 3"));
        jump_file(&mut ui, true);
        jump_file(&mut ui, true);
        assert_eq!(ui.doc_scroll, 8);
        assert_eq!(
            ui.notice.as_deref(),
            Some("this is the last file of the diff")
        );
        ui.doc_scroll = 6;
        jump_file(&mut ui, false);
        assert_eq!(ui.doc_scroll, 4);
        jump_file(&mut ui, false);
        jump_file(&mut ui, false);
        assert_eq!(ui.doc_scroll, 0);
        assert_eq!(
            ui.notice.as_deref(),
            Some("this is the first file of the diff")
        );
    }

    #[test]
    fn lines_are_coloured_by_kind() {
        let lines = colour("diff --git a/x b/x\n@@ -1 +1 @@\n-old\n+new\n same\n");
        assert_eq!(lines.len(), 5);
        assert_eq!(lines[2].style.fg, Some(Color::Red));
        assert_eq!(lines[3].style.fg, Some(Color::Green));
        assert_eq!(lines[1].style.fg, Some(Color::Cyan));
        assert_eq!(lines[4].style, Style::default());
    }

    #[test]
    fn a_run_without_worktrees_says_which_of_the_two_reasons_it_is() {
        let mut run = fixtures::done_run();
        let plain = tempfile::tempdir().unwrap();
        run.project_dir = plain.path().into();
        let d = load(&run, &run.workers[0]);
        let said = d.lines[0].to_string();
        assert!(
            said.contains("is not a git repository") && said.contains("git init"),
            "{said}"
        );
        assert!(!said.contains(" or "), "one reason, not two: {said}");
        assert_eq!(d.diff_of.as_deref(), Some(key(&run.workers[0]).as_str()));

        let repo = tempfile::tempdir().unwrap();
        let init = std::process::Command::new("git")
            .args(["init", "-q"])
            .current_dir(repo.path())
            .status()
            .unwrap();
        assert!(init.success());
        run.project_dir = repo.path().into();
        let said = load(&run, &run.workers[0]).lines[0].to_string();
        assert!(
            said.starts_with(
                "this run's workers share the project directory ([workspace] mode = \"shared\")"
            ),
            "{said}"
        );
    }

    #[test]
    fn a_worker_running_on_a_host_says_its_changes_come_when_its_attempt_ends() {
        use crate::domain::{RunWorkspace, WorkerStatus, WorkerWorkspace};
        let mut run = fixtures::done_run();
        let id = run.workers[0].id.clone();
        let tmp = tempfile::tempdir().unwrap();
        run.workspace = Some(RunWorkspace {
            repo: tmp.path().into(),
            prefix: Default::default(),
            base: "0123456789abcdef".into(),
            base_ref: "HEAD".into(),
            user_branch: None,
            uncommitted: false,
            root: tmp.path().into(),
            copy: vec![],
            setup: None,
            workers: [(
                id.clone(),
                WorkerWorkspace {
                    path: tmp.path().into(),
                    branch: format!("crewmux/r/{id}"),
                    diff: None,
                    commits: 0,
                    head: None,
                    start: None,
                    upstreams: Default::default(),
                    host: Some("box".into()),
                },
            )]
            .into(),
            pending: vec![],
            integration: None,
            integrated_round: None,
        });
        let mut w = run.workers[0].clone();
        w.host = Some("box".into());
        w.status = WorkerStatus::Running;
        let first = |w: &WorkerState| load(&run, w).lines[0].to_string();
        assert_eq!(
            first(&w),
            format!("{id} works on host box: its changes come here when its attempt ends")
        );
        w.status = WorkerStatus::Completed;
        assert!(!first(&w).contains("works on host"), "{}", first(&w));
    }
}
