//! Upstream merges before a downstream starts: pure inputs and effects. The driver's side
//! (what git does, recorded in the worker's workspace) is played by hand here.

use std::path::PathBuf;

use super::integrate::IntegrationOutcome;
use super::integrate_tests::{finish, now, run};
use super::stages::blank_worker;
use super::upstream_merge::fixer_id;
use super::*;
use crate::domain::*;

const FIXER: &str = "merge-fixer-b-into-review";

/// `a` and `b` in worktrees, `review` after both in its own; `fixer`: a `[fixer]` agent.
fn pipeline(fixer: bool, policy: UpstreamPolicy) -> RunState {
    let mut s = run(fixer);
    let mut review = blank_worker(
        "review".into(),
        "reviewer".into(),
        "command".into(),
        WorkerKind::Worker,
        Stage::TeamExec,
        0,
    );
    review.flow.after = vec!["a".into(), "b".into()];
    review.flow.on_upstream_failure = policy;
    s.workers.push(review);
    let ws = s.workspace.as_mut().unwrap();
    for id in ["a", "b", "review"] {
        ws.workers.insert(
            id.into(),
            WorkerWorkspace {
                path: format!("/p/.crewmux/worktrees/r1/{id}").into(),
                branch: format!("crewmux/r1/{id}"),
                diff: None,
                commits: 0,
                head: None,
                start: None,
                upstreams: Default::default(),
                host: None,
            },
        );
    }
    s
}

fn the_conflict() -> MergeConflict {
    MergeConflict {
        files: vec!["src/lib.rs".into()],
        ours: "a".into(),
        theirs: "b".into(),
    }
}

/// What the driver records in `review`'s workspace during its merge pass.
fn record(s: &mut RunState, f: impl FnOnce(&mut UpstreamMerges)) {
    let ws = s.workspace.as_mut().unwrap();
    f(&mut ws.workers.get_mut("review").unwrap().upstreams);
}

fn merged(worker: &str, outcome: IntegrationOutcome) -> Input {
    Input::UpstreamsMerged {
        worker: worker.into(),
        outcome,
    }
}

fn launches(fx: &[Effect], worker: &str) -> bool {
    fx.iter()
        .any(|e| matches!(e, Effect::Launch { worker: w, .. } if w == worker))
}

fn end(s: &mut RunState, mem: &mut RunMemory, w: &str, code: i32) -> Vec<Effect> {
    let attempt = s.worker(w).unwrap().attempt;
    update(
        s,
        mem,
        now(),
        Input::Launched {
            worker: w.into(),
            attempt,
            nonce: "n".into(),
            prompt_path: PathBuf::from("/p/prompt.md"),
            backend: "process".into(),
            pane_id: None,
            pid: Some(1),
            credential_label: None,
        },
    );
    update(
        s,
        mem,
        now(),
        Input::Exited {
            worker: w.into(),
            attempt,
            code,
            source: ExitSource::ExitFile,
            missing_artifacts: vec![],
            result: None,
            said: None,
            ended_at: None,
            question: None,
        },
    )
}

/// Start, end `a` and `b`: `review` is ready and asks for its merge pass instead of starting.
fn upstreams_done(fixer: bool, policy: UpstreamPolicy) -> (RunState, RunMemory) {
    let (mut s, mut mem) = (pipeline(fixer, policy), RunMemory::default());
    update(&mut s, &mut mem, now(), Input::Start);
    finish(&mut s, &mut mem, "a");
    let fx = finish(&mut s, &mut mem, "b");
    assert!(
        fx.contains(&Effect::MergeUpstreams {
            worker: "review".into(),
            fixer,
        }),
        "{fx:?}"
    );
    assert!(!launches(&fx, "review"), "not before its merge pass");
    let fx = update(&mut s, &mut mem, now(), Input::Tick);
    assert!(
        !fx.iter()
            .any(|e| matches!(e, Effect::MergeUpstreams { .. })),
        "asked once: {fx:?}"
    );
    (s, mem)
}

#[test]
fn a_clean_merge_lets_the_downstream_start() {
    let (mut s, mut mem) = upstreams_done(true, UpstreamPolicy::Skip);
    record(&mut s, |r| r.merged = vec!["a".into(), "b".into()]);
    let fx = update(
        &mut s,
        &mut mem,
        now(),
        merged("review", IntegrationOutcome::Clean),
    );
    assert!(launches(&fx, "review"), "{fx:?}");
}

