//! Polling a run's hosts. On a host's own thread (`host_thread`): one host's targets
//! through its channel, the host marked down (its targets `Unknown`) when it does not
//! answer and lost after its `lost_after_s`, and an ended attempt's files brought back
//! before its exit is settled. On the driver's side: the answers put back on the targets
//! of this turn.

use std::path::Path;
use std::time::Instant;

use super::{untagged, HostsBackend};
use crate::backend::{Liveness, Multiplexer, Poll, Target};
use crate::hosts::host_thread::{HostSide, Told};
use crate::hosts::reach::Reach;

/// How long a turn of the driver waits for its hosts' answers: a host that answers
/// answers well within it, one that hangs costs the turn no more.
pub const ANSWER_WAIT: std::time::Duration = std::time::Duration::from_millis(30);

/// How long a process that does not drive the run (`status`, an offline cancel) waits for
/// its hosts' poll (all hosts at once): a host that answers does within it (a tmux call on
/// the shared connection, or a new connection on a loaded machine); one that has not by
/// then reads as not answering, so `status` takes a few seconds at most, not the poll's
/// and a probe's limits (20 s).
pub const ANSWER_WAIT_ONCE: std::time::Duration = std::time::Duration::from_secs(4);

/// How long a poll waits for the hosts' answers: [`ANSWER_WAIT`] for the process that
/// drives the run (`control`), [`ANSWER_WAIT_ONCE`] for one that does not.
pub(super) fn answer_wait(control: bool) -> std::time::Duration {
    if control {
        ANSWER_WAIT
    } else {
        ANSWER_WAIT_ONCE
    }
}

/// How long a poll may be outstanding before its host reads as not answering: the host
/// thread's [`HUNG_AFTER`](crate::hosts::host_thread::HUNG_AFTER) for the driving process,
/// the one wait of a process that does not drive the run.
pub(super) fn hung_after(control: bool) -> std::time::Duration {
    if control {
        crate::hosts::host_thread::HUNG_AFTER
    } else {
        ANSWER_WAIT_ONCE
    }
}

/// A target's identity across turns: an answer is only used for the same attempt in the
/// same pane.
fn same(a: &Target, b: &Target) -> bool {
    a.worker == b.worker && a.attempt == b.attempt && a.pane_id == b.pane_id
}

impl HostsBackend {
    pub(in crate::hosts) fn local_mut(&mut self) -> &mut dyn crate::backend::Multiplexer {
        self.local.as_mut()
    }

    /// Ask `host`'s thread to poll `targets` (unless a poll is outstanding there).
    pub(in crate::hosts) fn ask_poll(
        &mut self,
        host: &str,
        targets: &[Target],
        focus: Option<&Target>,
    ) {
        if let Some(r) = self.remotes.get_mut(host) {
            let asked = r
                .thread
                .ask_poll(targets.iter().map(untagged).collect(), focus.map(untagged));
            if asked {
                r.asked_targets = targets.to_vec();
                r.asked_focus = focus.cloned();
            }
        }
    }

