//! Starting attempts: prepare each (prompt, wrapper, credential), then one backend call
//! for the batch.

use crate::engine::Input;
use crate::lead::{prepare, Driver, Prepared, Watch};

/// An attempt prepared (prompt, wrapper, credential) and being started.
pub(in crate::lead) struct ReadyAttempt {
    pub(in crate::lead) worker: String,
    pub(in crate::lead) attempt: u32,
    pub(in crate::lead) prepared: Prepared,
    credential_label: Option<String>,
}

impl Driver {
    /// Prepare and start a batch of attempts: prompts and wrappers first, then one backend
    /// call for all of them (docs/tmux.md: 64 windows in one tmux invocation ~250 ms against
    /// ~450 ms one process each). Returns one input per attempt.
    pub(in crate::lead) fn launch_many(&mut self, wanted: Vec<(String, u32)>) -> Vec<Input> {
        let mut inputs = vec![];
        let mut ready: Vec<ReadyAttempt> = vec![];
        // Worktrees are made when the first worker launches, not when the run starts; a
        // worker whose own worktree cannot be made fails with its own reason, the others
        // of the batch start.
        // An attempt whose SSH host does not answer waits for it (see `host_wait`).
        let wanted = self.hold_for_down_hosts(wanted);
        // A worker's worktree on its SSH host is made on the host's own thread, with its
        // launch (see `launch_remote`).
        let launching: Vec<String> = wanted
            .iter()
            .filter(|(w, _)| self.host_of(w).is_none())
            .map(|(w, _)| w.clone())
            .collect();
        let mut no_worktree = crate::workspace::make_worktrees(&mut self.state, &launching);
        for (worker, attempt) in wanted {
            if let Some(error) = no_worktree.remove(&worker) {
                inputs.extend(self.launch_failed(worker, attempt, error));
                continue;
            }
            match self.prepare_one(&worker, attempt) {
                Ok((prepared, credential_label)) => ready.push(ReadyAttempt {
                    worker,
                    attempt,
                    prepared,
                    credential_label,
                }),
                Err(error) => inputs.push(Input::LaunchFailed {
                    worker,
                    attempt,
                    error,
                }),
            }
        }
        let ready = self.launch_remote(ready);
        if ready.is_empty() {
            return inputs;
        }
        let specs: Vec<crate::backend::SpawnSpec> =
            ready.iter().map(|r| r.prepared.spawn.clone()).collect();
        // On the launch thread when there is one: the loop keeps observing meanwhile, and
        // the results come back as a wake-up (`landed`).
        if let Some(t) = &self.launch_thread {
            if t.send(specs.clone()) {
                // Behind the batch still landing, if any (see `may_launch_more`).
                match self.in_flight.as_mut() {
                    Some(flying) => flying.extend(ready),
                    None => {
                        self.in_flight = Some(ready);
                        self.in_flight_at = std::time::Instant::now();
                    }
                }
                return inputs;
            }
            tracing::warn!("the launch thread stopped; starting attempts on the loop");
            self.launch_thread = None;
        }
        let results = self.backend.get().spawn_many(&specs);
        inputs.extend(self.landed(ready, results));
        inputs
    }

    /// The inputs of a started batch: each attempt watched and `Launched`, or `LaunchFailed`.
    pub(in crate::lead) fn landed(
        &mut self,
        ready: Vec<ReadyAttempt>,
        results: Vec<crate::error::Result<crate::backend::Spawned>>,
    ) -> Vec<Input> {
        let mut results = results.into_iter();
        ready
            .into_iter()
            .filter_map(|r| {
                let result = results.next().unwrap_or_else(|| {
                    Err(crate::error::Error::Other(
                        "the backend gave no result for this attempt".into(),
                    ))
                });
                self.landed_one(r, result)
            })
            .collect()
    }

    /// `None`: the attempt waits for its SSH host (see `host_wait`).
    pub(in crate::lead) fn landed_one(
        &mut self,
        r: ReadyAttempt,
        result: crate::error::Result<crate::backend::Spawned>,
    ) -> Option<Input> {
        let ReadyAttempt {
            worker,
            attempt,
            prepared,
            credential_label,
        } = r;
        match result {
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
                Some(Input::Launched {
                    worker,
                    attempt,
                    nonce: prepared.nonce,
                    prompt_path: prepared.paths.prompt,
                    backend: self.backend_kind.as_str().into(),
                    pane_id: spawned.pane_id,
                    pid: spawned.pid,
                    credential_label,
                })
            }
            Err(e) => self.launch_failed(worker, attempt, e.to_string()),
        }
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
        // A wrapper already there: a driver that stopped before recording it launched this
        // attempt. Its processes must not outlive it nor write into the new attempt's files.
        if let Some(old) = crate::launch::wrapper_nonce(&dir.join("launch.sh")) {
            let left = self.backend.get().end_stale_attempt(&old);
            if !left.is_empty() {
                tracing::warn!(
                    "{worker}#{attempt}: processes of an earlier launch survive SIGKILL: {left:?}"
                );
            }
        }
        let failures = self.failures.recent(&self.state);
        let mut prepared = prepare(
            &self.state,
            &w,
            dir,
            &self.opts.self_exe,
            self.opts.prompt_max_chars,
            Some(failures),
            &self.registry,
        )
        .map_err(|e| e.to_string())?;
        // The roster marks the attempt `resumed` (the engine copies it to the dispatch
        // record when the attempt runs).
        if let Some(w) = self.state.worker_mut(worker) {
            w.flow.resumed = prepared.resumed.is_some();
        }
        let mut credential_label = None;
        if let Some(store) = self.creds.as_mut() {
            // The variable this run's providers.toml files name (the project's too).
            if let Some(key) = store
                .select_for_launch_in(&self.registry, &w.provider, None)
                .map_err(|e| e.to_string())?
            {
                let (var, value) = key.env_pair();
                prepared
                    .spawn
                    .secret_env
                    .push((var.to_string(), value.to_string()));
                self.credential_labels
                    .insert(worker.to_string(), key.label.clone());
                credential_label = Some(key.label);
            }
        }
        Ok((prepared, credential_label))
    }
}
