//! A worker saved `starting` with no dispatch record: the driver before this one was
//! stopped between starting its attempt and saving that it did (a killed lead). When the
//! attempt has started (its window is there, live or dead, or its `output.log` or
//! `exit.json` is), it is adopted as it is: recorded as launched (the window's pane and
//! pid, the nonce of its `launch.sh`) and watched, so its exit is collected from its files
//! and its folder is never written again. Launching it again made a second window of the
//! same name, failed the worker with tmux's `can't find window`, left the new pane running
//! and rewrote the attempt's folder (the running agent's `output.log` lost). An attempt
//! whose window is gone has its processes ended (found by nonce) before it is adopted: it
//! then ends as its evidence says, or as crashed with why. Only an attempt that never
//! started (no wrapper, or a wrapper with no window and no file of its own) is launched
//! again under the same number.

use chrono::Utc;

use super::{Driver, Watch};
use crate::domain::WorkerState;
use crate::engine::Input;
use crate::launch::AttemptPaths;

impl Driver {
    /// The input for `w`, saved `starting` with no dispatch record (see the module).
    pub(super) fn launch_cut_short(&mut self, w: &WorkerState) -> Input {
        let paths = AttemptPaths::new(self.store.attempt_dir(&w.id, w.attempt));
        let interrupted = Input::LaunchInterrupted {
            worker: w.id.clone(),
            attempt: w.attempt,
        };
        // A worker on an SSH host is found there by its host's thread, not here.
        let nonce = crate::launch::wrapper_nonce(&paths.launch);
        let Some(nonce) = nonce.filter(|_| w.host.is_none()) else {
            return interrupted;
        };
        let window = super::prepare::window_name(&w.id, w.attempt);
        let found = self.backend.get().find_window(&window);
        let ran = paths.output.exists() || paths.exit.exists();
        if found.is_none() && !ran {
            return interrupted;
        }
        if found.is_none() {
            let left = self.backend.get().end_stale_attempt(&nonce);
            if !left.is_empty() {
                tracing::warn!(
                    "{}#{}: processes of the attempt survive SIGKILL: {left:?}",
                    w.id,
                    w.attempt
                );
            }
        }
        tracing::info!(
            "{}#{}: started by the last driver, which ended before recording it; adopted {}",
            w.id,
            w.attempt,
            match &found {
                Some(s) => format!(
                    "its window {window} ({})",
                    s.pane_id.as_deref().unwrap_or("?")
                ),
                None => "its files (its window is gone)".to_string(),
            }
        );
        self.watches.insert(
            w.id.clone(),
            Watch::new(&w.id, w.attempt, &nonce, &paths.dir, true),
        );
        self.mem.last_output.insert(w.id.clone(), Utc::now());
        let found = found.unwrap_or(crate::backend::Spawned {
            pane_id: None,
            pid: None,
        });
        Input::Launched {
            worker: w.id.clone(),
            attempt: w.attempt,
            nonce,
            prompt_path: paths.prompt,
            backend: self.backend_kind.as_str().into(),
            pane_id: found.pane_id,
            pid: found.pid,
            credential_label: None,
        }
    }
}