#[test]
fn a_conflict_between_upstreams_goes_to_a_merge_fixer_in_the_downstreams_worktree_first() {
    let (mut s, mut mem) = upstreams_done(true, UpstreamPolicy::Skip);
    record(&mut s, |r| {
        r.merged = vec!["a".into()];
        r.conflict = Some(the_conflict());
    });
    let fx = update(
        &mut s,
        &mut mem,
        now(),
        merged(
            "review",
            IntegrationOutcome::Conflict {
                conflict: the_conflict(),
                task: "resolve src/lib.rs".into(),
            },
        ),
    );
    assert_eq!(fixer_id("review", "b"), FIXER);
    let f = s.worker(FIXER).expect("a merge-fixer");
    assert_eq!((f.kind, f.role.as_str()), (WorkerKind::Fixer, "fixer"));
    assert_eq!(f.task, "resolve src/lib.rs");
    assert_eq!(
        f.cwd.as_deref(),
        Some(std::path::Path::new("/p/.crewmux/worktrees/r1/review")),
        "it works where the conflict is"
    );
    assert!(launches(&fx, FIXER), "{fx:?}");
    assert!(!launches(&fx, "review"));
    assert!(fx.iter().any(
        |e| matches!(e, Effect::Event(ev) if ev.kind == EventKind::MergeConflict
            && ev.message.contains("merge conflict in src/lib.rs between a and b"))
    ));
    let review = s.worker("review").unwrap().clone();
    assert_eq!(graph::blocked_on(&s, &review), [FIXER]);

    // The fixer ends: the pass runs again (the driver commits the resolution).
    let fx = finish(&mut s, &mut mem, FIXER);
    assert!(
        fx.contains(&Effect::MergeUpstreams {
            worker: "review".into(),
            fixer: true,
        }),
        "{fx:?}"
    );
    record(&mut s, |r| {
        r.conflict = None;
        r.merged.push("b".into());
        r.resolved.push(the_conflict());
    });
    let fx = update(
        &mut s,
        &mut mem,
        now(),
        merged("review", IntegrationOutcome::Clean),
    );
    assert!(launches(&fx, "review"), "{fx:?}");
}

/// The fixer fails: the pass leaves `b` out, and `review` is skipped with the conflict and
/// the fixer's end as its reason (the council sees it), or runs when it says so.
fn fixer_fails(policy: UpstreamPolicy) -> (RunState, Vec<Effect>) {
    let (mut s, mut mem) = upstreams_done(true, policy);
    record(&mut s, |r| {
        r.merged = vec!["a".into()];
        r.conflict = Some(the_conflict());
    });
    let conflict = IntegrationOutcome::Conflict {
        conflict: the_conflict(),
        task: "resolve".into(),
    };
    update(&mut s, &mut mem, now(), merged("review", conflict));
    end(&mut s, &mut mem, FIXER, 3);
    assert_eq!(s.worker(FIXER).unwrap().status, WorkerStatus::Failed);
    record(&mut s, |r| {
        r.conflict = None;
        r.left_out.push(the_conflict());
    });
    // Inputs queued before the pass's outcome do not start it: nothing is left to merge,
    // but the outcome is not in yet.
    let fx = update(&mut s, &mut mem, now(), Input::Tick);
    assert!(!launches(&fx, "review"), "{fx:?}");
    let fx = update(
        &mut s,
        &mut mem,
        now(),
        merged("review", IntegrationOutcome::Clean),
    );
    (s, fx)
}

#[test]
fn a_failed_merge_fixer_skips_the_downstream_with_the_conflict_as_its_reason() {
    let (s, fx) = fixer_fails(UpstreamPolicy::Skip);
    let review = s.worker("review").unwrap();
    assert_eq!(review.status, WorkerStatus::Skipped);
    assert_eq!(
        review.reason.as_deref(),
        Some("upstream b conflicts with a in src/lib.rs (merge-fixer-b-into-review failed)")
    );
    assert_eq!(review.attempt, 0, "never started");
    assert!(!launches(&fx, "review"));
}

#[test]
fn a_failed_merge_fixer_still_runs_a_downstream_that_runs_anyway() {
    let (s, fx) = fixer_fails(UpstreamPolicy::Run);
    assert!(launches(&fx, "review"), "{fx:?}");
    assert_eq!(s.worker("review").unwrap().status, WorkerStatus::Starting);
}

