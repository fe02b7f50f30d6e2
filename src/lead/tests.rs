//! Driver tests on the fake multiplexer: every input goes through one apply path, so a run
//! stopped after any applied input and attached again from its saved state still ends.

use std::collections::HashSet;
use std::sync::mpsc;
use std::time::Duration;

use super::fake::{FakeWorld, Step, Stuck};
use super::{Control, Driver, DriverOptions, Update};
use crate::domain::*;
use crate::engine::stages_public::blank_worker;
use crate::store::RunStore;

/// A panic payload: the driver stopped on purpose after a given count of applied inputs.
#[derive(Debug)]
pub struct Crash;

/// Polls a driver attached to a stopped run may take to finish it.
const REATTACH_BOUND: u32 = 400;

fn quiet_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let p = info.payload();
            if !(p.is::<Crash>() || p.is::<Stuck>()) {
                default(info);
            }
        }));
    });
}

/// Three workers (one fails once and is retried, one asks a question) and a check that
/// fails in round 0, so the council blocks and a fixer runs before the check passes.
pub(super) fn scripted(tmp: &std::path::Path) -> (RunStore, RunState, FakeWorld) {
    let world = FakeWorld::default();
    world.script("a", 1, vec![Step::Print("a works".into()), Step::Exit(0)]);
    world.script("b", 1, vec![Step::Print("b tries".into()), Step::Exit(1)]);
    world.script("b", 2, vec![Step::Print("b again".into()), Step::Exit(0)]);
    world.script(
        "c",
        1,
        vec![
            Step::Print("c starts".into()),
            Step::Ask("Which database?".into()),
            Step::Print("c goes on".into()),
            Step::Exit(0),
        ],
    );
    world.script(
        "check-t",
        1,
        vec![Step::Print("1 test failed".into()), Step::Exit(1)],
    );
    world.script(
        "check-t-r1",
        1,
        vec![Step::Print("all pass".into()), Step::Exit(0)],
    );
    let store = RunStore::create(tmp, "r1").unwrap();
    let workers = ["a", "b", "c"]
        .iter()
        .enumerate()
        .map(|(i, id)| {
            let mut w = blank_worker(
                id.to_string(),
                "backend-engineer".into(),
                "sim".into(),
                WorkerKind::Worker,
                Stage::TeamExec,
                0,
            );
            w.order = i as u32;
            w
        })
        .collect();
    let now = chrono::Utc::now();
    let state = RunState {
        schema_version: SCHEMA_VERSION,
        run_id: "r1".into(),
        problem: "Add rate limiting to the public API".into(),
        team: "test".into(),
        project_dir: tmp.to_path_buf(),
        run_dir: store.dir().to_path_buf(),
        stage: Stage::TeamPlan,
        status: RunStatus::Running,
        reason: None,
        backend: BackendKind::Tmux,
        tmux_socket: "fake".into(),
        session: "crewmux-r1".into(),
        parallel: 2,
        host_slots: Default::default(),
        fix_round: 0,
        max_fix_rounds: 1,
        workers,
        dispatches: vec![],
        council: Council::default(),
        council_history: vec![],
        clarification: ClarificationState::default(),
        clarify: false,
        checks: vec![CheckSpec {
            id: "t".into(),
            command: vec!["true".into()],
            cwd: None,
            timeout_s: None,
        }],
        critics: vec![],
        fixer: None,
        sandbox: Default::default(),
        report: None,
        workspace: None,
        routing: Default::default(),
        hosts_not_answering: Default::default(),
        inbox_read: None,
        inputs: Default::default(),
        budget: None,
        races: std::collections::BTreeMap::new(),
        created_at: now,
        updated_at: now,
    };
    store.save_state(&state).unwrap();
    (store, state, world)
}

fn opts() -> DriverOptions {
    DriverOptions {
        tick: Duration::from_millis(1),
        quiet: true,
        self_exe: "/bin/true".into(),
        grace: Duration::from_millis(50),
        ..DriverOptions::default()
    }
}

/// How one driver's run ended.
#[derive(Debug)]
pub(super) enum End {
    Finished(Box<RunState>),
    Crashed,
}

