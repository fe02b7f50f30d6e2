//! Past outcomes of this project's runs, read from `<project>/.crewmux/runs/*/state.json`:
//! per-provider failure rates (routing) and the most recent failures (prompt packaging).
//! Unreadable, corrupt or newer files are skipped: history is advice, never a blocker.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

/// Worker statuses that count as a failure of the provider.
pub const FAILED_STATUSES: [&str; 3] = ["failed", "crashed", "timeout"];

/// One failed worker of an earlier run.
#[derive(Debug, Clone, PartialEq)]
pub struct PastFailure {
    pub run_id: String,
    pub worker: String,
    pub provider: String,
    /// failed, crashed or timeout.
    pub status: String,
    pub reason: Option<String>,
    /// `ended_at`, else the run's `updated_at` (RFC 3339), for ordering.
    pub when: String,
}

/// Outcomes of one provider across past runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ProviderRecord {
    /// Terminal workers (completed or failed).
    pub finished: u32,
    pub failed: u32,
}

impl ProviderRecord {
    /// failed / finished, 0.0 with no history.
    pub fn failure_rate(&self) -> f64 {
        if self.finished == 0 {
            0.0
        } else {
            f64::from(self.failed) / f64::from(self.finished)
        }
    }
}

/// What the past runs of a project say.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct History {
    pub by_provider: BTreeMap<String, ProviderRecord>,
    /// Newest first.
    pub failures: Vec<PastFailure>,
    /// state.json files that could not be read.
    pub skipped: usize,
}

// Only the fields needed, all optional, so older and newer layouts both read.
#[derive(Deserialize)]
struct StateLite {
    #[serde(default)]
    run_id: String,
    #[serde(default)]
    updated_at: Option<String>,
    #[serde(default)]
    workers: Vec<WorkerLite>,
}

#[derive(Deserialize)]
struct WorkerLite {
    #[serde(default)]
    id: String,
    #[serde(default)]
    provider: String,
    #[serde(default)]
    status: String,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    ended_at: Option<String>,
}

impl History {
    /// Read every `<project>/.crewmux/runs/*/state.json`.
    pub fn load(project: &Path) -> Self {
        Self::load_except(project, None)
    }

    /// As [`load`](Self::load), leaving out the run whose folder is `runs/<except>` (a
    /// driver knows its own run from memory).
    pub fn load_except(project: &Path, except: Option<&str>) -> Self {
        let mut h = History::default();
        let Ok(dirs) = std::fs::read_dir(project.join(".crewmux").join("runs")) else {
            return h;
        };
        for entry in dirs.flatten() {
            if except.is_some_and(|run| entry.file_name() == run) {
                continue;
            }
            let path = entry.path().join("state.json");
            if !path.is_file() {
                continue;
            }
            let parsed = std::fs::read_to_string(&path)
                .ok()
                .and_then(|t| serde_json::from_str::<StateLite>(&t).ok());
            let Some(state) = parsed else {
                tracing::debug!(path = %path.display(), "skipping unreadable run state");
                h.skipped += 1;
                continue;
            };
            for w in state.workers {
                let failed = FAILED_STATUSES.contains(&w.status.as_str());
                if !(failed || w.status == "completed") || w.provider.is_empty() {
                    continue;
                }
                let rec = h.by_provider.entry(w.provider.clone()).or_default();
                rec.finished += 1;
                if failed {
                    rec.failed += 1;
                    h.failures.push(PastFailure {
                        run_id: state.run_id.clone(),
                        worker: w.id,
                        provider: w.provider,
                        status: w.status,
                        reason: w.reason,
                        when: w
                            .ended_at
                            .or_else(|| state.updated_at.clone())
                            .unwrap_or_default(),
                    });
                }
            }
        }
        // RFC 3339 UTC stamps sort as text.
        h.failures.sort_by(|a, b| b.when.cmp(&a.when));
        h
    }

    /// The record of one provider (zeros when it never ran here).
    pub fn record(&self, provider: &str) -> ProviderRecord {
        self.by_provider.get(provider).copied().unwrap_or_default()
    }

    /// Up to `n` newest failures.
    pub fn recent_failures(&self, n: usize) -> &[PastFailure] {
        &self.failures[..self.failures.len().min(n)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_state(root: &Path, run: &str, body: &str) {
        let d = root.join(".crewmux/runs").join(run);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("state.json"), body).unwrap();
    }

    #[test]
    fn counts_failures_per_provider_and_tolerates_bad_files() {
        let tmp = tempfile::tempdir().unwrap();
        write_state(
            tmp.path(),
            "r1",
            r#"{"run_id":"r1","updated_at":"2026-01-01T00:00:00Z","workers":[
                {"id":"backend","provider":"codex","status":"failed","reason":"exit 1","ended_at":"2026-01-01T00:00:00Z"},
                {"id":"frontend","provider":"gemini","status":"completed"}]}"#,
        );
        write_state(
            tmp.path(),
            "r2",
            r#"{"run_id":"r2","workers":[
                {"id":"backend","provider":"codex","status":"crashed","ended_at":"2026-02-01T00:00:00Z"},
                {"id":"solo","provider":"codex","status":"running"}]}"#,
        );
        write_state(tmp.path(), "r3", "{ not json");
        let h = History::load(tmp.path());
        assert_eq!(h.skipped, 1);
        assert_eq!(
            h.record("codex"),
            ProviderRecord {
                finished: 2,
                failed: 2
            }
        );
        assert_eq!(h.record("gemini").failure_rate(), 0.0);
        assert_eq!(h.record("claude").finished, 0);
        assert_eq!(h.failures[0].run_id, "r2");
        assert_eq!(h.failures[1].reason.as_deref(), Some("exit 1"));
        assert_eq!(h.recent_failures(1).len(), 1);
    }

    #[test]
    fn no_runs_dir_is_empty_history() {
        let tmp = tempfile::tempdir().unwrap();
        assert_eq!(History::load(tmp.path()), History::default());
    }
}