#[test]
fn without_an_agent_to_fix_the_conflict_is_left_out_and_the_downstream_skipped() {
    let (mut s, mut mem) = upstreams_done(false, UpstreamPolicy::Skip);
    record(&mut s, |r| {
        r.merged = vec!["a".into()];
        r.left_out.push(the_conflict());
    });
    update(
        &mut s,
        &mut mem,
        now(),
        merged("review", IntegrationOutcome::Clean),
    );
    assert!(s.worker(FIXER).is_none());
    assert_eq!(
        s.worker("review").unwrap().reason.as_deref(),
        Some("upstream b conflicts with a in src/lib.rs (no agent to resolve it: set a [fixer] provider)")
    );
}

#[test]
fn a_worker_whose_upstream_failed_has_nothing_merged_and_a_run_without_worktrees_none() {
    // `b` fails: `review` is skipped by the graph, no merge pass is asked for.
    let (mut s, mut mem) = (pipeline(true, UpstreamPolicy::Skip), RunMemory::default());
    update(&mut s, &mut mem, now(), Input::Start);
    finish(&mut s, &mut mem, "a");
    let fx = end(&mut s, &mut mem, "b", 1);
    assert!(!fx
        .iter()
        .any(|e| matches!(e, Effect::MergeUpstreams { .. })));
    assert_eq!(
        s.worker("review").unwrap().reason.as_deref(),
        Some("upstream b failed")
    );
    // No worktrees: `review` starts as soon as both ended.
    let (mut s, mut mem) = (pipeline(true, UpstreamPolicy::Skip), RunMemory::default());
    s.workspace = None;
    update(&mut s, &mut mem, now(), Input::Start);
    finish(&mut s, &mut mem, "a");
    assert!(launches(&finish(&mut s, &mut mem, "b"), "review"));
}

#[test]
fn a_downstream_that_waits_again_for_a_retried_upstream_merges_it_again() {
    let (mut s, mut mem) = upstreams_done(true, UpstreamPolicy::Skip);
    record(&mut s, |r| r.merged = vec!["a".into(), "b".into()]);
    update(
        &mut s,
        &mut mem,
        now(),
        merged("review", IntegrationOutcome::Clean),
    );
    finish(&mut s, &mut mem, "review");
    let retry = steer::Steer::Retry {
        worker: "a".into(),
        task: None,
    };
    update(&mut s, &mut mem, now(), Input::Steer(retry));
    assert_eq!(s.worker("review").unwrap().status, WorkerStatus::Pending);
    let ws = s.workspace.as_ref().unwrap();
    assert_eq!(
        ws.workers["review"].upstreams.merged,
        ["b"],
        "a is taken again"
    );
    let fx = finish(&mut s, &mut mem, "a");
    assert!(
        fx.contains(&Effect::MergeUpstreams {
            worker: "review".into(),
            fixer: true,
        }),
        "{fx:?}"
    );
    assert!(!launches(&fx, "review"));
}

#[test]
fn a_run_reattached_while_the_merge_fixer_works_keeps_the_downstream_waiting_for_it() {
    let (mut s, mut mem) = upstreams_done(true, UpstreamPolicy::Skip);
    record(&mut s, |r| {
        r.merged = vec!["a".into()];
        r.conflict = Some(the_conflict());
    });
    let conflict = IntegrationOutcome::Conflict {
        conflict: the_conflict(),
        task: "resolve".into(),
    };
    update(&mut s, &mut mem, now(), merged("review", conflict));
    // A new process: only the saved state is known.
    let mut mem = RunMemory::default();
    let fx = update(&mut s, &mut mem, now(), Input::Tick);
    assert!(!launches(&fx, "review"), "{fx:?}");
    assert!(!fx
        .iter()
        .any(|e| matches!(e, Effect::MergeUpstreams { .. })));
    let review = s.worker("review").unwrap().clone();
    assert_eq!(graph::blocked_on(&s, &review), [FIXER]);
    let fx = finish(&mut s, &mut mem, FIXER);
    assert!(
        fx.contains(&Effect::MergeUpstreams {
            worker: "review".into(),
            fixer: true,
        }),
        "{fx:?}"
    );
}
