//! Nothing a worker started outlives its attempt: besides the process group, every process
//! carrying the attempt's `CREWMUX_ATTEMPT_NONCE` nonce (found in `/proc`, see
//! [`crate::backend::reap`]) is ended with the same grace → SIGKILL, when crewmux ends an
//! attempt (cancel, timeouts) and when an attempt ends by itself leaving children behind.
//! Processes that survive SIGKILL are named in the event log.
//!
//! Finding them reads the environment of every process on the machine (milliseconds with a
//! few hundred processes, more under load), so while the loop runs the reaps are done on a
//! thread of their own: an exit is recorded without waiting for the scan, and the survivors'
//! events come back to the loop. That thread reads each process's environment once
//! ([`ProcScan`]): a pass then costs a listing of `/proc` and the processes started since
//! the last one. Offline entry points reap in place.

use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use chrono::Utc;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use crate::backend::proc_scan::ProcScan;
use crate::backend::reap::spared;
use crate::domain::RunEvent;
use crate::error::{IoContext, Result};
use crate::lead::{Driver, Update};

/// How long after SIGKILL survivors are looked for.
const SETTLE: Duration = Duration::from_millis(500);
/// Least time between two passes over `/proc` on the reaper thread: attempts that end
/// meanwhile share the next pass (each pass reads the environment of every process on the
/// machine; one a pass per exit took most of a core when dozens of attempts ended a
/// second).
const PASS_EVERY: Duration = Duration::from_millis(250);

/// Leftover processes of an ended attempt, on their way out.
pub(in crate::lead) struct Reap {
    worker: String,
    attempt: u32,
    nonce: String,
    /// The attempt's wrapper (its pid), spared: it exits by itself with the agent's status.
    keep: Option<u32>,
    /// The grace between SIGTERM and SIGKILL.
    grace: Duration,
    /// When the next step is due: SIGKILL, then the survivors' count; `None` before the
    /// SIGTERM.
    at: Option<Instant>,
    killed: bool,
}

/// Take the due steps of every reap in `list` (SIGTERM for a new one, SIGKILL once its grace
/// is over, then the survivors' count), with one `/proc` pass of `scan` for all of them;
/// returns the survivors' events. With `finishing`, every reap is taken to its end now: the
/// grace is waited out unless the attempt's processes are gone sooner.
fn step_all(list: &mut Vec<Reap>, finishing: bool, scan: &mut ProcScan) -> Vec<RunEvent> {
    let mut events = vec![];
    loop {
        let now = Instant::now();
        let due = |r: &Reap| r.at.is_none_or(|at| at <= now);
        if list.is_empty() || (!finishing && !list.iter().any(due)) {
            return events;
        }
        let nonces: Vec<&str> = list.iter().map(|r| r.nonce.as_str()).collect();
        let found = scan.attempts_pids(&nonces);
        list.retain_mut(|r| {
            let left: Vec<u32> = found
                .get(&r.nonce)
                .into_iter()
                .flatten()
                .copied()
                .filter(|&p| !spared(p, r.keep))
                .collect();
            match r.at {
                None if left.is_empty() => false,
                None => {
                    tracing::info!(
                        "{}#{}: SIGTERM to processes left behind",
                        r.worker,
                        r.attempt
                    );
                    signal(&left, Signal::SIGTERM);
                    r.at = Some(now + r.grace);
                    true
                }
                Some(at) if at <= now && !r.killed => {
                    signal(&left, Signal::SIGKILL);
                    r.killed = true;
                    r.at = Some(now + SETTLE);
                    true
                }
                Some(at) if at <= now => {
                    if !left.is_empty() {
                        events.push(survivors(r, &left));
                    }
                    false
                }
                // Gone within the grace (only looked at when finishing: otherwise a step
                // waits for its time).
                Some(_) => !(finishing && left.is_empty()),
            }
        });
        if !finishing || list.is_empty() {
            return events;
        }
        let next = list.iter().filter_map(|r| r.at).min().unwrap_or(now);
        std::thread::sleep(
            next.saturating_duration_since(Instant::now())
                .min(Duration::from_millis(50)),
        );
    }
}

/// Send `sig` to each of `pids`.
fn signal(pids: &[u32], sig: Signal) {
    for &pid in pids {
        if let Ok(p) = i32::try_from(pid) {
            // Gone in between is fine: that is what we want.
            if let Err(e) = kill(Pid::from_raw(p), sig) {
                tracing::debug!("{sig} to {pid}: {e}");
            }
        }
    }
}

