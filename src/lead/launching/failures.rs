//! The recent failures a packaged prompt lists, for a driver that launches many attempts:
//! the project's other runs are read from disk once, at the first launch, and this run's
//! own failures come from its state in memory. (Reading the history at every launch parsed
//! every run's `state.json`, this run's too: megabytes a launch for a run of a thousand
//! workers, on the loop that should be seeing exits.) A failure another run records while
//! this one is driven shows in the prompts of the next driver.

use chrono::SecondsFormat;

use crate::domain::RunState;
use crate::providers::history::{History, PastFailure, FAILED_STATUSES};
use crate::providers::prompt::MAX_FAILURES;

/// The other runs' failures, read once.
#[derive(Debug, Default)]
pub(in crate::lead) struct Failures {
    others: Option<Vec<PastFailure>>,
}

impl Failures {
    /// The newest failures (at most the number a prompt lists) of this project's runs:
    /// the others as read at the first call, this one as `state` says now.
    pub(in crate::lead) fn recent(&mut self, state: &RunState) -> Vec<PastFailure> {
        let others = self.others.get_or_insert_with(|| {
            History::load_except(&state.project_dir, Some(&state.run_id)).failures
        });
        let mut all = this_run(state);
        all.extend(others.iter().take(MAX_FAILURES).cloned());
        // RFC 3339 UTC stamps sort as text, as the history sorts them.
        all.sort_by(|a, b| b.when.cmp(&a.when));
        all.truncate(MAX_FAILURES);
        all
    }
}

/// The newest failed workers of `state` (at most the number a prompt lists), as the history
/// reads them from its `state.json`. Chosen before they are copied out: a launch late in a
/// run of a thousand workers would otherwise copy and sort every failure of it.
fn this_run(state: &RunState) -> Vec<PastFailure> {
    let stamp = |t: chrono::DateTime<chrono::Utc>| t.to_rfc3339_opts(SecondsFormat::AutoSi, true);
    let when = |w: &crate::domain::WorkerState| w.ended_at.unwrap_or(state.updated_at);
    let mut failed: Vec<&crate::domain::WorkerState> = state
        .workers
        .iter()
        .filter(|w| FAILED_STATUSES.contains(&w.status.as_str()) && !w.provider.is_empty())
        .collect();
    failed.sort_by_key(|w| std::cmp::Reverse(when(w)));
    failed.truncate(MAX_FAILURES);
    failed
        .into_iter()
        .map(|w| PastFailure {
            run_id: state.run_id.clone(),
            worker: w.id.clone(),
            provider: w.provider.clone(),
            status: w.status.as_str().to_string(),
            reason: w.reason.clone(),
            when: stamp(w.ended_at.unwrap_or(state.updated_at)),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::WorkerStatus;

    #[test]
    fn this_runs_failures_come_from_memory_and_the_others_from_disk_once() {
        let tmp = tempfile::tempdir().unwrap();
        let (store, mut state, _) = crate::lead::tests::scripted(tmp.path());
        let other = tmp.path().join(".crewmux/runs/older-run");
        std::fs::create_dir_all(&other).unwrap();
        std::fs::write(
            other.join("state.json"),
            r#"{"run_id":"older-run","workers":[{"id":"x","provider":"codex","status":"failed","reason":"exit 1","ended_at":"2020-01-01T00:00:00Z"}]}"#,
        )
        .unwrap();
        // This run's own state.json on disk is never read: a failure there that the state
        // in memory does not have is not listed.
        std::fs::write(
            store.dir().join("state.json"),
            format!(r#"{{"run_id":"{}","workers":[{{"id":"ghost","provider":"codex","status":"failed"}}]}}"#, state.run_id),
        )
        .unwrap();
        let mut failures = Failures::default();
        let first = failures.recent(&state);
        assert_eq!(
            first.iter().map(|f| f.worker.as_str()).collect::<Vec<_>>(),
            ["x"]
        );
        // Read once: a change on disk is not seen by this driver; one in memory is, newest first.
        std::fs::remove_dir_all(&other).unwrap();
        let w = &mut state.workers[0];
        w.status = WorkerStatus::Failed;
        w.reason = Some("exit 3".into());
        w.ended_at = Some(chrono::Utc::now());
        let id = w.id.clone();
        let next = failures.recent(&state);
        assert_eq!(
            next.iter().map(|f| f.worker.as_str()).collect::<Vec<_>>(),
            [id.as_str(), "x"]
        );
        assert_eq!(next[0].reason.as_deref(), Some("exit 3"));
        assert_eq!(next[0].status, "failed");
    }
}
