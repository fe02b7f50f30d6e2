//! Observing a run: commands from the inbox and the dashboard, one backend poll for every
//! watched attempt, new log bytes (activity, questions, rate limits) and exit evidence,
//! all turned into engine inputs.

use std::time::Instant;

use super::pace::Look;
use super::poller::{look_at, same_attempt, Looked};
use super::result::{collect_output, events_text, log_text, FromLog};
use super::settle::{settle, Settled};
use super::{Control, Driver, Update, Wake, Watch};
use crate::backend::{Liveness, Poll, Target};
use crate::domain::{ExitSource, WorkerStatus};
use crate::engine::Input;
use crate::store::InboxCommand;

/// Lines of an attempt's output kept as its result when it wrote no `result.md`.
pub const RESULT_FROM_LOG_LINES: usize = crate::providers::output::RESULT_TAIL_LINES;

impl Driver {
    /// The engine inputs of a control message (from the dashboard or the inbox); a request
    /// that does not apply is a notice.
    pub(super) fn control_inputs(
        &mut self,
        c: Control,
        emit: &mut impl FnMut(Update),
    ) -> Vec<Input> {
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
            Control::Steer(s) => match crate::engine::steer::check(&self.state, &s) {
                Ok(()) => vec![Input::Steer(s)],
                Err(why) => {
                    emit(Update::Notice(why));
                    vec![]
                }
            },
            Control::Focus(w) => {
                self.focus = w;
                match self.poller.as_mut() {
                    // Told to the backend with the next look (never waited for here).
                    Some(p) => p.forget_screen = true,
                    None => self.backend.get().forget_screen(),
                }
                self.log_screen.reset();
                self.pace.refocused();
                vec![]
            }
            Control::Quit => vec![],
        }
    }

    /// One observation: inbox commands, one backend poll, new log bytes, exit evidence.
    /// Returns the inputs (ending with a `Tick`) and the focused screen when it changed.
    pub(super) fn observe(
        &mut self,
        emit: &mut impl FnMut(Update),
    ) -> (Vec<Input>, Option<String>) {
        self.observe_with(emit, Look::Panes)
    }

    /// As [`observe`](Self::observe), asking the backend what `look` says, in place.
    /// Without the panes (an `exit.json` woke the loop: the files settle that exit, and a
    /// tmux round trip that may wait behind a launch batch is not needed for it; or workers
    /// only print, see `pace`) liveness is `Unknown`.
    pub(super) fn observe_with(
        &mut self,
        emit: &mut impl FnMut(Update),
        look: Look,
    ) -> (Vec<Input>, Option<String>) {
        let (polled, focus, asked) = self.look_targets();
        let looked = {
            let mut backend = self.backend.get();
            look_at(&mut **backend, look, asked, polled, focus)
        };
        self.observe_looked(emit, looked)
    }

    /// One observation with what `looked` found (in place or on the poll thread, maybe a
    /// few turns ago: only what it found about attempts still current counts): inbox
    /// commands, the hosts' news, new log bytes and exit evidence of every watched attempt.
    /// Returns the inputs (ending with a `Tick`) and the focused screen when it changed.
    pub(super) fn observe_looked(
        &mut self,
        emit: &mut impl FnMut(Update),
        mut looked: Looked,
    ) -> (Vec<Input>, Option<String>) {
        // Requests wait while a launch batch is in flight (see `launch_thread`).
        let mut inputs = if self.in_flight.is_none() {
            self.read_inbox(emit)
        } else {
            vec![]
        };
        let targets = self.watched_targets();
        let focus_target = self.focus.as_ref().and_then(|f| self.target(f));
        // Attempts held back for their host, or being started there: it is asked about, so
        // one that does not answer is said to (and is found again or lost).
        let held = self.host_wait.any() || self.remote_in_flight();
        if looked.listed {
            self.report_server(&looked.poll, !targets.is_empty() || held, emit);
        }
        // A lost SSH host ends its workers before anything else of this poll is decided.
        let lost = std::mem::take(&mut looked.lost_hosts);
        inputs.extend(self.lost_hosts(lost, emit));
        self.ended_on_hosts(std::mem::take(&mut looked.ended_on_hosts), emit);
        inputs.extend(self.host_wait_turn(emit));
        inputs.extend(self.remote_landed(emit));
        for t in &targets {
            let (live, tail) = looked.of(t);
            inputs.extend(self.observe_one(
                t,
                live,
                tail,
                looked.poll.server_down.as_deref(),
                emit,
            ));
        }
        inputs.extend(
            panes_gone(&looked.polled, &looked.poll)
                .into_iter()
                .filter(|g| self.is_current(g, &looked.polled)),
        );
        inputs.push(Input::Tick);
        // The screen of the attempt focused now, not of one focused before.
        let same_focus = match (&looked.focus, &focus_target) {
            (Some(a), Some(b)) => same_attempt(a, b),
            _ => false,
        };
        let captured = looked.poll.screen.filter(|_| same_focus);
        // A pane that cannot be captured (server or host gone, no answer yet) shows the end
        // of its output.log instead.
        let log = focus_target
            .as_ref()
            .map(|f| (f.worker.as_str(), f.attempt, f.log.as_path()));
        let screen = self.log_screen.after_poll(captured, log);
        (inputs, screen.map(|s| without_protocol_lines(&s)))
    }

    /// Whether the `PaneGone` input `g` is about an attempt that is still its worker's
    /// current one in the pane that was polled.
    fn is_current(&self, g: &Input, polled: &[Target]) -> bool {
        let Input::PaneGone { worker, attempt } = g else {
            return true;
        };
        let now = self.target(worker);
        polled.iter().any(|p| {
            p.worker == *worker
                && p.attempt == *attempt
                && now.as_ref().is_some_and(|c| same_attempt(c, p))
        })
    }

    /// The exit-file watcher saw `path` (`…/workers/<worker>/attempt-<n>/exit.json`)
    /// appear: that attempt's watch looks for it at its next observation.
    pub(super) fn exit_file_seen(&mut self, path: &std::path::Path) {
        let dir = path.parent();
        let attempt = dir
            .and_then(|d| d.file_name())
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_prefix("attempt-"))
            .and_then(|n| n.parse::<u32>().ok());
        let worker = dir
            .and_then(std::path::Path::parent)
            .and_then(|d| d.file_name())
            .and_then(|n| n.to_str());
        if let (Some(worker), Some(attempt)) = (worker, attempt) {
            if let Some(w) = self.watches.get_mut(worker) {
                w.exit_seen |= w.attempt == attempt;
            }
        }
    }

    /// True when the loop may slow down to [`super::REST_TICKS`] when nothing happens:
    /// every attempt's exit wakes the loop (an SSH host's are seen only by polling).
    pub(super) fn may_rest(&self) -> bool {
        self.exits_watched && self.state.workers.iter().all(|w| w.host.is_none())
    }

    /// The backend's view of `worker`'s current attempt.
    pub(super) fn target(&self, worker: &str) -> Option<Target> {
        let w = self.state.worker(worker)?;
        Some(Target {
            worker: w.id.clone(),
            attempt: w.attempt,
            pane_id: w.pane_id.clone(),
            pid: w.pid,
            log: self.store.attempt_dir(&w.id, w.attempt).join("output.log"),
            watch_screen: false,
        })
    }

    fn read_inbox(&mut self, emit: &mut impl FnMut(Update)) -> Vec<Input> {
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
                        InboxCommand::Steer(s) => Control::Steer(s),
                    };
                    inputs.extend(self.control_inputs(c, emit));
                }
            }
            Err(e) => emit(Update::Notice(format!("inbox: {e}"))),
        }
        inputs
    }

    /// Say once when the tmux server stops answering, and once when it answers again; the
    /// same, each on its own, for every SSH host (`Poll::hosts_down`). A lost host stays
    /// down in the poll after its workers moved away, so it is said to answer only when it
    /// really does.
    fn report_server(&mut self, poll: &Poll, watching: bool, emit: &mut impl FnMut(Update)) {
        if let Some(msg) = &poll.server_down {
            if self.server_down_reported.is_none() && watching {
                self.server_down_reported = Some(msg.clone());
                emit(Update::Notice(msg.clone()));
            }
        } else if let Some(down) = self.server_down_reported.take() {
            emit(Update::Notice(crate::hosts::poll::server_back_line(&down)));
        }
        let before = self.hosts_down_reported.clone();
        for (host, msg) in &poll.hosts_down {
            if watching && self.hosts_down_reported.insert(host.clone()) {
                emit(Update::Notice(msg.clone()));
            }
        }
        let back: Vec<String> = self
            .hosts_down_reported
            .iter()
            .filter(|h| !poll.hosts_down.contains_key(*h))
            .cloned()
            .collect();
        for host in back {
            self.hosts_down_reported.remove(&host);
            emit(Update::Notice(format!("host {host} answers again")));
        }
        if self.hosts_down_reported != before {
            emit(Update::HostsDown(self.hosts_down_reported.clone()));
            self.keep_hosts_not_answering(&before, emit);
        }
    }

    /// The inputs one watched attempt gives this turn: activity, a question, its exit.
    fn observe_one(
        &mut self,
        t: &Target,
        live: Liveness,
        tail: Option<String>,
        server_down: Option<&str>,
        emit: &mut impl FnMut(Update),
    ) -> Vec<Input> {
        let mut inputs = vec![];
        let Some(mut watch) = self.watches.remove(&t.worker) else {
            return inputs;
        };
        let news = watch.read_log();
        if news.grew {
            let focused = self.focus.as_deref() == Some(t.worker.as_str());
            self.pace.grew(&t.worker, focused, Instant::now());
        }
        let provider = self.state.worker(&t.worker).map(|w| w.provider.clone());
        if self.saw_rate_limit(provider.as_deref().unwrap_or_default(), &news.lines) {
            self.rate_limited.insert(t.worker.clone());
        }
        inputs.extend(
            self.lines.inputs(
                &self.registry,
                provider.as_deref().unwrap_or_default(),
                (&t.worker, t.attempt),
                (news.grew, news.catch_up),
                &news.lines,
                self.rate_limits
                    .get(provider.as_deref().unwrap_or_default()),
            ),
        );
        if let Some(q) = news.question {
            inputs.push(Input::Asked {
                worker: t.worker.clone(),
                attempt: t.attempt,
                question: q,
            });
        }
        if t.watch_screen && live == Liveness::Alive {
            inputs.extend(self.screen_question(t, &mut watch, tail));
        }
        // `exit.json` is looked for when the watcher saw it (or cannot tell) and whenever
        // the pane is not known alive; its marker in the log is seen as it is read.
        let look = !self.exits_watched || !matches!(live, Liveness::Alive | Liveness::Unknown);
        let evidence = watch.exit_evidence_looking(look, Instant::now());
        if let (Some((code, ExitSource::ExitFile)), Some(m)) = (evidence, watch.marker_code()) {
            if m != code {
                tracing::warn!("{}: exit.json says {code}, marker says {m}", t.worker);
            }
        }
        let mut dead_since = watch.dead_since;
        let settled = settle(
            evidence,
            live,
            &mut dead_since,
            Instant::now(),
            || {
                // The file may have landed between poll and read; the read is for that.
                let _ = watch.read_log();
                watch.exit_evidence()
            },
            server_down,
        );
        watch.dead_since = dead_since;
        let exit = match settled {
            Settled::Open => {
                self.watches.insert(t.worker.clone(), watch);
                return inputs;
            }
            Settled::Exited(code, source) => Ok((code, source)),
            Settled::Vanished(detail) => Err(detail),
        };
        if !self.work_is_back(t, &watch.dir) {
            self.watches.insert(t.worker.clone(), watch);
            return inputs;
        }
        if self.rate_limited.remove(&t.worker) && !matches!(exit, Ok((0, _))) {
            self.rotate_credential(&t.worker, t.attempt, emit);
        }
        // Its wrapper waits for the marker to be read (this machine's attempts).
        if self
            .state
            .worker(&t.worker)
            .is_some_and(|w| w.host.is_none())
        {
            let read = watch.marker_code().is_some();
            self.releases
                .ended(&watch.dir, &watch.nonce, read, Instant::now());
        }
        // Whatever the attempt started and left behind goes with it.
        self.reap_attempt(&t.worker, t.attempt);
        let setup_failed =
            crate::workspace::on_attempt_end(&mut self.state, &t.worker, t.attempt, &watch.dir);
        if let (Ok((code, _)), Some(dir)) = (&exit, crate::launch::cwd_failed(&watch.dir)) {
            inputs.push(Input::CwdFailed {
                worker: t.worker.clone(),
                attempt: t.attempt,
                code: *code,
                dir,
            });
            return inputs;
        }
        if let Some(input) = setup_failed {
            inputs.push(input);
            return inputs;
        }
        inputs.push(self.exit_input(t, &watch, exit));
        inputs
    }

    /// Feed the screen's last lines to the provider's waiting detector (re-fed every turn
    /// so it can tell a settled prompt from a busy spinner); a question it sees once.
    fn screen_question(
        &self,
        t: &Target,
        watch: &mut Watch,
        tail: Option<String>,
    ) -> Option<Input> {
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
            crate::clarification::waiting::WaitingDetector::for_provider(&provider)
        });
        let q = detector.observe(&watch.screen_tail, now_ms)?;
        let waiting = self.state.worker(&t.worker).map(|w| w.status) == Some(WorkerStatus::Waiting);
        if waiting || watch.asked_screen.as_deref() == Some(watch.screen_tail.as_str()) {
            return None;
        }
        watch.asked_screen = Some(watch.screen_tail.clone());
        Some(Input::Asked {
            worker: t.worker.clone(),
            attempt: t.attempt,
            question: q,
        })
    }

    /// The input for a settled attempt: its exit with the artifacts it lacks and its
    /// result (the output when it wrote none), or its vanishing.
    fn exit_input(
        &mut self,
        t: &Target,
        w: &Watch,
        exit: Result<(i32, ExitSource), String>,
    ) -> Input {
        match exit {
            Ok((code, source)) => {
                let artifacts = self
                    .state
                    .worker(&t.worker)
                    .map(|s| s.artifacts.clone())
                    .unwrap_or_default();
                let missing: Vec<String> = artifacts
                    .into_iter()
                    .filter(|a| !w.dir.join(a).exists())
                    .collect();
                // Usage, and for an agent that prints its answer instead of writing the
                // result file, the result (providers/output.rs).
                let spec = self
                    .state
                    .worker(&t.worker)
                    .and_then(|s| self.registry.get(&s.provider));
                let from_log = collect_output(&w.dir, spec, code == 0 && missing.is_empty());
                if from_log != FromLog::No && w.marker_code().is_none() {
                    // The output's last lines may still be on their way (see `result`).
                    let provider = self.state.worker(&t.worker).map(|s| s.provider.clone());
                    let of = super::retake::Of {
                        worker: &t.worker,
                        attempt: t.attempt,
                        dir: &w.dir,
                        nonce: &w.nonce,
                    };
                    let late = from_log == FromLog::NoText;
                    let retake = super::retake::Retake::new(of, late, provider, Instant::now());
                    self.retakes.push(retake);
                }
                let said = spec.filter(|_| code != 0).and_then(|s| {
                    let explain =
                        |text: &str| crate::providers::exit_output::explain(&s.exit_output, text);
                    explain(&events_text(&w.dir))
                        .or_else(|| explain(&log_text(&w.dir.join("output.log"))))
                });
                let result = w.dir.join("result.md");
                Input::Exited {
                    worker: t.worker.clone(),
                    attempt: t.attempt,
                    code,
                    source,
                    missing_artifacts: missing,
                    result: result.exists().then_some(result),
                    said,
                }
            }
            Err(detail) => Input::Vanished {
                worker: t.worker.clone(),
                attempt: t.attempt,
                detail,
            },
        }
    }
}

