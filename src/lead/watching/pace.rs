//! How often a turn of the loop asks tmux for the pane listing while workers only print.
//!
//! Every turn reads each attempt's new log bytes (cheap: one `fstat` and a read), so
//! activity, stall lines, rate-limit lines, questions in the output and the exit marker are
//! seen at the tick whatever the listing does. The listing (liveness, dead status and the
//! change signature of every pane, plus the last lines of panes that settled) is what
//! printing workers cost the tmux server: it formats a row per pane at each tick. In a run
//! whose exits all wake the loop ([`crate::lead::Driver::may_rest`]) an ended attempt is seen
//! from its `exit.json` without it, so the listing backs off while nothing but output
//! happens, as the whole loop does when nothing happens at all:
//!
//! - it is due after a quarter of the time nothing but output has happened, at least a
//!   tick and at most [`crate::lead::REST_TICKS`] ticks;
//! - a change of the run (an exit, an answer, a state change) and a worker whose output
//!   stopped (its log has not grown for [`STOPPED_AFTER`]: a prompt may be waiting on its
//!   screen) make it due at the tick again; a gap of a tick or two, as a busy machine gives
//!   a steady printer, is not a stop;
//! - between listings the focused worker's screen is still captured, alone, when its log
//!   grew or the focus changed, so the output panel follows at the tick.

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// A worker whose log has not grown for this long has stopped printing.
pub(in crate::lead) const STOPPED_AFTER: Duration = Duration::from_millis(500);

/// What a turn asks the backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::lead) enum Look {
    /// Nothing: liveness is `Unknown` this turn.
    Nothing,
    /// The focused worker's screen alone.
    Screen,
    /// Every watched pane, and the focused screen.
    Panes,
}

/// The listing's clock (see the module docs).
pub(in crate::lead) struct Pace {
    listed: Instant,
    /// Since when nothing but output has happened.
    quiet_since: Instant,
    /// When each worker's log last grew, and whether its stop since was acted on.
    grown: HashMap<String, (Instant, bool)>,
    /// The focused screen is to be captured at the next turn.
    screen_due: bool,
}

impl Default for Pace {
    fn default() -> Self {
        Pace {
            listed: Instant::now(),
            quiet_since: Instant::now(),
            grown: HashMap::new(),
            screen_due: true,
        }
    }
}

impl Pace {
    /// What a turn that may poll asks, at `now`, with the loop's `tick`; `rest`: the run's
    /// exits all wake the loop (otherwise every such turn lists, as before).
    pub(in crate::lead) fn look(&mut self, now: Instant, tick: Duration, rest: bool) -> Look {
        let period = (now.saturating_duration_since(self.quiet_since) / 4)
            .clamp(tick, tick * crate::lead::REST_TICKS);
        if !rest || now.saturating_duration_since(self.listed) >= period {
            self.listed = now;
            self.screen_due = false;
            Look::Panes
        } else if std::mem::take(&mut self.screen_due) {
            Look::Screen
        } else {
            Look::Nothing
        }
    }

    /// `worker`'s log grew at `now` (`focused`: it is the focused worker).
    pub(in crate::lead) fn grew(&mut self, worker: &str, focused: bool, now: Instant) {
        match self.grown.get_mut(worker) {
            Some(g) => *g = (now, false),
            None => {
                self.grown.insert(worker.to_string(), (now, false));
            }
        }
        self.screen_due |= focused;
    }

    /// The focus changed: its screen is captured at the next turn.
    pub(in crate::lead) fn refocused(&mut self) {
        self.screen_due = true;
    }

