//! Verdicts of the council's workers: a critic worker's verdict parsed from its output, and
//! a check command's verdict from its exit code and log (docs/design.md "The run").
#![allow(
    clippy::expect_used,
    reason = "regex literals compiled once; a bad one fails every test of this module"
)]

use std::sync::LazyLock;

use regex::Regex;
use serde::Deserialize;

use crate::domain::{CriticVerdict, Verdict};
use crate::text::clean_text;

/// How many non-empty log lines a failed check quotes as findings.
pub const LOG_TAIL_LINES: usize = 10;

/// Confidence given to a critic worker's verdict that states none.
pub const DEFAULT_CRITIC_CONFIDENCE: f64 = 0.5;

/// Lines the launch wrapper adds to a log (`__CREWMUX_EXIT_<nonce>__:<code>`, docs/design.md "Exit
/// evidence"): they are not the check's own output.
static EXIT_MARKER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^__CREWMUX_EXIT_[A-Za-z0-9]+__:\d+$").expect("exit-marker regex compiles")
});

/// A fenced block: an opening fence with an optional language, its body, a closing fence.
static FENCE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?ms)^[ \t]*```[ \t]*([A-Za-z0-9_-]*)[ \t]*\n(.*?)^[ \t]*```")
        .expect("fence regex compiles")
});

#[derive(Deserialize)]
struct RawVerdict {
    verdict: String,
    #[serde(default)]
    confidence: Option<f64>,
    #[serde(default)]
    findings: Vec<serde_json::Value>,
}

/// Parse a critic worker's verdict from its output.
///
/// The verdict is the **last** fenced block (```` ```json ```` or unlabelled) whose body is a
/// JSON object `{"verdict": "pass|warn|fail", "confidence": 0..1, "findings": [..]}`;
/// `verdict` is case-insensitive, `confidence` defaults to
/// [`DEFAULT_CRITIC_CONFIDENCE`] and is clamped to `0.0..=1.0`, findings that are not
/// strings are kept as their JSON text. ANSI escapes and `\r` are tolerated. When the
/// plain text has no such block, the string fields of JSON-lines output are searched the
/// same way. The prompt's own example (`"pass|warn|fail"`) is not a verdict. With no
/// parsable block the verdict is `warn` with a finding that says so.
pub fn parse_critic_output(critic: &str, output: &str) -> CriticVerdict {
    let text = clean_text(output);
    let parsed = last_verdict_block(&text).or_else(|| {
        // JSON-lines output (`codex exec --json`, `claude -p --output-format stream-json`)
        // carries the agent's message as an escaped JSON string: look inside those.
        text.lines()
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(line.trim()).ok())
            .flat_map(|value| string_leaves(&value))
            .filter_map(|s| last_verdict_block(&s))
            .next_back()
    });
    match parsed {
        Some((verdict, raw)) => CriticVerdict {
            critic: critic.to_string(),
            verdict,
            confidence: raw
                .confidence
                .filter(|c| c.is_finite())
                .unwrap_or(DEFAULT_CRITIC_CONFIDENCE)
                .clamp(0.0, 1.0),
            findings: raw
                .findings
                .into_iter()
                .map(|f| match f {
                    serde_json::Value::String(s) => s,
                    other => other.to_string(),
                })
                .filter(|f| !f.trim().is_empty())
                .collect(),
        },
        None => CriticVerdict {
            critic: critic.to_string(),
            verdict: Verdict::Warn,
            confidence: DEFAULT_CRITIC_CONFIDENCE,
            findings: vec![format!(
                "{critic} gave no parsable verdict (expected a ```json block with \"verdict\": pass, warn or fail)"
            )],
        },
    }
}

/// The last fenced `json` (or unlabelled) block of `text` that is a valid verdict.
fn last_verdict_block(text: &str) -> Option<(Verdict, RawVerdict)> {
    FENCE
        .captures_iter(text)
        .filter(|cap| matches!(cap[1].to_ascii_lowercase().as_str(), "" | "json"))
        .filter_map(|cap| serde_json::from_str::<RawVerdict>(cap[2].trim()).ok())
        .filter_map(|raw| {
            let verdict = match raw.verdict.trim().to_ascii_lowercase().as_str() {
                "pass" => Verdict::Pass,
                "warn" => Verdict::Warn,
                "fail" => Verdict::Fail,
                _ => return None,
            };
            Some((verdict, raw))
        })
        .last()
}

/// Every string inside a JSON value that contains a fence, in document order.
fn string_leaves(value: &serde_json::Value) -> Vec<String> {
    match value {
        serde_json::Value::String(s) if s.contains("```") => vec![s.clone()],
        serde_json::Value::Array(items) => items.iter().flat_map(string_leaves).collect(),
        serde_json::Value::Object(map) => map.values().flat_map(string_leaves).collect(),
        _ => Vec::new(),
    }
}

