//! Settling an attempt's exit from its evidence (docs/design.md order of trust: `exit.json`, the
//! exit marker, then the pane's or child's exit status). Pure: the caller passes the time,
//! so the waits below are tested with a fake clock.

use std::time::{Duration, Instant};

use crate::backend::Liveness;
use crate::domain::ExitSource;

/// How long a dead pane with a status waits for `exit.json` before its status is trusted:
/// tmux can report `pane_dead` a few ms before the wrapper's file lands.
pub const DEAD_STATUS_WAIT: Duration = Duration::from_millis(500);
/// How long a dead pane with no status (a lost SIGCHLD before tmux 3.6) waits for any
/// evidence before the attempt is taken as vanished.
pub const DEAD_NO_STATUS_WAIT: Duration = Duration::from_secs(3);

/// What settling decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settled {
    /// Nothing to decide yet: the attempt runs, or its evidence may still land.
    Open,
    /// The attempt exited with this code, known from `source`.
    Exited(i32, ExitSource),
    /// The attempt is gone with no exit code; the text says why.
    Vanished(String),
}

/// Decide an attempt's exit.
///
/// - `evidence`: `exit.json` or the marker, when either was found;
/// - `live`: what the backend reported;
/// - `dead_since`: when the attempt was first seen dead without evidence (set here);
/// - `recheck`: read the files once more (a file may land between poll and read), called
///   only when the pane or process is gone;
/// - `server_down`: the backend's message when its whole server is unreachable.
pub fn settle(
    evidence: Option<(i32, ExitSource)>,
    live: Liveness,
    dead_since: &mut Option<Instant>,
    now: Instant,
    recheck: impl FnOnce() -> Option<(i32, ExitSource)>,
    server_down: Option<&str>,
) -> Settled {
    if let Some((code, source)) = evidence {
        return Settled::Exited(code, source);
    }
    match live {
        Liveness::Alive | Liveness::Unknown => Settled::Open,
        Liveness::Dead { status } => {
            let since = *dead_since.get_or_insert(now);
            let waited = now.saturating_duration_since(since);
            match status {
                Some(code) if waited > DEAD_STATUS_WAIT => {
                    Settled::Exited(code, ExitSource::PaneStatus)
                }
                None if waited > DEAD_NO_STATUS_WAIT => {
                    Settled::Vanished("pane dead with no status and no exit record".into())
                }
                _ => Settled::Open,
            }
        }
        Liveness::Gone => match recheck() {
            Some((code, source)) => Settled::Exited(code, source),
            None => Settled::Vanished(
                server_down.map_or_else(|| "pane or process gone".into(), str::to_string),
            ),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn none() -> Option<(i32, ExitSource)> {
        None
    }

    #[test]
    fn evidence_wins_over_any_liveness() {
        let t0 = Instant::now();
        for live in [
            Liveness::Alive,
            Liveness::Gone,
            Liveness::Dead { status: Some(9) },
        ] {
            let s = settle(
                Some((3, ExitSource::ExitFile)),
                live,
                &mut None,
                t0,
                none,
                None,
            );
            assert_eq!(s, Settled::Exited(3, ExitSource::ExitFile));
        }
    }

    #[test]
    fn a_dead_pane_status_is_trusted_only_after_500_ms() {
        let t0 = Instant::now();
        let mut since = None;
        let dead = Liveness::Dead { status: Some(2) };
        assert_eq!(
            settle(None, dead, &mut since, t0, none, None),
            Settled::Open
        );
        assert_eq!(since, Some(t0));
        let at = |ms| t0 + Duration::from_millis(ms);
        assert_eq!(
            settle(None, dead, &mut since, at(500), none, None),
            Settled::Open
        );
        assert_eq!(
            settle(None, dead, &mut since, at(501), none, None),
            Settled::Exited(2, ExitSource::PaneStatus)
        );
    }

    #[test]
    fn a_file_landing_within_the_wait_is_used_instead_of_the_status() {
        let t0 = Instant::now();
        let mut since = None;
        let dead = Liveness::Dead { status: Some(1) };
        settle(None, dead, &mut since, t0, none, None);
        let s = settle(
            Some((0, ExitSource::ExitFile)),
            dead,
            &mut since,
            t0 + Duration::from_millis(200),
            none,
            None,
        );
        assert_eq!(s, Settled::Exited(0, ExitSource::ExitFile));
    }

    #[test]
    fn a_dead_pane_without_status_vanishes_after_3_s() {
        let t0 = Instant::now();
        let mut since = None;
        let dead = Liveness::Dead { status: None };
        let at = |ms| t0 + Duration::from_millis(ms);
        assert_eq!(
            settle(None, dead, &mut since, t0, none, None),
            Settled::Open
        );
        assert_eq!(
            settle(None, dead, &mut since, at(3000), none, None),
            Settled::Open
        );
        assert!(matches!(
            settle(None, dead, &mut since, at(3001), none, None),
            Settled::Vanished(_)
        ));
    }

    #[test]
    fn a_gone_pane_reads_the_files_once_more_then_names_the_server() {
        let t0 = Instant::now();
        let s = settle(
            None,
            Liveness::Gone,
            &mut None,
            t0,
            || Some((0, ExitSource::Marker)),
            None,
        );
        assert_eq!(s, Settled::Exited(0, ExitSource::Marker));
        let s = settle(
            None,
            Liveness::Gone,
            &mut None,
            t0,
            none,
            Some("the tmux server on socket x is gone"),
        );
        assert_eq!(
            s,
            Settled::Vanished("the tmux server on socket x is gone".into())
        );
    }

    #[test]
    fn unknown_liveness_decides_nothing() {
        let t0 = Instant::now();
        let mut since = None;
        assert_eq!(
            settle(None, Liveness::Unknown, &mut since, t0, none, None),
            Settled::Open
        );
        assert_eq!(since, None);
    }
}