/// The event naming what of `r`'s attempt outlived SIGKILL.
fn survivors(r: &Reap, left: &[u32]) -> RunEvent {
    RunEvent {
        ts: Utc::now(),
        kind: crate::domain::EventKind::AttemptSurvivors,
        worker: Some(r.worker.clone()),
        attempt: Some(r.attempt),
        source: "driver".into(),
        message: format!("still alive after SIGKILL: {}", describe(left)),
    }
}

/// Where a driver's reaps run.
pub(in crate::lead) enum Reaps {
    /// In place, on the caller's thread: the reaps, and survivors not yet told.
    Here(Vec<Reap>, Vec<RunEvent>),
    /// On the reaper thread.
    Thread(Reaper),
}

impl Default for Reaps {
    fn default() -> Self {
        Reaps::Here(vec![], vec![])
    }
}

impl Reaps {
    /// Move reaps to a thread of their own (for the loop); reaps begun in place go with them.
    ///
    /// # Errors
    /// The thread cannot start.
    pub(in crate::lead) fn start_thread(&mut self) -> Result<()> {
        if let Reaps::Here(list, told) = self {
            if !told.is_empty() {
                // Only `due` hands events over: nothing is waiting for them here.
                tracing::warn!("{} survivors' events were not told", told.len());
            }
            let list = std::mem::take(list);
            *self = Reaps::Thread(Reaper::start(list)?);
        }
        Ok(())
    }

    fn begin(&mut self, reap: Reap) {
        match self {
            Reaps::Here(list, told) => {
                list.push(reap);
                told.extend(step_all(list, false, &mut ProcScan::new()));
            }
            Reaps::Thread(t) => {
                if let Err(mpsc::SendError(Job::Begin(reap))) = t.jobs.send(Job::Begin(reap)) {
                    tracing::warn!("the reaper thread stopped; reaping in place");
                    let mut list = vec![reap];
                    for e in step_all(&mut list, true, &mut ProcScan::new()) {
                        tracing::warn!("{}", e.message);
                    }
                }
            }
        }
    }

    /// The survivors' events of reaps finished since the last call; with `all`, every reap
    /// is finished first.
    fn due(&mut self, all: bool) -> Vec<RunEvent> {
        match self {
            Reaps::Here(list, told) => {
                let mut events = std::mem::take(told);
                events.extend(step_all(list, all, &mut ProcScan::new()));
                events
            }
            Reaps::Thread(t) => {
                if all {
                    let (tx, rx) = mpsc::channel();
                    if t.jobs.send(Job::Finish(tx)).is_ok() && rx.recv().is_err() {
                        tracing::warn!("the reaper thread stopped before finishing its reaps");
                    }
                }
                t.events.try_iter().collect()
            }
        }
    }
}

enum Job {
    Begin(Reap),
    /// Answered once every reap begun before it has finished.
    Finish(Sender<()>),
}

/// The reaper thread and its queues. Dropping it ends the thread (reaps not finished by
/// [`Reaps::due`] with `all` are left, as a driver that detaches leaves them) and joins it.
pub(in crate::lead) struct Reaper {
    jobs: Sender<Job>,
    events: Receiver<RunEvent>,
    thread: Option<JoinHandle<()>>,
}

impl Reaper {
    fn start(mut list: Vec<Reap>) -> Result<Self> {
        let (jobs, rx) = mpsc::channel::<Job>();
        let (ev_tx, events) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("crewmux-reaper".into())
            .spawn(move || {
                let send = |evs: Vec<RunEvent>| {
                    for e in evs {
                        // The loop is gone when this fails; the run's log has been closed.
                        let _ = ev_tx.send(e);
                    }
                };
                let mut last_pass: Option<Instant> = None;
                // Each process's environment is read once over the thread's life.
                let mut scan = ProcScan::new();
                loop {
                    let next = list.iter().filter_map(|r| r.at).min();
                    let wait = next.map_or(Duration::from_secs(3600), |at| {
                        at.saturating_duration_since(Instant::now())
                    });
                    let job = match rx.recv_timeout(wait) {
                        Ok(job) => Some(job),
                        Err(RecvTimeoutError::Timeout) => None,
                        // The driver stopped without asking to finish (it detached):
                        // the attempts' processes are the next driver's to end.
                        Err(RecvTimeoutError::Disconnected) => return,
                    };
                    // Every reap asked for meanwhile shares the next pass over /proc.
                    let mut finish = take_jobs(job, &rx, &mut list);
                    // Not sooner than PASS_EVERY after the last pass, unless asked to finish.
                    let due = last_pass.map_or_else(Instant::now, |t| t + PASS_EVERY);
                    while finish.is_none() {
                        let left = due.saturating_duration_since(Instant::now());
                        if left.is_zero() {
                            break;
                        }
                        match rx.recv_timeout(left) {
                            Ok(j) => finish = take_jobs(Some(j), &rx, &mut list),
                            Err(RecvTimeoutError::Timeout) => break,
                            Err(RecvTimeoutError::Disconnected) => return,
                        }
                    }
                    last_pass = Some(Instant::now());
                    send(step_all(&mut list, finish.is_some(), &mut scan));
                    if let Some(done) = finish {
                        // A caller that stopped waiting needs no answer.
                        let _ = done.send(());
                    }
                }
            })
            .on("cannot start the reaper thread")?;
        Ok(Reaper {
            jobs,
            events,
            thread: Some(thread),
        })
    }
}

