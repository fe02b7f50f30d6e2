//! An attempt whose fence could not start: failed with the reason `sandbox: …`, and not
//! retried on this host, whether the wrapper saw it (`SandboxFailed`) or the launch did.

use super::integrate_tests::{now, run};
use super::*;
use crate::domain::*;

#[test]
fn a_fence_that_did_not_start_fails_its_worker_for_good() {
    let (mut s, mut mem) = (run(false), RunMemory::default());
    for w in &mut s.workers {
        w.max_attempts = 3;
    }
    update(&mut s, &mut mem, now(), Input::Start);
    update(
        &mut s,
        &mut mem,
        now(),
        Input::SandboxFailed {
            worker: "a".into(),
            attempt: 1,
            code: 1,
            detail: "Creating new namespace failed: Operation not permitted".into(),
        },
    );
    update(
        &mut s,
        &mut mem,
        now(),
        Input::LaunchFailed {
            worker: "b".into(),
            attempt: 1,
            error: "sandbox: bwrap (bubblewrap) is not installed: apt-get install bubblewrap"
                .into(),
        },
    );
    for _ in 0..3 {
        update(&mut s, &mut mem, now(), Input::Tick);
    }
    let a = s.worker("a").unwrap();
    assert_eq!(
        (a.status, a.attempt, a.exit_code),
        (WorkerStatus::Failed, 1, Some(1))
    );
    assert_eq!(
        a.reason.as_deref(),
        Some("sandbox: Creating new namespace failed: Operation not permitted")
    );
    let b = s.worker("b").unwrap();
    assert_eq!((b.status, b.attempt), (WorkerStatus::Failed, 1));
    assert_eq!(
        b.reason.as_deref(),
        Some("sandbox: bwrap (bubblewrap) is not installed: apt-get install bubblewrap")
    );
}
