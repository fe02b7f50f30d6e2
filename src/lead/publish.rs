//! Handing the run on: saving `state.json` and showing the run (snapshots for the dashboard
//! or the headless printer), from one copy of the state shared by both.
//!
//! A copy of a run of a thousand workers costs a fraction of a millisecond and the loop
//! turns once per exit, so while the run is busy snapshots go out at most every
//! [`SHOW_EVERY`] (what the eye can follow), the newest one carrying every change; a save
//! and an explicit request show at once. Nothing is lost: a change not shown yet goes out
//! when its time comes, whether or not anything else happens, and before the loop ends.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;

use super::saver::Said;
use super::{Driver, Update};
use crate::domain::{EventKind, RunEvent};

/// Least time between two snapshots while changes keep coming (a save or a request from
/// the person shows at once).
pub const SHOW_EVERY: Duration = Duration::from_millis(50);

/// What was shown last, and the change not shown yet.
#[derive(Debug)]
pub(super) struct Shown {
    at: Instant,
    /// A snapshot is due: with the focused screen when that changed since the last one.
    pending: Option<Option<String>>,
}

impl Default for Shown {
    fn default() -> Self {
        Shown {
            at: Instant::now() - SHOW_EVERY,
            pending: None,
        }
    }
}

impl Shown {
    /// Fold a new snapshot request into the one waiting: a screen is kept until one newer
    /// replaces it.
    fn add(&mut self, screen: Option<String>) {
        self.pending = match (self.pending.take(), screen) {
            (_, Some(s)) => Some(Some(s)),
            (Some(old), None) => Some(old),
            (None, None) => Some(None),
        };
    }
}

impl Driver {
    /// Save the state now (on the saver thread while the loop runs).
    pub(super) fn save(&mut self, emit: &mut impl FnMut(Update)) {
        self.publish(true, None, emit);
    }

    /// Show the state now, with any change waiting to be shown.
    pub(super) fn show_now(&mut self, emit: &mut impl FnMut(Update)) {
        self.shown.add(None);
        self.shown.at = Instant::now() - SHOW_EVERY;
        self.publish(false, None, emit);
    }

    /// Save the state (with `save`) and ask for it to be shown (with `show`: the focused
    /// screen when it changed). A snapshot goes out when a save copies the state anyway,
    /// or once [`SHOW_EVERY`] has passed since the last one; otherwise it waits (see
    /// [`Driver::show_wait`]).
    pub(super) fn publish(
        &mut self,
        save: bool,
        show: Option<Option<String>>,
        emit: &mut impl FnMut(Update),
    ) {
        if let Some(screen) = show {
            self.shown.add(screen);
        }
        let show = self.shown.pending.is_some() && (save || self.shown.at.elapsed() >= SHOW_EVERY);
        if !save && !show {
            return;
        }
        if save {
            self.state.updated_at = Utc::now();
        }
        // Saves in place (offline) write the state as it is: no copy without a snapshot.
        let shared = (show || self.saves.on_thread()).then(|| Arc::new(self.state.clone()));
        if save {
            let said = self.saves.save(&self.state, shared.as_ref());
            self.tell_saves(said, emit);
        }
        if let (true, Some(shared)) = (show, shared) {
            self.shown.at = Instant::now();
            emit(Update::Snapshot {
                state: shared,
                screen: self.shown.pending.take().flatten(),
            });
        }
    }

    /// Tell what saving said: a failed save as a notice; saves going aside (`state.json`
    /// cannot be read) once, as a `state-saved-aside` event, remembered for the end.
    pub(super) fn tell_saves(&mut self, said: Vec<Said>, emit: &mut impl FnMut(Update)) {
        for s in said {
            match s {
                Said::Failed(line) => emit(Update::Notice(line)),
                Said::Aside(aside) => {
                    let event = RunEvent {
                        ts: Utc::now(),
                        kind: EventKind::StateSavedAside,
                        worker: None,
                        attempt: None,
                        source: "driver".into(),
                        message: aside.notice(),
                    };
                    self.record_event(event, emit);
                    self.state_aside = Some(aside);
                }
            }
        }
    }

    /// How long the loop may wait before a snapshot waiting to be shown is due (`None`:
    /// none waits).
    pub(super) fn show_wait(&self) -> Option<Duration> {
        self.shown
            .pending
            .as_ref()
            .map(|_| SHOW_EVERY.saturating_sub(self.shown.at.elapsed()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_newer_screen_replaces_a_waiting_one_and_no_screen_keeps_it() {
        let mut s = Shown::default();
        s.add(None);
        assert_eq!(s.pending, Some(None));
        s.add(Some("a".into()));
        s.add(None);
        assert_eq!(s.pending, Some(Some("a".into())));
        s.add(Some("b".into()));
        assert_eq!(s.pending, Some(Some("b".into())));
    }
}
