use std::time::{Duration, Instant};

use super::{Follower, Update};
use crate::lead::Control;
use crate::store::RunStore;

/// Updates of `rx` until one `pick` takes (5 s at most).
fn next_of<T>(rx: &std::sync::mpsc::Receiver<Update>, pick: impl Fn(Update) -> Option<T>) -> T {
    let end = Instant::now() + Duration::from_secs(5);
    while let Some(left) = end.checked_duration_since(Instant::now()) {
        if let Some(t) = rx.recv_timeout(left).ok().and_then(&pick) {
            return t;
        }
    }
    panic!("no such update within 5 s");
}

#[test]
fn the_hosts_the_driving_process_finds_not_answering_reach_the_followers_roster() {
    let tmp = tempfile::tempdir().unwrap();
    let store = RunStore::create(tmp.path(), "r1").unwrap();
    let mut state = crate::engine::tests::run(2, 2);
    state.run_dir = store.dir().to_path_buf();
    store.save_state(&state).unwrap();
    let follower = Follower::new(
        store.clone(),
        state.clone(),
        crate::lead::fake::FakeWorld::default().mux(),
        0,
    );
    let (ctl_tx, ctl_rx) = std::sync::mpsc::channel();
    let (up_tx, up_rx) = std::sync::mpsc::channel();
    let t = std::thread::spawn(move || {
        follower.run(ctl_rx, |u| {
            let _ = up_tx.send(u);
        })
    });
    let hosts_down = |u: Update| match u {
        Update::HostsDown(h) => Some(h),
        _ => None,
    };
    state
        .hosts_not_answering
        .insert("box".into(), chrono::Utc::now());
    store.save_state(&state).unwrap();
    assert_eq!(next_of(&up_rx, hosts_down), ["box".to_string()].into());
    state.hosts_not_answering.clear();
    store.save_state(&state).unwrap();
    assert!(next_of(&up_rx, hosts_down).is_empty());
    ctl_tx.send(Control::Quit).unwrap();
    t.join().unwrap();
}

#[test]
fn a_follower_started_from_an_older_state_shows_the_saved_one_at_its_first_look() {
    let tmp = tempfile::tempdir().unwrap();
    let store = RunStore::create(tmp.path(), "r1").unwrap();
    let mut state = crate::engine::tests::run(2, 2);
    state.run_dir = store.dir().to_path_buf();
    let loaded = state.clone();
    // The run moved on (its lead started a worker) between the dashboard's load of the
    // state and the follower's start; nothing changes after that.
    state.stage = crate::domain::Stage::TeamExec;
    state.workers[0].status = crate::domain::WorkerStatus::Running;
    store.save_state(&state).unwrap();
    let follower = Follower::new(
        store.clone(),
        loaded,
        crate::lead::fake::FakeWorld::default().mux(),
        0,
    );
    let (ctl_tx, ctl_rx) = std::sync::mpsc::channel();
    let (up_tx, up_rx) = std::sync::mpsc::channel();
    let t = std::thread::spawn(move || {
        follower.run(ctl_rx, |u| {
            let _ = up_tx.send(u);
        })
    });
    let shown = next_of(&up_rx, |u| match u {
        Update::Snapshot { state, .. } => Some(state),
        _ => None,
    });
    assert_eq!(shown.stage, crate::domain::Stage::TeamExec);
    assert_eq!(
        shown.workers[0].status,
        crate::domain::WorkerStatus::Running
    );
    ctl_tx.send(Control::Quit).unwrap();
    t.join().unwrap();
}

#[test]
fn a_follower_tells_of_each_new_event_that_notifies_once_and_never_of_those_replayed() {
    use crate::domain::{EventKind, RunEvent};
    let tmp = tempfile::tempdir().unwrap();
    let store = RunStore::create(tmp.path(), "r1").unwrap();
    let mut state = crate::engine::tests::run(2, 2);
    state.run_dir = store.dir().to_path_buf();
    store.save_state(&state).unwrap();
    let event = |kind: EventKind, worker: Option<&str>, message: &str| RunEvent {
        ts: chrono::Utc::now(),
        kind,
        worker: worker.map(str::to_string),
        attempt: worker.map(|_| 1),
        source: "engine".into(),
        message: message.into(),
    };
    // Before the dashboard opened: replayed into its log, not rung again.
    store
        .append_event(&event(
            EventKind::WorkerWaiting,
            Some("w1"),
            "old question?",
        ))
        .unwrap();
    let told = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let sink = told.clone();
    let follower = Follower::new(
        store.clone(),
        state.clone(),
        crate::lead::fake::FakeWorld::default().mux(),
        1,
    )
    .with_notifications(Box::new(move |n| {
        sink.lock()
            .unwrap()
            .push(format!("{} {}", n.kind, n.message));
    }));
    let (ctl_tx, ctl_rx) = std::sync::mpsc::channel();
    let (up_tx, up_rx) = std::sync::mpsc::channel();
    let t = std::thread::spawn(move || {
        follower.run(ctl_rx, |u| {
            let _ = up_tx.send(u);
        })
    });
    for e in [
        event(EventKind::WorkerStarted, Some("w2"), "started"),
        event(EventKind::WorkerWaiting, Some("w2"), "Which colour?"),
        event(EventKind::RunDone, None, "council ok"),
    ] {
        store.append_event(&e).unwrap();
    }
    next_of(&up_rx, |u| match u {
        Update::Event(e) if e.kind == EventKind::RunDone => Some(()),
        _ => None,
    });
    ctl_tx.send(Control::Quit).unwrap();
    t.join().unwrap();
    assert_eq!(
        *told.lock().unwrap(),
        [
            "question w2 asks: Which colour?",
            "run-ended run done: council ok"
        ]
    );
}

#[test]
fn a_quiet_focused_worker_is_not_captured_at_every_tick_and_new_output_is() {
    let tmp = tempfile::tempdir().unwrap();
    let store = RunStore::create(tmp.path(), "r1").unwrap();
    let mut state = crate::engine::tests::run(2, 2);
    state.run_dir = store.dir().to_path_buf();
    state.workers[0].status = crate::domain::WorkerStatus::Running;
    state.workers[0].attempt = 1;
    state.workers[0].pane_id = Some("%1".into());
    store.save_state(&state).unwrap();
    let log = store
        .attempt_dir(&state.workers[0].id, 1)
        .join("output.log");
    std::fs::create_dir_all(log.parent().unwrap()).unwrap();
    std::fs::write(&log, "working\n").unwrap();
    let world = crate::lead::fake::FakeWorld::default();
    let follower = Follower::new(store.clone(), state.clone(), world.mux(), 0);
    let (ctl_tx, ctl_rx) = std::sync::mpsc::channel();
    let t = std::thread::spawn(move || follower.run(ctl_rx, |_| {}));
    ctl_tx
        .send(Control::Focus(Some(state.workers[0].id.clone())))
        .unwrap();
    // Eight ticks of a worker that prints nothing: the one capture after the focus moved.
    std::thread::sleep(super::FOLLOW_TICK * 8);
    let quiet = world.polls();
    assert_eq!(quiet, 1, "captures of a quiet pane in 8 ticks");
    std::fs::write(&log, "working\nmore\n").unwrap();
    let end = Instant::now() + Duration::from_secs(5);
    while world.polls() == quiet && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        world.polls(),
        quiet + 1,
        "new output is captured at the next tick"
    );
    ctl_tx.send(Control::Quit).unwrap();
    t.join().unwrap();
}