    /// The turn is over; `changed`: the run changed at it.
    pub(in crate::lead) fn end_turn(&mut self, changed: bool, now: Instant) {
        let mut stopped = false;
        for (at, told) in self.grown.values_mut() {
            if !*told && now.saturating_duration_since(*at) >= STOPPED_AFTER {
                *told = true;
                stopped = true;
            }
        }
        if changed || stopped {
            self.quiet_since = now;
            // Listed at the next turn that may poll.
            self.listed = now.checked_sub(Duration::from_secs(3600)).unwrap_or(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TICK: Duration = Duration::from_millis(200);

    #[test]
    fn output_alone_lets_the_listing_back_off_to_the_rest_period() {
        let mut p = Pace::default();
        let t0 = Instant::now();
        let mut listed = vec![];
        for i in 1..=100u32 {
            let now = t0 + TICK * i;
            p.grew("w1", false, now);
            if p.look(now, TICK, true) == Look::Panes {
                listed.push(i);
            }
            p.end_turn(false, now);
        }
        // 20 s of ticks: at most one listing every 10 ticks once quiet for 8 s.
        let late: Vec<_> = listed.iter().filter(|&&i| i > 50).collect();
        assert!(late.len() <= 6, "{listed:?}");
        assert!(late.windows(2).all(|w| w[1] - w[0] >= 9), "{listed:?}");
    }

    /// A turn as the loop makes it: look, read the logs, end.
    fn turn(p: &mut Pace, now: Instant, grew: &[&str], changed: bool) -> Look {
        let look = p.look(now, TICK, true);
        for w in grew {
            p.grew(w, false, now);
        }
        p.end_turn(changed, now);
        look
    }

    #[test]
    fn a_change_or_a_worker_that_stops_printing_lists_at_the_next_turn() {
        let mut p = Pace::default();
        let t0 = Instant::now() + Duration::from_secs(60);
        p.quiet_since = t0 - Duration::from_secs(30);
        p.listed = t0 - TICK;
        p.screen_due = false;
        assert_eq!(turn(&mut p, t0, &["w1", "w2"], false), Look::Nothing);
        // w2 skips a turn, as a busy machine makes a steady printer do: not a stop.
        assert_eq!(turn(&mut p, t0 + TICK, &["w1"], false), Look::Nothing);
        assert_eq!(
            turn(&mut p, t0 + TICK * 2, &["w1", "w2"], false),
            Look::Nothing
        );
        // w2 stops: once its log has not grown for STOPPED_AFTER, the next turn lists.
        assert_eq!(turn(&mut p, t0 + TICK * 3, &["w1"], false), Look::Nothing);
        assert_eq!(turn(&mut p, t0 + TICK * 4, &["w1"], false), Look::Nothing);
        assert_eq!(turn(&mut p, t0 + TICK * 5, &["w1"], false), Look::Nothing);
        assert_eq!(turn(&mut p, t0 + TICK * 6, &["w1"], false), Look::Panes);
        // Quiet again only after a while; the stop is acted on once.
        assert_eq!(turn(&mut p, t0 + TICK * 7, &["w1"], true), Look::Panes);
        // A change: the next turn lists.
        assert_eq!(turn(&mut p, t0 + TICK * 8, &["w1"], false), Look::Panes);
    }

    #[test]
    fn the_focused_screen_follows_its_output_between_listings() {
        let mut p = Pace::default();
        let t0 = Instant::now() + Duration::from_secs(60);
        assert_eq!(p.look(t0, TICK, true), Look::Panes);
        p.end_turn(false, t0);
        p.quiet_since = t0 - Duration::from_secs(30);
        p.listed = t0;
        assert_eq!(p.look(t0 + TICK, TICK, true), Look::Nothing);
        p.grew("w1", true, t0 + TICK);
        p.end_turn(false, t0 + TICK);
        assert_eq!(p.look(t0 + TICK * 2, TICK, true), Look::Screen);
        p.grew("w1", true, t0 + TICK * 2);
        p.end_turn(false, t0 + TICK * 2);
        p.refocused();
        assert_eq!(p.look(t0 + TICK * 3, TICK, true), Look::Screen);
        assert_eq!(p.look(t0 + TICK * 4, TICK, true), Look::Nothing);
    }

    #[test]
    fn a_run_whose_exits_do_not_all_wake_the_loop_lists_every_turn() {
        let mut p = Pace::default();
        let t0 = Instant::now() + Duration::from_secs(60);
        p.quiet_since = t0 - Duration::from_secs(30);
        for i in 0..5u32 {
            assert_eq!(p.look(t0 + TICK * i, TICK, false), Look::Panes);
        }
    }
}
