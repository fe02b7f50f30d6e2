//! Results handed downstream: the prompt of a worker with `after` carries each upstream's
//! status, result path and an excerpt of its result, cut so the packaged prompt stays
//! within its cap (`--prompt-max-chars`); every cut is said in the prompt, with the path
//! where the whole result is.

use std::path::Path;

use crate::domain::{RunState, WorkerState};

/// Characters kept for the packaged prompt's other sections (persona, project, memory…)
/// when sizing the excerpts.
pub const PROMPT_RESERVE_CHARS: usize = 600;
/// An upstream's excerpt is never longer than this, characters.
pub const MAX_EXCERPT_CHARS: usize = 6000;

/// Characters kept for the line that says an excerpt was cut (one per quoted result).
const CUT_NOTE_CHARS: usize = 120;

/// The section of `w`'s task that quotes its upstreams' results, or an empty string when
/// it waits for none. `task_chars` is the length of the task before this section;
/// `max_chars` the prompt cap. Each upstream gets a heading (status, reason, result path);
/// the excerpts share equally what the cap leaves after the task, the other prompt
/// sections, the headings and a cut note each, so the packaged prompt stays within the cap.
/// An unreadable or missing result file is said as such.
pub fn upstream_results(
    state: &RunState,
    w: &WorkerState,
    task_chars: usize,
    max_chars: usize,
) -> String {
    const INTRO: &str = "\n\nResults of the workers this one waited for:\n";
    if w.flow.after.is_empty() {
        return String::new();
    }
    let upstreams: Vec<(String, Option<&Path>)> = w
        .flow
        .after
        .iter()
        .filter_map(|id| state.worker(id))
        .map(|u| {
            let reason = u
                .reason
                .as_deref()
                .map(|r| format!(": {r}"))
                .unwrap_or_default();
            let mut head = format!("\n### {} ({}) — {}{reason}\n", u.id, u.role, u.status);
            match u.result.as_deref() {
                Some(path) => head.push_str(&format!("Result: {}\n", path.display())),
                None => head.push_str("(no result file)\n"),
            }
            (head, u.result.as_deref())
        })
        .collect();
    let quoted = upstreams.iter().filter(|(_, p)| p.is_some()).count().max(1);
    let fixed = INTRO.chars().count()
        + upstreams
            .iter()
            .map(|(h, _)| h.chars().count())
            .sum::<usize>()
        + quoted * CUT_NOTE_CHARS;
    let room = max_chars.saturating_sub(task_chars + PROMPT_RESERVE_CHARS + fixed);
    let each = (room / quoted).min(MAX_EXCERPT_CHARS);
    let mut out = String::from(INTRO);
    for (head, path) in upstreams {
        out.push_str(&head);
        let Some(path) = path else {
            continue;
        };
        match crate::launch::tail::read_document(path) {
            Ok(text) => out.push_str(&excerpt(&text, each)),
            Err(e) => out.push_str(&format!("(the result file cannot be read: {e})\n")),
        }
    }
    out
}

/// The first `keep` characters of `text` (whole when it fits), and when cut, a line saying
/// how much was kept of how much.
fn excerpt(text: &str, keep: usize) -> String {
    let total = text.chars().count();
    if total <= keep {
        let mut s = text.trim_end().to_string();
        s.push('\n');
        return s;
    }
    let cut: String = text.chars().take(keep).collect();
    format!(
        "{}\n[excerpt cut by the prompt cap: the first {keep} of {total} characters; read the file above for the rest]\n",
        cut.trim_end()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{WorkerKind, WorkerStatus};
    use crate::engine::stages_public::blank_worker;

    fn w(id: &str) -> WorkerState {
        blank_worker(
            id.into(),
            "architect".into(),
            "sim".into(),
            WorkerKind::Worker,
            crate::domain::Stage::TeamExec,
            0,
        )
    }

    fn state(workers: Vec<WorkerState>) -> RunState {
        let mut s: RunState = serde_json::from_value(serde_json::json!({
            "schema_version": 1, "run_id": "r", "problem": "p", "team": "t",
            "project_dir": "/p", "run_dir": "/p/r", "stage": "team-exec", "status": "running",
            "backend": "process", "tmux_socket": "s", "session": "s", "parallel": 1, "fix_round": 0, "max_fix_rounds": 1, "council": serde_json::to_value(crate::domain::Council::default()).unwrap(), "council_history": [], "clarification": serde_json::to_value(crate::domain::ClarificationState::default()).unwrap(),
            "workers": [], "dispatches": [], "created_at": "2026-01-01T00:00:00Z",
            "updated_at": "2026-01-01T00:00:00Z"
        }))
        .expect("a minimal state");
        s.workers = workers;
        s
    }

    #[test]
    fn each_upstream_result_is_quoted_with_its_path_and_the_cut_said() {
        let dir = tempfile::tempdir().unwrap();
        let short = dir.path().join("a.md");
        std::fs::write(&short, "Plan: split the parser.\n").unwrap();
        let long = dir.path().join("b.md");
        std::fs::write(&long, "=".repeat(5000)).unwrap();
        let mut a = w("a");
        (a.status, a.result) = (WorkerStatus::Completed, Some(short.clone()));
        let mut b = w("b");
        (b.status, b.result) = (WorkerStatus::Completed, Some(long.clone()));
        let mut c = w("c");
        c.status = WorkerStatus::Failed;
        c.reason = Some("exit code 2".into());
        let mut d = w("d");
        d.flow.after = vec!["a".into(), "b".into(), "c".into()];
        let s = state(vec![a, b, c, d.clone()]);
        let text = upstream_results(&s, &d, 400, 4000);
        assert!(text.contains("### a (architect) — completed\n"), "{text}");
        assert!(text.contains(&format!(
            "Result: {}\nPlan: split the parser.\n",
            short.display()
        )));
        // The excerpt is cut to what the cap leaves, and says so with the size it kept.
        let kept = text.matches('=').count();
        assert!((500..5000).contains(&kept), "{text}");
        assert!(
            text.contains(&format!(
                "Result: {}\n{}\n[excerpt cut by the prompt cap: the first {kept} of 5000 characters",
                long.display(),
                "=".repeat(kept)
            )),
            "{text}"
        );
        assert!(
            text.contains("### c (architect) — failed: exit code 2\n(no result file)"),
            "{text}"
        );
        // Headings, excerpts and cut notes together leave the room the other sections need.
        assert!(
            text.chars().count() <= 4000 - 400 - PROMPT_RESERVE_CHARS,
            "{text}"
        );
        assert_eq!(upstream_results(&s, &w("e"), 0, 4000), "");
    }
}
