//! Following a run another crewmux process drives (a dashboard opened on a headless run,
//! or a second dashboard): the saved state, new events and the focused worker's screen are
//! read as they change and handed over as [`Update`]s, the same messages a [`crate::lead::Driver`]
//! sends; the person's requests (answers, cancels, steering) go to the driving process
//! through the run's inbox, checked first with the engine's own rules. Nothing is launched,
//! killed or saved here. The SSH hosts the driving process finds not answering come from
//! the saved state (`hosts_not_answering`), so the roster's `?` is the same on both. A
//! new event that notifies (a question, a blocking council, the run's end; see
//! `crate::notify`) is handed to [`Follower::with_notifications`]'s function, which rings
//! the dashboard's terminal: the lead has none.

use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant, SystemTime};

use crate::backend::{Multiplexer, Target};
use crate::domain::RunState;
use crate::lead::{Control, Update};
use crate::store::{InboxCommand, RunStore};

/// How often the run's files and the focused pane are looked at.
pub const FOLLOW_TICK: Duration = Duration::from_millis(250);

/// How often the focused pane is captured while neither its `output.log` grows nor the run's
/// state changes: what a pane shows comes from its output (`pipe-pane` copies every byte of
/// it to the log) or from the run (a pane that died); this catches the rest (a resize),
/// without a tmux round trip (a process of its own) at every tick for a quiet worker.
pub const SCREEN_EVERY: Duration = Duration::from_secs(5);

/// How often the follower checks that some process still drives the run.
const DRIVEN_CHECK: Duration = Duration::from_secs(2);

/// What wakes the follower's loop before its tick.
enum Wake {
    Control(Control),
    /// The lead saved `state.json` or appended to `events.jsonl`.
    RunFiles,
}

/// Shows a run without driving it.
pub struct Follower {
    store: RunStore,
    state: RunState,
    backend: Box<dyn Multiplexer>,
    focus: Option<String>,
    /// `state.json`'s modification time and size when last read.
    state_stamp: Option<(SystemTime, u64)>,
    /// Events of `events.jsonl` already handed over (the dashboard replays the ones before).
    events_seen: usize,
    events_len: u64,
    /// The driving process was seen gone (said once).
    driver_gone: bool,
    /// The hosts not answering last handed over.
    hosts_down: std::collections::BTreeSet<String>,
    /// Starts a lead for the run when a request finds none driving it (its pid, or why
    /// not); `None`: requests wait in the inbox for the next process that drives the run.
    start_lead: Option<StartLead>,
    /// Called for each new event that notifies (not for those replayed).
    on_notification: Option<OnNotification>,
    /// The focused attempt's `output.log` and its size at the last capture, and when that
    /// was: the pane is captured again when the log grew, the focus moved, or
    /// [`SCREEN_EVERY`] passed.
    captured: Option<(std::path::PathBuf, u64, Instant)>,
}

/// Tells the person of a notification of the followed run (rings the terminal).
pub type OnNotification = Box<dyn FnMut(&crate::notify::Notification) + Send>;

/// Starts a process that drives the followed run; returns its pid or why it could not.
pub type StartLead = Box<dyn FnMut(&RunState) -> std::result::Result<u32, String> + Send>;

impl Follower {
    /// Follow `state` (as just loaded from `store`); `backend` only captures the focused
    /// worker's pane. The first look reads `state.json` again (the dashboard shows `state`
    /// until then, and the run may have moved on since it was loaded); events after the
    /// first `events_seen` of `events.jsonl` are handed over (those before were replayed).
    pub fn new(
        store: RunStore,
        state: RunState,
        backend: Box<dyn Multiplexer>,
        events_seen: usize,
    ) -> Follower {
        Follower {
            store,
            state,
            backend,
            focus: None,
            state_stamp: None,
            events_seen,
            // Read at the first look.
            events_len: u64::MAX,
            driver_gone: false,
            hosts_down: Default::default(),
            start_lead: None,
            on_notification: None,
            captured: None,
        }
    }

    /// Call `f` for every event that notifies among those appended from now on.
    pub fn with_notifications(mut self, f: OnNotification) -> Self {
        self.on_notification = Some(f);
        self
    }

    /// Start a lead with `start` when a request finds no process driving the run (a retry
    /// in a finished run's dashboard, a request after the lead was killed).
    pub fn with_lead_starter(mut self, start: StartLead) -> Self {
        self.start_lead = Some(start);
        self
    }

