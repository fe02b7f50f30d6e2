//! A remote attempt's work brought back on its host's thread (`host_thread`), never on the
//! loop that drives the run: what it left is committed on the host and its branch fetched
//! into the local worktree ([`super::git::fetch_back`], about ten ssh round trips, each
//! up to the ssh call limit on a host that hangs). The marker file [`MARKER`] in the
//! local attempt folder then says the work is back.
//!
//! It is tried when the host's poll sees the pane ended, before the attempt's files (and
//! so its `exit.json`) come back. An exit the driver knows first (the exit marker came
//! with the attempt's live output), or whose try failed, is held by the driver until its
//! host's thread has brought the work back or said why it could not
//! ([`crate::backend::Multiplexer::bring_back_on_host`]).

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
    if let Err(e) = bring_back_now(&state, dir, worker, attempt) {
        tracing::warn!(
            worker,
            attempt,
            "could not bring the attempt's work back from its host yet: {e}"
        );
    }
}

/// Bring back the work of `worker`'s ended attempt `attempt` of the run `state` (its local
/// folder `attempt_dir`), unless [`brought_back`] says it is back, and mark it back.
///
/// # Errors
/// The host does not answer, or a git call there or here fails (the work stays on the
/// host); the mark cannot be written.
pub(super) fn bring_back_now(
    state: &crate::domain::RunState,
    attempt_dir: &Path,
    worker: &str,
    attempt: u32,
) -> crate::error::Result<()> {
    if brought_back(attempt_dir) {
        return Ok(());
    }
    super::git::fetch_back(state, worker, attempt)?;
    let mark = attempt_dir.join(MARKER);
    std::fs::write(&mark, b"").map_err(|e| crate::error::Error::io(&mark, e))
}
