//! One thread per SSH host, owning everything of that host that can wait on ssh: its
//! tmux backend (the control-mode channel and its fallback calls), its reachability and
//! probes, its polls (with the output streams and the files and work of ended attempts
//! they bring back), its launches, text sent to its panes, kills, and the ends of
//! attempts left running there. The driver's loop only exchanges messages with it and
//! never waits on ssh: a host whose sshd hangs (frozen, a black-holed network) holds up
//! its own thread alone.
//!
//! A poll is asked, and answered when the host answers: the loop waits a few ms for the
//! answer (a host that answers keeps its workers' liveness fresh), then goes on with the
//! host's targets `Unknown` and picks the answer up at a later turn. A poll outstanding
//! longer than [`HUNG_AFTER`] (counted from the thread's last finished step when that is
//! later, see [`Progress`]) makes the host read as not answering.
//!
//! Attempts left running on a host that was lost (their workers were handed to this
//! machine) are ended by their nonce (`kill`) the first time the host answers again, and
//! their files there come back into their local folders (the path an attempt's files take
//! when its pane ends); a lost host is probed for that with back-off (1 s doubling to [`LOST_PROBE_MAX`]; see
//! `host_left`).

use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::reach::Reach;
use crate::backend::{Multiplexer, Poll, SpawnSpec, Spawned, Target};
use crate::error::{Error, Result};

/// A poll outstanding this long means the host does not answer: a control-mode poll
/// answers in milliseconds, and the first one (which opens the connection and the
/// channel) in a few seconds on a loaded machine; a hung one waits out its 15 s limit
/// and a 5 s probe.
pub const HUNG_AFTER: Duration = Duration::from_secs(5);
/// Longest wait between two probes of a lost host that has attempts left to end.
pub const LOST_PROBE_MAX: Duration = Duration::from_secs(10);
/// How long the backend, when it is dropped (the run ends or the dashboard quits), waits
/// for its hosts' threads to finish what they were asked (a kill over a connection that
/// works takes a round trip). A thread held by a host that hangs is left to its calls'
/// own limits: the run's state is saved before, so nothing is lost, and the process may
/// leave.
pub const LEAVE_WAIT: Duration = Duration::from_millis(1500);
/// Grace of an attempt left on a host (SIGTERM, then SIGKILL), as for a stale attempt.
const LEFT_GRACE: Duration = Duration::from_millis(500);

/// When a host's thread last finished a step of its work (an ask, one attempt's files
/// shipped, one ended attempt's work or files brought back), shared with the backend: a
/// poll queued behind a long launch or a slow bring-back is not a host that does not
/// answer while those steps keep finishing.
#[derive(Debug, Clone)]
pub(super) struct Progress(Arc<Mutex<Instant>>);

impl Default for Progress {
    fn default() -> Self {
        Progress(Arc::new(Mutex::new(Instant::now())))
    }
}

impl Progress {
    /// A step finished now.
    pub fn step(&self) {
        if let Ok(mut at) = self.0.lock() {
            *at = Instant::now();
        }
    }

    /// When the last step finished.
    fn last(&self) -> Instant {
        self.0.lock().map_or_else(|_| Instant::now(), |at| *at)
    }
}

/// How long the poll asked at `asked` has waited for the host by `now`: since it was
/// asked, or since the thread's last step when that came later (the thread was busy with
/// work that got on); `None` when no poll is outstanding.
fn waited_for_host(asked: Option<Instant>, last_step: Instant, now: Instant) -> Option<Duration> {
    let from = asked?.max(last_step);
    Some(now.saturating_duration_since(from))
}