/// Add `job` and every job queued after it to `list`, up to a finish request (returned).
fn take_jobs(mut job: Option<Job>, rx: &Receiver<Job>, list: &mut Vec<Reap>) -> Option<Sender<()>> {
    while let Some(j) = job.take() {
        match j {
            Job::Begin(r) => list.push(r),
            Job::Finish(done) => return Some(done),
        }
        job = rx.try_recv().ok();
    }
    None
}

impl Drop for Reaper {
    fn drop(&mut self) {
        // Closing the queue ends the thread after the step it is taking.
        let (tx, _) = mpsc::channel();
        drop(std::mem::replace(&mut self.jobs, tx));
        if let Some(t) = self.thread.take() {
            if t.join().is_err() {
                tracing::warn!("the reaper thread panicked");
            }
        }
    }
}

impl Driver {
    /// The nonce of `worker`'s `attempt`, from its dispatch record.
    pub(in crate::lead) fn nonce_of(&self, worker: &str, attempt: u32) -> Option<String> {
        self.state
            .dispatches
            .iter()
            .rev()
            .find(|r| r.worker_id == worker && r.attempt == attempt)
            .map(|r| r.nonce.clone())
    }

    /// The attempt ended: SIGTERM whatever of it is left (children that left the group,
    /// daemons) and schedule the SIGKILL after the grace period (on the reaper thread while
    /// the loop runs).
    pub(in crate::lead) fn reap_attempt(&mut self, worker: &str, attempt: u32) {
        let Some(nonce) = self.nonce_of(worker, attempt) else {
            return;
        };
        let host = self.state.worker(worker).and_then(|w| w.host.clone());
        if let Some(h) = host {
            // A remote attempt's processes are on its host: ended there, off this loop.
            self.backend
                .get()
                .reap_on_host(&h, worker, &nonce, self.opts.grace);
            return;
        }
        // The wrapper is still writing its exit evidence and then exits with the agent's
        // status (tmux's pane_dead_status); a signal now would replace that status.
        let keep = self
            .state
            .worker(worker)
            .filter(|w| w.attempt == attempt)
            .and_then(|w| w.pid);
        self.reaps.begin(Reap {
            worker: worker.to_string(),
            attempt,
            nonce,
            keep,
            grace: self.opts.grace,
            at: None,
            killed: false,
        });
    }

    /// When a lead takes a run: end what is left of its ended attempts on this machine. A
    /// lead killed between recording an attempt's end and its reap (the reaper thread's
    /// pass is due within [`PASS_EVERY`]) left a child that quit the attempt's process
    /// group running with nobody to end it; every ended attempt's nonce is looked for once
    /// (one `/proc` pass on the reaper thread, nothing found in the usual case).
    pub(in crate::lead) fn reap_ended_attempts(&mut self) {
        let ended: Vec<(String, u32, String)> = self
            .state
            .dispatches
            .iter()
            .filter(|d| d.host.is_none() && d.ended_at.is_some() && d.status.is_terminal())
            .map(|d| (d.worker_id.clone(), d.attempt, d.nonce.clone()))
            .collect();
        for (worker, attempt, nonce) in ended {
            self.reaps.begin(Reap {
                worker,
                attempt,
                nonce,
                keep: None,
                grace: self.opts.grace,
                at: None,
                killed: false,
            });
        }
    }

    /// Record the survivors of reaps finished since the last call; with `all`, finish
    /// every reap now (waiting out what is left of its grace), as when the driver stops.
    pub(in crate::lead) fn reap_due(&mut self, all: bool, emit: &mut impl FnMut(Update)) {
        for e in self.reaps.due(all) {
            self.record_event(e, emit);
        }
    }
}

/// `pid (command)` for each pid, for the event log.
fn describe(pids: &[u32]) -> String {
    pids.iter()
        .map(|p| {
            let comm = std::fs::read_to_string(format!("/proc/{p}/comm")).unwrap_or_default();
            format!("{p} ({})", comm.trim())
        })
        .collect::<Vec<_>>()
        .join(", ")
}