/// Drive the saved run with a new driver on `world` (stopping after `crash_after.0` applied
/// inputs when given, saving the state first with `crash_after.1`), answering every question it shows; returns how it ended and how
/// many inputs it applied. A driver that polls past `REATTACH_BOUND` fails the test.
pub(super) fn drive(
    store: &RunStore,
    world: &FakeWorld,
    crash_after: Option<(usize, bool)>,
) -> End {
    quiet_panics();
    let state = store.load_state().unwrap();
    let mut driver = Driver::new(store.clone(), state, world.mux(), opts());
    driver.crash_after = crash_after;
    let (ctl, rx) = mpsc::channel();
    // A focus makes the driver poll every turn, so a driver with nothing to watch still
    // counts against the bound instead of spinning unseen.
    ctl.send(Control::Focus(Some("a".into()))).unwrap();
    let mut answered = HashSet::new();
    world.bound(crash_after.is_none().then_some(REATTACH_BOUND));
    let res = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        driver.run(rx, |u| {
            if let Update::Snapshot { state, .. } = u {
                for w in state
                    .workers
                    .iter()
                    .filter(|w| w.status == WorkerStatus::Waiting)
                {
                    if answered.insert((w.id.clone(), w.attempt)) {
                        // Err: the driver has stopped; the test's own asserts report that.
                        let _ = ctl.send(Control::Answer {
                            worker: Some(w.id.clone()),
                            text: "Postgres".into(),
                        });
                    }
                }
            }
        })
    }));
    world.bound(None);
    match res {
        Ok(state) => End::Finished(Box::new(state.unwrap())),
        Err(p) if p.is::<Crash>() => End::Crashed,
        Err(p) if p.is::<Stuck>() => {
            let s = store.load_state().unwrap();
            panic!(
                "a driver attached to a stopped run did not finish within {REATTACH_BOUND} polls: run {:?} at {:?} round {} council {:?}; workers {:?}\n{}\nevents:\n{}",
                s.status,
                s.stage,
                s.fix_round,
                s.council.round,
                s.workers
                    .iter()
                    .map(|w| (&w.id, w.status, w.attempt))
                    .collect::<Vec<_>>(),
                world.describe(),
                std::fs::read_to_string(store.events_path()).unwrap_or_default()
            )
        }
        Err(p) => std::panic::resume_unwind(p),
    }
}

fn assert_finished(state: &RunState, label: &str) {
    assert!(
        state.status.is_final(),
        "{label}: run ended {:?} ({:?})",
        state.status,
        state.reason
    );
    for w in &state.workers {
        assert!(
            w.status.is_terminal(),
            "{label}: worker {} ended {:?}",
            w.id,
            w.status
        );
    }
}

#[test]
fn the_scripted_run_finishes_with_a_retry_a_question_and_a_fix_round() {
    let tmp = tempfile::tempdir().unwrap();
    let (store, _, world) = scripted(tmp.path());
    world.bound(Some(REATTACH_BOUND));
    let End::Finished(state) = drive(&store, &world, None) else {
        panic!("no crash was asked for");
    };
    assert_finished(&state, "clean run");
    assert_eq!(state.status, RunStatus::Done);
    assert_eq!(state.fix_round, 1, "the failing check sends a fixer");
    assert_eq!(state.worker("b").unwrap().attempt, 2, "b is retried once");
    let c = state.worker("c").unwrap();
    assert_eq!(c.status, WorkerStatus::Completed);
    assert_eq!(state.clarification.worker_answers.len(), 1);
    let events = store.read_events().unwrap();
    assert_events_once(&events, "clean run");
    let waits = events
        .iter()
        .filter(|e| e.kind == crate::domain::EventKind::WorkerWaiting)
        .count();
    assert_eq!(waits, 1, "one question, one waiting event");
}

/// Stop a fresh scripted run after each count of applied inputs in turn, attach a new
/// driver to what was saved, and require it to finish every worker within the bound.
/// Returns how many stop positions there were.
fn stop_everywhere(save_at_stop: bool) -> usize {
    let mut n = 1;
    loop {
        let tmp = tempfile::tempdir().unwrap();
        let (store, _, world) = scripted(tmp.path());
        if let End::Finished(state) = drive(&store, &world, Some((n, save_at_stop))) {
            // More inputs asked for than the run has: every position was tried.
            assert_finished(&state, "run without a stop");
            return n - 1;
        }
        let End::Finished(state) = drive(&store, &world, None) else {
            unreachable!("no crash was asked for");
        };
        let label = format!("stopped after input {n} (saved at the stop: {save_at_stop})");
        assert_finished(&state, &label);
        // A stop costs no attempt: an attempt whose launch the stop cut short starts again
        // as the same attempt.
        let attempts: Vec<(&str, u32)> = ["a", "b", "c"]
            .into_iter()
            .map(|id| (id, state.worker(id).map_or(0, |w| w.attempt)))
            .collect();
        assert_eq!(attempts, [("a", 1), ("b", 2), ("c", 1)], "{label}");
        assert_finished(
            &store.load_state().unwrap(),
            &format!("saved state, {label}"),
        );
        assert_events_once(&store.read_events().unwrap(), &label);
        n += 1;
    }
}

/// The state as last saved by the loop (a crash loses what came after it).
#[test]
fn a_run_stopped_after_any_applied_input_finishes_when_attached_again() {
    let stops = stop_everywhere(false);
    eprintln!("{stops} stop positions, each attached again and finished");
    assert!(stops > 10, "only {stops} stop positions were tried");
}

/// The state saved at the very input of the stop: a launch planned and not yet made, a
/// question read and not yet answered, a council recorded and no report yet.
#[test]
fn a_run_saved_and_stopped_after_any_applied_input_finishes_when_attached_again() {
    let stops = stop_everywhere(true);
    eprintln!("{stops} stop positions (saved at each), each attached again and finished");
    assert!(stops > 10, "only {stops} stop positions were tried");
}

/// Per worker and attempt in `events.jsonl`: at most one start, at most one final status,
/// one waiting event per question; every attempt that started has exactly one final status.
pub fn assert_events_once(events: &[RunEvent], label: &str) {
    let v = super::once::violations(events);
    assert!(v.is_empty(), "{label}: {}", v.join("; "));
}
