//! Starting attempts off the loop: the backend's [`Launcher`] runs each batch on a thread
//! of its own and hands each attempt's result back as a wake-up of the loop as soon as it
//! is known (tmux: once its window and pipe are made), so the loop records it, and an exit
//! of it, while tmux creates the rest of the batch.
//!
//! The next batch is handed over while the last attempts of the one before are still being
//! started ([`REFILL_AT`]), so tmux goes on to it at once instead of waiting for the loop to
//! record the landing and prepare the next files (16 turns for 256 workers). Until every
//! attempt in flight has landed, requests from the person (dashboard or inbox) wait, so no
//! cancel or answer meets an attempt that is neither launched nor failed; exits of other
//! attempts are applied as they come.

use std::sync::mpsc::{self, Sender};
use std::thread::JoinHandle;

use crate::backend::{Launcher, SpawnSpec, Spawned};
use crate::error::{IoContext, Result};
use crate::lead::{Driver, Update, Wake};

/// Longest wait for the batch in flight when the loop ends: past a backend's own limit on
/// a start (tmux: 10 s for a script).
const LAND_LIMIT: std::time::Duration = std::time::Duration::from_secs(15);

/// Attempts still in flight at or below which the next batch goes to the launch thread.
pub(in crate::lead) const REFILL_AT: usize = crate::lead::LAUNCH_BATCH / 2;

/// The launch thread and its queue.
pub(in crate::lead) struct LaunchThread {
    jobs: Option<Sender<Vec<SpawnSpec>>>,
    thread: Option<JoinHandle<()>>,
}

impl LaunchThread {
    /// Start the thread; the results of each batch arrive on `wake` as [`Wake::Launched`],
    /// in order, a few at a time.
    ///
    /// # Errors
    /// The thread cannot start.
    pub(in crate::lead) fn start(
        mut launcher: Box<dyn Launcher>,
        wake: Sender<Wake>,
    ) -> Result<Self> {
        let (jobs, rx) = mpsc::channel::<Vec<SpawnSpec>>();
        let thread = std::thread::Builder::new()
            .name("crewmux-launch".into())
            .spawn(move || {
                for specs in rx {
                    let mut gone = false;
                    launcher.spawn_each(&specs, &mut |_, r| {
                        gone = gone || wake.send(Wake::Launched(vec![r])).is_err();
                    });
                    if gone {
                        return; // the loop is gone
                    }
                }
            })
            .on("cannot start the launch thread")?;
        Ok(LaunchThread {
            jobs: Some(jobs),
            thread: Some(thread),
        })
    }

    /// Hand a batch over; false when the thread is gone.
    pub(in crate::lead) fn send(&self, specs: Vec<SpawnSpec>) -> bool {
        self.jobs.as_ref().is_some_and(|j| j.send(specs).is_ok())
    }
}

impl Drop for LaunchThread {
    /// Close the queue and let the thread end; it is joined when it ends within a second
    /// (a thread stuck in a call is left to end by itself, never waited on).
    fn drop(&mut self) {
        self.jobs = None;
        if let Some(t) = self.thread.take() {
            join_within(t, std::time::Duration::from_secs(1), "launch");
        }
    }
}

/// Join `thread` once it ends, waiting `bound` at most (looked at every 5 ms): a thread
/// still in a call then (a server that does not answer) ends by its own limit, unwaited.
/// A panic is logged as of "the `name` thread".
pub(in crate::lead) fn join_within(thread: JoinHandle<()>, bound: std::time::Duration, name: &str) {
    let end = std::time::Instant::now() + bound;
    while !thread.is_finished() && std::time::Instant::now() < end {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    if thread.is_finished() && thread.join().is_err() {
        tracing::warn!("the {name} thread panicked");
    }
}

impl Driver {
    /// The first attempts in flight landed (one result each, in order; none: the whole
    /// rest failed): watch and record them, show the change. Once every attempt in flight
    /// has landed the state is saved at once; before that it is left to the loop's pace
    /// ([`SAVE_EVERY`](crate::lead::SAVE_EVERY)): a save per landing rewrote the whole state
    /// hundreds of times while a large run started. Returns whether it saved.
    pub(in crate::lead) fn on_landed(
        &mut self,
        results: Vec<Result<Spawned>>,
        emit: &mut impl FnMut(Update),
    ) -> bool {
        let Some(rest) = self.in_flight.as_mut() else {
            tracing::warn!("launch results with no batch in flight; ignored");
            return false;
        };
        let n = match results.len() {
            0 => rest.len(),
            n => n.min(rest.len()),
        };
        let ready: Vec<_> = rest.drain(..n).collect();
        if rest.is_empty() {
            self.in_flight = None;
        }
        // The thread is alive while attempts land: the limit counts from the last one.
        self.in_flight_at = std::time::Instant::now();
        let inputs = self.landed(ready, results);
        self.apply(inputs, emit);
        let all = self.in_flight.is_none();
        self.publish(all, Some(None), emit);
        all
    }

    /// Whether the next batch may be handed over now: nothing is in flight, or little
    /// enough ([`REFILL_AT`]) that the launch thread would soon wait for work.
    pub(in crate::lead) fn may_launch_more(&self) -> bool {
        self.in_flight
            .as_ref()
            .is_none_or(|flying| flying.len() <= REFILL_AT)
    }

    /// Attempts in flight that have not landed within [`LAND_LIMIT`] of the last one that
    /// did (the thread is gone: a backend ends its own calls sooner) fail, so their workers
    /// are retried and requests flow again.
    pub(in crate::lead) fn give_up_late_batch(&mut self, emit: &mut impl FnMut(Update)) {
        if self.in_flight.is_none() || self.in_flight_at.elapsed() < LAND_LIMIT {
            return;
        }
        tracing::warn!("a launch batch did not land within {LAND_LIMIT:?}; its attempts failed");
        self.launch_thread = None;
        // Every attempt in flight is settled: saved.
        self.on_landed(vec![], emit);
    }

    /// Before the loop ends: wait for the attempts in flight (a tmux script ends within its
    /// limit), so they are recorded, not lost. Returns whether some landed and are not
    /// saved yet.
    pub(in crate::lead) fn land_in_flight(
        &mut self,
        wake: &mpsc::Receiver<Wake>,
        emit: &mut impl FnMut(Update),
    ) -> bool {
        let end = std::time::Instant::now() + LAND_LIMIT;
        let mut unsaved = false;
        while self.in_flight.is_some() {
            match wake.recv_timeout(end.saturating_duration_since(std::time::Instant::now())) {
                Ok(Wake::Launched(results)) => unsaved = !self.on_landed(results, emit),
                Ok(_) => {}
                Err(_) => {
                    tracing::warn!(
                        "a launch batch did not land; its attempts are retried on attach"
                    );
                    self.in_flight = None;
                }
            }
        }
        unsaved
    }
}
