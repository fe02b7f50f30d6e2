//! An attempt's result and usage taken from what it printed, with bounded memory and size
//! whatever it printed (one 1 GB line, a progress bar redrawn a million times): the output
//! is read through [`crate::launch::tail`] (its last [`OUTPUT_WINDOW_BYTES`], a line's
//! last [`LINE_BYTES`], the last frame of a `\r`-redrawn line), and `result.md` holds at
//! most [`RESULT_MAX_BYTES`], saying in its first line what it leaves out.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::engine::Input;
use crate::launch::tail::{tail_of_file, Tail};
use crate::providers::output::{record_usage, result_text, OutputFormat};

/// How much of the end of `output.log` is read for the result, the usage and the reason
/// of a failure, bytes.
pub const OUTPUT_WINDOW_BYTES: usize = 4 << 20;
/// The longest line of `output.log` kept whole, bytes (a longer one keeps its end).
pub const LINE_BYTES: usize = 256 << 10;
/// How much of the end of a CLI's raw `cli-events.jsonl` is read, bytes; one event line
/// may be as long (a final answer is one JSON line).
pub const EVENTS_WINDOW_BYTES: usize = 8 << 20;
/// The largest `result.md` taken from the output, bytes.
pub const RESULT_MAX_BYTES: usize = 256 << 10;

/// The end of an attempt's `output.log`, ANSI and protocol lines removed (empty when it
/// cannot be read).
fn log_tail(log: &Path) -> Tail {
    let mut tail = tail_of_file(log, OUTPUT_WINDOW_BYTES, LINE_BYTES).unwrap_or_default();
    tail.text = super::observe::without_protocol_lines(&crate::launch::strip_ansi(&tail.text));
    tail
}

/// The end of an attempt's `output.log` as text without ANSI and protocol lines ("" when
/// unreadable), bounded as [`log_tail`].
pub(super) fn log_text(log: &Path) -> String {
    log_tail(log).text
}

/// The end of the raw stdout of an attempt whose CLI was rendered for its pane (its
/// `cli-events.jsonl`, `providers::pane_text`); `None` when there is none.
fn events_tail(dir: &Path) -> Option<Tail> {
    let path = dir.join(crate::providers::pane_text::EVENTS_FILE);
    tail_of_file(&path, EVENTS_WINDOW_BYTES, EVENTS_WINDOW_BYTES)
        .ok()
        .filter(|t| !t.text.is_empty())
}

/// [`events_tail`]'s text, "" when there is none.
pub(super) fn events_text(dir: &Path) -> String {
    events_tail(dir).map(|t| t.text).unwrap_or_default()
}

/// After an attempt ends: record the usage its CLI reported, and when `want_result`, write
/// `result.md` from the CLI's final answer or its output's last
/// [`super::RESULT_FROM_LOG_LINES`] lines without noise (`providers::output`), at most
/// [`RESULT_MAX_BYTES`]; nothing when there is no text. The output is the CLI's raw
/// `cli-events.jsonl` when it was rendered for its pane, else `output.log`. Says whether
/// the result came from `output.log` (what it held then: see [`Retake`]).
pub(super) fn collect_output(
    dir: &Path,
    spec: Option<&crate::providers::ProviderSpec>,
    want_result: bool,
) -> FromLog {
    let result = dir.join("result.md");
    let write = want_result && !result.exists();
    let from_log = take_output(dir, spec, write);
    match (write && from_log, result.exists()) {
        (false, _) => FromLog::No,
        (true, true) => FromLog::Result,
        (true, false) => FromLog::NoText,
    }
}

/// Whether [`collect_output`] took the result from `output.log`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FromLog {
    /// No: none was wanted, the agent wrote its own, or it came from the CLI's events.
    No,
    /// `result.md` was written from it.
    Result,
    /// It was to be, but `output.log` had no text.
    NoText,
}

/// [`collect_output`]'s work: usage, and `result.md` (replaced) when `write_result`.
/// Returns true when the output read was `output.log`.
fn take_output(
    dir: &Path,
    spec: Option<&crate::providers::ProviderSpec>,
    write_result: bool,
) -> bool {
    let events = events_tail(dir);
    let from_log = events.is_none();
    let tail = events.unwrap_or_else(|| log_tail(&dir.join("output.log")));
    let format = spec.map_or(OutputFormat::Text, |s| s.output);
    record_usage(format, &tail.text, dir);
    if !write_result {
        return from_log;
    }
    let result = dir.join("result.md");
    let noise = spec.map(|s| s.noise_regexes()).unwrap_or_default();
    let Some(body) = result_text(format, &noise, &tail.text) else {
        return from_log;
    };
    let body = capped(body, tail.cut_bytes > 0, tail.total_bytes);
    if let Err(e) = crate::store::write_atomic(&result, body.as_bytes()) {
        tracing::warn!("could not keep the output as {}: {e}", result.display());
    }
    from_log
}