/// A check command's verdict: exit 0 → `pass`; anything else (or no exit code) → `fail`
/// with `exited <code>` and the last [`LOG_TAIL_LINES`] non-empty lines of its log (ANSI
/// stripped, exit-marker lines dropped) as findings. Confidence is 1.0: an exit code is a
/// fact.
pub fn check_verdict(check_id: &str, exit_code: Option<i32>, log: &str) -> CriticVerdict {
    let (verdict, findings) = match exit_code {
        Some(0) => (Verdict::Pass, vec!["exited 0".to_string()]),
        other => {
            let head = match other {
                Some(code) => format!("exited {code}"),
                None => "ended with no exit code".to_string(),
            };
            let mut findings = vec![head];
            findings.extend(failure_lines(log, LOG_TAIL_LINES));
            (Verdict::Fail, findings)
        }
    };
    CriticVerdict {
        critic: check_id.to_string(),
        verdict,
        confidence: 1.0,
        findings,
    }
}

/// Longest finding line, characters; longer lines (an 8 KB assertion dump) are cut with `…`.
pub const FINDING_MAX_CHARS: usize = 240;

static FAILURE_LINE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(
        r"(?i)panicked at|^error(\[|:)|\bfailed\b|assertion|^\s*(FAIL|FAILED)\b|^\s*---- |\bexception\b|traceback|^\s*(E|F)\s+\w",
    )
    .expect("failure-line regex compiles")
});

/// What a person reads first in a failed check's log: up to `n` lines, the ones that say
/// what failed (`panicked at`, `error:`, `FAILED`, `assertion`, …) first, in log order,
/// then the log's last lines to fill up; each cut at [`FINDING_MAX_CHARS`]. A backtrace
/// therefore never crowds out the failure it belongs to.
pub fn failure_lines(log: &str, n: usize) -> Vec<String> {
    let text = clean_text(log);
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty() && !EXIT_MARKER.is_match(l.trim()))
        .collect();
    let key: Vec<usize> = (0..lines.len())
        .filter(|&i| FAILURE_LINE.is_match(lines[i]))
        .take(n / 2)
        .collect();
    let mut picked: Vec<usize> = key.clone();
    for i in (0..lines.len()).rev() {
        if picked.len() >= n {
            break;
        }
        if !picked.contains(&i) {
            picked.push(i);
        }
    }
    picked.sort_unstable();
    picked
        .into_iter()
        .map(|i| {
            let l = lines[i];
            if l.chars().count() > FINDING_MAX_CHARS {
                let cut: String = l.chars().take(FINDING_MAX_CHARS).collect();
                format!("{cut}…")
            } else {
                l.to_string()
            }
        })
        .collect()
}

