//! The run driver: one loop on its own thread that owns the run state, feeds the pure
//! engine with what the backend and the files show, carries out the engine's effects, saves
//! the state and hands snapshots to the dashboard or the headless printer.
#![allow(
    clippy::expect_used,
    reason = "lookups of ids the surrounding code has just checked"
)]

mod council;
mod lines;
mod prepare;
mod upstream;
mod watch;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use chrono::Utc;

pub use council::{run_council, write_report};
pub use prepare::{prepare, prompt_text, Prepared};
pub use watch::{Watch, OUTPUT_RING_LINES};

use crate::backend::{signal_group, Liveness, Multiplexer, Target};
use crate::domain::{RunEvent, RunState, WorkerStatus};
use crate::engine::{self, Effect, Input, Runtime};
use crate::error::Result;
use crate::store::{InboxCommand, RunStore};

/// How the driver behaves.
#[derive(Debug, Clone)]
pub struct DriverOptions {
    /// Between SIGTERM and SIGKILL.
    pub grace: Duration,
    /// Poll period (one tmux round trip per tick).
    pub tick: Duration,
    /// No bell or desktop notification.
    pub quiet: bool,
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
    /// Show this worker's output.
    Focus(Option<String>),
    /// Stop driving; workers keep running.
    Quit,
}

/// From the driver to whoever shows the run.
#[derive(Debug, Clone)]
pub enum Update {
    /// The run changed; `screen` is the focused worker's output (ANSI text) if it changed.
    Snapshot {
        state: Box<RunState>,
        screen: Option<String>,
    },
    /// One event, as appended to `events.jsonl`.
    Event(RunEvent),
    /// Something the person should read (a failed paste, a tmux error).
    Notice(String),
    /// The loop ended (`finished` = the run reached a final status).
    Stopped { finished: bool },
}

/// What wakes the driver's loop before its tick.
enum Wake {
    Control(Control),
    /// Some attempt's `exit.json` was written.
    ExitFile,
}

/// Watch `workers/` (recursively) for `exit.json` files; `None` (polling only) when inotify
/// is not available.
fn exit_file_watcher(
    dir: &std::path::Path,
    tx: std::sync::mpsc::Sender<Wake>,
) -> Option<notify::RecommendedWatcher> {
    use notify::Watcher;
    let mut watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
        if let Ok(ev) = res {
            let is_exit = ev
                .paths
                .iter()
                .any(|p| p.file_name().is_some_and(|n| n == "exit.json"));
            if is_exit {
                let _ = tx.send(Wake::ExitFile);
            }
        }
    })
    .map_err(|e| tracing::warn!("no inotify ({e}); exits are seen by polling"))
    .ok()?;
    let _ = std::fs::create_dir_all(dir);
    watcher
        .watch(dir, notify::RecursiveMode::Recursive)
        .map_err(|e| {
            tracing::warn!(
                "cannot watch {}: {e}; exits are seen by polling",
                dir.display()
            )
        })
        .ok()?;
    Some(watcher)
}

/// A kill waiting for its SIGKILL.
struct PendingKill {
    worker: String,
    attempt: u32,
    pid: u32,
    at: Instant,
}

/// The driver of one run.
pub struct Driver {
    store: RunStore,
    state: RunState,
    rt: Runtime,
    backend: Box<dyn Multiplexer>,
    opts: DriverOptions,
    watches: HashMap<String, Watch>,
    kills: Vec<PendingKill>,
    inbox_offset: u64,
    focus: Option<String>,
    finished: bool,
    server_down_reported: bool,
    /// The credential store, when there is one (SPEC §8): a key per launch, rotated when a
    /// worker's output matches the rate-limit patterns.
    creds: Option<crate::creds::Store>,
    rate_limit: crate::creds::RateLimitPatterns,
    /// Credential label of each worker's current attempt.
    credential_labels: HashMap<String, String>,
    /// Workers whose current attempt printed a rate-limit line.
    rate_limited: HashSet<String>,
    /// Monotonic origin of the waiting detectors' clocks.
    started: Instant,
    /// Providers (built-ins + user + project overrides) that launches are built from.
    registry: crate::providers::Registry,
    /// Sorts output lines into output, stall and rate-limit inputs.
    lines: lines::LineSorter,
    /// Launches the engine asked for that wait for the next batch.
    pending_launches: std::collections::VecDeque<(String, u32)>,
}

/// Attempts started per backend call (one tmux script): small enough that a batch (~60 ms
/// for 16 windows here) never holds up for long the exits the loop should see.
pub const LAUNCH_BATCH: usize = 16;

