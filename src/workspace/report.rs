//! The `## Branches` section of `report.md`: each worker's branch with its commits and
//! diffstat, and the integration branch with how to take it.

use std::fmt::Write as _;

use super::git::Git;
use crate::domain::{DiffStat, RunState};

/// Commits listed per branch in the report; the rest are counted.
pub const REPORT_COMMITS: usize = 20;

fn commits(repo: &std::path::Path, base: &str, branch: &str) -> Vec<String> {
    Git::new(repo)
        .run(&["log", "--format=%h %s", &format!("{base}..{branch}"), "--"])
        .map(|t| t.lines().map(str::to_string).collect())
        .unwrap_or_default()
}

fn stat(d: Option<DiffStat>) -> String {
    d.map(|d| d.to_string())
        .unwrap_or_else(|| "no change".into())
}

/// The section, or an empty string for a run without worktrees. Reads the branches' logs
/// (one `git log` per branch).
pub fn section(state: &RunState) -> String {
    let Some(ws) = &state.workspace else {
        return String::new();
    };
    let mut out = String::from("\n## Branches\n\n");
    // Writing into a String cannot fail.
    let _ = writeln!(
        out,
        "Base: `{}` ({}{}).\n",
        &ws.base[..ws.base.len().min(12)],
        ws.base_ref,
        if ws.uncommitted {
            ", with the uncommitted changes at run start"
        } else {
            ""
        }
    );
    for (id, w) in &ws.workers {
        let list = commits(&ws.repo, ws.own_base(id), &w.branch);
        // Writing into a String cannot fail.
        let _ = writeln!(
            out,
            "- **{id}**: `{}` — {} commit{}, {}",
            w.branch,
            list.len(),
            if list.len() == 1 { "" } else { "s" },
            stat(w.diff)
        );
        for c in list.iter().take(REPORT_COMMITS) {
            // Writing into a String cannot fail.
            let _ = writeln!(out, "  - {c}");
        }
    }
    match &ws.integration {
        Some(i) => {
            // Writing into a String cannot fail.
            let _ = writeln!(
                out,
                "\nIntegration: `{}` — merged {}; {}{}. Take it with `crewmux merge {}` (`--dry-run` shows the diffstat).",
                i.branch,
                if i.merged.is_empty() {
                    "nothing".to_string()
                } else {
                    i.merged.join(", ")
                },
                stat(i.diff),
                i.conflict
                    .as_ref()
                    .map(|c| format!("; unresolved conflict in {} ({})", c.files.join(", "), c.theirs))
                    .unwrap_or_default(),
                state.run_id
            );
        }
        None => {
            // Writing into a String cannot fail.
            let _ = writeln!(out, "\nIntegration: not made (no worker reached it).");
        }
    }
    out
}
