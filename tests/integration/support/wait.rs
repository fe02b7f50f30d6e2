//! Waiting on conditions, never on fixed sleeps: the tests run under the load of other
//! builds, so every wait polls a parsed file or a screen and has a generous bound.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

/// How often a wait polls its condition.
const POLL: Duration = Duration::from_millis(100);

/// Poll `cond` until it holds (true) or `limit` passes (false).
pub fn wait_for(mut cond: impl FnMut() -> bool, limit: Duration) -> bool {
    let end = Instant::now() + limit;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        std::thread::sleep(POLL);
    }
}

/// Wait (60 s at most) until `project`'s `.crewmux/crewmux.log` holds a line `said`
/// accepts; the test fails with the log past that.
pub fn wait_log(project: &Path, said: impl Fn(&str) -> bool) {
    let log = project.join(".crewmux/crewmux.log");
    let read = || std::fs::read_to_string(&log).unwrap_or_default();
    let found = wait_for(|| read().lines().any(&said), Duration::from_secs(60));
    assert!(found, "not in {}:\n{}", log.display(), read());
}

/// The only run directory under `project`, or `None` while there is none (or several).
pub fn try_run_dir(project: &Path) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(project.join(".crewmux/runs"))
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    (dirs.len() == 1).then(|| dirs.pop()).flatten()
}

/// The parsed `state.json` of the only run under `project`, or `None` while there is no
/// run or no complete state file yet.
pub fn try_state(project: &Path) -> Option<Value> {
    let text = std::fs::read_to_string(try_run_dir(project)?.join("state.json")).ok()?;
    serde_json::from_str(&text).ok()
}

/// The worker `id` of a parsed state (or summary), or `Null` when it has none.
pub fn state_worker(state: &Value, id: &str) -> Value {
    state["workers"]
        .as_array()
        .and_then(|ws| ws.iter().find(|w| w["id"] == id))
        .cloned()
        .unwrap_or_default()
}

/// How many workers of a parsed state have `status`.
pub fn count_status(state: &Value, status: &str) -> usize {
    state["workers"]
        .as_array()
        .map_or(0, |ws| ws.iter().filter(|w| w["status"] == status).count())
}

/// Wait until the state of the only run under `project` satisfies `cond`; returns that state.
/// Panics after `limit` with `what` and the last state seen.
pub fn wait_state(
    project: &Path,
    what: &str,
    limit: Duration,
    mut cond: impl FnMut(&Value) -> bool,
) -> Value {
    let mut last = None;
    let ok = wait_for(
        || {
            last = try_state(project);
            last.as_ref().is_some_and(&mut cond)
        },
        limit,
    );
    let last = last.unwrap_or_default();
    assert!(ok, "{what}: not within {limit:?}; last state: {last}");
    last
}

/// Wait (up to 90 s: launches are slow under the load of other builds) until `n` workers
/// of the only run under `project` are running at once.
pub fn wait_running(project: &Path, n: usize) -> Value {
    wait_state(
        project,
        &format!("{n} workers running"),
        Duration::from_secs(90),
        |s| count_status(s, "running") >= n,
    )
}

/// The events of a run directory's `events.jsonl`, parsed, in order.
pub fn events(run: &Path) -> Vec<Value> {
    let path = run.join("events.jsonl");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("event {l:?}: {e}")))
        .collect()
}

/// How many events of `kind` a run directory holds.
pub fn count_events(run: &Path, kind: &str) -> usize {
    events(run).iter().filter(|e| e["kind"] == kind).count()
}
