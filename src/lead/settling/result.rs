//! An attempt's result and usage taken from what it printed, with bounded memory and size
//! whatever it printed (one 1 GB line, a progress bar redrawn a million times): the output
//! is read through [`crate::launch::tail`] (its last [`OUTPUT_WINDOW_BYTES`], a line's
//! last [`LINE_BYTES`], the last frame of a `\r`-redrawn line), and `result.md` holds at
//! most [`RESULT_MAX_BYTES`], saying in its first line what it leaves out.

use crate::launch::tail::{tail_of_file, Tail};
use crate::providers::output::{record_usage, result_text, OutputFormat};
use std::path::Path;

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
/// Lines of an attempt's output kept as its result when it wrote no `result.md`.
pub const RESULT_FROM_LOG_LINES: usize = crate::providers::output::RESULT_TAIL_LINES;

/// The end of an attempt's `output.log`, ANSI and protocol lines removed (empty when it
/// cannot be read).
fn log_tail(log: &Path) -> Tail {
    let mut tail = tail_of_file(log, OUTPUT_WINDOW_BYTES, LINE_BYTES).unwrap_or_default();
    tail.text =
        crate::lead::observe::without_protocol_lines(&crate::launch::strip_ansi(&tail.text));
    tail
}

/// The end of an attempt's `output.log` as text without ANSI and protocol lines ("" when
/// unreadable), bounded as [`log_tail`].
pub(in crate::lead) fn log_text(log: &Path) -> String {
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
pub(in crate::lead) fn events_text(dir: &Path) -> String {
    events_tail(dir).map(|t| t.text).unwrap_or_default()
}

/// The agent CLI's conversation id an ended attempt's output names
/// ([`crate::providers::output::session_id`]): looked for in the first 64 KiB of its raw
/// events (`cli-events.jsonl`, else `output.log`), where the CLIs name it first, then in
/// the end (Claude Code repeats it on its `result` event). `None` for text output.
pub(in crate::lead) fn session_of(dir: &Path, format: OutputFormat) -> Option<String> {
    if format == OutputFormat::Text {
        return None;
    }
    let events = dir.join(crate::providers::pane_text::EVENTS_FILE);
    let file = if events.exists() {
        events
    } else {
        dir.join("output.log")
    };
    let head = crate::launch::tail::head_of_file(&file, 64 * 1024).unwrap_or_default();
    crate::providers::output::session_id(format, &head).or_else(|| {
        let tail = events_tail(dir).unwrap_or_else(|| log_tail(&dir.join("output.log")));
        crate::providers::output::session_id(format, &tail.text)
    })
}

/// After an attempt ends: record the usage its CLI reported, and when `want_result`, write
/// `result.md` from the CLI's final answer or its output's last
/// [`crate::lead::RESULT_FROM_LOG_LINES`] lines without noise (`providers::output`), at most
/// [`RESULT_MAX_BYTES`]; nothing when there is no text. The output is the CLI's raw
/// `cli-events.jsonl` when it was rendered for its pane, else `output.log`. Says whether
/// the result came from `output.log` (what it held then: see [`Retake`]).
pub(in crate::lead) fn collect_output(
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
pub(in crate::lead) enum FromLog {
    /// No: none was wanted, the agent wrote its own, or it came from the CLI's events.
    No,
    /// `result.md` was written from it.
    Result,
    /// It was to be, but `output.log` had no text.
    NoText,
}

/// [`collect_output`]'s work: usage, and `result.md` (replaced) when `write_result`.
/// Returns true when the output read was `output.log`.
pub(in crate::lead) fn take_output(
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
