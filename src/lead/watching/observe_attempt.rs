//! One watched attempt's turn: the new bytes of its log (activity, a question, a rate
//! limit), a question on its screen, and whether it has ended (settled from its exit
//! evidence and its pane's liveness), with what goes when it has (its releases, processes
//! and workspace). Apart from `observe`, which polls every attempt at once and hands each
//! its share here; the input an ended attempt gives is `exit_input`.

use std::time::Instant;

use crate::backend::{Liveness, Target};
use crate::domain::{ExitSource, WorkerStatus};
use crate::engine::Input;
use crate::lead::settle::{settle, Settled};
use crate::lead::{Driver, Update, Watch};

impl Driver {
    /// The inputs one watched attempt gives this turn: activity, a question, its exit.
    pub(in crate::lead) fn observe_one(
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
        let mut news = watch.read_log();
        // The echo of crewmux's own paste is not the worker's activity.
        watch.without_echo(&mut news);
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
        inputs.extend(self.observe_mcp(t, &mut watch, emit));
        inputs.extend(self.observe_hooks(t, &mut watch, emit));
        if let Some(q) = news.question {
            inputs.push(Input::Asked {
                worker: t.worker.clone(),
                attempt: t.attempt,
                question: q,
            });
        }
        // The screen's waiting patterns are the fallback of a CLI whose hooks say nothing.
        if t.watch_screen && live == Liveness::Alive && !watch.hooks.seen_any() {
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
        let rotated = self.rate_limited.remove(&t.worker)
            && !matches!(exit, Ok((0, _)))
            && self.rotate_credential(&t.worker, t.attempt, emit);
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
        if let Some(input) = exit
            .as_ref()
            .ok()
            .and_then(|(code, _)| before_agent(t, *code, &watch.dir))
        {
            inputs.push(input);
            return inputs;
        }
        if let Some(input) = setup_failed {
            inputs.push(input);
            return inputs;
        }
        // A hook that ran between this turn's first look and the exit (a CLI waits for
        // its `Stop` hooks before it exits) is read before the exit is.
        inputs.extend(self.observe_hooks(t, &mut watch, emit));
        inputs.extend(self.session_input(t, &watch.dir));
        inputs.push(self.exit_input_keyed(t, &watch, exit, rotated, emit));
        inputs
    }

    /// [`Driver::exit_input`], and a usage limit is the key's: the next attempt takes
    /// another key when the store has one (`engine::parking`); `rotated`: the attempt's
    /// rate-limit lines moved it already.
    fn exit_input_keyed(
        &mut self,
        t: &Target,
        watch: &Watch,
        exit: Result<(i32, ExitSource), String>,
        rotated: bool,
        emit: &mut impl FnMut(Update),
    ) -> Input {
        let mut input = self.exit_input(t, watch, exit);
        if let Input::Exited {
            said: Some(said), ..
        } = &mut input
        {
            if said.meaning.meaning == crate::domain::ExitKind::Limit {
                said.other_key = rotated || self.rotate_credential(&t.worker, t.attempt, emit);
            }
        }
        input
    }

    /// The conversation an ended attempt had (its CLI's session id), for the worker's next
    /// attempt to continue; `None` when its output names none.
    fn session_input(&self, t: &Target, dir: &std::path::Path) -> Option<Input> {
        let w = self.state.worker(&t.worker)?;
        let format = self.registry.get(&w.provider)?.output;
        let id = crate::lead::settling::result::session_of(dir, format)?;
        Some(Input::Session {
            worker: t.worker.clone(),
            attempt: t.attempt,
            id,
        })
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
        // The provider's `waiting_patterns` as this run's providers.toml files set them, not
        // only the built-in list.
        let configured = || {
            self.registry
                .get(&provider)
                .map(|s| s.waiting_regexes())
                .unwrap_or_default()
        };
        let detector = watch.detector.get_or_insert_with(|| {
            crate::clarification::waiting::WaitingDetector::for_provider_with(
                &provider,
                configured(),
            )
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
}

/// An attempt that ended with `code` before its agent ran: its fence did not start
/// (`sandbox-failed`), or its wrapper could not enter its working directory (`cwd-failed`).
fn before_agent(t: &Target, code: i32, dir: &std::path::Path) -> Option<Input> {
    if let Some(detail) = crate::launch::sandbox_failed(dir) {
        return Some(Input::SandboxFailed {
            worker: t.worker.clone(),
            attempt: t.attempt,
            code,
            detail,
        });
    }
    crate::launch::cwd_failed(dir).map(|dir| Input::CwdFailed {
        worker: t.worker.clone(),
        attempt: t.attempt,
        code,
        dir,
    })
}
