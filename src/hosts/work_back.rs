//! A remote attempt's work brought back on its host's thread (`host_thread`), not on the
//! loop that drives the run: when its pane is seen ended, before the attempt's files (and
//! so its `exit.json`) come back, what it left is committed on the host and its branch
//! fetched into the local worktree ([`super::git::fetch_back`], about ten ssh round
//! trips). The marker file [`MARKER`] in the local attempt folder then tells the driver,
//! which settles the exit from those files, that the work is back already; without it
//! (the thread's try failed, an older run) the driver brings it back itself.

use std::path::Path;

/// The file in a local attempt folder that says its work came back from its host.
pub const MARKER: &str = "work-back";

/// True when the attempt folder `attempt_dir` says its work came back from its host.
pub fn brought_back(attempt_dir: &Path) -> bool {
    attempt_dir.join(MARKER).exists()
}

/// Bring back the work of the ended attempt whose local `output.log` is `log`, reading
/// the run's saved state for its worktree (`<run dir>/workers/<id>/attempt-<n>/output.log`
/// names the run and the attempt). Once done, nothing is asked again; a failure is
/// logged and left to the driver.
pub(super) fn bring_back(log: &Path, worker: &str, attempt: u32) {
    let Some(dir) = log.parent() else {
        return;
    };
    if brought_back(dir) {
        return;
    }
    let Some(run_dir) = log.ancestors().nth(4) else {
        return;
    };
    let state: crate::domain::RunState = match crate::store::load_json(&run_dir.join("state.json"))
    {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!("{worker}#{attempt}: cannot read the run's state: {e}");
            return;
        }
    };
    match super::git::fetch_back(&state, worker, attempt) {
        Ok(()) => {
            if let Err(e) = std::fs::write(dir.join(MARKER), b"") {
                tracing::warn!("{worker}#{attempt}: {}: {e}", dir.join(MARKER).display());
            }
        }
        Err(e) => tracing::warn!(
            worker,
            attempt,
            "could not bring the attempt's work back from its host yet: {e}"
        ),
    }
}
