//! The Output tab when a pane cannot be captured: its tmux server is gone (`crewmux clean`,
//! a killed server), its host does not answer or was lost, or the capture has not come yet.
//! The `pane-gone` event promises that the output stays in `output.log`; this reads the
//! last [`LOG_SCREEN_BYTES`] of it for the focused worker, re-read only when the file grew.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// How much of the end of `output.log` stands in for a screen, bytes.
pub const LOG_SCREEN_BYTES: u64 = 64 << 10;
/// The longest line kept whole in that screen, bytes (a longer one keeps its end).
const LINE_BYTES: usize = 16 << 10;

/// Whether the focused worker's pane was captured, and which log was last shown instead.
#[derive(Debug, Default)]
pub(in crate::lead) struct LogScreen {
    /// A capture came since the focus last changed: it is better than the log.
    captured: bool,
    /// The log shown last (worker, attempt, its length in bytes).
    shown: Option<(String, u32, u64)>,
}

impl LogScreen {
    /// The focus changed: nothing is captured or shown for the new one yet.
    pub(in crate::lead) fn reset(&mut self) {
        *self = Self::default();
    }

    /// The screen to show after a poll: `captured` when the poll captured the pane, else
    /// the end of `log` (`worker`'s attempt `attempt`) when no capture came since the focus
    /// changed and the log is new or grew since it was last shown; `None` to keep what is
    /// shown.
    pub(in crate::lead) fn after_poll(
        &mut self,
        captured: Option<String>,
        focus: Option<(&str, u32, &Path)>,
    ) -> Option<String> {
        if captured.is_some() {
            self.captured = true;
            return captured;
        }
        let (worker, attempt, log) = focus?;
        if self.captured {
            return None;
        }
        let len = std::fs::metadata(log).ok()?.len();
        let key = (worker.to_string(), attempt, len);
        if len == 0 || self.shown.as_ref() == Some(&key) {
            return None;
        }
        let text = log_end(log, len)?;
        self.shown = Some(key);
        Some(text)
    }
}

/// The last [`LOG_SCREEN_BYTES`] of the `len`-byte file at `log` as a screen: lines whole
/// (the first partial one dropped), `\r` redraws settled, ANSI and crewmux's protocol lines
/// removed, and a first line saying how much came before. `None` when it cannot be read.
fn log_end(log: &Path, len: u64) -> Option<String> {
    let mut file = std::fs::File::open(log).ok()?;
    let from = len.saturating_sub(LOG_SCREEN_BYTES);
    file.seek(SeekFrom::Start(from)).ok()?;
    let mut bytes = Vec::new();
    file.take(LOG_SCREEN_BYTES).read_to_end(&mut bytes).ok()?;
    if from > 0 {
        // The first line is a part of one: start at the next whole line.
        let start = bytes.iter().position(|&b| b == b'\n').map_or(0, |i| i + 1);
        bytes.drain(..start);
    }
    let tail = crate::launch::tail::tail_of_reader(&bytes[..], bytes.len(), LINE_BYTES).ok()?;
    let text = super::observe::without_protocol_lines(&crate::launch::strip_ansi(&tail.text));
    Some(if from > 0 {
        format!(
            "[crewmux: the end of output.log ({len} bytes); the pane cannot be captured]\n{text}"
        )
    } else {
        text
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_stands_in_until_a_capture_comes_and_is_reread_only_when_it_grows() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("output.log");
        std::fs::write(
            &log,
            "\x1b[32mstep 1\x1b[0m\nstep 2\n__CREWMUX_EXIT_n1__:0\n",
        )
        .unwrap();
        let mut s = LogScreen::default();
        let focus = Some(("w1", 1, log.as_path()));
        assert_eq!(s.after_poll(None, focus).as_deref(), Some("step 1\nstep 2"));
        assert_eq!(
            s.after_poll(None, focus),
            None,
            "unchanged log: nothing new"
        );
        std::fs::write(&log, "step 1\nstep 2\nstep 3\n").unwrap();
        assert!(s.after_poll(None, focus).unwrap().ends_with("step 3"));
        assert_eq!(
            s.after_poll(Some("pane".into()), focus).as_deref(),
            Some("pane")
        );
        std::fs::write(&log, "step 1\nstep 2\nstep 3\nstep 4\n").unwrap();
        assert_eq!(s.after_poll(None, focus), None, "a capture beats the log");
        s.reset();
        assert!(s.after_poll(None, focus).unwrap().ends_with("step 4"));
    }

    #[test]
    fn a_long_log_shows_its_end_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("output.log");
        let body: String = (0..20_000).map(|i| format!("line {i}\n")).collect();
        std::fs::write(&log, &body).unwrap();
        let text = LogScreen::default()
            .after_poll(None, Some(("w1", 1, log.as_path())))
            .unwrap();
        assert!(text.starts_with("[crewmux: the end of output.log ("));
        assert!(text.ends_with("line 19999"));
        assert!(text.len() <= LOG_SCREEN_BYTES as usize + 200);
        assert!(
            text.lines().nth(1).unwrap().starts_with("line "),
            "whole lines"
        );
    }

    #[test]
    fn no_log_or_no_focus_is_no_screen() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = LogScreen::default();
        assert_eq!(s.after_poll(None, None), None);
        let missing = dir.path().join("output.log");
        assert_eq!(s.after_poll(None, Some(("w1", 1, missing.as_path()))), None);
    }
}