/// What the backend asks of a host's thread.
pub(super) enum Ask {
    /// Poll these targets (their pane references as the host's server knows them).
    Poll {
        targets: Vec<Target>,
        focus: Option<Target>,
    },
    Send {
        target: Target,
        text: String,
    },
    /// SIGTERM (SIGKILL with `hard`) to the attempt `nonce`.
    Signal {
        nonce: String,
        hard: bool,
    },
    /// End these attempts now, or the first time the host answers again, and bring their
    /// files back.
    EndWhenBack(Vec<crate::backend::LeftOnHost>),
    Spawn(Vec<SpawnSpec>, Sender<Vec<Result<Spawned>>>),
    /// Whether the host answers (a launch there failed): probed unless it is down already.
    Check,
    /// Start these attempts (see `launch_remote`).
    Launch(Box<crate::backend::HostLaunch>),
    /// Bring back the work of an ended attempt (see `work_back`).
    BringBack(crate::backend::WorkBack),
    RemoveRun(Sender<Result<Option<String>>>),
    ForgetScreen,
    /// The host did not answer planning's probe, asked at this time (why): it is down
    /// from then (see `Reach::silent_since`).
    SilentSince(Instant, String),
}

/// What a host's thread tells the backend.
pub(super) enum Told {
    /// The answer to the last `Ask::Poll`, in the order of its targets.
    Polled(Poll),
    /// The host has not answered for its `lost_after_s` (why).
    Lost(String),
    /// These attempts left on the host were ended there (with what came back of each).
    Ended(Vec<crate::backend::EndedOnHost>),
    /// The answer to `Ask::Check`: true when the host answers.
    Checked(bool),
    /// What came of an `Ask::Launch` (pane references as the host's server knows them).
    Launched(crate::backend::HostLaunched),
    /// What came of an `Ask::BringBack`.
    BroughtBack(crate::backend::WorkBackDone),
}

/// The state of one host that lives on its thread.
pub(super) struct HostSide {
    pub place: super::backend::Place,
    pub tmux: crate::tmux::TmuxBackend,
    pub reach: Reach,
    /// Local attempt folders whose files came back after their pane ended.
    pub fetched: std::collections::HashSet<std::path::PathBuf>,
    /// Its running attempts' output streams (only where the run is driven; see `output`).
    pub streams: Option<super::output::Streams>,
    /// What its tmux server said when it last did not answer in time while the host did.
    pub stuck: Option<String>,
    /// The host answered this thread once (a probe, or a launch that started something):
    /// a first launch is preceded by a probe until then (see `launch_remote`).
    pub answered: bool,
}

/// The backend's end of one host's thread.
pub(super) struct HostThread {
    asks: Option<Sender<Ask>>,
    told: Receiver<Told>,
    /// What the person reads about the host while it is not up (set by the thread).
    outage: Arc<Mutex<Option<String>>>,
    /// When the poll not answered yet was asked.
    asked: Option<Instant>,
    /// When the thread last finished a step of its work.
    progress: Progress,
    /// The last answer not handed over yet.
    answer: Option<Poll>,
    done: Receiver<()>,
    join: Option<JoinHandle<()>>,
}

impl HostThread {
    /// Start the thread of host `side.place.spec.name`.
    ///
    /// # Errors
    /// The thread cannot start.
    pub fn start(side: HostSide) -> Result<Self> {
        let (asks_tx, asks) = channel();
        let (told_tx, told) = channel();
        let (done_tx, done) = channel();
        let outage = Arc::new(Mutex::new(None));
        let shared = outage.clone();
        let name = side.place.spec.name.clone();
        let progress = side.place.progress.clone();
        let join = std::thread::Builder::new()
            .name(format!("crewmux-host-{name}"))
            .spawn(move || {
                serve(side, &asks, &told_tx, &shared);
                // Nobody waits for this once the backend gave up on the thread.
                let _ = done_tx.send(());
            })
            .map_err(|e| Error::Other(format!("host {name}: cannot start its thread: {e}")))?;
        Ok(HostThread {
            asks: Some(asks_tx),
            told,
            outage,
            asked: None,
            progress,
            answer: None,
            done,
            join: Some(join),
        })
    }

    /// Hand `ask` to the thread (a thread that ended already is logged).
    pub fn ask(&self, ask: Ask) {
        if let Some(tx) = &self.asks {
            if tx.send(ask).is_err() {
                tracing::warn!("a host's thread ended; its request is dropped");
            }
        }
    }