/// Least time between two rewrites of `state.json` while a run is busy.
pub const SAVE_EVERY: Duration = Duration::from_millis(250);

impl Driver {
    /// A driver for a run whose `state.json` is `state`. Live workers of a saved state are
    /// watched again (reattach): their exits while nobody watched are collected from the
    /// files, and a pane that is gone with no evidence becomes `crashed`.
    pub fn new(
        store: RunStore,
        state: RunState,
        backend: Box<dyn Multiplexer>,
        opts: DriverOptions,
    ) -> Self {
        let inbox_offset = store.inbox_len();
        let mut d = Driver {
            store,
            state,
            rt: Runtime::default(),
            backend,
            opts,
            watches: HashMap::new(),
            kills: vec![],
            inbox_offset,
            focus: None,
            finished: false,
            server_down_reported: false,
            creds: None,
            rate_limit: crate::creds::RateLimitPatterns::default(),
            credential_labels: HashMap::new(),
            rate_limited: HashSet::new(),
            started: Instant::now(),
            registry: crate::providers::Registry::builtin(),
            lines: lines::LineSorter::default(),
            pending_launches: std::collections::VecDeque::new(),
        };
        match crate::providers::Registry::load(
            Some(&d.state.project_dir),
            &crate::providers::EnvSnapshot::current(),
        ) {
            Ok(r) => d.registry = r,
            Err(e) => tracing::warn!("providers.toml: {e}; using the built-in providers"),
        }
        let now = Utc::now();
        for w in d.state.workers.clone() {
            if !w.status.is_live() {
                continue;
            }
            let nonce = d
                .state
                .dispatches
                .iter()
                .rev()
                .find(|r| r.worker_id == w.id && r.attempt == w.attempt)
                .map(|r| r.nonce.clone());
            match nonce {
                Some(nonce) => {
                    let dir = d.store.attempt_dir(&w.id, w.attempt);
                    d.watches.insert(
                        w.id.clone(),
                        Watch::new(&w.id, w.attempt, &nonce, &dir, true),
                    );
                    d.rt.last_output.insert(w.id.clone(), now);
                }
                None => {
                    // Launched by a process that died before recording it: nothing to watch.
                    let fx = engine::update(
                        &mut d.state,
                        &mut d.rt,
                        now,
                        Input::LaunchFailed {
                            worker: w.id.clone(),
                            attempt: w.attempt,
                            error: "the launching process ended before the attempt started".into(),
                        },
                    );
                    d.pending_fx(fx);
                }
            }
        }
        d
    }

    /// Hand launches keys from `store` (`None`: workers use their own login).
    pub fn with_credentials(mut self, store: Option<crate::creds::Store>) -> Self {
        self.creds = store;
        self
    }

    pub fn state(&self) -> &RunState {
        &self.state
    }

