//! Watching attempts: new bytes of each `output.log` (marker, questions, activity) and the
//! exit evidence in docs/design.md order of trust: `exit.json`, the marker, `pane_dead_status`.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use crate::domain::clarification::ASK_PREFIX;
use crate::launch::{read_exit_file, strip_ansi, MarkerScanner};

/// Lines of each worker's output kept in memory (the rest stays on disk).
pub const OUTPUT_RING_LINES: usize = 400;
/// On reattach, how far back in an existing log to scan for a marker, bytes.
pub const REATTACH_TAIL_BYTES: u64 = 64 * 1024;

/// One watched attempt.
pub struct Watch {
    pub worker: String,
    pub attempt: u32,
    pub nonce: String,
    pub dir: PathBuf,
    pub log: PathBuf,
    offset: u64,
    scanner: MarkerScanner,
    /// Last lines, ANSI kept, for the output panel of the process backend.
    pub ring: VecDeque<String>,
    /// When the pane was first seen dead without other evidence.
    pub dead_since: Option<std::time::Instant>,
    /// Catching up on a log written before this process started: questions there are old,
    /// unless one is the last thing the attempt printed (still unanswered).
    catching_up: bool,
    /// The last question met while catching up, while nothing followed it.
    unanswered: Option<String>,
    /// The last lines of the screen (or log) seen, for waiting detection.
    pub screen_tail: String,
    /// Waiting-for-input detector of the worker's provider (made on first use).
    pub detector: Option<crate::clarification::waiting::WaitingDetector>,
    /// The screen a question was last raised for, so one prompt is asked about once.
    pub asked_screen: Option<String>,
}

/// What one read of a log found.
#[derive(Debug, Default)]
pub struct LogNews {
    pub grew: bool,
    /// This read is (the end of) the catch-up on a log written before this process
    /// started watching it.
    pub catch_up: bool,
    pub question: Option<String>,
    pub lines: Vec<String>,
}

impl Watch {
    pub fn new(worker: &str, attempt: u32, nonce: &str, dir: &Path, reattach: bool) -> Self {
        let log = dir.join("output.log");
        let offset = if reattach {
            std::fs::metadata(&log)
                .map(|m| m.len().saturating_sub(REATTACH_TAIL_BYTES))
                .unwrap_or(0)
        } else {
            0
        };
        Watch {
            worker: worker.to_string(),
            attempt,
            nonce: nonce.to_string(),
            dir: dir.to_path_buf(),
            log,
            offset,
            scanner: MarkerScanner::default(),
            ring: VecDeque::new(),
            dead_since: None,
            catching_up: reattach,
            unanswered: None,
            screen_tail: String::new(),
            detector: None,
            asked_screen: None,
        }
    }

    /// Read what was appended to `output.log` since the last call (at most 1 MiB a call).
    pub fn read_log(&mut self) -> LogNews {
        let mut news = LogNews {
            catch_up: self.catching_up,
            ..LogNews::default()
        };
        let Ok(mut file) = File::open(&self.log) else {
            return news;
        };
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        if len < self.offset {
            self.offset = 0; // truncated: start again
        }
        if len == self.offset {
            self.end_catch_up(&mut news);
            return news;
        }
        let want = (len - self.offset).min(1 << 20);
        let mut buf = vec![0u8; want as usize];
        if file.seek(SeekFrom::Start(self.offset)).is_err() || file.read_exact(&mut buf).is_err() {
            return news;
        }
        self.offset += want;
        news.grew = true;
        let lines = self.scanner.feed(&buf, &self.nonce);
        for line in &lines {
            let clean = if line.contains(ASK_PREFIX) {
                strip_ansi(line)
            } else {
                String::new()
            };
            if let Some(q) = clean.trim().strip_prefix(ASK_PREFIX) {
                if self.catching_up {
                    self.unanswered = Some(q.trim().to_string());
                } else {
                    news.question = Some(q.trim().to_string());
                }
            } else if self.catching_up && !line.trim().is_empty() {
                self.unanswered = None;
            }
            self.ring.push_back(line.clone());
            if self.ring.len() > OUTPUT_RING_LINES {
                self.ring.pop_front();
            }
        }
        if self.offset >= len {
            self.end_catch_up(&mut news);
        }
        news.lines = lines;
        news
    }

    /// The old log is read: a question it ended with is still open (the driver that saw
    /// it may have stopped before recording it), so it is raised again; the engine ignores
    /// a question its worker already waits on.
    fn end_catch_up(&mut self, news: &mut LogNews) {
        if self.catching_up {
            self.catching_up = false;
            if let Some(q) = self.unanswered.take() {
                news.question = Some(q);
            }
        }
    }

    /// The exit code from `exit.json`, then from the marker; `None` if neither has it.
    pub fn exit_evidence(&self) -> Option<(i32, crate::domain::ExitSource)> {
        use crate::domain::ExitSource;
        match read_exit_file(&self.dir.join("exit.json"), &self.nonce) {
            Ok(Some(code)) => return Some((code, ExitSource::ExitFile)),
            Ok(None) => {}
            Err(e) => tracing::warn!("{e}"),
        }
        self.scanner.found().map(|c| (c, ExitSource::Marker))
    }

    /// The last `n` lines of the log plus the unfinished line (a prompt waiting on it).
    pub fn log_tail(&self, n: usize) -> String {
        let skip = self.ring.len().saturating_sub(n);
        let mut lines: Vec<String> = self.ring.iter().skip(skip).cloned().collect();
        let partial = self.scanner.partial();
        if !partial.is_empty() {
            lines.push(partial);
        }
        lines.join("\n")
    }

    /// The marker code alone (to log disagreement with exit.json).
    pub fn marker_code(&self) -> Option<i32> {
        self.scanner.found()
    }
}