/// Longest wait for an attempt's marker in `output.log` after its result was taken without
/// it; the result is then taken again with what is there.
pub const RETAKE_WITHIN: Duration = Duration::from_secs(30);

/// How much of the end of `output.log` is read to find the marker, bytes (the wrapper
/// prints it last).
const MARKER_TAIL_BYTES: usize = 4096;

/// A result taken from `output.log` before the attempt's marker was in it. The wrapper
/// writes `exit.json` and then prints the marker, and `output.log` is what tmux's
/// `pipe-pane` has passed on so far: an exit is settled from `exit.json` at once, when
/// the last lines the agent printed may still be on their way (a busy tmux server, or
/// one stopped). Once the marker is in `output.log` (or after [`RETAKE_WITHIN`]) the
/// result is taken again when anything besides the marker came after the first take.
#[derive(Debug, Clone)]
pub(super) struct Retake {
    pub worker: String,
    pub attempt: u32,
    /// The first take found no text (the engine has no result for the attempt yet).
    pub late: bool,
    pub dir: PathBuf,
    pub nonce: String,
    /// The worker's provider (its output format and noise patterns).
    pub provider: Option<String>,
    /// Length of `output.log` when the result was taken, bytes.
    pub taken_len: u64,
    pub until: Instant,
}

/// The attempt a [`Retake`] is for: its worker, attempt number, directory and nonce.
#[derive(Debug, Clone, Copy)]
pub(super) struct Of<'a> {
    pub worker: &'a str,
    pub attempt: u32,
    pub dir: &'a Path,
    pub nonce: &'a str,
}

impl Retake {
    /// A retake of the result just taken (`late`: no text found) from `output.log`.
    pub fn new(of: Of<'_>, late: bool, provider: Option<String>, now: Instant) -> Self {
        let Of {
            worker,
            attempt,
            dir,
            nonce,
        } = of;
        let taken_len = std::fs::metadata(dir.join("output.log")).map_or(0, |m| m.len());
        Retake {
            worker: worker.to_string(),
            attempt,
            late,
            dir: dir.to_path_buf(),
            nonce: nonce.to_string(),
            provider,
            taken_len,
            until: now + RETAKE_WITHIN,
        }
    }

    /// The marker is in `output.log`, or the wait is over (`force`: now, whatever is
    /// there; the driver is leaving).
    pub fn due(&self, now: Instant, force: bool) -> bool {
        force || now >= self.until || marker_in(&self.dir.join("output.log"), &self.nonce)
    }

    /// Take the result again when more than the marker came after the first take.
    /// Returns the input that gives the engine the result when the first take had none
    /// and this one has.
    pub fn take_again(&self, registry: &crate::providers::Registry) -> Option<Input> {
        let log = self.dir.join("output.log");
        if !grew_besides_marker(&log, self.taken_len, &self.nonce) {
            return None;
        }
        let spec = self.provider.as_deref().and_then(|p| registry.get(p));
        take_output(&self.dir, spec, true);
        tracing::debug!(
            "{}: result taken again with the end of output.log",
            self.dir.display()
        );
        let result = self.dir.join("result.md");
        (self.late && result.exists()).then(|| Input::ResultTaken {
            worker: self.worker.clone(),
            attempt: self.attempt,
            result,
        })
    }
}

impl super::Driver {
    /// Take again the results whose [`Retake`] is due (`force`: all of them, now); returns
    /// the inputs of results the engine did not have.
    pub(super) fn retake_results(&mut self, force: bool) -> Vec<Input> {
        if self.retakes.is_empty() {
            return vec![];
        }
        let now = Instant::now();
        let registry = &self.registry;
        let mut inputs = vec![];
        self.retakes.retain(|r| {
            if !r.due(now, force) {
                return true;
            }
            inputs.extend(r.take_again(registry));
            false
        });
        inputs
    }
}