    /// Ask and wait for the reply on `rx` (for calls that are not the driver loop's).
    pub fn call<T>(&self, ask: impl FnOnce(Sender<T>) -> Ask) -> Option<T> {
        let (tx, rx) = channel();
        self.ask(ask(tx));
        rx.recv().ok()
    }

    /// Ask for a poll of `targets` unless one is outstanding; true when asked.
    pub fn ask_poll(&mut self, targets: Vec<Target>, focus: Option<Target>) -> bool {
        if self.asked.is_some() {
            return false;
        }
        self.asked = Some(Instant::now());
        self.ask(Ask::Poll { targets, focus });
        true
    }

    /// Take in what the thread told, waiting until `deadline` for the poll outstanding;
    /// returns the answer when there is one, with what else it told (lost, ended).
    pub fn collect(&mut self, deadline: Option<Instant>) -> (Option<Poll>, Vec<Told>) {
        let mut other = vec![];
        loop {
            let next = match deadline {
                Some(d) if self.asked.is_some() && self.answer.is_none() => self
                    .told
                    .recv_timeout(d.saturating_duration_since(Instant::now()))
                    .ok(),
                _ => self.told.try_recv().ok(),
            };
            match next {
                Some(Told::Polled(p)) => {
                    self.asked = None;
                    self.answer = Some(p);
                }
                Some(t) => other.push(t),
                None => break,
            }
        }
        (self.answer.take(), other)
    }

    /// The line the person reads while the host is not up: the thread's, or a poll that
    /// has not been answered for `hung_after` ([`HUNG_AFTER`] for the driving process)
    /// while the thread finished no step of its work either.
    pub fn outage(&self, host: &str, hung_after: Duration) -> Option<String> {
        let said = self.outage.lock().ok().and_then(|o| o.clone());
        said.or_else(|| {
            let waited = waited_for_host(self.asked, self.progress.last(), Instant::now())?;
            (waited >= hung_after).then(|| {
                format!(
                    "host {host} does not answer (no reply for {} s); its workers' state is unknown until it does",
                    waited.as_secs()
                )
            })
        })
    }
}

impl HostThread {
    /// Tell the thread no more is asked: it finishes what it was asked and stops.
    pub fn close(&mut self) {
        self.asks = None;
    }

    /// Wait until `deadline` at most for the thread to stop (after [`close`]); a thread
    /// still waiting on ssh then is left to its calls' limits.
    ///
    /// [`close`]: HostThread::close
    pub fn finish_by(&mut self, deadline: Instant) {
        self.close();
        let Some(j) = self.join.take() else {
            return;
        };
        match self
            .done
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
        {
            Ok(()) | Err(RecvTimeoutError::Disconnected) => {
                if j.join().is_err() {
                    tracing::warn!("a host's thread panicked");
                }
            }
            Err(RecvTimeoutError::Timeout) => {
                tracing::warn!("a host's thread is still waiting on ssh; leaving it");
            }
        }
    }
}

impl Drop for HostThread {
    /// The thread finishes what it was asked (kills, ends) and stops, waited for
    /// [`LEAVE_WAIT`] at most (see there).
    fn drop(&mut self) {
        self.finish_by(Instant::now() + LEAVE_WAIT);
    }
}