    /// The answer of `host` for `targets` (waiting until `deadline` at most): the
    /// liveness and tails its thread found, each for the same attempt as asked; `Unknown`
    /// and `unanswered` when it has not answered yet.
    pub(in crate::hosts) fn answer(
        &mut self,
        host: &str,
        targets: &[Target],
        focus: Option<&Target>,
        deadline: Instant,
    ) -> Poll {
        let unknown = Poll {
            liveness: targets.iter().map(|_| Liveness::Unknown).collect(),
            unanswered: true,
            ..Poll::default()
        };
        let Some(r) = self.remotes.get_mut(host) else {
            return Poll {
                liveness: targets.iter().map(|_| Liveness::Gone).collect(),
                server_down: Some(format!("host {host} is not one of this run's hosts")),
                ..Poll::default()
            };
        };
        let (answer, told) = r.thread.collect(Some(deadline));
        for t in told {
            self.keep_told(host, t);
        }
        let Some(r) = self.remotes.get_mut(host) else {
            return unknown;
        };
        let Some(p) = answer else {
            return unknown;
        };
        let asked = &r.asked_targets;
        let mut out = Poll {
            liveness: vec![Liveness::Unknown; targets.len()],
            server_down: p.server_down,
            unanswered: p.unanswered,
            ..Poll::default()
        };
        let mut tails = vec![None; targets.len()];
        for (i, t) in targets.iter().enumerate() {
            if let Some(k) = asked.iter().position(|a| same(a, t)) {
                out.liveness[i] = p.liveness.get(k).copied().unwrap_or(Liveness::Unknown);
                tails[i] = p.tails.get(k).cloned().flatten();
            } else {
                out.unanswered = true;
            }
        }
        if tails.iter().any(Option::is_some) {
            out.tails = tails;
        }
        let key = |f: &Target| (f.worker.clone(), f.attempt);
        if focus.is_some() && r.asked_focus.as_ref().map(key) == focus.map(key) {
            out.screen = p.screen;
        }
        out
    }

    /// Keep what `host`'s thread told besides a poll's answer, for the driver to take.
    pub(in crate::hosts) fn keep_told(&mut self, host: &str, t: Told) {
        match t {
            Told::Lost(why) => self.lost.push((host.to_string(), why)),
            Told::Ended(nonces) => self.ended.push((host.to_string(), nonces)),
            Told::Checked(answers) => self.checked.push((host.to_string(), answers)),
            Told::Launched(mut l) => {
                for (_, _, r) in &mut l.started {
                    if let Ok(s) = r {
                        s.pane_id = s.pane_id.take().map(|p| super::tag_pane(host, &p));
                        // A pid of that host: never signalled or looked up here.
                        s.pid = None;
                    }
                }
                self.launched.push(l);
            }
            Told::BroughtBack(done) => self.brought_back.push(done),
            Told::Polled(_) => {}
        }
    }

    /// Count `host` as not answering since `at` (UTC), when planning asked it and got no
    /// answer (`why`): its driver says so from its first turn, holds its attempts without
    /// trying them there, and loses it `lost_after_s` after `at`, not after a launch and a
    /// probe of its own have failed too. A host that answers meanwhile is up at its
    /// first try (at once).
    pub fn silent_since(&self, host: &str, at: chrono::DateTime<chrono::Utc>, why: String) {
        let Some(r) = self.remotes.get(host) else {
            return;
        };
        let ago = (chrono::Utc::now() - at).to_std().unwrap_or_default();
        let now = Instant::now();
        let since = now.checked_sub(ago).unwrap_or(now);
        r.thread
            .ask(crate::hosts::host_thread::Ask::SilentSince(since, why));
    }

    /// Take in what every host's thread told, without waiting.
    pub(in crate::hosts) fn take_told(&mut self) {
        let hosts: Vec<String> = self.remotes.keys().cloned().collect();
        for host in hosts {
            let told = match self.remotes.get_mut(&host) {
                Some(r) => r.thread.collect(None).1,
                None => continue,
            };
            for t in told {
                self.keep_told(&host, t);
            }
        }
    }

    /// Every host of the run that does not answer or was lost, with the line the person
    /// reads about it (`Poll::hosts_down`).
    pub(in crate::hosts) fn outages(&self) -> std::collections::BTreeMap<String, String> {
        self.remotes
            .iter()
            .filter_map(|(host, r)| Some((host.clone(), r.thread.outage(host, self.hung_after)?)))
            .collect()
    }
}

/// What the person reads about a host that is not `Up`.
pub(in crate::hosts) fn outage_line(host: &str, reach: &Reach) -> Option<String> {
    match reach {
        Reach::Up => None,
        Reach::Down { why, .. } => Some(format!(
            "host {host} does not answer ({why}); its workers' state is unknown until it does"
        )),
        Reach::Lost => Some(format!(
            "host {host} was lost; its workers run on local from now on"
        )),
    }
}

