//! The run driver: one loop on its own thread that owns the run state, feeds the pure
//! engine with what the backend and the files show, carries out the engine's effects, saves
//! the state and hands snapshots to the dashboard or the headless printer.
//!
//! Every input, wherever it comes from (reconciliation when a driver starts, the loop, the
//! offline commands `status`, `cancel` and `answer`), goes through [`Driver::apply`], which
//! carries out every effect the engine returns. Here: `turns` (one turn of the loop and the
//! timing between turns), `controls` (the dashboard's and the inbox's requests), `apply`
//! (carrying out effects), `saver` and `publish` (saving and showing the run), `start` and
//! `adopt` (a driver for a saved run), `once` (every transition once) and `offline`. The
//! rest by concern: `launching/` (starting attempts), `watching/` (polls, output, exits,
//! the MCP exchange), `settling/` (exit evidence, results, reaping, the council) and
//! `remote/` (SSH hosts). The process that runs this loop on its own is the run's lead
//! (`crate::commands::lead`); dashboards follow it (`crate::dashboard`).

mod adopt;
mod apply;
mod budget;
pub(crate) mod controls;
mod launching;
mod offline;
pub mod once;
mod publish;
mod race_checks;
mod remote;
mod saver;
mod settling;
mod start;
mod turns;
mod watching;

#[cfg(test)]
pub(crate) mod fake;
#[cfg(test)]
mod inbox_tests;
#[cfg(test)]
mod off_loop_tests;
#[cfg(test)]
mod tests;

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use launching::{failures, launch, launch_thread, prepare};
use remote::{host_wait, launch_remote, work_back};
pub use settling::settle;
use settling::{council, reap, release, result, retake};
pub(crate) use watching::observe;
use watching::{echo, exit_watch, lines, log_screen, pace, poller, watch};

pub use crate::notify::NotifyWays;
pub use council::{run_council, write_report};
pub use prepare::{prepare, prompt_text, Prepared};
pub use result::RESULT_FROM_LOG_LINES;
pub use watch::{Watch, OUTPUT_RING_LINES};

use crate::domain::{RunEvent, RunState, RunStatus};
use crate::engine::{Input, RunMemory};
use crate::error::Result;
use crate::store::RunStore;
use turns::Turns;

/// How the driver behaves.
#[derive(Debug, Clone)]
pub struct DriverOptions {
    /// Between SIGTERM and SIGKILL.
    pub grace: Duration,
    /// Poll period (one tmux round trip per tick).
    pub tick: Duration,
    /// No bell or desktop notification.
    pub quiet: bool,
    /// Which notifications fire when not `quiet` (the config file's `[notify]`).
    pub notify: NotifyWays,
    /// The socket of the person's own tmux server, for its clients' `display-message`
    /// (the lead is told it when it starts); `None`: the one `$TMUX` names, if any.
    pub user_tmux: Option<PathBuf>,
    /// The crewmux binary (the sim agent is `crewmux sim-agent`).
    pub self_exe: PathBuf,
    /// Cap on packaged prompts, characters.
    pub prompt_max_chars: usize,
    /// Leave the loop when the run reaches a final status.
    pub exit_when_finished: bool,
}

impl Default for DriverOptions {
    fn default() -> Self {
        DriverOptions {
            grace: Duration::from_secs(5),
            tick: Duration::from_millis(200),
            quiet: false,
            notify: NotifyWays::default(),
            user_tmux: None,
            self_exe: std::env::current_exe().unwrap_or_else(|_| PathBuf::from("crewmux")),
            prompt_max_chars: 4000,
            exit_when_finished: true,
        }
    }
}

/// From the dashboard to the driver.
#[derive(Debug, Clone, PartialEq)]
pub enum Control {
    /// Answer the run-level question (`worker: None`) or a waiting worker.
    Answer {
        worker: Option<String>,
        text: String,
    },
    /// Cancel one worker, or the whole run.
    Cancel { worker: Option<String> },
    /// Add a worker, retry one or send it text (the engine's steering rules decide).
    Steer(crate::engine::steer::Steer),
    /// Show this worker's output.
    Focus(Option<String>),
    /// Stop driving; workers keep running.
    Quit,
}

/// From the driver to whoever shows the run.
#[derive(Debug, Clone)]
pub enum Update {
    /// The run changed; `screen` is the focused worker's output (ANSI text) if it changed.
    /// `state` is one copy of the run shared with the state saver (a run of 1,000 workers
    /// is a few hundred kB to copy): `Arc::unwrap_or_clone` takes it, copying only while the
    /// saver still writes it.
    Snapshot {
        state: Arc<RunState>,
        screen: Option<String>,
    },
    /// One event, as appended to `events.jsonl`.
    Event(RunEvent),
    /// Something the person should read (a failed paste, a tmux error): logged as a warning.
    Notice(String),
    /// News of normal operation the person should read (a host or the tmux server answers
    /// again, a request went to the run's lead): shown as a notice is, logged at info.
    Info(String),
    /// The SSH hosts that do not answer now (or were lost), sent whenever that set changes.
    HostsDown(std::collections::BTreeSet<String>),
    /// The loop ended (`finished` = the run reached a final status).
    Stopped { finished: bool },
}

