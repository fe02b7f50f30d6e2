//! An ended attempt on an SSH host counts once its work is back: committed on the host and
//! its branch fetched into its worktree here (`crate::hosts::work_back`), so the
//! integration, the checks and the council see it. That takes about ten ssh round trips,
//! each up to the ssh call limit on a host that hangs, so it is done on the host's own
//! thread, never on this loop: an exit known before the work is back (its exit marker
//! came with the live output, or the host's first try failed) is held while the thread
//! brings the work back, and settled when it has, or has said why it could not (the work
//! then stays on the host, as a failed local commit leaves it in the worktree). Other
//! workers' status and output go on meanwhile.

use std::collections::HashSet;
use std::path::Path;

use crate::backend::{Target, WorkBack};
use crate::lead::Driver;

/// Attempts whose work is being brought back, by `(worker, attempt)`.
#[derive(Default)]
pub(in crate::lead) struct WorkBackWait {
    asked: HashSet<(String, u32)>,
    /// Those whose host's thread said it could not.
    given_up: HashSet<(String, u32)>,
}

impl Driver {
    /// True when the ended attempt `t` (its local folder `dir`) may be settled now: it ran
    /// here, its work is back, or its host's thread could not bring it back. Otherwise its
    /// host's thread is asked to (once) and the exit waits.
    pub(in crate::lead) fn work_is_back(&mut self, t: &Target, dir: &Path) -> bool {
        let Some(host) = crate::hosts::git::worktree_host(&self.state, &t.worker) else {
            return true;
        };
        let host = host.to_string();
        let key = (t.worker.clone(), t.attempt);
        let done = self.backend.get().take_brought_back();
        for d in done {
            if let Err(why) = d.result {
                tracing::warn!(
                    "{}#{}: its work stays on host {host}: {why}",
                    d.worker,
                    d.attempt
                );
                self.work_back.given_up.insert((d.worker, d.attempt));
            }
        }
        if crate::hosts::work_back::brought_back(dir) || self.work_back.given_up.remove(&key) {
            self.work_back.asked.remove(&key);
            return true;
        }
        if self.work_back.asked.contains(&key) {
            return false;
        }
        let work = WorkBack {
            state: Box::new(self.state.clone()),
            worker: t.worker.clone(),
            attempt: t.attempt,
            dir: dir.to_path_buf(),
        };
        if !self.backend.get().bring_back_on_host(&host, work) {
            tracing::warn!(
                "{}#{}: host {host} is not one of this run's hosts; its work stays there",
                t.worker,
                t.attempt
            );
            return true;
        }
        tracing::debug!(
            "{}#{}: its work is brought back from host {host}",
            t.worker,
            t.attempt
        );
        self.work_back.asked.insert(key);
        false
    }
}
