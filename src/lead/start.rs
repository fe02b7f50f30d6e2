//! A driver for a saved run: the providers (built-ins and override files), their rate-limit
//! rules, the transitions already recorded, and the live workers of the saved state watched
//! again (reattach).

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::Instant;

use chrono::Utc;

use super::{lines, once, pace, poller, reap, saver, Driver, DriverOptions, Watch};
use crate::backend::Multiplexer;
use crate::domain::RunState;
use crate::engine::{Input, RunMemory};
use crate::store::RunStore;

impl Driver {
    /// A driver for a run whose `state.json` is `state`. Live workers of a saved state are
    /// watched again (reattach): their exits while nobody watched are collected from the
    /// files, and a pane that is gone with no evidence becomes `crashed`. A worker saved as
    /// `starting` with no dispatch record was being launched by a process that ended: its
    /// attempt is failed (and retried when attempts remain) when the driver first applies
    /// inputs, never here, so every effect of that is carried out.
    pub fn new(
        store: RunStore,
        state: RunState,
        backend: Box<dyn Multiplexer>,
        opts: DriverOptions,
    ) -> Self {
        // Requests no driver has read yet are carried out (or refused) by this one.
        let inbox_offset = state.inbox_read.unwrap_or_else(|| store.inbox_len());
        let mut state = state;
        // What a driver before this one found: this one looks at the hosts afresh.
        state.hosts_not_answering.clear();
        let saves = saver::Saves::here(store.clone());
        let user_tmux = opts.user_tmux.clone().or_else(|| {
            let env = std::env::var("TMUX").ok();
            crate::notify::tmux::user_socket(env.as_deref(), &state.tmux_socket)
        });
        let notifier = crate::notify::Notifier::new(opts.notify.clone(), opts.quiet, user_tmux);
        let mut d = Driver {
            store,
            state,
            mem: RunMemory::default(),
            backend_kind: backend.kind(),
            backend: poller::SharedBackend::new(backend),
            poller: None,
            releases: Default::default(),
            opts,
            watches: HashMap::new(),
            kills: vec![],
            cancel_grace: None,
            reaps: reap::Reaps::default(),
            inbox_offset,
            focus: None,
            finished: false,
            server_down_reported: None,
            hosts_down_reported: Default::default(),
            log_screen: Default::default(),
            creds: None,
            rate_limits: Default::default(),
            credential_labels: HashMap::new(),
            rate_limited: HashSet::new(),
            started: Instant::now(),
            failures: Default::default(),
            registry: crate::providers::Registry::builtin(),
            lines: lines::LineSorter::default(),
            pace: pace::Pace::default(),
            pending_launches: VecDeque::new(),
            host_wait: Default::default(),
            remote_flight: Default::default(),
            work_back: Default::default(),
            live_diff: Default::default(),
            startup: vec![],
            recorded: once::Recorded::default(),
            notifier,
            applied: 0,
            saves,
            state_aside: None,
            shown: Default::default(),
            exits_watched: false,
            launch_thread: None,
            in_flight: None,
            in_flight_at: Instant::now(),
            retakes: Default::default(),
            race_checks: Default::default(),
            spend_at: None,
            #[cfg(test)]
            crash_after: None,
        };
        match crate::providers::Registry::load(
            Some(&d.state.project_dir),
            &crate::providers::EnvSnapshot::current(),
        ) {
            Ok(r) => d.registry = r,
            Err(e) => tracing::warn!("providers.toml: {e}; using the built-in providers"),
        }
        d.rate_limits = crate::providers::rate_limits::RateLimits::of(&d.registry);
        match d.store.read_events() {
            Ok(events) => d.recorded = once::Recorded::from_events(&events),
            Err(e) => tracing::warn!("events.jsonl: {e}; repeated transitions are not left out"),
        }
        d.startup = d.reattach();
        d.retakes = super::retake::Retakes::load(&d.store, &d.state);
        d
    }

    /// Watch the live workers of the saved state again; returns the inputs for those that
    /// cannot be watched.
    fn reattach(&mut self) -> Vec<Input> {
        let now = Utc::now();
        let mut inputs = vec![];
        for w in self.state.workers.clone() {
            // A worker waiting on its result's question has no attempt left to watch.
            if !w.status.is_live() || w.waits_on_its_result() {
                continue;
            }
            let nonce = self
                .state
                .dispatches
                .iter()
                .rev()
                .find(|r| r.worker_id == w.id && r.attempt == w.attempt)
                .map(|r| r.nonce.clone());
            match nonce {
                Some(nonce) => {
                    let dir = self.store.attempt_dir(&w.id, w.attempt);
                    self.watches.insert(
                        w.id.clone(),
                        Watch::new(&w.id, w.attempt, &nonce, &dir, true),
                    );
                    self.mem.last_output.insert(w.id.clone(), now);
                }
                None => {
                    let input = self.launch_cut_short(&w);
                    if matches!(input, Input::LaunchInterrupted { .. }) {
                        tracing::info!(
                            "{}#{}: its launch was cut short by the end of the last driver; it starts again as the same attempt",
                            w.id,
                            w.attempt
                        );
                    }
                    inputs.push(input);
                }
            }
        }
        inputs
    }
}