/// What wakes the driver's loop before its tick.
enum Wake {
    Control(Control),
    /// An attempt's `exit.json` was written (its path).
    ExitFile(PathBuf),
    /// An agent's question, hook or progress line, or a request in the inbox, was written
    /// (see `exit_watch`): the loop reads the files now.
    Channel,
    /// The launch thread started the batch in flight: one result per attempt, in order.
    Launched(Vec<Result<crate::backend::Spawned>>),
    /// The poll thread's answer to the look handed to it.
    Polled(Box<poller::Looked>),
}

/// A kill waiting for its SIGKILL.
struct PendingKill {
    worker: String,
    attempt: u32,
    /// The wrapper's pid, leader of the attempt's process group, when known.
    pid: Option<u32>,
    /// The attempt's nonce: every process of it, in the group or not.
    nonce: Option<String>,
    /// The SSH host it runs on (its processes are signalled there); `None`: here.
    host: Option<String>,
    at: Instant,
}

/// The driver of one run.
pub struct Driver {
    store: RunStore,
    state: RunState,
    mem: RunMemory,
    /// Shared with the poll thread (see `poller`): the loop takes it only for what is rare.
    backend: poller::SharedBackend,
    backend_kind: crate::domain::BackendKind,
    /// Looks at the backend off the loop, for a backend that may answer late.
    poller: Option<poller::PollThread>,
    /// Wrappers of ended attempts waiting for their marker to be read (see `release`).
    releases: release::Releases,
    opts: DriverOptions,
    watches: HashMap<String, Watch>,
    kills: Vec<PendingKill>,
    /// The grace a cancel from the inbox asked for (`crewmux cancel --grace`), for the
    /// kills it leads to; `None`: `opts.grace`.
    cancel_grace: Option<Duration>,
    /// Processes left behind by ended attempts, on their way out (on the reaper thread
    /// while the loop runs).
    reaps: reap::Reaps,
    inbox_offset: u64,
    focus: Option<String>,
    finished: bool,
    server_down_reported: Option<String>,
    /// The SSH hosts said not to answer (see `observe::report_server`).
    hosts_down_reported: std::collections::BTreeSet<String>,
    /// The focused worker's `output.log` shown while its pane cannot be captured.
    log_screen: log_screen::LogScreen,
    /// The credential store, when there is one (docs/design.md): a key per launch, rotated when a
    /// worker's output matches the rate-limit patterns.
    creds: Option<crate::creds::Store>,
    /// Each provider's own rate-limit patterns (providers/rate_limits.rs).
    rate_limits: crate::providers::rate_limits::RateLimits,
    /// Credential label of each worker's current attempt.
    credential_labels: HashMap<String, String>,
    /// Workers whose current attempt printed a rate-limit line.
    rate_limited: HashSet<String>,
    /// Monotonic origin of the waiting detectors' clocks.
    started: Instant,
    /// The recent failures packaged prompts list (the other runs read once).
    failures: failures::Failures,
    /// Providers (built-ins + user + project overrides) that launches are built from.
    registry: crate::providers::Registry,
    /// Sorts output lines into output, stall and rate-limit inputs.
    lines: lines::LineSorter,
    /// How often the panes are listed while workers only print.
    pace: pace::Pace,
    /// Launches the engine asked for that wait for the next batch.
    pending_launches: VecDeque<(String, u32)>,
    /// Attempts held back while their SSH host does not answer (see `host_wait`).
    host_wait: host_wait::HostWait,
    /// Attempts being started on their SSH hosts' threads (see `launch_remote`).
    remote_flight: launch_remote::RemoteFlight,
    /// Ended attempts on SSH hosts whose work is being brought back (see `work_back`).
    work_back: work_back::WorkBackWait,
    /// The roster's live diffstat (runs with worktrees).
    live_diff: crate::workspace::live::LiveDiff,
    /// What reconciling the saved state with the files found; applied first by every entry
    /// point ([`Driver::run`], [`Driver::observe_only`], [`Driver::cancel_now`], …).
    startup: Vec<Input>,
    /// Transitions already in `events.jsonl` (see `once`).
    recorded: once::Recorded,
    /// Tells the person of the events that call for it, once each (see `crate::notify`).
    notifier: crate::notify::Notifier,
    /// Inputs applied that changed something (tests stop the driver after a given count).
    applied: usize,
    /// Where `state.json` is written: in place, or on the saver thread while the loop runs.
    saves: saver::Saves,
    /// Where saves go since `state.json` turned out unreadable (see `StateWriter`): the
    /// run's process ends with an error naming both files.
    state_aside: Option<crate::store::Aside>,
    /// The last snapshot shown, and the change waiting to be.
    shown: publish::Shown,
    /// An exit-file watcher runs (inotify): a watch looks for its `exit.json` when told,
    /// not every turn.
    exits_watched: bool,
    /// Starts attempts off the loop while it runs (backends that offer a launcher).
    launch_thread: Option<launch_thread::LaunchThread>,
    /// The batch the launch thread is starting, and since when.
    in_flight: Option<Vec<launch::ReadyAttempt>>,
    in_flight_at: Instant,
    /// Results taken before their attempt's marker was in `output.log` (see `result`).
    retakes: retake::Retakes,
    /// The team's checks running on race candidates (`race_checks`).
    race_checks: race_checks::RaceChecks,
    /// When the run's spend was last summed for its budget (`budget`).
    spend_at: Option<Instant>,
    /// Tests: panic (a crash: nothing more is saved) once `applied` reaches this count;
    /// with `true`, the state is saved first (a crash right after a save).
    #[cfg(test)]
    crash_after: Option<(usize, bool)>,
}