    /// The run as last read.
    pub fn state(&self) -> &RunState {
        &self.state
    }

    /// Follow until `control` says [`Control::Quit`] (or its sender is gone); returns the
    /// run as last read. An unreadable state file is said once as a notice and the last
    /// good state is kept.
    ///
    /// The person's requests and the lead's saves (`state.json`, `events.jsonl`, watched
    /// by [`super::follow_watch`]) wake the loop at once; the focused pane is looked at
    /// every [`FOLLOW_TICK`], and so are the files when they cannot be watched.
    pub fn run(mut self, control: Receiver<Control>, mut emit: impl FnMut(Update)) -> RunState {
        if self.store.is_driven().unwrap_or(true) {
            emit(Update::Info(format!(
                "run {} is driven by another crewmux process (its lead): your keys send it requests; q leaves the dashboard, the run goes on",
                self.state.run_id
            )));
        }
        let (wake_tx, wake) = std::sync::mpsc::channel::<Wake>();
        if let Err(e) =
            crate::lead::controls::forward_controls(control, wake_tx.clone(), Wake::Control)
        {
            emit(Update::Notice(format!(
                "the dashboard cannot take keys: {e}"
            )));
            return self.state;
        }
        let _watcher = super::follow_watch::watch(self.store.dir(), wake_tx, || Wake::RunFiles);
        let mut next_driven_check = Instant::now() + DRIVEN_CHECK;
        let mut state_error: Option<String> = None;
        loop {
            // Everything queued is taken before the one look that follows: a look can wait
            // seconds for a host that does not answer, and wakes for saves queued meanwhile
            // must not each cost one before a Quit behind them is seen.
            let mut next = wake.recv_timeout(FOLLOW_TICK);
            loop {
                match next {
                    Ok(Wake::Control(Control::Quit)) | Err(RecvTimeoutError::Disconnected) => {
                        return self.state
                    }
                    Ok(Wake::Control(c)) => self.forward(c, &mut emit),
                    Ok(Wake::RunFiles) | Err(RecvTimeoutError::Timeout) => {}
                }
                match wake.try_recv() {
                    Ok(w) => next = Ok(w),
                    Err(std::sync::mpsc::TryRecvError::Empty) => break,
                    Err(std::sync::mpsc::TryRecvError::Disconnected) => return self.state,
                }
            }
            let changed = match self.reload_state() {
                Ok(changed) => changed,
                Err(e) => {
                    if state_error.as_deref() != Some(e.as_str()) {
                        emit(Update::Notice(e.clone()));
                        state_error = Some(e);
                    }
                    false
                }
            };
            if changed {
                // The focused attempt may have ended or been replaced: look at its pane.
                self.captured = None;
            }
            self.new_events(&mut emit);
            if let Some(down) = self.hosts_down_changed() {
                emit(Update::HostsDown(down));
            }
            let screen = self.screen();
            if changed || screen.is_some() {
                emit(Update::Snapshot {
                    state: std::sync::Arc::new(self.state.clone()),
                    screen,
                });
            }
            if Instant::now() >= next_driven_check {
                next_driven_check = Instant::now() + DRIVEN_CHECK;
                self.check_driven(&mut emit);
            }
        }
    }

    /// Carry out one request of the person: a focus change here, the rest through the inbox.
    fn forward(&mut self, c: Control, emit: &mut impl FnMut(Update)) {
        let cmd = match c {
            Control::Focus(w) => {
                self.focus = w;
                self.captured = None;
                self.backend.forget_screen();
                return;
            }
            Control::Quit => return,
            Control::Cancel { .. } | Control::Answer { .. } if self.state.status.is_final() => {
                return emit(Update::Notice(format!(
                    "run {} is already {}: nothing to cancel or answer",
                    self.state.run_id,
                    self.state.status.as_str()
                )));
            }
            Control::Answer { worker: None, text } => InboxCommand::AnswerRun { text },
            Control::Answer {
                worker: Some(worker),
                text,
            } => InboxCommand::AnswerWorker { worker, text },
            Control::Cancel { worker } => InboxCommand::Cancel {
                worker,
                grace_s: None,
            },
            Control::Steer(s) => match crate::engine::steer::check(&self.state, &s) {
                Ok(()) => InboxCommand::Steer(s),
                Err(why) => return emit(Update::Notice(why)),
            },
        };
        if let Err(e) = self.store.send_command(&cmd) {
            return emit(Update::Notice(format!("the request was not sent: {e}")));
        }
        let id = self.state.run_id.clone();
        if self.store.is_driven().unwrap_or(true) {
            return emit(Update::Info(format!("sent to the lead of run {id}")));
        }
        // Nobody drives the run: the request waits in its inbox for the next lead.
        let started = match self.start_lead.as_mut() {
            Some(start) => start(&self.state),
            None => Err(format!("crewmux attach {id} starts one")),
        };
        emit(Update::Notice(match started {
            Ok(pid) => format!("run {id} had no lead: started one (pid {pid}), which carries out the request"),
            Err(why) => format!(
                "no process drives run {id}: the request waits in its inbox for the next one ({why})"
            ),
        }));
    }

