//! A result that came after its attempt's exit: an agent that writes no `result.md` gets
//! one from the end of its output, and when nothing of the output had reached `output.log`
//! when the exit was settled (a busy or stopped tmux server passes it on late), the driver
//! takes it once it is there and says so with [`super::Input::ResultTaken`].

use std::path::Path;

use super::Effects;
use crate::domain::{EventKind, RunState, WorkerStatus};

/// `worker`'s attempt `attempt` got its result `path` after its exit: kept when that
/// attempt is the worker's last, it completed and has no result yet, with a
/// `result-taken` event. Nothing otherwise (a retry began, the attempt failed).
pub(super) fn on_result_taken(
    state: &mut RunState,
    worker: &str,
    attempt: u32,
    path: &Path,
    fx: &mut Effects,
) {
    let Some(w) = state.worker_mut(worker).filter(|w| w.attempt == attempt) else {
        return;
    };
    if w.status != WorkerStatus::Completed || w.result.is_some() {
        return;
    }
    w.result = Some(path.to_path_buf());
    fx.event(
        EventKind::ResultTaken,
        Some((worker, attempt)),
        "output",
        "result taken from the end of its output, which reached output.log after its exit",
    );
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use crate::domain::WorkerStatus;
    use crate::engine::tests::{run, t0};
    use crate::engine::{update, Input, RunMemory};

    #[test]
    fn a_late_result_is_kept_for_a_completed_attempt_without_one_once() {
        let mut s = run(2, 2);
        let mut rt = RunMemory::default();
        s.workers[0].attempt = 1;
        s.workers[0].status = WorkerStatus::Completed;
        let path = PathBuf::from("/r/workers/a/attempt-1/result.md");
        let taken = |attempt| Input::ResultTaken {
            worker: s.workers[0].id.clone(),
            attempt,
            result: path.clone(),
        };
        let (late, stale) = (taken(1), taken(2));
        assert!(
            update(&mut s, &mut rt, t0(), stale).is_empty(),
            "another attempt"
        );
        let fx = update(&mut s, &mut rt, t0(), late.clone());
        assert_eq!(fx.len(), 1, "one result-taken event: {fx:?}");
        assert_eq!(s.workers[0].result.as_deref(), Some(path.as_path()));
        assert!(
            update(&mut s, &mut rt, t0(), late.clone()).is_empty(),
            "once"
        );

        // A failed attempt keeps no result.
        s.workers[1].attempt = 1;
        s.workers[1].status = WorkerStatus::Failed;
        let failed = Input::ResultTaken {
            worker: s.workers[1].id.clone(),
            attempt: 1,
            result: path.clone(),
        };
        assert!(update(&mut s, &mut rt, t0(), failed).is_empty());
        assert_eq!(s.workers[1].result, None);
    }
}