    /// Drive the run until it finishes (with `exit_when_finished`) or `Quit` arrives.
    /// `emit` receives snapshots, events and notices; it must not block.
    #[allow(
        clippy::too_many_lines,
        reason = "split along what the driver does in the driver split (#15, reliability)"
    )]
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
        let mut pending = std::mem::take(&mut self.rt_pending());
        pending.push(Input::Start);
        self.apply_all(pending, &mut emit);
        self.save(&mut emit);
        emit(Update::Snapshot {
            state: Box::new(self.state.clone()),
            screen: None,
        });
        // One queue for the loop: control messages, and a wake-up whenever an attempt's
        // `exit.json` appears (inotify through `notify`), so an exit is seen in
        // milliseconds instead of at the next tick.
        let (wake_tx, wake) = std::sync::mpsc::channel::<Wake>();
        let forward = wake_tx.clone();
        std::thread::Builder::new()
            .name("crewmux-control".into())
            .spawn(move || {
                for c in control {
                    if forward.send(Wake::Control(c)).is_err() {
                        return;
                    }
                }
                let _ = forward.send(Wake::Control(Control::Quit));
            })?;
        let _watcher = exit_file_watcher(&self.store.dir().join("workers"), wake_tx);
        let mut last_tick = Instant::now() - self.opts.tick;
        // A control message met while coalescing exit wake-ups waits here for its turn.
        let mut deferred: Option<Wake> = None;
        let mut quiet_ticks: u32 = 0;
        let mut unsaved = false;
        let mut last_save = Instant::now();
        loop {
            // Adaptive back-off: after a few quiet ticks the period grows to 4× (exits still
            // wake the loop at once through inotify; any message resets it).
            let period = self.opts.tick * (1 + (quiet_ticks / 5).min(3));
            let wait = period.saturating_sub(last_tick.elapsed());
            let next = match deferred.take() {
                Some(w) => Ok(w),
                None => wake.recv_timeout(wait),
            };
            match next {
                Ok(Wake::Control(Control::Quit)) => break,
                Ok(Wake::Control(c)) => {
                    quiet_ticks = 0;
                    let inputs = self.control_inputs(c, &mut emit);
                    if !inputs.is_empty() && self.apply_all(inputs, &mut emit) > 0 {
                        self.save(&mut emit);
                        emit(Update::Snapshot {
                            state: Box::new(self.state.clone()),
                            screen: None,
                        });
                    }
                    continue;
                }
                Ok(Wake::ExitFile) => {
                    quiet_ticks = 0;
                    // Several exits at once wake once; anything else is kept for next turn.
                    while let Ok(w) = wake.try_recv() {
                        if !matches!(w, Wake::ExitFile) {
                            deferred = Some(w);
                            break;
                        }
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            last_tick = Instant::now();
            let (inputs, screen) = self.observe(&mut emit);
            let mut changed = self.apply_all(inputs, &mut emit) > 0;
            // Launches beyond one batch go out a batch per turn, so exits stay prompt.
            if !self.pending_launches.is_empty() {
                let batch: Vec<(String, u32)> = {
                    let n = self.pending_launches.len().min(LAUNCH_BATCH);
                    self.pending_launches.drain(..n).collect()
                };
                let inputs = self.launch_many(batch);
                self.apply_all(inputs, &mut emit);
                changed = true;
                last_tick = Instant::now() - self.opts.tick;
            }
            self.hard_kills();
            if changed {
                unsaved = true;
            }
            // state.json is rewritten at most every SAVE_EVERY (one run of 1000 workers is
            // megabytes); exit evidence is on disk meanwhile, so nothing is lost.
            if unsaved && (last_save.elapsed() >= SAVE_EVERY || self.finished) {
                self.save(&mut emit);
                unsaved = false;
                last_save = Instant::now();
            }
            if changed || screen.is_some() || self.rt.last_output_moved {
                quiet_ticks = 0;
            } else {
                quiet_ticks = quiet_ticks.saturating_add(1);
            }
            self.rt.last_output_moved = false;
            if changed || screen.is_some() {
                emit(Update::Snapshot {
                    state: Box::new(self.state.clone()),
                    screen,
                });
            }
            if self.finished && self.opts.exit_when_finished {
                break;
            }
        }
        if unsaved {
            self.save(&mut emit);
        }
        if !self.state.status.is_final() && self.state.status != crate::domain::RunStatus::Halted {
            // Nobody drives the run now: say so, so `status` and `attach` know to continue it.
            self.state.status = crate::domain::RunStatus::Detached;
            self.save(&mut emit);
        }
        emit(Update::Stopped {
            finished: self.finished,
        });
        Ok(self.state)
    }

    fn rt_pending(&mut self) -> Vec<Input> {
        vec![]
    }

    /// Without driving the run (nothing is launched or killed): observe its attempts for
    /// `span` and record what happened to them; returns the saved state. Used by `status`
    /// on a run that no process drives.
    ///
    /// Errors: another process drives the run, or the state cannot be saved.
    pub fn observe_only(mut self, span: Duration) -> Result<RunState> {
        let _lock = self.store.try_driver_lock()?.ok_or_else(|| {
            crate::error::Error::Usage("another crewmux process drives this run".into())
        })?;
        let mut sink = |_u: Update| {};
        let end = Instant::now() + span;
        loop {
            let (inputs, _) = self.observe(&mut sink);
            let inputs: Vec<Input> = inputs
                .into_iter()
                .filter(|i| !matches!(i, Input::Tick))
                .collect();
            self.apply_all(inputs, &mut sink);
            if self.watches.is_empty() || Instant::now() >= end {
                break;
            }
            std::thread::sleep(Duration::from_millis(300));
        }
        self.save(&mut sink);
        Ok(self.state)
    }

    /// Cancel one worker or every worker of a run that no process drives: SIGTERM, the
    /// grace period, SIGKILL; waits up to `wait` for the attempts to end. The run is not
    /// continued (no new launches); a full cancel marks it `cancelled`.
    ///
    /// Errors: another process drives the run, or the state cannot be saved.
    pub fn cancel_now(mut self, worker: Option<String>, wait: Duration) -> Result<RunState> {
        let _lock = self.store.try_driver_lock()?.ok_or_else(|| {
            crate::error::Error::Usage("another crewmux process drives this run".into())
        })?;
        let mut sink = |_u: Update| {};
        let all = worker.is_none();
        self.apply_all(vec![Input::Cancel { worker }], &mut sink);
        let end = Instant::now() + wait;
        while !self.watches.is_empty() && Instant::now() < end {
            let (inputs, _) = self.observe(&mut sink);
            let inputs: Vec<Input> = inputs
                .into_iter()
                .filter(|i| !matches!(i, Input::Tick))
                .collect();
            self.apply_all(inputs, &mut sink);
            self.hard_kills();
            let cancelled_done = self
                .state
                .workers
                .iter()
                .all(|w| !w.status.is_live() || !self.rt.kills.contains_key(&w.id));
            if cancelled_done {
                break;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        if all {
            let now = Utc::now();
            for w in self.state.workers.iter_mut() {
                if !w.status.is_terminal() {
                    w.status = WorkerStatus::Cancelled;
                    w.reason = Some("cancelled".into());
                    w.ended_at = Some(now);
                }
            }
            self.state.status = crate::domain::RunStatus::Cancelled;
            self.state.reason = Some("cancelled by the user".into());
            let _ = self.store.append_event(&RunEvent {
                ts: now,
                kind: "run-cancelled".into(),
                worker: None,
                attempt: None,
                source: "user".into(),
                message: "every worker stopped".into(),
            });
        }
        self.save(&mut sink);
        Ok(self.state)
    }

    fn save(&mut self, emit: &mut impl FnMut(Update)) {
        self.state.updated_at = Utc::now();
        if let Err(e) = self.store.save_state(&self.state) {
            emit(Update::Notice(format!("could not save the run state: {e}")));
        }
    }

    fn control_inputs(&mut self, c: Control, emit: &mut impl FnMut(Update)) -> Vec<Input> {
        match c {
            Control::Answer { worker: None, text } => {
                if !self.state.clarification.pending {
                    emit(Update::Notice("no run-level question is pending".into()));
                    return vec![];
                }
                vec![Input::AnswerRun { text }]
            }
            Control::Answer {
                worker: Some(worker),
                text,
            } => {
                if self.state.worker(&worker).map(|w| w.status) != Some(WorkerStatus::Waiting) {
                    emit(Update::Notice(format!(
                        "{worker} is not waiting for an answer"
                    )));
                    return vec![];
                }
                vec![Input::AnswerWorker { worker, text }]
            }
            Control::Cancel { worker } => vec![Input::Cancel { worker }],
            Control::Focus(w) => {
                self.focus = w;
                self.backend.forget_screen();
                vec![]
            }
            Control::Quit => vec![],
        }
    }

    /// One observation: inbox commands, one backend poll, new log bytes, exit evidence.
    #[allow(
        clippy::too_many_lines,
        reason = "split along what the driver does in the driver split (#15, reliability)"
    )]
    fn observe(&mut self, emit: &mut impl FnMut(Update)) -> (Vec<Input>, Option<String>) {
        let mut inputs = vec![];
        match self.store.read_commands(self.inbox_offset) {
            Ok((cmds, off)) => {
                self.inbox_offset = off;
                for cmd in cmds {
                    let c = match cmd {
                        InboxCommand::AnswerRun { text } => Control::Answer { worker: None, text },
                        InboxCommand::AnswerWorker { worker, text } => Control::Answer {
                            worker: Some(worker),
                            text,
                        },
                        InboxCommand::Cancel { worker } => Control::Cancel { worker },
                    };
                    inputs.extend(self.control_inputs(c, emit));
                }
            }
            Err(e) => emit(Update::Notice(format!("inbox: {e}"))),
        }
        let targets: Vec<Target> = self
            .watches
            .values()
            .map(|w| {
                let ws = self.state.worker(&w.worker);
                Target {
                    worker: w.worker.clone(),
                    attempt: w.attempt,
                    pane_id: ws.and_then(|s| s.pane_id.clone()),
                    pid: ws.and_then(|s| s.pid),
                    // The sim agent asks through its output protocol; agents through
                    // their screens.
                    watch_screen: ws.is_some_and(|s| s.provider != "sim"),
                }
            })
            .collect();
        let focus_target = self.focus.as_ref().and_then(|f| {
            let ws = self.state.worker(f)?;
            Some(Target {
                worker: f.clone(),
                attempt: ws.attempt,
                pane_id: ws.pane_id.clone(),
                pid: ws.pid,
                watch_screen: false,
            })
        });
        let poll = if targets.is_empty() && focus_target.is_none() {
            Default::default()
        } else {
            self.backend.poll(&targets, focus_target.as_ref())
        };
        if let Some(msg) = &poll.server_down {
            if !self.server_down_reported && !targets.is_empty() {
                self.server_down_reported = true;
                emit(Update::Notice(format!(
                    "the tmux server is unreachable ({msg}); its workers are marked crashed"
                )));
            }
        } else if self.server_down_reported {
            self.server_down_reported = false;
            emit(Update::Notice("the tmux server answers again".into()));
        }
        let mut screen = poll.screen;
        for (i, t) in targets.iter().enumerate() {
            let live = poll.liveness.get(i).copied().unwrap_or(Liveness::Alive);
            let Some(watch) = self.watches.get_mut(&t.worker) else {
                continue;
            };
            let news = watch.read_log();
            // Only a credential store can rotate keys: without one, lines are not scanned.
            if self.creds.is_some()
                && news.lines.iter().any(|l| {
                    crate::creds::rate_limit_matches(
                        &crate::launch::strip_ansi(l),
                        &self.rate_limit,
                    )
                })
            {
                self.rate_limited.insert(t.worker.clone());
            }
            let provider = self.state.worker(&t.worker).map(|w| w.provider.clone());
            inputs.extend(self.lines.inputs(
                &self.registry,
                provider.as_deref().unwrap_or_default(),
                (&t.worker, t.attempt),
                news.grew,
                &news.lines,
                &self.rate_limit,
            ));
            if let Some(q) = news.question {
                inputs.push(Input::Asked {
                    worker: t.worker.clone(),
                    attempt: t.attempt,
                    question: q,
                });
            }
            if t.watch_screen && live == Liveness::Alive {
                // The pane's last lines (tmux) or the log's (process), re-fed every tick so
                // the detector can tell a settled prompt from a busy spinner.
                let tail = poll.tails.get(i).cloned().flatten().or_else(|| {
                    (self.state.backend == crate::domain::BackendKind::Process)
                        .then(|| watch.log_tail(crate::backend::TAIL_LINES as usize))
                });
                if let Some(tail) = tail {
                    watch.screen_tail = tail;
                }
                let now_ms = self.started.elapsed().as_millis() as u64;
                let provider = self
                    .state
                    .worker(&t.worker)
                    .map(|w| w.provider.clone())
                    .unwrap_or_default();
                let detector = watch.detector.get_or_insert_with(|| {
                    crate::judge::waiting::WaitingDetector::for_provider(&provider)
                });
                let seen = detector.observe(&watch.screen_tail, now_ms);
                let waiting =
                    self.state.worker(&t.worker).map(|w| w.status) == Some(WorkerStatus::Waiting);
                match seen {
                    Some(q)
                        if !waiting
                            && watch.asked_screen.as_deref()
                                != Some(watch.screen_tail.as_str()) =>
                    {
                        watch.asked_screen = Some(watch.screen_tail.clone());
                        inputs.push(Input::Asked {
                            worker: t.worker.clone(),
                            attempt: t.attempt,
                            question: q,
                        });
                    }
                    _ => {}
                }
            }
            let evidence = watch.exit_evidence();
            let exit = match (evidence, live) {
                (Some((code, source)), _) => {
                    if let (Some(m), crate::domain::ExitSource::ExitFile) =
                        (watch.marker_code(), source)
                    {
                        if m != code {
                            tracing::warn!(worker = %t.worker, "exit.json says {code}, marker says {m}");
                        }
                    }
                    Some(Ok((code, source)))
                }
                (None, Liveness::Alive) => None,
                (None, Liveness::Dead { status }) => {
                    // pane_dead can precede the exit file by a few ms: give it 500 ms.
                    let since = *watch.dead_since.get_or_insert_with(Instant::now);
                    match status {
                        Some(code) if since.elapsed() > Duration::from_millis(500) => {
                            Some(Ok((code, crate::domain::ExitSource::PaneStatus)))
                        }
                        None if since.elapsed() > Duration::from_secs(3) => Some(Err(
                            "pane dead with no status and no exit record".to_string(),
                        )),
                        _ => None,
                    }
                }
                (None, Liveness::Gone) => {
                    // One last read: the file may have landed between poll and read.
                    let _ = watch.read_log();
                    match watch.exit_evidence() {
                        Some(e) => Some(Ok(e)),
                        None => Some(Err(poll
                            .server_down
                            .clone()
                            .map(|m| format!("tmux server gone: {m}"))
                            .unwrap_or_else(|| "pane or process gone".into()))),
                    }
                }
            };
            if let Some(exit) = exit {
                if self.rate_limited.remove(&t.worker) && !matches!(exit, Ok((0, _))) {
                    self.rotate_credential(&t.worker, t.attempt, emit);
                }
                let w = self.watches.remove(&t.worker).expect("present");
                if let Some(input) =
                    crate::workspace::on_attempt_end(&mut self.state, &t.worker, t.attempt, &w.dir)
                {
                    inputs.push(input);
                    continue;
                }
                inputs.push(match exit {
                    Ok((code, source)) => {
                        let ws = self.state.worker(&t.worker);
                        let artifacts = ws.map(|s| s.artifacts.clone()).unwrap_or_default();
                        let missing: Vec<String> = artifacts
                            .into_iter()
                            .filter(|a| !w.dir.join(a).exists())
                            .collect();
                        let result = w.dir.join("result.md");
                        if code == 0 && !result.exists() && missing.is_empty() {
                            // An agent that prints its answer instead of writing the result
                            // file: its output is the result.
                            result_from_log(&w.dir.join("output.log"), &result);
                        }
                        Input::Exited {
                            worker: t.worker.clone(),
                            attempt: t.attempt,
                            code,
                            source,
                            missing_artifacts: missing,
                            result: result.exists().then_some(result),
                        }
                    }
                    Err(detail) => Input::Vanished {
                        worker: t.worker.clone(),
                        attempt: t.attempt,
                        detail,
                    },
                });
            }
        }
        if screen.is_none() && self.state.backend == crate::domain::BackendKind::Process {
            if let Some(w) = self.focus.as_ref().and_then(|f| self.watches.get(f)) {
                screen = Some(w.ring.iter().cloned().collect::<Vec<_>>().join("\n"));
            }
        }
        inputs.push(Input::Tick);
        (inputs, screen.map(|s| without_protocol_lines(&s)))
    }

    /// Feed inputs to the engine and carry out effects, which may produce more inputs.
    /// Returns how many effects there were: the state changes only with effects (every
    /// change is at least an event).
    fn apply_all(&mut self, inputs: Vec<Input>, emit: &mut impl FnMut(Update)) -> usize {
        let mut queue: std::collections::VecDeque<Input> = inputs.into();
        let mut count = 0;
        let mut batches = 0;
        loop {
            // Launches wait until everything observed is applied (so an exit is recorded
            // before the work it frees up starts), then go out in one batch.
            let mut launches = vec![];
            while let Some(input) = queue.pop_front() {
                let fx = engine::update(&mut self.state, &mut self.rt, Utc::now(), input);
                count += fx.len();
                for effect in fx {
                    if let Effect::Launch { worker, attempt } = effect {
                        launches.push((worker, attempt));
                    } else if let Some(next) = self.carry_out(effect, emit) {
                        queue.push_back(next);
                    }
                }
            }
            self.pending_launches.extend(launches);
            if self.pending_launches.is_empty() || batches == 1 {
                // The rest goes out a batch per turn of the loop.
                return count;
            }
            batches += 1;
            let n = self.pending_launches.len().min(LAUNCH_BATCH);
            let batch: Vec<(String, u32)> = self.pending_launches.drain(..n).collect();
            queue.extend(self.launch_many(batch));
        }
    }

    fn pending_fx(&mut self, fx: Vec<Effect>) {
        for effect in fx {
            if let Effect::Event(e) = effect {
                let _ = self.store.append_event(&e);
            }
        }
    }

    fn carry_out(&mut self, effect: Effect, emit: &mut impl FnMut(Update)) -> Option<Input> {
        match effect {
            Effect::Launch { worker, attempt } => self.launch_many(vec![(worker, attempt)]).pop(),
            Effect::Kill {
                worker,
                attempt,
                reason,
            } => {
                let pid = self.state.worker(&worker).and_then(|w| w.pid);
                if let Some(pid) = pid {
                    if let Err(e) = signal_group(pid, false) {
                        emit(Update::Notice(e.to_string()));
                    }
                    self.kills.push(PendingKill {
                        worker: worker.clone(),
                        attempt,
                        pid,
                        at: Instant::now() + self.opts.grace,
                    });
                }
                tracing::info!(worker = %worker, attempt, ?reason, "SIGTERM sent to the process group");
                None
            }
            Effect::Paste { worker, text } => {
                let target = self.state.worker(&worker).map(|w| Target {
                    worker: w.id.clone(),
                    attempt: w.attempt,
                    pane_id: w.pane_id.clone(),
                    pid: w.pid,
                    watch_screen: false,
                });
                if let Some(t) = target {
                    if let Err(e) = self.backend.send_text(&t, &text) {
                        emit(Update::Notice(format!("could not answer {worker}: {e}")));
                    }
                }
                None
            }
            Effect::EvaluateGate => Some(Input::Gate(crate::judge::gate::evaluate(
                &self.state.problem,
                &self.state.clarification.answers,
            ))),
            Effect::RunCouncil => Some(Input::CouncilReady(run_council(&self.state, &self.store))),
            Effect::Integrate => Some(Input::Integrated(crate::workspace::run_integration(
                &mut self.state,
            ))),
            Effect::WriteReport => match write_report(&self.state, &self.store) {
                Ok((path, bytes)) => Some(Input::ReportWritten { path, bytes }),
                Err(e) => {
                    emit(Update::Notice(format!("could not write report.md: {e}")));
                    Some(Input::ReportWritten {
                        path: self.store.dir().join("report.md"),
                        bytes: 0,
                    })
                }
            },
            Effect::Event(e) => {
                if let Err(err) = self.store.append_event(&e) {
                    emit(Update::Notice(format!("could not append an event: {err}")));
                }
                let who = e
                    .worker
                    .as_deref()
                    .map(|w| format!("{w}: "))
                    .unwrap_or_default();
                let bad = matches!(
                    e.kind.as_str(),
                    "worker-crashed"
                        | "worker-failed"
                        | "worker-timeout"
                        | "run-failed"
                        | "fix-skipped"
                );
                if bad {
                    tracing::warn!(target: "crewmux::run", "{who}{} {}", e.kind, e.message);
                } else {
                    tracing::info!(target: "crewmux::run", "{who}{} {}", e.kind, e.message);
                }
                emit(Update::Event(e));
                None
            }
            Effect::Notify(msg) => {
                if !self.opts.quiet {
                    notify(&msg);
                }
                None
            }
            Effect::Finished => {
                self.finished = true;
                None
            }
        }
    }

    /// Prepare and start a batch of attempts: prompts and wrappers first, then one backend
    /// call for all of them (TMUX-NOTES: 64 windows in one tmux invocation ~250 ms against
    /// ~450 ms one process each). Returns one input per attempt.
    fn launch_many(&mut self, wanted: Vec<(String, u32)>) -> Vec<Input> {
        let mut inputs = vec![];
        let mut ready: Vec<(String, u32, Prepared, Option<String>)> = vec![];
        for (worker, attempt) in wanted {
            match self.prepare_one(&worker, attempt) {
                Ok((prepared, label)) => ready.push((worker, attempt, prepared, label)),
                Err(error) => inputs.push(Input::LaunchFailed {
                    worker,
                    attempt,
                    error,
                }),
            }
        }
        if ready.is_empty() {
            return inputs;
        }
        let specs: Vec<crate::backend::SpawnSpec> =
            ready.iter().map(|(_, _, p, _)| p.spawn.clone()).collect();
        let results = self.backend.spawn_many(&specs);
        for ((worker, attempt, prepared, credential_label), result) in
            ready.into_iter().zip(results)
        {
            inputs.push(match result {
                Ok(spawned) => {
                    self.watches.insert(
                        worker.clone(),
                        Watch::new(
                            &worker,
                            attempt,
                            &prepared.nonce,
                            &prepared.paths.dir,
                            false,
                        ),
                    );
                    Input::Launched {
                        worker,
                        attempt,
                        nonce: prepared.nonce,
                        prompt_path: prepared.paths.prompt,
                        backend: self.backend.kind().as_str().into(),
                        pane_id: spawned.pane_id,
                        pid: spawned.pid,
                        credential_label,
                    }
                }
                Err(e) => Input::LaunchFailed {
                    worker,
                    attempt,
                    error: e.to_string(),
                },
            });
        }
        inputs
    }

    /// Write one attempt's prompt and wrapper and pick its credential; returns the prepared
    /// attempt and the credential's label, or why it cannot start.
    fn prepare_one(
        &mut self,
        worker: &str,
        attempt: u32,
    ) -> std::result::Result<(Prepared, Option<String>), String> {
        let w = self
            .state
            .worker(worker)
            .cloned()
            .ok_or_else(|| "unknown worker".to_string())?;
        let dir = self.store.attempt_dir(worker, attempt);
        let mut prepared = prepare(
            &self.state,
            &w,
            dir,
            &self.opts.self_exe,
            self.opts.prompt_max_chars,
            &self.registry,
        )
        .map_err(|e| e.to_string())?;
        let mut credential_label = None;
        if let Some(store) = self.creds.as_mut() {
            if let Some(key) = store
                .select_for_launch(&w.provider, None)
                .map_err(|e| e.to_string())?
            {
                // The variable the project's providers.toml names, as the launch does.
                let (var, value) = key.env_pair();
                let var = crate::creds::key_var_in(&self.registry, &w.provider)
                    .unwrap_or_else(|| var.to_string());
                prepared.spawn.secret_env.push((var, value.to_string()));
                self.credential_labels
                    .insert(worker.to_string(), key.label.clone());
                credential_label = Some(key.label);
            }
        }
        Ok((prepared, credential_label))
    }

    /// `worker`'s attempt failed after a rate-limit line: move its provider past the key it
    /// used, and say so in the event log by label.
    fn rotate_credential(&mut self, worker: &str, attempt: u32, emit: &mut impl FnMut(Update)) {
        let Some(provider) = self.state.worker(worker).map(|w| w.provider.clone()) else {
            return;
        };
        let Some(store) = self.creds.as_mut() else {
            return;
        };
        let used = self.credential_labels.get(worker).cloned();
        let message = match store.on_rate_limit(&provider, used.as_deref(), None) {
            Ok(Some(next)) => format!(
                "rate limited on credential `{}`; {provider} moves to `{next}`",
                used.as_deref().unwrap_or("?")
            ),
            Ok(None) => return,
            Err(e) => format!("rate limited, but the credential store could not rotate: {e}"),
        };
        let event = RunEvent {
            ts: Utc::now(),
            kind: "credential-rotated".into(),
            worker: Some(worker.to_string()),
            attempt: Some(attempt),
            source: "engine".into(),
            message,
        };
        self.carry_out(Effect::Event(event), emit);
    }

    /// SIGKILL process groups still alive after their grace period.
    fn hard_kills(&mut self) {
        let now = Instant::now();
        let state = &self.state;
        self.kills.retain(|k| {
            let still = state
                .worker(&k.worker)
                .is_some_and(|w| w.attempt == k.attempt && w.status.is_live());
            if !still {
                // Ended, but children that ignored SIGTERM may remain in the group.
                let _ = signal_group(k.pid, true);
                return false;
            }
            if now >= k.at {
                let _ = signal_group(k.pid, true);
                return false;
            }
            true
        });
    }
}

/// Ring the terminal bell on stderr and, when `notify-send` exists, post a desktop note.
fn notify(msg: &str) {
    use std::io::Write;
    let _ = std::io::stderr().write_all(b"\x07");
    if which::which("notify-send").is_ok() {
        let _ = std::process::Command::new("notify-send")
            .arg("crewmux")
            .arg(msg)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
    }
}

/// A screen for people: without crewmux's own protocol lines (the exit marker and the sim
/// agent's `__CREWMUX_ASK__:` line, which it also prints readably).
fn without_protocol_lines(screen: &str) -> String {
    screen
        .lines()
        .filter(|l| {
            let clean = crate::launch::strip_ansi(l);
            let t = clean.trim_start();
            !t.starts_with(crate::launch::MARKER_PREFIX) && !t.starts_with(crate::sim::ASK_PREFIX)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Lines of an attempt's output kept as its result when it wrote no `result.md`.
pub const RESULT_FROM_LOG_LINES: usize = 400;

/// Write `result` from the last [`RESULT_FROM_LOG_LINES`] lines of `log` (ANSI and
/// protocol lines removed); nothing when the log is empty.
fn result_from_log(log: &std::path::Path, result: &std::path::Path) {
    let Ok(bytes) = std::fs::read(log) else {
        return;
    };
    let text = without_protocol_lines(&crate::launch::strip_ansi(&String::from_utf8_lossy(&bytes)));
    let lines: Vec<&str> = text.lines().collect();
    let tail = lines[lines.len().saturating_sub(RESULT_FROM_LOG_LINES)..].join("\n");
    if tail.trim().is_empty() {
        return;
    }
    let body = format!("{}\n", tail.trim_end());
    if let Err(e) = crate::store::write_atomic(result, body.as_bytes()) {
        tracing::warn!("could not keep the output as {}: {e}", result.display());
    }
}