/// Hand every control message to the loop's queue, on a thread of its own; `Quit` when the
/// sender is gone.
///
/// # Errors
/// The thread cannot start.
pub(super) fn forward_controls(
    control: std::sync::mpsc::Receiver<Control>,
    wake: std::sync::mpsc::Sender<Wake>,
) -> crate::error::Result<()> {
    use crate::error::IoContext;
    std::thread::Builder::new()
        .name("crewmux-control".into())
        .spawn(move || {
            for c in control {
                if wake.send(Wake::Control(c)).is_err() {
                    return;
                }
            }
            // The sender is gone: whoever showed the run quit. A failed send means the
            // loop ended first, which is what Quit asks for anyway.
            let _ = wake.send(Wake::Control(Control::Quit));
        })
        .on("cannot start the control thread")?;
    Ok(())
}

/// `PaneGone` for each polled attempt with a pane reference whose pane the backend found
/// gone (applied after the exits, so an attempt has ended first). Nothing when the server
/// did not answer: a `Gone` then is the process's, and the pane may still be there.
fn panes_gone(polled: &[Target], poll: &Poll) -> Vec<Input> {
    if poll.unanswered {
        return vec![];
    }
    polled
        .iter()
        .zip(&poll.liveness)
        .filter(|(t, live)| t.pane_id.is_some() && **live == Liveness::Gone)
        .map(|(t, _)| Input::PaneGone {
            worker: t.worker.clone(),
            attempt: t.attempt,
        })
        .collect()
}

/// A screen for people: without crewmux's own protocol lines (the exit marker and the sim
/// agent's question line, which it also prints readably).
pub(super) fn without_protocol_lines(screen: &str) -> String {
    screen
        .lines()
        .filter(|l| {
            let clean = crate::launch::strip_ansi(l);
            let t = clean.trim_start();
            !t.starts_with(crate::launch::MARKER_PREFIX)
                && !t.starts_with(crate::domain::clarification::ASK_PREFIX)
        })
        .collect::<Vec<_>>()
        .join("\n")
}