/// True when the last [`MARKER_TAIL_BYTES`] of `log` hold the marker of `nonce` (read
/// from there: a log may be gigabytes).
fn marker_in(log: &Path, nonce: &str) -> bool {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut f) = std::fs::File::open(log) else {
        return false;
    };
    let len = f.metadata().map_or(0, |m| m.len());
    let from = len.saturating_sub(MARKER_TAIL_BYTES as u64);
    let mut end = Vec::with_capacity(MARKER_TAIL_BYTES);
    if let Err(e) = f
        .seek(SeekFrom::Start(from))
        .and_then(|_| f.read_to_end(&mut end))
    {
        tracing::debug!("{}: {e}", log.display());
        return false;
    }
    crate::launch::find_marker(&String::from_utf8_lossy(&end), nonce).is_some()
}

/// True when `log` has, past its first `from` bytes, a line with text other than the
/// marker of `nonce` (more than a result's worth added counts without reading it).
fn grew_besides_marker(log: &Path, from: u64, nonce: &str) -> bool {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut f) = std::fs::File::open(log) else {
        return false;
    };
    let len = f.metadata().map_or(0, |m| m.len());
    if len <= from {
        return false;
    }
    if len - from > RESULT_MAX_BYTES as u64 {
        return true;
    }
    let mut added = Vec::new();
    if let Err(e) = f
        .seek(SeekFrom::Start(from))
        .and_then(|_| f.read_to_end(&mut added))
    {
        tracing::debug!("{}: {e}", log.display());
        return true;
    }
    let text = crate::launch::strip_ansi(&String::from_utf8_lossy(&added));
    text.lines()
        .map(str::trim)
        .any(|l| !l.is_empty() && crate::launch::find_marker(l, nonce).is_none())
}

