//! Asking the backend about the panes off the loop.
//!
//! A tmux server runs the commands of one client in order, so a pane listing sent while a
//! launch batch (a script of new windows and `pipe-pane`s) is being run is answered only
//! after the batch, and a server busy with ending panes answers late too: a loop that
//! waited for the listing saw no `exit.json` meanwhile (measured: turns of 100–700 ms while
//! 64 workers ended and started, which was the exit → status latency's tail). Exits are
//! settled from their files; the listing is needed only for what files cannot tell (a pane
//! that died without its evidence, a question on a screen, the focused screen). So for a
//! backend that says so ([`Multiplexer::polls_off_loop`]), the loop hands each look to a
//! thread of its own and carries on; the answer comes back as a wake-up of the loop, which
//! applies it to the attempts it was asked about that are still current.
//!
//! The loop and that thread share the backend behind a lock. The loop takes it only for
//! what is rare (text typed into a pane, a stale attempt ended before its launch, a kill on
//! an SSH host), never in a turn, so a slow answer holds none of the turns.

use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

use super::pace::Look;
use crate::backend::{Liveness, Multiplexer, Poll, Target};
use crate::error::{IoContext, Result};
use crate::lead::{Driver, Wake};

/// The backend, shared by the loop and the poll thread.
#[derive(Clone)]
pub(in crate::lead) struct SharedBackend(Arc<Mutex<Box<dyn Multiplexer>>>);

impl SharedBackend {
    pub(in crate::lead) fn new(backend: Box<dyn Multiplexer>) -> Self {
        SharedBackend(Arc::new(Mutex::new(backend)))
    }

    /// The backend, once no other thread uses it (a panic there leaves it usable: every
    /// call stands on its own).
    pub(in crate::lead) fn get(&self) -> MutexGuard<'_, Box<dyn Multiplexer>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One look at the backend: what was asked and what it found, with the news of the run's
/// SSH hosts drained at the same time.
#[derive(Debug, Default)]
pub(in crate::lead) struct Looked {
    /// The attempts asked about, in the order of `poll.liveness`.
    pub(in crate::lead) polled: Vec<Target>,
    /// The focused attempt whose screen was asked for.
    pub(in crate::lead) focus: Option<Target>,
    pub(in crate::lead) poll: Poll,
    /// The panes were listed (not only the focused screen captured, nor nothing asked).
    pub(in crate::lead) listed: bool,
    /// Hosts found lost since the last look (`(host, why)`).
    pub(in crate::lead) lost_hosts: Vec<(String, String)>,
    /// Attempts ended on hosts that answer again since the last look (per host, nonces).
    pub(in crate::lead) ended_on_hosts: Vec<(String, Vec<crate::backend::EndedOnHost>)>,
}

impl Looked {
    /// The liveness and screen tail this look found for `t`, when it asked about that very
    /// attempt (same worker, attempt and pane); `Unknown` otherwise.
    pub(in crate::lead) fn of(&self, t: &Target) -> (Liveness, Option<String>) {
        let found = self.polled.iter().position(|p| same_attempt(p, t));
        match found {
            Some(i) => (
                self.poll
                    .liveness
                    .get(i)
                    .copied()
                    .unwrap_or(Liveness::Unknown),
                self.poll.tails.get(i).cloned().flatten(),
            ),
            None => (Liveness::Unknown, None),
        }
    }
}

/// Whether `a` and `b` are the same attempt in the same pane.
pub(in crate::lead) fn same_attempt(a: &Target, b: &Target) -> bool {
    a.worker == b.worker && a.attempt == b.attempt && a.pane_id == b.pane_id
}

/// Ask `backend` what `look` says about `polled` and `focus` (`asked`: there is something
/// to list: an attempt, or a host said to be down), and drain the hosts' news.
pub(in crate::lead) fn look_at(
    backend: &mut dyn Multiplexer,
    look: Look,
    asked: bool,
    polled: Vec<Target>,
    focus: Option<Target>,
) -> Looked {
    let unknown = || Poll {
        liveness: vec![Liveness::Unknown; polled.len()],
        ..Poll::default()
    };
    let (poll, listed) = match (look, &focus) {
        (Look::Panes, _) if !asked => (Poll::default(), false),
        (Look::Panes, _) => (backend.poll(&polled, focus.as_ref()), true),
        // The focused screen alone: no target, so no listing (see `Multiplexer::poll`).
        (Look::Screen, Some(f)) => (
            Poll {
                screen: backend.poll(&[], Some(f)).screen,
                ..unknown()
            },
            false,
        ),
        (Look::Screen | Look::Nothing, _) => (unknown(), false),
    };
    Looked {
        lost_hosts: backend.take_lost_hosts(),
        ended_on_hosts: backend.take_ended_on_hosts(),
        polled,
        focus,
        poll,
        listed,
    }
}

/// A look for the poll thread.
pub(in crate::lead) struct Job {
    pub(in crate::lead) look: Look,
    pub(in crate::lead) asked: bool,
    pub(in crate::lead) polled: Vec<Target>,
    pub(in crate::lead) focus: Option<Target>,
    /// The focus changed: the backend forgets the screen it captured last, so this look
    /// hands over the new one even when it did not change.
    pub(in crate::lead) forget_screen: bool,
}

/// The poll thread and its queue; one look is in flight at a time.
pub(in crate::lead) struct PollThread {
    jobs: Option<Sender<Job>>,
    thread: Option<JoinHandle<()>>,
    /// A look was handed over and its answer has not come back.
    pub(in crate::lead) busy: bool,
    /// The focus changed since the last look was handed over.
    pub(in crate::lead) forget_screen: bool,
}

impl PollThread {
    /// Start the thread; each answer arrives on `wake` as [`Wake::Polled`].
    ///
    /// # Errors
    /// The thread cannot start.
    pub(in crate::lead) fn start(backend: SharedBackend, wake: Sender<Wake>) -> Result<Self> {
        let (jobs, rx) = mpsc::channel::<Job>();
        let thread = std::thread::Builder::new()
            .name("crewmux-poll".into())
            .spawn(move || {
                for job in rx {
                    let looked = {
                        let mut b = backend.get();
                        if job.forget_screen {
                            b.forget_screen();
                        }
                        look_at(&mut **b, job.look, job.asked, job.polled, job.focus)
                    };
                    if wake.send(Wake::Polled(Box::new(looked))).is_err() {
                        return; // the loop is gone
                    }
                }
            })
            .on("cannot start the poll thread")?;
        Ok(PollThread {
            jobs: Some(jobs),
            thread: Some(thread),
            busy: false,
            forget_screen: false,
        })
    }

