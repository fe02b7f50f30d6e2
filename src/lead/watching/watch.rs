//! Watching attempts: new bytes of each `output.log` (marker, questions, activity) and the
//! exit evidence in docs/design.md order of trust: `exit.json`, the marker, `pane_dead_status`.
//!
//! A watch is looked at every turn of the loop, so a turn touches no path it need not: the
//! log stays open once it exists (one `fstat` a turn tells whether it grew; opening it again
//! each turn cost a path walk and an inotify event per worker), and `exit.json` is looked for
//! only when the exit-file watcher saw it appear, when the pane is no longer alive, or at
//! least every [`EXIT_LOOK_EVERY`] in case the watcher missed it.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::domain::clarification::ASK_PREFIX;
use crate::launch::{read_exit_file, strip_ansi, MarkerScanner};

/// Lines of each worker's output kept in memory (the rest stays on disk).
pub const OUTPUT_RING_LINES: usize = 400;
/// On reattach, how far back in an existing log to scan for a marker, bytes.
pub const REATTACH_TAIL_BYTES: u64 = 64 * 1024;
/// Logs kept open at once in this process, at most, well under the usual limit of 1,024
/// open files: past it, a watch opens its log at each read as before.
pub const MAX_HELD_LOGS: usize = 512;

static HELD_LOGS: AtomicUsize = AtomicUsize::new(0);

/// An `output.log` kept open, counted in [`HELD_LOGS`] while it lives.
struct HeldLog(File);

impl HeldLog {
    /// `file` kept open, when fewer than [`MAX_HELD_LOGS`] are; otherwise it is handed back.
    fn keep(file: File) -> Result<HeldLog, File> {
        if HELD_LOGS.fetch_add(1, Ordering::Relaxed) < MAX_HELD_LOGS {
            Ok(HeldLog(file))
        } else {
            HELD_LOGS.fetch_sub(1, Ordering::Relaxed);
            Err(file)
        }
    }
}

impl Drop for HeldLog {
    fn drop(&mut self) {
        HELD_LOGS.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Longest time between two looks for an attempt's `exit.json` while its pane is alive
/// (the exit-file watcher tells sooner; this is in case it missed the file).
pub const EXIT_LOOK_EVERY: Duration = Duration::from_secs(2);

/// One watched attempt.
pub struct Watch {
    pub worker: String,
    pub attempt: u32,
    pub nonce: String,
    pub dir: PathBuf,
    pub log: PathBuf,
    /// `output.log`, open once it exists (unless [`MAX_HELD_LOGS`] are).
    file: Option<HeldLog>,
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
    /// The exit-file watcher saw this attempt's `exit.json` appear since the last look.
    pub exit_seen: bool,
    /// When `exit.json` was last looked for (`None`: never).
    exit_looked: Option<Instant>,
    /// `exit.json` was looked for after the marker was found: the wrapper writes the file
    /// before it prints the marker, so a marker read once sends one look for the file.
    looked_after_marker: bool,
    /// The attempt's MCP exchange (`<attempt>/mcp/`), read each turn.
    pub mcp: crate::mcp::watch::McpWatch,
    /// The attempt's hook events (`<attempt>/mcp/hooks.jsonl`), read each turn.
    pub hooks: crate::mcp::hooks::HookWatch,
    /// The echo still to come of text pasted into the pane (left out of its activity).
    pub echo: Option<super::echo::Echo>,
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
            file: None,
            offset,
            scanner: MarkerScanner::default(),
            ring: VecDeque::new(),
            dead_since: None,
            catching_up: reattach,
            unanswered: None,
            screen_tail: String::new(),
            detector: None,
            asked_screen: None,
            exit_seen: false,
            exit_looked: None,
            looked_after_marker: false,
            mcp: crate::mcp::watch::McpWatch::new(dir),
            hooks: crate::mcp::hooks::HookWatch::new(&crate::mcp::exchange::dir(dir)),
            echo: None,
        }
    }