impl HostSide {
    /// Poll this host's targets (on its thread); the files of every attempt whose pane
    /// ended come back into its local folder before the poll is handed over, so the exit
    /// is settled from the wrapper's own `exit.json` as for a local attempt. A host that
    /// does not answer leaves its targets `Unknown` (see `reach`); the second value is
    /// why it is lost, once it is.
    pub(in crate::hosts) fn poll(
        &mut self,
        targets: &[Target],
        focus: Option<&Target>,
    ) -> (Poll, Option<String>) {
        let now = Instant::now();
        if !self.reach.may_try(now) || (self.reach != Reach::Up && !self.probe(now)) {
            return self.unreachable(targets);
        }
        let mut poll = self.tmux.poll(targets, focus);
        if (poll.unanswered || poll.server_down.is_some()) && !self.probe(now) {
            return self.unreachable(targets);
        }
        self.answered |= !poll.unanswered;
        // The host answers but its tmux server did not in time: an outage of the host's
        // (its workers `Unknown`), not a tmux server that is gone.
        self.stuck = if poll.unanswered {
            poll.server_down.take()
        } else {
            None
        };
        for (t, live) in targets.iter().zip(&poll.liveness) {
            let there = self.place.remote_dir(&t.log);
            crate::hosts::output::observe(
                self.streams.as_mut(),
                &self.place.link,
                there,
                &t.log,
                *live,
            );
            if matches!(live, Liveness::Dead { .. } | Liveness::Gone) {
                self.fetch_once(t);
            }
        }
        (poll, None)
    }

    /// The poll of a host that does not answer: its targets `Unknown`; once it has been
    /// gone longer than its `lost_after_s`, why it is lost (said once).
    fn unreachable(&mut self, targets: &[Target]) -> (Poll, Option<String>) {
        let limit = std::time::Duration::from_secs(self.place.spec.lost_after_s);
        // Now, not when the poll began: a probe may have taken seconds since.
        let lost = self.reach.lose_after(Instant::now(), limit);
        if let Some(why) = &lost {
            // The run says it, with where its workers go (`Driver::lost_hosts`).
            tracing::debug!("host {} lost: {why}", self.place.spec.name);
        }
        let poll = Poll {
            liveness: targets.iter().map(|_| Liveness::Unknown).collect(),
            unanswered: true,
            ..Poll::default()
        };
        (poll, lost)
    }

    /// Ask the host whether it answers (`true`); a failure marks it down.
    pub(in crate::hosts) fn probe(&mut self, now: Instant) -> bool {
        let lost_after = std::time::Duration::from_secs(self.place.spec.lost_after_s);
        let limit = self.reach.probe_limit(now, lost_after);
        match self.place.link.run("true", None, limit) {
            Ok(_) => {
                if self.reach != Reach::Up {
                    // Debug only: the driver says it to the person (one Log line).
                    tracing::debug!("host {} answers again", self.place.spec.name);
                }
                self.reach = Reach::Up;
                self.answered = true;
                true
            }
            Err(e) => {
                self.reach.failed(now, e.to_string());
                false
            }
        }
    }

    /// Bring an ended attempt's files back (once it has its `exit.json`).
    fn fetch_once(&mut self, t: &Target) {
        let Some(local_dir) = t.log.parent().map(Path::to_path_buf) else {
            return;
        };
        if self.fetched.contains(&local_dir) {
            return;
        }
        // The work first: the files bring `exit.json`, after which the driver settles the
        // exit and looks for the work in the local worktree.
        crate::hosts::work_back::bring_back(&t.log, &t.worker, t.attempt);
        self.place.progress.step();
        let Some(remote_dir) = self.place.remote_dir(&t.log) else {
            return;
        };
        match crate::hosts::files::fetch(&self.place.link, &remote_dir, &local_dir) {
            Ok(()) => {
                if local_dir.join("exit.json").exists() {
                    self.fetched.insert(local_dir);
                }
            }
            Err(e) => tracing::warn!("{}: host {}: {e}", t.worker, self.place.spec.name),
        }
    }
}
