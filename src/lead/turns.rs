//! The loop's turns: what one turn does (observe, apply, launch, save, show) and the timing
//! between turns ([`Turns`]).

use std::time::{Duration, Instant};

use super::{
    pace, poller, Control, Driver, Update, Wake, LAUNCH_BATCH, POLL_DURING_LAUNCH, REST_TICKS,
    SAVE_EVERY,
};

impl Driver {
    /// One turn of the loop: observe, apply, launch the next batch, SIGKILL what outlived
    /// its grace, save (at most every [`SAVE_EVERY`]) and show what changed. `answer`: the
    /// poll thread's look this turn applies (it asks for no other).
    pub(super) fn turn(
        &mut self,
        turns: &mut Turns,
        emit: &mut impl FnMut(Update),
        answer: Option<poller::Looked>,
    ) {
        turns.last_tick = Instant::now();
        // An exit wake-up between ticks reads the files only; the backend is polled at
        // least once a tick however often exits wake the loop. While a launch batch is in
        // flight the server answers a poll only after the batch (one server, and in control
        // mode one client): the loop does not wait for that, exits are seen from their
        // files meanwhile, and a poll goes out once a [`POLL_DURING_LAUNCH`] at most.
        let since = turns.last_poll.elapsed();
        let asking = answer.is_some() || self.poller.as_ref().is_some_and(|p| p.busy);
        let poll = if asking {
            false
        } else if self.in_flight.is_some() {
            turns.exit_wake = false;
            since >= POLL_DURING_LAUNCH
        } else {
            !std::mem::take(&mut turns.exit_wake) || since >= self.opts.tick
        };
        let look = if !poll {
            pace::Look::Nothing
        } else {
            turns.last_poll = Instant::now();
            let rest = self.in_flight.is_none() && self.may_rest();
            self.pace.look(turns.last_poll, self.opts.tick, rest)
        };
        let looked = match answer {
            Some(looked) => looked,
            None => self.look(look),
        };
        let (inputs, screen) = self.observe_looked(emit, looked);
        let mut changed = self.apply(inputs, emit) > 0;
        changed |= self.live_diff.tick(&mut self.state, &self.mem.last_output);
        // Launches beyond one batch go out a batch per turn, so exits stay prompt.
        if !self.pending_launches.is_empty() && self.may_launch_more() {
            let n = self.pending_launches.len().min(LAUNCH_BATCH);
            let batch: Vec<(String, u32)> = self.pending_launches.drain(..n).collect();
            let inputs = self.launch_many(batch);
            self.apply(inputs, emit);
            changed = true;
            turns.last_tick = Instant::now() - self.opts.tick;
        }
        let late = self.retake_results(false);
        if !late.is_empty() {
            changed |= self.apply(late, emit) > 0;
        }
        let checked = self.race_check_results();
        if !checked.is_empty() {
            changed |= self.apply(checked, emit) > 0;
        }
        changed |= self.council_after_retakes(emit);
        self.pace.end_turn(changed, Instant::now());
        self.releases.turn(Instant::now());
        self.give_up_late_batch(emit);
        self.hard_kills();
        self.reap_due(false, emit);
        self.notify_failures(false, emit);
        let said = self.saves.told();
        self.tell_saves(said, emit);
        turns.unsaved |= changed;
        // state.json is rewritten at most every SAVE_EVERY (one run of 1000 workers is
        // megabytes); exit evidence is on disk meanwhile, so nothing is lost.
        let save = turns.unsaved && (turns.last_save.elapsed() >= SAVE_EVERY || self.finished);
        if save {
            turns.unsaved = false;
            turns.last_save = Instant::now();
        }
        if changed || screen.is_some() || self.mem.last_output_moved {
            turns.calm_since = Instant::now();
        }
        self.mem.last_output_moved = false;
        let show = (changed || screen.is_some()).then_some(screen);
        self.publish(save, show, emit);
    }
}

/// The loop's timing between turns.
pub(super) struct Turns {
    pub(super) last_tick: Instant,
    pub(super) last_save: Instant,
    /// A control message met while coalescing exit wake-ups waits here for its turn.
    pub(super) deferred: Option<Wake>,
    /// Since when nothing has happened (no change, output, exit or message).
    pub(super) calm_since: Instant,
    /// Requests that came while a launch batch was in flight, oldest first.
    pub(super) held: Vec<Control>,
    /// This turn was woken by an `exit.json`.
    pub(super) exit_wake: bool,
    pub(super) last_poll: Instant,
    pub(super) unsaved: bool,
}

impl Turns {
    pub(super) fn new(tick: Duration) -> Self {
        Turns {
            last_tick: Instant::now() - tick,
            last_save: Instant::now(),
            deferred: None,
            calm_since: Instant::now(),
            held: vec![],
            exit_wake: false,
            last_poll: Instant::now() - tick,
            unsaved: false,
        }
    }

    /// Adaptive back-off: a quarter of the time nothing has happened for, at least the
    /// tick and at most 4× the tick, or [`REST_TICKS`]× when the run may `rest` (exits
    /// still wake the loop at once through inotify; any output, exit or message resets it).
    pub(super) fn period(&self, tick: Duration, rest: bool) -> Duration {
        let most = tick * if rest { REST_TICKS } else { 4 };
        (self.calm_since.elapsed() / 4).clamp(tick, most)
    }
}
