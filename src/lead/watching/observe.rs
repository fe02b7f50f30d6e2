//! Observing a run: one backend poll for every watched attempt (in place or on the poll
//! thread), what it found about the tmux server and the SSH hosts, and the focused screen,
//! all turned into engine inputs. What a single watched attempt gives each turn is
//! `observe_attempt`; requests from the dashboard and the inbox are `controls`.

use super::pace::Look;
use super::poller::{look_at, same_attempt, Looked};
use crate::backend::{Liveness, Poll, Target};
use crate::engine::Input;
use crate::lead::{Driver, Update};

impl Driver {
    /// One observation: inbox commands, one backend poll, new log bytes, exit evidence.
    /// Returns the inputs (ending with a `Tick`) and the focused screen when it changed.
    pub(in crate::lead) fn observe(
        &mut self,
        emit: &mut impl FnMut(Update),
    ) -> (Vec<Input>, Option<String>) {
        self.observe_with(emit, Look::Panes)
    }

    /// As [`observe`](Self::observe), asking the backend what `look` says, in place.
    /// Without the panes (an `exit.json` woke the loop: the files settle that exit, and a
    /// tmux round trip that may wait behind a launch batch is not needed for it; or workers
    /// only print, see `pace`) liveness is `Unknown`.
    pub(in crate::lead) fn observe_with(
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
    pub(in crate::lead) fn observe_looked(
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
        inputs.extend(self.spent_input());
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
    pub(in crate::lead) fn exit_file_seen(&mut self, path: &std::path::Path) {
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

    /// True when the loop may slow down to [`crate::lead::REST_TICKS`] when nothing happens:
    /// every attempt's exit wakes the loop (an SSH host's are seen only by polling).
    pub(in crate::lead) fn may_rest(&self) -> bool {
        self.exits_watched && self.state.workers.iter().all(|w| w.host.is_none())
    }

    /// The backend's view of `worker`'s current attempt.
    pub(in crate::lead) fn target(&self, worker: &str) -> Option<Target> {
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

    /// Say once when the tmux server stops answering, and once when it answers again; the
    /// same, each on its own, for every SSH host (`Poll::hosts_down`). A lost host stays
    /// down in the poll after its workers moved away, so it is said to answer only when it
    /// really does. The server is said to answer only by a poll that asked it (`watching`:
    /// an attempt to look at): a poll of nothing, once the workers it held ended, says
    /// nothing of it.
    pub(in crate::lead) fn report_server(
        &mut self,
        poll: &Poll,
        watching: bool,
        emit: &mut impl FnMut(Update),
    ) {
        if let Some(msg) = &poll.server_down {
            if self.server_down_reported.is_none() && watching {
                self.server_down_reported = Some(msg.clone());
                emit(Update::Notice(msg.clone()));
            }
        } else if watching {
            if let Some(down) = self.server_down_reported.take() {
                emit(Update::Info(crate::hosts::poll::server_back_line(&down)));
            }
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
            emit(Update::Info(format!("host {host} answers again")));
        }
        if self.hosts_down_reported != before {
            emit(Update::HostsDown(self.hosts_down_reported.clone()));
            self.keep_hosts_not_answering(&before, emit);
        }
    }
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
pub(crate) fn without_protocol_lines(screen: &str) -> String {
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

#[cfg(test)]
mod tests {
    use crate::backend::Poll;
    use crate::lead::Update;

    #[test]
    fn a_server_gone_is_said_to_answer_only_by_a_poll_that_asked_it() {
        let tmp = tempfile::tempdir().unwrap();
        let (store, state, world) = crate::lead::tests::scripted(tmp.path());
        let opts = crate::lead::DriverOptions {
            quiet: true,
            ..Default::default()
        };
        let mut d = crate::lead::Driver::new(store, state, world.mux(), opts);
        let mut said = vec![];
        let gone = Poll {
            server_down: Some(
                "the tmux server on socket s is gone; its workers are marked crashed".into(),
            ),
            ..Poll::default()
        };
        d.report_server(&gone, true, &mut |u| said.push(u));
        // Its workers crashed: the next poll looks at nothing, and says nothing.
        d.report_server(&Poll::default(), false, &mut |u| said.push(u));
        d.report_server(&Poll::default(), false, &mut |u| said.push(u));
        let text = |said: &[Update]| {
            said.iter()
                .filter_map(|u| match u {
                    Update::Notice(n) | Update::Info(n) => Some(n.clone()),
                    _ => None,
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(
            text(&said),
            ["the tmux server on socket s is gone; its workers are marked crashed"]
        );
        // A poll that asked it and got an answer: now it answers again, once.
        d.report_server(&Poll::default(), true, &mut |u| said.push(u));
        d.report_server(&Poll::default(), true, &mut |u| said.push(u));
        assert_eq!(text(&said)[1..], ["the tmux server answers again"]);
        assert_eq!(text(&said).len(), 2);
    }
}
