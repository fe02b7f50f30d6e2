//! Every transition once in `events.jsonl`: a driver attached to a stopped run observes
//! again what the stopped one saw but had not saved (an exit, a question), and the engine
//! then states the same transition again. The keys of the transitions already in the log
//! are loaded when a driver starts, and a repeat is left out.

use std::collections::{HashMap, HashSet};

use crate::domain::{EventKind, RunEvent};

/// Kinds that happen at most once per worker and attempt.
const ONCE_PER_ATTEMPT: &[EventKind] = &[
    EventKind::WorkerStarted,
    EventKind::WorkerCompleted,
    EventKind::WorkerFailed,
    EventKind::WorkerCrashed,
    EventKind::WorkerTimeout,
    EventKind::WorkerCancelled,
    EventKind::WorkerRetryScheduled,
    EventKind::WorkerCancelRequested,
];

/// What is known of the log so far: the once-keys, each worker's count of answers, and
/// how many times the run entered `team-verify` (each entry is one council round).
#[derive(Debug, Default)]
pub struct Recorded {
    keys: HashSet<String>,
    answers: HashMap<String, usize>,
    verify_rounds: usize,
}

impl Recorded {
    /// The log as it is in `events`.
    pub fn from_events(events: &[RunEvent]) -> Self {
        let mut r = Recorded::default();
        for e in events {
            r.first_time(e);
        }
        r
    }

    /// Note `e`; false when the same transition is in the log already.
    pub fn first_time(&mut self, e: &RunEvent) -> bool {
        let who = format!(
            "{}#{}",
            e.worker.as_deref().unwrap_or(""),
            e.attempt.unwrap_or(0)
        );
        let key = if ONCE_PER_ATTEMPT.contains(&e.kind) {
            format!("{} {who}", e.kind)
        } else {
            match e.kind {
                EventKind::WorkerAnswered => {
                    *self.answers.entry(who).or_default() += 1;
                    return true;
                }
                // The same question asked again after an answer is a new one: the count
                // of answers the attempt had tells them apart.
                EventKind::WorkerWaiting => format!(
                    "{} {who} {} {}",
                    e.kind,
                    self.answers.get(&who).copied().unwrap_or(0),
                    e.message
                ),
                EventKind::RunDone | EventKind::RunFailed | EventKind::RunCancelled => {
                    e.kind.to_string()
                }
                // A reopened run goes through its stages and ends again: new transitions.
                EventKind::RunReopened => {
                    self.keys
                        .retain(|k| !k.starts_with("run-") && !k.starts_with("stage-changed"));
                    return true;
                }
                EventKind::StageChanged => {
                    let key = format!("{} {}", e.kind, e.message);
                    let first = self.keys.insert(key);
                    if first && e.message.contains("→ team-verify") {
                        self.verify_rounds += 1;
                    }
                    return first;
                }
                // One verdict per council round: a council sat again by a driver that took
                // over before the first one's verdict was saved does not notify twice (a
                // different verdict is a new transition).
                EventKind::Council => {
                    format!("{} {} {}", e.kind, self.verify_rounds, e.message)
                }
                _ => return true,
            }
        };
        self.keys.insert(key)
    }
}

/// Kinds that end an attempt.
const FINAL: &[EventKind] = &[
    EventKind::WorkerCompleted,
    EventKind::WorkerFailed,
    EventKind::WorkerCrashed,
    EventKind::WorkerTimeout,
    EventKind::WorkerCancelled,
];

/// Kinds that end a run.
const RUN_FINAL: &[EventKind] = &[
    EventKind::RunDone,
    EventKind::RunFailed,
    EventKind::RunCancelled,
];

/// What breaks "every transition once" in a run's `events` (in log order), one sentence
/// each; empty when nothing does. Per worker and attempt: at most one `worker-started`,
/// at most one final status, one `worker-waiting` per question (the same text asked again
/// after an answer is a new question). Once the run has ended (`run-done`, `run-failed`,
/// `run-cancelled`), every attempt that started has exactly one final status. Shared by the
/// driver's tests, the integration tests' support and the chaos test.
pub fn violations(events: &[RunEvent]) -> Vec<String> {
    let mut out = vec![];
    let mut counts: HashMap<(String, &'static str), usize> = HashMap::new();
    let mut answers: HashMap<String, usize> = HashMap::new();
    let mut questions: HashSet<String> = HashSet::new();
    let mut started: Vec<String> = vec![];
    let mut ended = false;
    for e in events {
        let kind = &e.kind;
        ended |= RUN_FINAL.contains(kind);
        let Some(w) = &e.worker else { continue };
        let who = format!("{w}#{}", e.attempt.unwrap_or(0));
        let class = match kind {
            EventKind::WorkerStarted => {
                started.push(who.clone());
                "started"
            }
            k if FINAL.contains(k) => "final status",
            EventKind::WorkerAnswered => {
                *answers.entry(who).or_default() += 1;
                continue;
            }
            EventKind::WorkerWaiting => {
                let n = answers.get(&who).copied().unwrap_or(0);
                if !questions.insert(format!("{who} {n} {}", e.message)) {
                    out.push(format!(
                        "{who} has `worker-waiting` twice for one question: {}",
                        e.message
                    ));
                }
                continue;
            }
            _ => continue,
        };
        let n = counts.entry((who.clone(), class)).or_default();
        *n += 1;
        if *n == 2 {
            out.push(format!("{who} has more than one {class} event (`{kind}`)"));
        }
    }
    if ended {
        for who in started {
            if !counts.contains_key(&(who.clone(), "final status")) {
                out.push(format!(
                    "{who} started but has no final status in a run that ended"
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(kind: EventKind, message: &str) -> RunEvent {
        RunEvent {
            ts: chrono::Utc::now(),
            kind,
            worker: None,
            attempt: None,
            source: "engine".into(),
            message: message.into(),
        }
    }

    #[test]
    fn a_council_verdict_is_once_per_round_and_a_new_round_or_verdict_is_new() {
        let mut r = Recorded::default();
        let verify = event(EventKind::StageChanged, "team-exec → team-verify");
        assert!(r.first_time(&verify));
        assert!(r.first_time(&event(EventKind::Council, "blocked")));
        // The same round's council again (a second driver sat it again): left out.
        assert!(!r.first_time(&verify));
        assert!(!r.first_time(&event(EventKind::Council, "blocked")));
        // A different verdict of that round is a transition of its own.
        assert!(r.first_time(&event(EventKind::Council, "ok")));
        // The fix round's council is a new one, even with the same verdict.
        assert!(r.first_time(&event(
            EventKind::StageChanged,
            "team-verify → team-fix (fix round 1)"
        )));
        assert!(r.first_time(&event(
            EventKind::StageChanged,
            "team-fix → team-verify (fix round 1)"
        )));
        assert!(r.first_time(&event(EventKind::Council, "blocked")));
        // A reopened run goes through its stages again: its council is new too.
        assert!(r.first_time(&event(EventKind::RunReopened, "worker added")));
        assert!(r.first_time(&verify));
        assert!(r.first_time(&event(EventKind::Council, "blocked")));
    }
}