    /// Read what was appended to `output.log` since the last call (at most 1 MiB a call).
    pub fn read_log(&mut self) -> LogNews {
        let mut news = LogNews {
            catch_up: self.catching_up,
            ..LogNews::default()
        };
        let Some((len, mut unheld)) = self.open_log() else {
            return news;
        };
        if len < self.offset {
            self.offset = 0; // truncated: start again
        }
        if len == self.offset {
            self.end_catch_up(&mut news);
            return news;
        }
        let want = (len - self.offset).min(1 << 20);
        let mut buf = vec![0u8; want as usize];
        let file = match (unheld.as_mut(), self.file.as_mut()) {
            (Some(f), _) | (None, Some(HeldLog(f))) => f,
            (None, None) => return news,
        };
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

    /// The log's length now, and the log itself when it is not kept in `file`: the handle
    /// kept from an earlier read while the file is still linked, else the path opened
    /// (again: a log replaced by another file, as one brought back from a host may be, is
    /// read from the new one). `None` while there is no log.
    fn open_log(&mut self) -> Option<(u64, Option<File>)> {
        let linked = self
            .file
            .as_ref()
            .and_then(|f| f.0.metadata().ok())
            .filter(|m| m.nlink() > 0)
            .map(|m| m.len());
        if let Some(len) = linked {
            return Some((len, None));
        }
        self.file = None;
        let file = File::open(&self.log).ok()?;
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        match HeldLog::keep(file) {
            Ok(held) => {
                self.file = Some(held);
                Some((len, None))
            }
            Err(file) => Some((len, Some(file))),
        }
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
    pub fn exit_evidence(&mut self) -> Option<(i32, crate::domain::ExitSource)> {
        self.exit_evidence_looking(true, Instant::now())
    }

    /// As [`exit_evidence`](Self::exit_evidence), but `exit.json` is read only when `look`,
    /// when the watcher saw it appear, when the marker was just found (the file comes
    /// first, so a marker settles from the file whenever there is one: a remote attempt's
    /// files come back while the loop reads), or when the last look is
    /// [`EXIT_LOOK_EVERY`] old (the marker is in memory: always).
    pub fn exit_evidence_looking(
        &mut self,
        look: bool,
        now: Instant,
    ) -> Option<(i32, crate::domain::ExitSource)> {
        use crate::domain::ExitSource;
        let due = self
            .exit_looked
            .is_none_or(|at| now.saturating_duration_since(at) >= EXIT_LOOK_EVERY);
        let marker_new = self.scanner.found().is_some() && !self.looked_after_marker;
        if look || self.exit_seen || due || marker_new {
            self.exit_seen = false;
            self.exit_looked = Some(now);
            self.looked_after_marker |= self.scanner.found().is_some();
            match read_exit_file(&self.dir.join("exit.json"), &self.nonce) {
                Ok(Some(code)) => return Some((code, ExitSource::ExitFile)),
                Ok(None) => {}
                Err(e) => tracing::warn!("{e}"),
            }
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

    /// The log's unfinished last line (a prompt waiting on it), ANSI kept.
    pub fn partial_line(&self) -> String {
        self.scanner.partial()
    }

    /// The echo of a paste taken out of `news`: its lines are dropped, and a read that
    /// was nothing but the echo did not grow (see `echo`).
    pub fn without_echo(&mut self, news: &mut LogNews) {
        if !news.grew {
            return;
        }
        let partial = self.partial_line();
        let Some(echo) = self.echo.as_mut() else {
            return;
        };
        let sorted = echo.sort(std::mem::take(&mut news.lines), &partial);
        news.lines = sorted.kept;
        news.grew = !sorted.only_echo;
        if sorted.over {
            self.echo = None;
        }
    }

    /// The marker code alone (to log disagreement with exit.json).
    pub fn marker_code(&self) -> Option<i32> {
        self.scanner.found()
    }
}
