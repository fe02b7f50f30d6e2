//! `planning.json`: the trace of a run being planned (written by `crewmux run` before it
//! probes the agent CLIs, removed once the first `state.json` is written). A run folder that
//! holds it and no `state.json` belongs to a `run` that is planning now or was stopped
//! while it planned; [`interrupted`] says which, in one line.

use std::path::Path;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// The file a run's folder holds while the run is being planned.
pub const PLANNING_FILE: &str = "planning.json";

/// What `planning.json` records.
#[derive(Debug, Serialize, Deserialize)]
pub struct PlanningRecord {
    pub run_id: String,
    /// The `crewmux run` process planning the run.
    pub pid: u32,
    pub started_at: DateTime<Utc>,
}

fn record(run_dir: &Path) -> Option<std::result::Result<PlanningRecord, String>> {
    let text = std::fs::read_to_string(run_dir.join(PLANNING_FILE)).ok()?;
    Some(serde_json::from_str(&text).map_err(|e| e.to_string()))
}

/// Whether `pid` is a live (not zombie) crewmux process: a killed `run` stays a zombie until
/// its parent reaps it, and its pid may be reused by another program.
fn alive(pid: u32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // `pid (comm) state …`: the state follows the last `)`.
    let running = stat
        .rsplit_once(')')
        .is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X']));
    let argv0 = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let argv0 = String::from_utf8_lossy(argv0.split(|b| *b == 0).next().unwrap_or_default());
    running && argv0.contains("crewmux")
}

/// For a run folder without `state.json`: one line saying whether it is being planned now
/// or was stopped while it was planned (when, by which process) and what to do; `None`
/// when the folder holds no `planning.json`.
pub fn interrupted(run_dir: &Path) -> Option<String> {
    let record = record(run_dir)?;
    let id = run_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let time = |r: &PlanningRecord| r.started_at.format("%Y-%m-%d %H:%M:%S UTC").to_string();
    let way_out = format!(
        "no worker started; run `crewmux run` again, and `crewmux clean --run {id} --purge` removes it"
    );
    Some(match record {
        Ok(r) if alive(r.pid) => format!(
            "run {id} is being planned by crewmux pid {} (since {}): no worker has started yet",
            r.pid,
            time(&r)
        ),
        Ok(r) => format!(
            "run {id} was stopped while it was planned (started {} by pid {}): {way_out}",
            time(&r),
            r.pid
        ),
        Err(e) => format!(
            "run {id} has no state.json and its {PLANNING_FILE} is unreadable ({e}): {way_out}"
        ),
    })
}

/// True when `run_dir` holds `planning.json`, no `state.json`, and the process that planned
/// it is gone (or the file is unreadable): a run stopped while it was planned, with
/// nothing in it to keep.
pub fn abandoned(run_dir: &Path) -> bool {
    if run_dir.join("state.json").exists() {
        return false;
    }
    record(run_dir).is_some_and(|r| r.map_or(true, |r| !alive(r.pid)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_planning_whose_process_is_gone_is_abandoned_and_says_the_way_out() {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("20260101-000000-abcd");
        std::fs::create_dir_all(&run).unwrap();
        assert_eq!(interrupted(&run), None);
        assert!(!abandoned(&run));
        let record = PlanningRecord {
            run_id: "20260101-000000-abcd".into(),
            // No process has this id (above the kernel's pid limit).
            pid: 0x7fff_fff0,
            started_at: "2026-01-01T00:00:00Z".parse().unwrap(),
        };
        std::fs::write(
            run.join(PLANNING_FILE),
            serde_json::to_string(&record).unwrap(),
        )
        .unwrap();
        let line = interrupted(&run).unwrap();
        assert_eq!(
            line,
            "run 20260101-000000-abcd was stopped while it was planned (started 2026-01-01 00:00:00 UTC by pid 2147483632): no worker started; run `crewmux run` again, and `crewmux clean --run 20260101-000000-abcd --purge` removes it"
        );
        assert!(abandoned(&run));
        std::fs::write(run.join("state.json"), "{}").unwrap();
        assert!(!abandoned(&run), "a run with a state is never abandoned");
    }
}
