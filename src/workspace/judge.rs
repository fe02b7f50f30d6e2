//! What the council needs from git: each worker's diff and the integration tree.

use std::path::PathBuf;

use super::git::Git;
use crate::council::diff_rules::{amend, parse_diff, DiffInput};
use crate::domain::{CriticVerdict, RunState, WorkerKind};

/// Largest diff read for the critics, bytes; a larger one is judged on its first part.
pub const DIFF_READ_MAX: usize = 4 << 20;

/// The tree the council checks cited paths against: the integration worktree (what the
/// user would get) when there is one, else the project directory.
pub fn council_root(state: &RunState) -> PathBuf {
    state
        .workspace
        .as_ref()
        .and_then(|ws| ws.integration.as_ref().map(|i| ws.cwd_in(&i.path)))
        .unwrap_or_else(|| state.project_dir.clone())
}

/// Amend the deterministic critics' verdicts with the diff rules
/// (`crate::council::diff_rules`): one `git diff -U0` per worker with a worktree (from its
/// own base, so a downstream is not charged with its upstreams' work), and one
/// `git grep -F` per backticked symbol in the integration tree. A run without worktrees
/// is left as it is.
pub fn amend_verdicts(state: &RunState, verdicts: &mut [CriticVerdict]) {
    let Some(ws) = &state.workspace else {
        return;
    };
    let git = Git::new(&ws.repo);
    let inputs: Vec<DiffInput> = state
        .workers
        .iter()
        .filter(|w| matches!(w.kind, WorkerKind::Worker | WorkerKind::Fixer))
        .map(|w| DiffInput {
            id: w.id.clone(),
            result_text: w
                .result
                .as_deref()
                .and_then(|p| crate::launch::tail::read_document(p).ok()),
            change: ws.workers.get(&w.id).and_then(|x| {
                let mut text = git
                    .run(&[
                        "diff",
                        "-U0",
                        "--no-renames",
                        "--no-color",
                        ws.own_base(&w.id),
                        &x.branch,
                    ])
                    .ok()?;
                if text.len() > DIFF_READ_MAX {
                    let mut cut = DIFF_READ_MAX;
                    while !text.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    text.truncate(cut);
                }
                Some(parse_diff(&text))
            }),
        })
        .collect();
    let tree = ws.integration.as_ref().map(|i| i.path.clone());
    let exists = |sym: &str| -> bool {
        let Some(t) = &tree else { return true };
        Git::new(t)
            .output(&["grep", "-q", "-F", "-e", sym])
            .map(|o| o.ok())
            .unwrap_or(true)
    };
    amend(verdicts, &inputs, &exists);
}