    /// Hand a look over (marks the thread busy); false when the thread is gone.
    pub(in crate::lead) fn send(&mut self, mut job: Job) -> bool {
        job.forget_screen = std::mem::take(&mut self.forget_screen);
        let sent = self.jobs.as_ref().is_some_and(|j| j.send(job).is_ok());
        self.busy = sent;
        sent
    }
}

impl Drop for PollThread {
    /// Close the queue and let the thread end; it is joined when it ends within a second
    /// (a look stuck on a server that does not answer ends by its own limit, unwaited).
    fn drop(&mut self) {
        self.jobs = None;
        if let Some(t) = self.thread.take() {
            crate::lead::launch_thread::join_within(t, std::time::Duration::from_secs(1), "poll");
        }
    }
}

impl Driver {
    /// Start the threads that keep the loop from waiting on the backend: the launch thread
    /// (backends that offer a launcher) and the poll thread (backends that may answer late).
    ///
    /// # Errors
    /// A thread cannot start.
    pub(in crate::lead) fn start_helpers(
        &mut self,
        wake: &std::sync::mpsc::Sender<Wake>,
    ) -> Result<()> {
        let (launcher, off_loop) = {
            let mut backend = self.backend.get();
            (backend.launcher(), backend.polls_off_loop())
        };
        if let Some(launcher) = launcher {
            self.launch_thread = Some(crate::lead::launch_thread::LaunchThread::start(
                launcher,
                wake.clone(),
            )?);
        }
        if off_loop {
            self.poller = Some(PollThread::start(self.backend.clone(), wake.clone())?);
        }
        Ok(())
    }

    /// The SSH hosts that do not answer now. Nothing is asked while a poll thread runs: a
    /// backend that polls off the loop has no hosts (`Multiplexer::polls_off_loop`), and a
    /// launch must not wait for a poll in flight.
    pub(in crate::lead) fn hosts_not_answering(&self) -> std::collections::BTreeSet<String> {
        if self.poller.is_some() {
            return Default::default();
        }
        self.backend.get().hosts_not_answering()
    }

    /// Look at the backend as `look` says: in place, or handed to the poll thread when
    /// there is one (this turn then knows nothing of the panes; the answer is a turn of its
    /// own, and the backend is not taken here while the thread may hold it).
    pub(in crate::lead) fn look(&mut self, look: Look) -> Looked {
        let (polled, focus, asked) = self.look_targets();
        if let Some(p) = self.poller.as_mut() {
            if look == Look::Nothing {
                return Looked::default();
            }
            let job = Job {
                look,
                asked,
                polled: polled.clone(),
                focus: focus.clone(),
                forget_screen: false,
            };
            if p.send(job) {
                return Looked::default();
            }
            tracing::warn!("the poll thread stopped; the loop polls the backend itself");
            self.poller = None;
        }
        let mut backend = self.backend.get();
        look_at(&mut **backend, look, asked, polled, focus)
    }

    /// What a look at the backend asks about: every watched attempt, and the focused one
    /// (also when its attempt has ended, so the dashboard stops offering a pane that is
    /// gone); and whether there is anything to list (an attempt, or a host said to be down,
    /// which is asked about until it answers).
    pub(in crate::lead) fn look_targets(&self) -> (Vec<Target>, Option<Target>, bool) {
        let mut polled = self.watched_targets();
        let focus = self.focus.as_ref().and_then(|f| self.target(f));
        let extra = focus
            .clone()
            .filter(|f| f.pane_id.is_some() && !polled.iter().any(|t| t.worker == f.worker));
        polled.extend(extra);
        // Attempts held back for their host, or being started there: it is asked about until
        // it answers or is lost.
        let asked = !polled.is_empty()
            || !self.hosts_down_reported.is_empty()
            || self.host_wait.any()
            || self.remote_in_flight();
        (polled, focus, asked)
    }

    /// The watched attempts as the backend sees them.
    pub(in crate::lead) fn watched_targets(&self) -> Vec<Target> {
        self.watches
            .values()
            .filter_map(|w| {
                let t = self.target(&w.worker)?;
                // The sim agent asks through its output protocol; agents through their
                // screens.
                let provider = &self.state.worker(&w.worker)?.provider;
                Some(Target {
                    watch_screen: provider != "sim",
                    ..t
                })
            })
            .collect()
    }
}
