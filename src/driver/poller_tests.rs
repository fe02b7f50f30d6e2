//! The poll thread: an answer counts only for the attempts it asked about, and a backend
//! that answers late holds no exit back.

use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::poller::Looked;
use super::tests::scripted;
use super::{Control, Driver, DriverOptions, Update};
use crate::backend::{Liveness, Multiplexer, Poll, SpawnSpec, Spawned, Target};
use crate::domain::{BackendKind, EventKind, WorkerStatus};
use crate::error::Result;

fn target(worker: &str, attempt: u32, pane: &str) -> Target {
    Target {
        worker: worker.into(),
        attempt,
        pane_id: Some(pane.into()),
        pid: None,
        log: "output.log".into(),
        watch_screen: false,
    }
}

#[test]
fn an_answer_counts_only_for_the_attempts_it_asked_about() {
    let looked = Looked {
        polled: vec![target("a", 1, "%1"), target("b", 1, "%2")],
        poll: Poll {
            liveness: vec![Liveness::Dead { status: Some(3) }, Liveness::Alive],
            tails: vec![Some("$ ".into()), None],
            ..Poll::default()
        },
        listed: true,
        ..Looked::default()
    };
    assert_eq!(
        looked.of(&target("a", 1, "%1")),
        (Liveness::Dead { status: Some(3) }, Some("$ ".into()))
    );
    assert_eq!(looked.of(&target("b", 1, "%2")), (Liveness::Alive, None));
    // Asked before a's retry started: says nothing about the new attempt or pane.
    assert_eq!(looked.of(&target("a", 2, "%3")), (Liveness::Unknown, None));
    assert_eq!(looked.of(&target("a", 1, "%9")), (Liveness::Unknown, None));
    assert_eq!(
        Looked::default().of(&target("a", 1, "%1")).0,
        Liveness::Unknown
    );
}

/// A backend whose polls do not answer until the gate opens (at most 30 s), as a tmux
/// server busy with a launch batch; the attempts it starts are recorded for the test.
struct LatePolls {
    gate: Arc<(Mutex<bool>, Condvar)>,
    started: Arc<Mutex<Vec<SpawnSpec>>>,
}

impl Multiplexer for LatePolls {
    fn kind(&self) -> BackendKind {
        BackendKind::Tmux
    }

    fn spawn(&mut self, spec: &SpawnSpec) -> Result<Spawned> {
        self.started.lock().unwrap().push(spec.clone());
        Ok(Spawned {
            pane_id: Some(format!("%{}", spec.attempt)),
            pid: None,
        })
    }

    fn polls_off_loop(&self) -> bool {
        true
    }

    fn poll(&mut self, targets: &[Target], _focus: Option<&Target>) -> Poll {
        let (open, cv) = &*self.gate;
        let guard = open.lock().unwrap();
        let (_open, _) = cv
            .wait_timeout_while(guard, Duration::from_secs(30), |o| !*o)
            .unwrap();
        Poll {
            liveness: vec![Liveness::Unknown; targets.len()],
            ..Poll::default()
        }
    }

    fn send_text(&mut self, _target: &Target, _text: &str) -> Result<()> {
        Ok(())
    }

    fn attach_command(&self, _target: &Target) -> Option<std::process::Command> {
        None
    }
}

#[test]
fn an_exit_is_recorded_while_the_backend_has_not_answered_a_poll() {
    let tmp = tempfile::tempdir().unwrap();
    let (store, mut state, _) = scripted(tmp.path());
    state.workers.truncate(1);
    state.checks.clear();
    store.save_state(&state).unwrap();
    let gate = Arc::new((Mutex::new(false), Condvar::new()));
    let started = Arc::new(Mutex::new(vec![]));
    let mux = LatePolls {
        gate: gate.clone(),
        started: started.clone(),
    };
    let opts = DriverOptions {
        tick: Duration::from_millis(20),
        quiet: true,
        self_exe: "/bin/true".into(),
        ..DriverOptions::default()
    };
    let driver = Driver::new(store.clone(), state, Box::new(mux), opts);
    let (ctl, rx) = mpsc::channel::<Control>();
    let (events_tx, events) = mpsc::channel();
    let run = std::thread::spawn(move || {
        driver.run(rx, move |u| {
            if let Update::Event(e) = u {
                // Err: the test stopped listening; it reports what it saw.
                let _ = events_tx.send(e);
            }
        })
    });
    // The attempt starts; its first poll is asked for and never answered.
    let end = Instant::now() + Duration::from_secs(20);
    let spec = loop {
        if let Some(s) = started.lock().unwrap().first().cloned() {
            break s;
        }
        assert!(Instant::now() < end, "the attempt did not start");
        std::thread::sleep(Duration::from_millis(5));
    };
    std::thread::sleep(Duration::from_millis(100));
    let dir = spec.log.parent().unwrap();
    std::fs::write(
        dir.join("exit.json"),
        format!(
            r#"{{"schema_version":1,"code":0,"nonce":"{}"}}"#,
            spec.nonce
        ),
    )
    .unwrap();
    let wrote = Instant::now();
    let completed = loop {
        match events.recv_timeout(Duration::from_secs(10)) {
            Ok(e) if e.kind == EventKind::WorkerCompleted => break wrote.elapsed(),
            Ok(_) => {}
            Err(e) => panic!("no worker-completed while the poll was unanswered: {e}"),
        }
    };
    assert!(
        completed < Duration::from_secs(5),
        "recorded {completed:?} after exit.json"
    );
    let (open, cv) = &*gate;
    *open.lock().unwrap() = true;
    cv.notify_all();
    drop(ctl);
    let state = run.join().unwrap().unwrap();
    assert_eq!(state.workers[0].status, WorkerStatus::Completed);
}