/// Attempts started per backend call (one tmux script): small enough that a batch (~60 ms
/// for 16 windows here) never holds up for long the exits the loop should see.
pub const LAUNCH_BATCH: usize = 16;

/// Longest time without a backend poll while launch batches keep the server busy (the
/// panes' liveness, a question on a screen).
pub const POLL_DURING_LAUNCH: Duration = Duration::from_secs(1);

/// Least time between two rewrites of `state.json` while a run is busy.
pub const SAVE_EVERY: Duration = Duration::from_millis(250);

/// Longest period of the loop, in ticks, once nothing has happened for a while in a run
/// whose exits all wake the loop (2 s at the default tick): each poll lists every pane, which
/// is most of what idle workers cost (the tmux server formats a row per pane).
pub const REST_TICKS: u32 = 10;

impl Driver {
    /// Hand launches keys from `store` (`None`: workers use their own login).
    pub fn with_credentials(mut self, store: Option<crate::creds::Store>) -> Self {
        self.creds = store;
        self
    }

    /// The run as the driver sees it now.
    pub fn state(&self) -> &RunState {
        &self.state
    }

    /// Drive the run until it finishes (with `exit_when_finished`) or `Quit` arrives.
    /// `emit` receives snapshots, events and notices; it must not block.
    ///
    /// # Errors
    /// Another process drives the run, or the control thread cannot start; after the loop,
    /// once the run is left as it would be otherwise, `state.json` turned out unreadable
    /// while it ran (the state went to the file next to it, see [`crate::store::Aside`]).
    pub fn run(
        mut self,
        control: Receiver<Control>,
        mut emit: impl FnMut(Update),
    ) -> Result<RunState> {
        let _driver_lock = self.store.try_driver_lock()?.ok_or_else(|| {
            crate::error::Error::Usage(format!(
                "run {} is already being driven by another crewmux process; use `crewmux status {}` or its dashboard",
                self.state.run_id, self.state.run_id
            ))
        })?;
        self.saves.start_thread(&self.store)?;
        self.reaps.start_thread()?;
        self.reap_ended_attempts();
        let mut first = std::mem::take(&mut self.startup);
        first.push(Input::Start);
        self.apply(first, &mut emit);
        // Requests sent while no process drove the run, or left unread by the last driver.
        self.apply_waiting_requests(&mut emit);
        // A run that ended before this driver took it (the engine ignores inputs then).
        self.finished |= self.state.status.is_final();
        self.save(&mut emit);
        self.show_now(&mut emit);
        // One queue for the loop: control messages, the launch and poll threads' results,
        // and a wake-up whenever an attempt's `exit.json` appears (inotify, see
        // `exit_watch`), so an exit is seen in milliseconds instead of at the next tick.
        let (wake_tx, wake) = std::sync::mpsc::channel::<Wake>();
        controls::forward_controls(control, wake_tx.clone(), Wake::Control)?;
        // After the first batch: an SSH host's launcher is made once its link is up.
        self.start_helpers(&wake_tx)?;
        // Attempts a lost host was left running (saved by an earlier driver too).
        self.end_left_on_hosts();
        let _watcher = exit_watch::watch(&self.store.dir().join("workers"), wake_tx);
        self.exits_watched = _watcher.is_some();
        let mut turns = Turns::new(self.opts.tick);
        loop {
            let period = turns.period(self.opts.tick, self.may_rest());
            let next = match turns.deferred.take() {
                Some(w) => Ok(w),
                None if self.in_flight.is_none() && !turns.held.is_empty() => {
                    Ok(Wake::Control(turns.held.remove(0)))
                }
                None => {
                    // A snapshot waiting to be shown shortens the wait (see `publish`).
                    let wait = period.saturating_sub(turns.last_tick.elapsed());
                    let soon = [self.show_wait(), self.releases.wait()];
                    let wait = soon.into_iter().flatten().fold(wait, Duration::min);
                    wake.recv_timeout(wait)
                }
            };
            let mut answer = None;
            match next {
                // A request waits while a batch is in flight (see `launch_thread`).
                Ok(Wake::Control(c)) if self.in_flight.is_some() => {
                    turns.held.push(c);
                    continue;
                }
                Ok(Wake::Control(Control::Quit)) | Err(RecvTimeoutError::Disconnected) => break,
                Ok(Wake::Control(c)) => {
                    turns.calm_since = Instant::now();
                    let inputs = self.control_inputs(c, &mut emit);
                    if !inputs.is_empty() && self.apply(inputs, &mut emit) > 0 {
                        self.save(&mut emit);
                        self.show_now(&mut emit);
                    }
                    continue;
                }
                Ok(w @ (Wake::ExitFile(_) | Wake::Channel)) => {
                    turns.calm_since = Instant::now();
                    turns.exit_wake = true;
                    turns.deferred = self.files_written(w, &wake);
                }
                Ok(Wake::Launched(mut results)) => {
                    turns.calm_since = Instant::now();
                    // Attempts that landed together are recorded together.
                    while let Ok(w) = wake.try_recv() {
                        match w {
                            Wake::Launched(more) => results.extend(more),
                            other => {
                                turns.deferred = Some(other);
                                break;
                            }
                        }
                    }
                    turns.unsaved |= !self.on_landed(results, &mut emit);
                }
                Ok(Wake::Polled(looked)) => {
                    if let Some(p) = self.poller.as_mut() {
                        p.busy = false;
                    }
                    answer = Some(*looked);
                }
                // Woken for a snapshot waiting to be shown, before the turn is due.
                Err(RecvTimeoutError::Timeout) if turns.last_tick.elapsed() < period => {
                    self.releases.turn(Instant::now());
                    self.publish(false, None, &mut emit);
                    continue;
                }
                Err(RecvTimeoutError::Timeout) => {}
            }
            self.turn(&mut turns, &mut emit, answer);
            if self.finished && self.opts.exit_when_finished {
                break;
            }
        }
        self.leave_loop(&wake, turns.unsaved, &mut emit)?;
        Ok(self.state)
    }