/// The thread: serve asks until the backend is dropped, ending the attempts left on the
/// host whenever it answers.
fn serve(
    mut side: HostSide,
    asks: &Receiver<Ask>,
    told: &Sender<Told>,
    outage: &Mutex<Option<String>>,
) {
    let mut left: Vec<crate::backend::LeftOnHost> = vec![];
    let mut lost_probe = LostProbe::default();
    loop {
        let ask = if left.is_empty() {
            asks.recv().ok()
        } else {
            match asks.recv_timeout(lost_probe.wait(&side.reach)) {
                Ok(a) => Some(a),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => break,
            }
        };
        let Some(ask) = ask else {
            if left.is_empty() {
                break;
            }
            side.end_left(&mut left, &mut lost_probe, told);
            set_outage(outage, &side);
            continue;
        };
        match ask {
            Ask::Poll { targets, focus } => {
                let t0 = Instant::now();
                let (poll, lost) = side.poll(&targets, focus.as_ref());
                tracing::debug!(
                    "host {}: polled {} target(s) in {} ms",
                    side.place.spec.name,
                    targets.len(),
                    t0.elapsed().as_millis()
                );
                // What the person reads about the host is current before its answer is.
                set_outage(outage, &side);
                if let Some(why) = lost {
                    // The backend is gone when this fails; nothing is left to tell.
                    let _ = told.send(Told::Lost(why));
                }
                let _ = told.send(Told::Polled(poll));
            }
            Ask::Send { target, text } => {
                if let Err(e) = side.tmux.send_text(&target, &text) {
                    tracing::warn!(
                        "{}: text to its pane on host {}: {e}",
                        target.worker,
                        side.place.spec.name
                    );
                }
            }
            Ask::Signal { nonce, hard } => {
                if let Err(e) = super::kill::signal(&side.place.link, &nonce, hard) {
                    tracing::warn!(
                        "could not end attempt {nonce} on host {}: {e}",
                        side.place.spec.name
                    );
                }
            }
            Ask::EndWhenBack(nonces) => {
                for l in nonces {
                    if !left.iter().any(|o| o.nonce == l.nonce) {
                        left.push(l);
                    }
                }
            }
            Ask::Spawn(specs, reply) => {
                let r = super::backend::spawn_on(&side.place, &mut side.tmux, &specs);
                // The asker gave up waiting: the windows are started all the same.
                let _ = reply.send(r);
            }
            Ask::Check => {
                // A host down already is not tried before its back-off says so.
                let now = Instant::now();
                let answers = side.reach.may_try(now) && side.probe(now);
                // Its outage is said before the answer is, so the asker sees both agree.
                set_outage(outage, &side);
                let _ = told.send(Told::Checked(answers));
            }
            Ask::Launch(launch) => {
                let done = side.launch(*launch);
                // The backend is gone when this fails; nothing is left to tell.
                let _ = told.send(Told::Launched(done));
            }
            Ask::BringBack(w) => {
                let result =
                    super::work_back::bring_back_now(&w.state, &w.dir, &w.worker, w.attempt)
                        .map_err(|e| e.to_string());
                let done = crate::backend::WorkBackDone {
                    worker: w.worker,
                    attempt: w.attempt,
                    result,
                };
                // The backend is gone when this fails; nothing is left to tell.
                let _ = told.send(Told::BroughtBack(done));
            }
            Ask::RemoveRun(reply) => {
                let _ = reply.send(side.tmux.remove_run());
            }
            Ask::ForgetScreen => side.tmux.forget_screen(),
            Ask::SilentSince(since, why) => side.reach.silent_since(since, Instant::now(), why),
        }
        side.place.progress.step();
        if !left.is_empty() {
            side.end_left(&mut left, &mut lost_probe, told);
        }
        set_outage(outage, &side);
    }
}

fn set_outage(outage: &Mutex<Option<String>>, side: &HostSide) {
    if let Ok(mut o) = outage.lock() {
        let host = &side.place.spec.name;
        *o = super::backend::outage_line(host, &side.reach)
            .or_else(|| side.stuck.as_ref().map(|s| format!("host {host}: {s}")));
    }
}

#[path = "host_left.rs"]
mod left;
use left::LostProbe;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_poll_waits_for_the_host_from_the_threads_last_step_when_that_is_later() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        assert_eq!(waited_for_host(None, t0, t0 + s(9)), None);
        // Asked while the thread was idle: counted from the ask.
        assert_eq!(waited_for_host(Some(t0), t0 - s(30), t0 + s(6)), Some(s(6)));
        // Queued behind a launch whose steps keep finishing: counted from the last step.
        assert_eq!(waited_for_host(Some(t0), t0 + s(5), t0 + s(6)), Some(s(1)));
        // A step that never finishes (a frozen host): the wait grows past HUNG_AFTER.
        assert!(waited_for_host(Some(t0), t0 + s(2), t0 + s(8)).unwrap() >= HUNG_AFTER);
    }
}
