//! The offline paths: `status`, `cancel` and `answer` on a run no process drives. They
//! reconcile and apply their inputs through the same [`Driver::apply`] as the loop, with
//! the engine told that nothing may be launched (`RunMemory::offline`).

use std::time::{Duration, Instant};

use super::{Driver, Update};
use crate::domain::RunState;
use crate::engine::Input;
use crate::error::{Error, Result};

/// How long an offline cancel keeps watching after the grace period for the SIGKILLed
/// attempts to be seen ending.
pub const CANCEL_SETTLE: Duration = Duration::from_secs(5);

impl Driver {
    /// Take the run lock for an offline command and apply what reconciling found.
    ///
    /// # Errors
    /// Another process drives the run.
    fn begin_offline(&mut self) -> Result<crate::store::DriverLock> {
        let lock = self.store.try_driver_lock()?.ok_or_else(|| {
            Error::Usage(format!(
                "another crewmux process drives run {}; send it requests with `crewmux answer`, `crewmux steer` or `crewmux cancel`",
                self.state.run_id
            ))
        })?;
        self.mem.offline = true;
        let startup = std::mem::take(&mut self.startup);
        self.apply(startup, &mut |_| {});
        Ok(lock)
    }

    /// One offline observation of every watched attempt, applied; `Tick` is left out (no
    /// timeouts fire while nobody drives the run).
    fn observe_offline(&mut self, notice: &mut dyn FnMut(String)) {
        let mut sink = |u: Update| {
            if let Update::Notice(n) | Update::Info(n) = u {
                notice(n);
            }
        };
        let (inputs, _) = self.observe(&mut sink);
        let inputs: Vec<Input> = inputs
            .into_iter()
            .filter(|i| !matches!(i, Input::Tick))
            .collect();
        self.apply(inputs, &mut sink);
    }

    /// Without driving the run (nothing is launched or killed): observe its attempts for
    /// `span` and record what happened to them; returns the saved state and the SSH hosts
    /// that did not answer (their workers' state is unknown: they keep what was saved).
    /// Used by `status` on a run that no process drives. `notice` gets what the person
    /// should read (a tmux server that does not answer), once each.
    ///
    /// # Errors
    /// Another process drives the run.
    pub fn observe_only(
        mut self,
        span: Duration,
        notice: &mut dyn FnMut(String),
    ) -> Result<(RunState, std::collections::BTreeSet<String>)> {
        let _lock = self.begin_offline()?;
        let end = Instant::now() + span;
        loop {
            self.observe_offline(notice);
            if self.watches.is_empty() || Instant::now() >= end {
                break;
            }
            std::thread::sleep(Duration::from_millis(300));
        }
        // Results taken before their output was all in (see `result`): now, with what is.
        let late = self.retake_results(true);
        self.apply(late, &mut |_| {});
        self.council_after_retakes(&mut |_| {});
        self.save(&mut |_| {});
        let down = self.backend.get().hosts_not_answering();
        Ok((self.state, down))
    }

    /// Cancel one worker or every worker of a run that no process drives: SIGTERM, the
    /// grace period, SIGKILL, then up to [`CANCEL_SETTLE`] to see the attempts end. The run
    /// is not continued (no new launches); a full cancel ends it `cancelled` once every
    /// worker is final (the engine's rule, as for a driven run). `notice` as for
    /// [`Driver::observe_only`].
    ///
    /// # Errors
    /// Another process drives the run.
    pub fn cancel_now(
        mut self,
        worker: Option<String>,
        notice: &mut dyn FnMut(String),
    ) -> Result<RunState> {
        let _lock = self.begin_offline()?;
        let mut sink = |_u: Update| {};
        self.apply(vec![Input::Cancel { worker }], &mut sink);
        let end = Instant::now() + self.opts.grace + CANCEL_SETTLE;
        while !self.watches.is_empty() && !self.mem.kills.is_empty() && Instant::now() < end {
            self.observe_offline(notice);
            self.hard_kills();
            std::thread::sleep(Duration::from_millis(100));
        }
        // Attempts still not seen ending were SIGKILLed: nothing of them can go on.
        let stuck: Vec<(String, u32)> = self
            .mem
            .kills
            .keys()
            .filter_map(|w| self.state.worker(w).map(|s| (s.id.clone(), s.attempt)))
            .collect();
        let inputs = stuck
            .into_iter()
            .map(|(worker, attempt)| Input::Vanished {
                worker,
                attempt,
                detail: "not seen ending after SIGKILL".into(),
            })
            .collect();
        self.apply(inputs, &mut sink);
        self.reap_due(true, &mut sink);
        self.save(&mut sink);
        Ok(self.state)
    }

    /// Answer the run-level question (`worker: None`) or a waiting worker of a run no
    /// process drives: the answer is recorded by the engine and, for a worker, pasted into
    /// its pane through the backend.
    ///
    /// # Errors
    /// Another process drives the run; the worker's answer cannot be delivered
    /// (its stdin belongs to a process that is gone, or tmux refused the paste).
    pub fn answer_now(mut self, worker: Option<String>, text: String) -> Result<RunState> {
        let _lock = self.begin_offline()?;
        let mut notices = vec![];
        let input = match worker {
            None => Input::AnswerRun { text },
            Some(worker) => Input::AnswerWorker { worker, text },
        };
        self.apply(vec![input], &mut |u| {
            if let Update::Notice(n) = u {
                notices.push(n);
            }
        });
        self.save(&mut |_| {});
        match notices.into_iter().next() {
            Some(n) => Err(Error::Usage(n)),
            None => Ok(self.state),
        }
    }

    /// Steer a run no process drives: an added or retried worker is saved (pending; the
    /// next `attach` or `resume` launches it, a finished run is reopened), text is typed
    /// into the worker's pane through the backend.
    ///
    /// # Errors
    /// Another process drives the run; the engine refuses the request (the message says
    /// why); the text cannot be delivered (tmux refused the paste).
    pub fn steer_now(mut self, steer: crate::engine::steer::Steer) -> Result<RunState> {
        let _lock = self.begin_offline()?;
        crate::engine::steer::check(&self.state, &steer).map_err(Error::Usage)?;
        let mut notices = vec![];
        self.apply(vec![Input::Steer(steer)], &mut |u| {
            if let Update::Notice(n) = u {
                notices.push(n);
            }
        });
        self.save(&mut |_| {});
        match notices.into_iter().next() {
            Some(n) => Err(Error::Usage(n)),
            None => Ok(self.state),
        }
    }
}
