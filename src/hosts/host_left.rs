//! The attempts a host's thread ends on a host that was lost (their workers were handed
//! to this machine): by their nonce (`kill`) the first time the host answers again, a lost
//! host being probed for that with back-off (1 s doubling to [`LOST_PROBE_MAX`]). Their
//! files there then come back into their local folders, as an ended pane's do, so what
//! they did on the host while it was lost (output, `exit.json`, the result) is not lost.

use std::path::Path;
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use super::{HostSide, Told, LEFT_GRACE, LOST_PROBE_MAX};
use crate::backend::{CameBack, EndedOnHost, LeftOnHost};
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
    /// lost when its turn has come), then bring their files back; what was ended and came
    /// back is told and dropped from `left` (an attempt whose files did not come back is
    /// tried again, its end being idempotent).
    pub(super) fn end_left(
        &mut self,
        left: &mut Vec<LeftOnHost>,
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
        for l in left.clone() {
            match self.end_one(&l) {
                Ok(came_back) => ended.push(EndedOnHost {
                    nonce: l.nonce.clone(),
                    came_back,
                }),
                Err(e) => {
                    tracing::warn!(
                        "host {}: could not end attempt {} and bring its files back: {e}",
                        self.place.spec.name,
                        l.nonce
                    );
                    self.reach.failed(Instant::now(), e.to_string());
                    break;
                }
            }
            self.place.progress.step();
        }
        if !ended.is_empty() {
            left.retain(|l| !ended.iter().any(|e| e.nonce == l.nonce));
            tracing::info!(
                "host {}: ended {} attempt(s) left running there",
                self.place.spec.name,
                ended.len()
            );
            // The backend is gone when this fails; nothing is left to tell.
            let _ = told.send(Told::Ended(ended));
        }
    }

    /// End the attempt `l` on the host by its nonce, then bring its files back into its
    /// local folder by the path an ended pane's files take (`files::fetch`): all it wrote
    /// there, and its `exit.json` when it ended by itself.
    fn end_one(&mut self, l: &LeftOnHost) -> crate::error::Result<Option<CameBack>> {
        let survivors = crate::hosts::kill::end(&self.place.link, &l.nonce, LEFT_GRACE)?;
        if !survivors.is_empty() {
            tracing::warn!(
                "host {}: processes of attempt {} survive SIGKILL: {survivors:?}",
                self.place.spec.name,
                l.nonce
            );
        }
        let Some(dir) = &l.dir else {
            return Ok(None);
        };
        let log = dir.join("output.log");
        // Its stream (one still hanging on a connection that froze) ends before the
        // host's whole file replaces the local one.
        if let Some(streams) = self.streams.as_mut() {
            streams.stop(&log);
        }
        let Some(remote_dir) = self.place.remote_dir(&log) else {
            return Ok(None);
        };
        crate::hosts::files::fetch(&self.place.link, &remote_dir, dir)?;
        Ok(Some(came_back(dir, &l.nonce)))
    }
}

/// What is in the attempt folder `dir` once its files came back: the lines of its output
/// and the code its own `exit.json` (this attempt's `nonce`) holds.
fn came_back(dir: &Path, nonce: &str) -> CameBack {
    let lines = std::fs::read(dir.join("output.log"))
        .map(|b| bytecount_lines(&b))
        .unwrap_or(0);
    let exit_code = crate::launch::read_exit_file(&dir.join("exit.json"), nonce)
        .ok()
        .flatten();
    CameBack { lines, exit_code }
}

/// Lines of `text`, a last one without its newline counted.
fn bytecount_lines(text: &[u8]) -> usize {
    let ends = text.iter().filter(|b| **b == b'\n').count();
    ends + usize::from(text.last().is_some_and(|b| *b != b'\n'))
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

    #[test]
    fn what_came_back_counts_lines_and_reads_its_own_exit_only() {
        assert_eq!(bytecount_lines(b""), 0);
        assert_eq!(bytecount_lines(b"a\nb\n"), 2);
        assert_eq!(bytecount_lines(b"a\nb"), 2);
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("output.log"), "tick 1\ntick 2\n").unwrap();
        let got = came_back(dir.path(), "n1");
        assert_eq!((got.lines, got.exit_code), (2, None));
        let rec = r#"{"schema_version":1,"code":0,"nonce":"n1"}"#;
        std::fs::write(dir.path().join("exit.json"), rec).unwrap();
        assert_eq!(came_back(dir.path(), "n1").exit_code, Some(0));
        assert_eq!(came_back(dir.path(), "other").exit_code, None);
    }
}
