//! The attempts a host's thread ends on a host that was lost (their workers were handed
//! to this machine): by their nonce (`kill`) the first time the host answers again, a lost
//! host being probed for that with back-off (1 s doubling to [`LOST_PROBE_MAX`]).

use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use super::{HostSide, Told, LEFT_GRACE, LOST_PROBE_MAX};
use crate::hosts::reach::Reach;

/// When a lost host is probed next (it is not polled: its workers moved away).
#[derive(Default)]
pub(super) struct LostProbe {
    next: Option<Instant>,
    backoff: Duration,
}

impl LostProbe {
    /// How long the thread may sleep before it tries the host again.
    pub(super) fn wait(&self, reach: &Reach) -> Duration {
        let at = match reach {
            Reach::Up => return Duration::ZERO,
            Reach::Down { retry_at, .. } => *retry_at,
            Reach::Lost => self.next.unwrap_or_else(Instant::now),
        };
        at.saturating_duration_since(Instant::now())
    }

    /// True when the lost host may be probed now (and schedules the next probe).
    fn due(&mut self, now: Instant) -> bool {
        if self.next.is_some_and(|n| now < n) {
            return false;
        }
        self.backoff = (self.backoff * 2).clamp(Duration::from_secs(1), LOST_PROBE_MAX);
        self.next = Some(now + self.backoff);
        true
    }
}

impl HostSide {
    /// End the attempts `left` on the host if it answers (probing a host that is down or
    /// lost when its turn has come); what was ended is told and dropped from `left`.
    pub(super) fn end_left(
        &mut self,
        left: &mut Vec<String>,
        lost: &mut LostProbe,
        told: &Sender<Told>,
    ) {
        let now = Instant::now();
        let may = match self.reach {
            Reach::Up => true,
            Reach::Down { .. } => self.reach.may_try(now) && self.probe(now),
            Reach::Lost => lost.due(now) && self.probe(now),
        };
        if !may {
            return;
        }
        *lost = LostProbe::default();
        let mut ended = vec![];
        for nonce in left.iter() {
            match crate::hosts::kill::end(&self.place.link, nonce, LEFT_GRACE) {
                Ok(survivors) => {
                    if !survivors.is_empty() {
                        tracing::warn!(
                            "host {}: processes of attempt {nonce} survive SIGKILL: {survivors:?}",
                            self.place.spec.name
                        );
                    }
                    ended.push(nonce.clone());
                }
                Err(e) => {
                    tracing::warn!(
                        "host {}: could not end attempt {nonce}: {e}",
                        self.place.spec.name
                    );
                    self.reach.failed(Instant::now(), e.to_string());
                    break;
                }
            }
        }
        if !ended.is_empty() {
            left.retain(|n| !ended.contains(n));
            tracing::info!(
                "host {}: ended {} attempt(s) left running there",
                self.place.spec.name,
                ended.len()
            );
            // The backend is gone when this fails; nothing is left to tell.
            let _ = told.send(Told::Ended(ended));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lost_host_is_probed_with_back_off_up_to_its_most() {
        let t0 = Instant::now();
        let mut p = LostProbe::default();
        assert!(p.due(t0), "the first probe is at once");
        assert!(!p.due(t0 + Duration::from_millis(500)));
        assert!(p.due(t0 + Duration::from_secs(1)));
        assert_eq!(p.backoff, Duration::from_secs(2));
        let mut at = t0 + Duration::from_secs(1);
        for _ in 0..10 {
            at += p.backoff;
            assert!(p.due(at));
        }
        assert_eq!(p.backoff, LOST_PROBE_MAX);
        assert_eq!(p.wait(&Reach::Up), Duration::ZERO);
    }
}
