//! The loop waits on neither the backend's polls nor whole launch batches: an answer to a
//! poll counts only for the attempts it asked about, a backend that answers late holds no
//! exit back, and an attempt that landed first is recorded (and its exit) while the rest of
//! its batch is still being started.

use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::poller::Looked;
use super::tests::scripted;
use super::{Control, Driver, DriverOptions, Update};
use crate::backend::{Launcher, Liveness, Multiplexer, Poll, SpawnSpec, Spawned, Target};
use crate::domain::{BackendKind, EventKind, RunEvent, WorkerStatus};
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
    gate: Gate,
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
        wait(&self.gate);
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

/// Open a gate made by [`gate`].
fn open(gate: &Gate) {
    let (open, cv) = &**gate;
    *open.lock().unwrap() = true;
    cv.notify_all();
}

type Gate = Arc<(Mutex<bool>, Condvar)>;

fn gate() -> Gate {
    Arc::new((Mutex::new(false), Condvar::new()))
}

/// Wait until `gate` opens, at most 30 s.
fn wait(gate: &Gate) {
    let (open, cv) = &**gate;
    let guard = open.lock().unwrap();
    let (_open, _) = cv
        .wait_timeout_while(guard, Duration::from_secs(30), |o| !*o)
        .unwrap();
}

/// A run of `n` workers at once and no checks, driven by `mux` on a thread; its events
/// come on the receiver.
fn drive(
    tmp: &std::path::Path,
    n: usize,
    mux: Box<dyn Multiplexer>,
) -> (
    mpsc::Sender<Control>,
    mpsc::Receiver<RunEvent>,
    std::thread::JoinHandle<Result<crate::domain::RunState>>,
) {
    let (store, mut state, _) = scripted(tmp);
    let template = state.workers[0].clone();
    state.workers = (0..n)
        .map(|i| {
            let mut w = template.clone();
            w.id = format!("w{i}");
            w.order = i as u32;
            w
        })
        .collect();
    state.parallel = n;
    state.checks.clear();
    store.save_state(&state).unwrap();
    let opts = DriverOptions {
        tick: Duration::from_millis(20),
        quiet: true,
        self_exe: "/bin/true".into(),
        ..DriverOptions::default()
    };
    let driver = Driver::new(store, state, mux, opts);
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
    (ctl, events, run)
}

/// The attempt started as `spec` ends with code 0 (its `exit.json`).
fn exit_now(spec: &SpawnSpec) {
    let dir = spec.log.parent().unwrap();
    std::fs::write(
        dir.join("exit.json"),
        format!(
            r#"{{"schema_version":1,"code":0,"nonce":"{}"}}"#,
            spec.nonce
        ),
    )
    .unwrap();
}

/// The `n`th attempt started, once it is (within 20 s).
fn nth_started(started: &Mutex<Vec<SpawnSpec>>, n: usize) -> SpawnSpec {
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(s) = started.lock().unwrap().get(n).cloned() {
            return s;
        }
        assert!(Instant::now() < end, "attempt {n} did not start");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// How long after now `worker` is recorded completed (at most 10 s).
fn completed_within(events: &mpsc::Receiver<RunEvent>, worker: &str) -> Duration {
    let from = Instant::now();
    loop {
        match events.recv_timeout(Duration::from_secs(10)) {
            Ok(e)
                if e.kind == EventKind::WorkerCompleted && e.worker.as_deref() == Some(worker) =>
            {
                return from.elapsed()
            }
            Ok(_) => {}
            Err(e) => panic!("{worker} was not recorded completed: {e}"),
        }
    }
}

#[test]
fn an_exit_is_recorded_while_the_backend_has_not_answered_a_poll() {
    let tmp = tempfile::tempdir().unwrap();
    let late = gate();
    let started = Arc::new(Mutex::new(vec![]));
    let mux = LatePolls {
        gate: late.clone(),
        started: started.clone(),
    };
    let (ctl, events, run) = drive(tmp.path(), 1, Box::new(mux));
    // The attempt starts; its first poll is asked for and not answered.
    let spec = nth_started(&started, 0);
    std::thread::sleep(Duration::from_millis(100));
    exit_now(&spec);
    let took = completed_within(&events, &spec.worker);
    assert!(
        took < Duration::from_secs(5),
        "recorded {took:?} after exit.json"
    );
    open(&late);
    drop(ctl);
    let state = run.join().unwrap().unwrap();
    assert_eq!(state.workers[0].status, WorkerStatus::Completed);
}

/// A launcher that starts the first attempt of a batch at once and the others once the
/// gate opens, as tmux makes a batch's windows one after the other.
struct GatedLaunches {
    gate: Gate,
    started: Arc<Mutex<Vec<SpawnSpec>>>,
}

impl Launcher for GatedLaunches {
    fn spawn_many(&mut self, specs: &[SpawnSpec]) -> Vec<Result<Spawned>> {
        let mut all = vec![];
        self.spawn_each(specs, &mut |_, r| all.push(r));
        all
    }

    fn spawn_each(&mut self, specs: &[SpawnSpec], each: &mut dyn FnMut(usize, Result<Spawned>)) {
        for (i, spec) in specs.iter().enumerate() {
            if i > 0 {
                wait(&self.gate);
            }
            self.started.lock().unwrap().push(spec.clone());
            each(
                i,
                Ok(Spawned {
                    pane_id: Some(format!("%{}", spec.worker)),
                    pid: None,
                }),
            );
        }
    }
}

/// A backend that answers polls at once and starts attempts with [`GatedLaunches`].
struct Batches(GatedLaunches);

impl Multiplexer for Batches {
    fn kind(&self) -> BackendKind {
        BackendKind::Tmux
    }

    /// The run's first batch starts on the loop, at once.
    fn spawn(&mut self, spec: &SpawnSpec) -> Result<Spawned> {
        self.0.started.lock().unwrap().push(spec.clone());
        Ok(Spawned {
            pane_id: Some(format!("%{}", spec.worker)),
            pid: None,
        })
    }

    fn launcher(&mut self) -> Option<Box<dyn Launcher>> {
        Some(Box::new(GatedLaunches {
            gate: self.0.gate.clone(),
            started: self.0.started.clone(),
        }))
    }

    fn poll(&mut self, targets: &[Target], _focus: Option<&Target>) -> Poll {
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
fn an_attempt_is_recorded_and_its_exit_too_while_the_rest_of_its_batch_starts() {
    let tmp = tempfile::tempdir().unwrap();
    let rest = gate();
    let started = Arc::new(Mutex::new(vec![]));
    let mux = Batches(GatedLaunches {
        gate: rest.clone(),
        started: started.clone(),
    });
    // The run's first batch starts on the loop; the two workers past it are the launch
    // thread's first batch.
    let n = super::LAUNCH_BATCH + 2;
    let (ctl, events, run) = drive(tmp.path(), n, Box::new(mux));
    let first = nth_started(&started, n - 2);
    exit_now(&first);
    let took = completed_within(&events, &first.worker);
    assert!(
        took < Duration::from_secs(5),
        "recorded {took:?} after exit.json"
    );
    assert_eq!(
        started.lock().unwrap().len(),
        n - 1,
        "the batch is still starting"
    );
    open(&rest);
    let second = nth_started(&started, n - 1);
    exit_now(&second);
    completed_within(&events, &second.worker);
    drop(ctl);
    let state = run.join().unwrap().unwrap();
    for spec in [&first, &second] {
        let w = state.worker(&spec.worker).unwrap();
        assert_eq!(w.status, WorkerStatus::Completed, "{}", w.id);
    }
}