    /// Read `state.json` again when it changed; true when it did.
    fn reload_state(&mut self) -> std::result::Result<bool, String> {
        let now = stamp(&self.store.state_path());
        if now.is_none() || now == self.state_stamp {
            return Ok(false);
        }
        let state = self.store.load_state().map_err(|e| e.to_string())?;
        self.state_stamp = now;
        self.state = state;
        Ok(true)
    }

    /// The hosts the driving process finds not answering, when they differ from those
    /// last handed over.
    fn hosts_down_changed(&mut self) -> Option<std::collections::BTreeSet<String>> {
        let now: std::collections::BTreeSet<String> =
            self.state.hosts_not_answering.keys().cloned().collect();
        (now != self.hosts_down).then(|| {
            self.hosts_down.clone_from(&now);
            now
        })
    }

    /// Hand over the events appended since the last look.
    fn new_events(&mut self, emit: &mut impl FnMut(Update)) {
        let len = file_len(&self.store.events_path());
        if len == self.events_len {
            return;
        }
        // Read again at the next look when it fails (a line being appended).
        let Ok(events) = self.store.read_events() else {
            return;
        };
        self.events_len = len;
        for e in events.into_iter().skip(self.events_seen) {
            self.events_seen += 1;
            // The log panel shows it as the driving process logged it (its own log file
            // has it already; this target stays out of the file).
            tracing::info!(
                target: crate::logging::HISTORY_TARGET,
                "{}",
                crate::logging::history_line(&e)
            );
            if let Some(f) = self.on_notification.as_mut() {
                if let Some(n) = crate::notify::Notification::of_event(&self.state.run_id, &e) {
                    f(&n);
                }
            }
            emit(Update::Event(e));
        }
    }

    /// The focused worker's screen when it changed since the last look. The pane is asked
    /// for only when its `output.log` grew, the focus, the attempt or the run's state
    /// changed, or [`SCREEN_EVERY`] passed; and alone (no pane listing: the lead watches
    /// liveness).
    fn screen(&mut self) -> Option<String> {
        let w = self.state.worker(self.focus.as_deref()?)?;
        let target = Target {
            worker: w.id.clone(),
            attempt: w.attempt,
            pane_id: w.pane_id.clone(),
            pid: w.pid,
            log: self.store.attempt_dir(&w.id, w.attempt).join("output.log"),
            watch_screen: false,
        };
        let len = file_len(&target.log);
        let same = self.captured.as_ref().is_some_and(|(log, at_len, at)| {
            *log == target.log && *at_len == len && at.elapsed() < SCREEN_EVERY
        });
        if same {
            return None;
        }
        self.captured = Some((target.log.clone(), len, Instant::now()));
        let poll = self.backend.poll(&[], Some(&target));
        poll.screen
            .map(|s| crate::lead::observe::without_protocol_lines(&s))
    }

    /// Say once when no process drives the run any more and it has not finished.
    fn check_driven(&mut self, emit: &mut impl FnMut(Update)) {
        let driven = self.store.is_driven().unwrap_or(true);
        if !driven && !self.driver_gone && !self.state.status.is_final() {
            emit(Update::Notice(format!(
                "the lead of run {id} is gone: q, then crewmux attach {id} starts a new one",
                id = self.state.run_id
            )));
        }
        self.driver_gone = !driven;
    }
}

fn stamp(path: &std::path::Path) -> Option<(SystemTime, u64)> {
    let m = std::fs::metadata(path).ok()?;
    Some((m.modified().ok()?, m.len()))
}

fn file_len(path: &std::path::Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

#[cfg(test)]
#[path = "follow_tests.rs"]
mod tests;