/// The last `n` non-empty lines of a log, ANSI stripped and trimmed at the end, without
/// the wrapper's exit-marker lines.
pub fn log_tail(log: &str, n: usize) -> Vec<String> {
    let text = clean_text(log);
    let mut tail: Vec<String> = text
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty() && !EXIT_MARKER.is_match(l.trim()))
        .rev()
        .take(n)
        .map(str::to_string)
        .collect();
    tail.reverse();
    tail
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_check_names_the_failure_before_its_backtrace() {
        let mut log = String::from("running 1 test\nthread 'utf8parse_test' panicked at tests/utf-8-demo.rs:30:5:\nassertion `left != right` failed\n");
        log.push_str(&format!("  left: \"{}\"\n", "x".repeat(8000)));
        for i in 0..30 {
            log.push_str(&format!(
                "  {i}: core::panicking::frame_{i}\n             at /rustc/lib.rs:{i}\n"
            ));
        }
        log.push_str("test result: FAILED. 0 passed; 1 failed\n__CREWMUX_EXIT_ab__:101\n");
        let v = check_verdict("check-test", Some(101), &log);
        assert_eq!(v.verdict, Verdict::Fail);
        assert_eq!(v.findings[0], "exited 101");
        assert!(
            v.findings
                .iter()
                .any(|f| f.contains("panicked at tests/utf-8-demo.rs:30:5")),
            "{:?}",
            v.findings
        );
        assert!(v
            .findings
            .iter()
            .any(|f| f.contains("assertion `left != right` failed")));
        assert!(v
            .findings
            .iter()
            .any(|f| f.starts_with("test result: FAILED")));
        assert!(v
            .findings
            .iter()
            .all(|f| f.chars().count() <= FINDING_MAX_CHARS + 1));
        assert!(v.findings.len() <= LOG_TAIL_LINES + 1);
    }

    #[test]
    fn takes_the_last_valid_json_block() {
        let out = "Thinking...\n```json\n{\"verdict\": \"fail\", \"confidence\": 0.4, \"findings\": [\"old\"]}\n```\n\
            Let me reconsider.\n```json\n{\"verdict\": \"PASS\", \"confidence\": 0.8, \"findings\": [\"tests cover the parser\", 3]}\n```\n\
            ```json\n{not json}\n```\n";
        let v = parse_critic_output("reviewer", out);
        assert_eq!(v.critic, "reviewer");
        assert_eq!(v.verdict, Verdict::Pass);
        assert_eq!(v.confidence, 0.8);
        assert_eq!(v.findings, vec!["tests cover the parser", "3"]);
    }

    #[test]
    fn tolerates_ansi_and_carriage_returns() {
        let out = "\x1b[1m```json\x1b[0m\r\n{\"verdict\": \"warn\", \"findings\": [\"no tests for empty input\"]}\r\n```\r\n";
        let v = parse_critic_output("reviewer", out);
        assert_eq!(v.verdict, Verdict::Warn);
        assert_eq!(v.confidence, DEFAULT_CRITIC_CONFIDENCE);
        assert_eq!(v.findings, vec!["no tests for empty input"]);
    }

    #[test]
    fn clamps_confidence_and_skips_unknown_verdicts() {
        let out = "```json\n{\"verdict\": \"fail\", \"confidence\": 7}\n```\n```json\n{\"verdict\": \"maybe\"}\n```";
        let v = parse_critic_output("r", out);
        assert_eq!(v.verdict, Verdict::Fail);
        assert_eq!(v.confidence, 1.0);
        assert!(v.findings.is_empty());
    }

    #[test]
    fn ignores_blocks_in_other_languages() {
        let out = "```rust\n{\"verdict\": \"pass\"}\n```";
        assert_eq!(parse_critic_output("r", out).verdict, Verdict::Warn);
    }

    #[test]
    fn finds_the_verdict_inside_json_lines_output() {
        let out = concat!(
            r#"{"type":"thread.started","thread_id":"t1"}"#,
            "\n",
            r#"{"type":"item.completed","item":{"type":"agent_message","text":"Reviewed.\n```json\n{\"verdict\": \"fail\", \"confidence\": 0.7, \"findings\": [\"no test for empty input\"]}\n```"}}"#,
            "\n",
            r#"{"type":"turn.completed"}"#,
        );
        let v = parse_critic_output("reviewer", out);
        assert_eq!(v.verdict, Verdict::Fail, "{v:?}");
        assert_eq!(v.confidence, 0.7);
        assert_eq!(v.findings, vec!["no test for empty input"]);
    }

    #[test]
    fn the_prompt_example_echoed_back_is_not_a_verdict() {
        let out = "Answer with:\n```json\n{\"verdict\": \"pass|warn|fail\", \"confidence\": 0.8, \"findings\": []}\n```\n";
        let v = parse_critic_output("reviewer", out);
        assert_eq!(v.verdict, Verdict::Warn);
        assert!(v.findings[0].contains("no parsable verdict"));
    }

    #[test]
    fn no_verdict_is_a_warn_that_says_so() {
        let v = parse_critic_output("reviewer", "Looks fine to me! {\"verdict\": \"pass\"}");
        assert_eq!(v.verdict, Verdict::Warn);
        assert_eq!(v.findings.len(), 1);
        assert!(
            v.findings[0].starts_with("reviewer gave no parsable verdict"),
            "{v:?}"
        );
    }

    #[test]
    fn check_exit_zero_passes() {
        let v = check_verdict("tests", Some(0), "test result: ok\n");
        assert_eq!(v.verdict, Verdict::Pass);
        assert_eq!(v.confidence, 1.0);
        assert_eq!(v.findings, vec!["exited 0"]);
    }

    #[test]
    fn check_failure_quotes_the_log_tail() {
        let mut log = String::new();
        for i in 1..=14 {
            log.push_str(&format!("\x1b[31mline {i}\x1b[0m\r\n\n"));
        }
        log.push_str("__CREWMUX_EXIT_ab12cd__:101\n");
        let v = check_verdict("tests", Some(101), &log);
        assert_eq!(v.verdict, Verdict::Fail);
        assert_eq!(v.findings.len(), 1 + LOG_TAIL_LINES);
        assert_eq!(v.findings[0], "exited 101");
        assert_eq!(v.findings[1], "line 5");
        assert_eq!(v.findings[10], "line 14");
    }

    #[test]
    fn check_without_exit_code_fails() {
        let v = check_verdict("clippy", None, "");
        assert_eq!(v.verdict, Verdict::Fail);
        assert_eq!(v.findings, vec!["ended with no exit code"]);
    }
}