    /// An `exit.json` or an agent's or the inbox's file woke the loop: take it and every
    /// such wake-up queued behind it (several at once wake once); the first other one is
    /// returned, kept for the next turn.
    fn files_written(
        &mut self,
        first: Wake,
        wake: &std::sync::mpsc::Receiver<Wake>,
    ) -> Option<Wake> {
        let mut next = Some(first);
        while let Some(w) = next.take() {
            match w {
                Wake::ExitFile(path) => self.exit_file_seen(&path),
                Wake::Channel => {}
                other => return Some(other),
            }
            next = wake.try_recv().ok();
        }
        None
    }

    /// After the loop: land the batch in flight, end what is left of a finished run, save
    /// (a run nobody drives now is `detached`), show what was not shown yet, and say so.
    ///
    /// # Errors
    /// The saves went aside (see `state_aside`): the error names both files and the fix.
    fn leave_loop(
        &mut self,
        wake: &std::sync::mpsc::Receiver<Wake>,
        unsaved: bool,
        emit: &mut impl FnMut(Update),
    ) -> Result<()> {
        // A look in flight is of no use now (the thread ends once it is answered).
        self.poller = None;
        self.end_race_checks();
        let unsaved = unsaved | self.land_in_flight(wake, emit) | self.forget_hosts_not_answering();
        let late = self.retake_results(true);
        let unsaved = unsaved | (!late.is_empty() && self.apply(late, emit) > 0);
        if self.finished {
            // The run is over: nothing of its attempts may be left.
            self.reap_due(true, emit);
        }
        self.notify_failures(true, emit);
        if unsaved {
            self.save(emit);
        }
        if !self.state.status.is_final() && self.state.status != RunStatus::Halted {
            // Nobody drives the run now: say so, so `status` and `attach` know to continue it.
            self.state.status = RunStatus::Detached;
            self.save(emit);
        }
        if self.show_wait().is_some() {
            self.show_now(emit);
        }
        let said = self.saves.flush();
        self.tell_saves(said, emit);
        emit(Update::Stopped {
            finished: self.finished,
        });
        match &self.state_aside {
            Some(aside) => Err(aside.error(&self.state.run_id)),
            None => Ok(()),
        }
    }
}
