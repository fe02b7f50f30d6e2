//! Whether a host answers, and when it counts as lost. A host whose poll fails is probed
//! (`ssh <dest> true` on the shared connection, or a new one); while it does not answer
//! its workers' liveness is `Unknown` (tmux on the host keeps them running) and it is
//! tried again with back-off (1 s, doubling to 30 s). Once it has not answered for the
//! host's `lost_after_s`, it is lost: the driver marks its workers `crashed (host lost)`
//! and their retries run on this machine.

use std::time::{Duration, Instant};

/// First wait before a host that did not answer is tried again.
const RETRY_FIRST: Duration = Duration::from_secs(1);
/// Longest wait between two tries.
const RETRY_MAX: Duration = Duration::from_secs(30);
/// Limit of one probe.
pub const PROBE_LIMIT: Duration = Duration::from_secs(5);
/// Shortest limit of a probe: a new connection on a loaded machine takes a second or two.
pub const PROBE_FLOOR: Duration = Duration::from_secs(2);

/// How long an attach waits for the host to answer before the person's terminal is
/// handed to `ssh -t` (a round trip on the shared connection takes milliseconds; a new
/// connection on a loaded machine a second or two).
pub const ATTACH_CHECK: Duration = Duration::from_secs(3);

/// `Ok` when the host of `link` runs `true` within `limit`.
///
/// # Errors
/// The host does not answer within `limit`: one line for the person, naming the host
/// and what to do.
pub fn answers_within(link: &super::ssh::SshLink, limit: Duration) -> crate::error::Result<()> {
    link.run("true", None, limit).map(|_| ()).map_err(|e| {
        tracing::info!("host {}: {e}", link.host);
        crate::error::Error::Other(format!(
            "host {} does not answer (no reply within {} s); Enter attaches once it does",
            link.host,
            limit.as_secs()
        ))
    })
}

/// A host's reachability as the backend last saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reach {
    Up,
    /// Not answering since `since`; the next try is at `retry_at`.
    Down {
        since: Instant,
        retry_at: Instant,
        backoff: Duration,
        why: String,
    },
    /// Gone for longer than its limit: its workers were handed over.
    Lost,
}

impl Reach {
    /// The host did not answer at `now` (`why`: what ssh or tmux said).
    pub fn failed(&mut self, now: Instant, why: String) {
        *self = match std::mem::replace(self, Reach::Up) {
            Reach::Up => Reach::Down {
                since: now,
                retry_at: now + RETRY_FIRST,
                backoff: RETRY_FIRST * 2,
                why,
            },
            Reach::Down { since, backoff, .. } => Reach::Down {
                since,
                retry_at: now + backoff,
                backoff: (backoff * 2).min(RETRY_MAX),
                why,
            },
            Reach::Lost => Reach::Lost,
        };
    }

    /// A host found not answering at `since` before this backend asked it anything
    /// (planning's probe): down from then on, tried at once (at `now`); its outage counts
    /// from `since` toward its `lost_after_s`. A host already seen answering or down is
    /// left as it is.
    pub fn silent_since(&mut self, since: Instant, now: Instant, why: String) {
        if *self == Reach::Up {
            *self = Reach::Down {
                since: since.min(now),
                retry_at: now,
                backoff: RETRY_FIRST,
                why,
            };
        }
    }

    /// True when a down host may be tried at `now`.
    pub fn may_try(&self, now: Instant) -> bool {
        match self {
            Reach::Up => true,
            Reach::Down { retry_at, .. } => now >= *retry_at,
            Reach::Lost => false,
        }
    }

    /// The limit of the next probe of a host lost after `lost_after`: [`PROBE_LIMIT`],
    /// cut to the time left before a down host is lost (at least [`PROBE_FLOOR`]), so a
    /// host that hangs is lost at its limit and not a whole probe later.
    pub fn probe_limit(&self, now: Instant, lost_after: Duration) -> Duration {
        match self {
            Reach::Down { since, .. } => {
                let left = lost_after.saturating_sub(now.saturating_duration_since(*since));
                left.clamp(PROBE_FLOOR, PROBE_LIMIT)
            }
            _ => PROBE_LIMIT,
        }
    }

    /// `Some(reason)` once a down host has been gone longer than `limit` (it becomes
    /// `Lost`); `None` otherwise.
    pub fn lose_after(&mut self, now: Instant, limit: Duration) -> Option<String> {
        let Reach::Down { since, why, .. } = self else {
            return None;
        };
        let gone = now.saturating_duration_since(*since);
        if gone < limit {
            return None;
        }
        let reason = format!("unreachable for {} s ({why})", gone.as_secs());
        *self = Reach::Lost;
        Some(reason)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_is_tried_with_back_off_and_lost_after_its_limit() {
        let t0 = Instant::now();
        let mut r = Reach::Up;
        r.failed(t0, "refused".into());
        assert!(!r.may_try(t0));
        assert!(r.may_try(t0 + Duration::from_secs(1)));
        r.failed(t0 + Duration::from_secs(1), "refused".into());
        assert!(!r.may_try(t0 + Duration::from_secs(2)));
        assert!(r.may_try(t0 + Duration::from_secs(3)));
        assert_eq!(
            r.lose_after(t0 + Duration::from_secs(9), Duration::from_secs(10)),
            None
        );
        let why = r
            .lose_after(t0 + Duration::from_secs(10), Duration::from_secs(10))
            .unwrap();
        assert_eq!(why, "unreachable for 10 s (refused)");
        assert_eq!(r, Reach::Lost);
        assert!(!r.may_try(t0 + Duration::from_secs(60)));
    }

    #[test]
    fn a_probe_of_a_down_host_ends_by_the_time_it_is_lost() {
        let t0 = Instant::now();
        let limit = Duration::from_secs(15);
        let mut r = Reach::Up;
        assert_eq!(r.probe_limit(t0, limit), PROBE_LIMIT);
        r.failed(t0, "banner".into());
        assert_eq!(
            r.probe_limit(t0 + Duration::from_secs(1), limit),
            PROBE_LIMIT
        );
        assert_eq!(
            r.probe_limit(t0 + Duration::from_secs(12), limit),
            Duration::from_secs(3)
        );
        assert_eq!(
            r.probe_limit(t0 + Duration::from_secs(14), limit),
            PROBE_FLOOR
        );
        assert_eq!(
            r.probe_limit(t0 + Duration::from_secs(40), limit),
            PROBE_FLOOR
        );
    }

    #[test]
    fn a_host_silent_at_planning_is_down_from_then_and_tried_at_once() {
        let t0 = Instant::now();
        let now = t0 + Duration::from_secs(12);
        let mut r = Reach::Up;
        r.silent_since(t0, now, "did not answer within 12 s".into());
        assert!(r.may_try(now));
        assert_eq!(r.lose_after(now, Duration::from_secs(40)), None);
        let why = r
            .lose_after(t0 + Duration::from_secs(40), Duration::from_secs(40))
            .unwrap();
        assert_eq!(why, "unreachable for 40 s (did not answer within 12 s)");
        // A host seen since keeps what it was seen as.
        let mut lost = Reach::Lost;
        lost.silent_since(t0, now, "x".into());
        assert_eq!(lost, Reach::Lost);
    }

    #[test]
    fn the_back_off_stops_growing_at_30_s() {
        let t0 = Instant::now();
        let mut r = Reach::Up;
        for _ in 0..10 {
            r.failed(t0, "x".into());
        }
        let Reach::Down { backoff, .. } = r else {
            panic!("{r:?}")
        };
        assert_eq!(backoff, RETRY_MAX);
    }
}