/// `body` cut to its last [`RESULT_MAX_BYTES`] (at a line start when one is near), with a
/// first line saying so when it was cut here or `log_cut` (the output it came from was).
fn capped(body: String, log_cut: bool, total: u64) -> String {
    if body.len() <= RESULT_MAX_BYTES && !log_cut {
        return body;
    }
    let mut start = body.len().saturating_sub(RESULT_MAX_BYTES);
    while !body.is_char_boundary(start) {
        start += 1;
    }
    if start > 0 {
        if let Some(nl) = body[start..].find('\n').filter(|&n| n < 4096) {
            start += nl + 1;
        }
    }
    format!(
        "[crewmux: the end of a longer output ({total} bytes); the earlier output is left out here and kept whole in output.log]\n{}",
        &body[start..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_is_capped_in_bytes_and_says_so() {
        let small = "answer\n".to_string();
        assert_eq!(capped(small.clone(), false, 7), small);
        let big = format!("{}\nthe end\n", "y".repeat(RESULT_MAX_BYTES * 3));
        let out = capped(big, false, 123);
        assert!(out.len() <= RESULT_MAX_BYTES + 200, "{}", out.len());
        assert!(out.starts_with("[crewmux: the end of a longer output (123 bytes)"));
        assert!(out.ends_with("the end\n"));
        let from_cut_log = capped("tail\n".into(), true, 1 << 30);
        assert!(from_cut_log.starts_with("[crewmux: the end of a longer output (1073741824 bytes)"));
        assert!(from_cut_log.ends_with("\ntail\n"));
    }

    #[test]
    fn a_redrawn_line_gives_its_last_frame_only() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = vec![b'x'; 3 * LINE_BYTES];
        log.extend_from_slice(b"\rprogress 100%\ndone\n");
        std::fs::write(dir.path().join("output.log"), &log).unwrap();
        collect_output(dir.path(), None, true);
        let result = std::fs::read_to_string(dir.path().join("result.md")).unwrap();
        assert_eq!(
            result, "progress 100%\ndone\n",
            "an overwritten frame is no result"
        );
    }

    #[test]
    fn a_one_line_huge_log_gives_a_bounded_result_that_says_the_cut() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = b"start\n".to_vec();
        log.extend(std::iter::repeat_n(b'z', 40 * LINE_BYTES));
        log.extend_from_slice(b"\nthe end\n");
        std::fs::write(dir.path().join("output.log"), &log).unwrap();
        collect_output(dir.path(), None, true);
        let result = std::fs::read_to_string(dir.path().join("result.md")).unwrap();
        assert!(result.len() <= RESULT_MAX_BYTES + 300, "{}", result.len());
        let first = result.lines().next().unwrap();
        assert_eq!(
            first,
            format!(
                "[crewmux: the end of a longer output ({} bytes); the earlier output is left out here and kept whole in output.log]",
                log.len()
            )
        );
        assert!(result.ends_with("zzz\nthe end\n"), "the end is kept");
        assert!(!result.contains("start"));
    }

    #[test]
    fn a_result_taken_before_the_marker_is_taken_again_with_the_lines_that_came_after() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let log = d.join("output.log");
        std::fs::write(&log, "working\nstep 1\n").unwrap();
        // Settled from exit.json while the last lines and the marker were on their way.
        assert_eq!(collect_output(d, None, true), FromLog::Result);
        let taken = std::fs::read_to_string(d.join("result.md")).unwrap();
        assert_eq!(taken, "working\nstep 1\n");
        let now = Instant::now();
        let r = Retake::new(of(d, "n1"), false, None, now);
        assert!(!r.due(now, false), "no marker yet");
        let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
        std::io::Write::write_all(&mut f, b"the answer is 42\n\n__CREWMUX_EXIT_n1__:0\n").unwrap();
        assert!(r.due(now, false), "the marker is there");
        let registry = crate::providers::Registry::builtin();
        assert_eq!(r.take_again(&registry), None, "the engine has a result");
        let again = std::fs::read_to_string(d.join("result.md")).unwrap();
        assert_eq!(again, "working\nstep 1\nthe answer is 42\n");
        // Past the wait, it is due without the marker too.
        let late = Retake::new(of(d, "other"), false, None, now);
        assert!(late.due(now + RETAKE_WITHIN, false) && !late.due(now, false));
        assert!(late.due(now, true), "forced when the driver leaves");
    }

    #[test]
    fn a_marker_alone_after_the_take_leaves_the_result_and_an_agents_own_result_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let log = d.join("output.log");
        std::fs::write(&log, "all of it\n").unwrap();
        assert_eq!(collect_output(d, None, true), FromLog::Result);
        let r = Retake::new(of(d, "n1"), false, None, Instant::now());
        let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
        std::io::Write::write_all(&mut f, b"\r\n\x1b[0m__CREWMUX_EXIT_n1__:0\r\n").unwrap();
        let registry = crate::providers::Registry::builtin();
        assert_eq!(r.take_again(&registry), None, "nothing but the marker came");
        assert_eq!(
            std::fs::read_to_string(d.join("result.md")).unwrap(),
            "all of it\n"
        );
        // An agent that wrote result.md itself: nothing is taken from the output.
        let own = tempfile::tempdir().unwrap();
        std::fs::write(own.path().join("output.log"), "chatter\n").unwrap();
        std::fs::write(own.path().join("result.md"), "my answer\n").unwrap();
        assert_eq!(collect_output(own.path(), None, true), FromLog::No);
        // Nor for a failed attempt.
        let failed = tempfile::tempdir().unwrap();
        std::fs::write(failed.path().join("output.log"), "oops\n").unwrap();
        assert_eq!(collect_output(failed.path(), None, false), FromLog::No);
        assert!(!failed.path().join("result.md").exists());
    }

    #[test]
    fn a_result_whose_output_all_came_after_the_exit_goes_to_the_engine() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let log = d.join("output.log");
        std::fs::write(&log, "").unwrap();
        assert_eq!(collect_output(d, None, true), FromLog::NoText);
        assert!(!d.join("result.md").exists());
        let r = Retake::new(of(d, "n1"), true, None, Instant::now());
        std::fs::write(&log, "late answer\n__CREWMUX_EXIT_n1__:0\n").unwrap();
        let registry = crate::providers::Registry::builtin();
        assert_eq!(
            r.take_again(&registry),
            Some(Input::ResultTaken {
                worker: "w".into(),
                attempt: 1,
                result: d.join("result.md"),
            })
        );
        assert_eq!(
            std::fs::read_to_string(d.join("result.md")).unwrap(),
            "late answer\n"
        );
    }

    fn of<'a>(dir: &'a Path, nonce: &'a str) -> Of<'a> {
        Of {
            worker: "w",
            attempt: 1,
            dir,
            nonce,
        }
    }

    #[test]
    fn a_short_output_is_its_result_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("output.log"),
            "thinking\nthe answer is 42\n",
        )
        .unwrap();
        collect_output(dir.path(), None, true);
        let result = std::fs::read_to_string(dir.path().join("result.md")).unwrap();
        assert_eq!(result, "thinking\nthe answer is 42\n");
    }
}
