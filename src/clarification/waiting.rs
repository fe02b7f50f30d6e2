//! Waiting-for-input detection on a worker's pane screen (docs/design.md "Clarification", worker
//! level): provider waiting patterns on the last lines of a still screen, and the sim agent's
//! explicit question line.
//!
//! The caller (the driver) captures the last lines of a pane (`capture-pane -p`, with or
//! without `-e`), tracks how long the screen has been unchanged (see [`StillTracker`]) and
//! asks [`detect_waiting`]. A pattern counts only once the screen has been still for the
//! settle delay, so a busy spinner, whose frame changes every ~100 ms, is never taken for a
//! question. Prompts that carry their own answer (`Allow? (y/n) y`) do not match: the
//! yes/no patterns are anchored at the end of the line.
#![allow(
    clippy::expect_used,
    reason = "regex literals compiled once; a bad one fails every test of this module"
)]

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::LazyLock;
use std::time::Duration;

use regex::Regex;

use crate::text::clean_text;

pub use crate::domain::clarification::ASK_PREFIX;

/// How long a screen must be unchanged before a pattern match counts.
pub const DEFAULT_SETTLE: Duration = Duration::from_millis(1500);

/// A pattern may match only on the last this-many non-empty lines of the screen.
pub const LOOKBACK_LINES: usize = 12;

/// Patterns every provider shares: yes/no prompts, "press Enter", numbered menus with the
/// cursor on the first choice, trust and permission questions, API-key entry.
pub const COMMON_PATTERNS: &[&str] = &[
    r"(?i)\((?:y/n|y/n/a|yes/no)\)\s*[:?]?\s*$",
    r"(?i)\[(?:y/n|yes/no)\]\s*[:?]?\s*$",
    r"(?i)\(Y\)es/\(N\)o(?:/\(A\)ll)?(?:/\(S\)kip all)?(?:/\(D\)on't ask again)?(?:\s*\[(?:Yes|No|All)\])?\s*:?\s*$",
    r"(?i)\bpress (?:enter|return) to (?:continue|confirm|save|select|proceed)\b",
    r"(?i)\bpress any key\b",
    r"(?i)\benter to (?:confirm|select|continue)\b",
    r"(?i)\buse enter to select\b",
    r"(?i)\bdo you (?:trust|want to (?:proceed|continue|allow|make this edit|run|create|apply))\b.*\?",
    r"(?i)\bwould you like to (?:run|make|apply|allow|proceed|continue)\b.*\?",
    r"(?i)^(?:❯|›|>|●|▶|→)\s*1\.\s+(?:yes|allow|trust|approve|accept|sign in|use|proceed|continue)\b",
    r"(?i)^allow\b.*\?\s*$",
    r"(?i)\b(?:approve|confirm)\b.*\?\s*$",
    r"(?i)\b(?:paste or type|enter) your api key\b",
    r"(?i)\bhow would you like to (?:authenticate|sign in|log in)\b",
    r"(?i)\bwaiting for (?:your )?(?:input|approval|confirmation|answer)\b",
    r"(?i)\bcontinue\?\s*$",
];

/// Extra patterns per provider, from their first-run and permission screens (recorded
/// screens in `tests/fixtures/screens/`) and their CLI docs.
fn provider_patterns(provider: &str) -> &'static [&'static str] {
    match provider {
        // Codex CLI: approval prompts ("Allow command?", "Approve this change?").
        "codex" => {
            &[r"(?i)\ballow (?:command|this command|edits?)\b.*\?\s*(?:\((?:y/n|yes/no)\))?\s*$"]
        }
        // Gemini CLI and its fork Qwen Code: trust dialog, tool confirmation.
        "gemini" | "qwen" => &[
            r"(?i)\ballow execution\b",
            r"(?i)\bapply this change\?",
            r"(?i)\btrust (?:this )?folder\b.*\?",
        ],
        // Claude Code: trust check, tool permission.
        "claude" => &[
            r"(?i)\bis this a project you created or one you trust\?",
            r"(?i)\bdo you want to (?:make this edit|create|proceed)\b",
        ],
        // aider asks every confirmation in its `(Y)es/(N)o [Yes]:` style, which the
        // common patterns match at the end of the line only (so answered ones do not).
        _ => &[],
    }
}

/// The pattern texts used for `provider`: [`COMMON_PATTERNS`] and the provider's own.
pub fn default_pattern_sources(provider: &str) -> Vec<&'static str> {
    COMMON_PATTERNS
        .iter()
        .chain(provider_patterns(provider))
        .copied()
        .collect()
}

/// The compiled default patterns for `provider` (any name; unknown ones get the common
/// patterns).
pub fn default_patterns(provider: &str) -> Vec<Regex> {
    static COMMON: LazyLock<Vec<Regex>> = LazyLock::new(|| {
        COMMON_PATTERNS
            .iter()
            .map(|p| Regex::new(p).expect("built-in waiting pattern compiles"))
            .collect()
    });
    COMMON
        .iter()
        .cloned()
        .chain(
            provider_patterns(provider)
                .iter()
                .map(|p| Regex::new(p).expect("built-in waiting pattern compiles")),
        )
        .collect()
}

/// Compile user-supplied waiting patterns (e.g. from a providers TOML file).
///
/// # Errors
/// The first pattern that does not compile, with the pattern quoted.
pub fn compile_patterns(sources: &[String]) -> Result<Vec<Regex>, String> {
    sources
        .iter()
        .map(|p| Regex::new(p).map_err(|e| format!("waiting pattern {p:?} does not compile: {e}")))
        .collect()
}

/// Decide whether a pane is waiting for input, and if so, return its question.
///
/// * `screen`: the last lines of the pane (ANSI escapes and `\r` are tolerated).
/// * `still_for`: how long the screen has been unchanged; `settle` the delay a pattern
///   match needs (use [`DEFAULT_SETTLE`]).
///
/// Returns `Some(question)`:
/// * at once when the last non-empty line is `ASK_PREFIX<question>` (the sim agent's
///   explicit question; lines after it made only of prompt marks like `>` are allowed);
/// * when the screen has been still for `settle` and a pattern matches one of the last
///   [`LOOKBACK_LINES`] non-empty lines: the question is the text from the first matching
///   line to the end of the screen, box-drawing borders removed.
pub fn detect_waiting(
    screen: &str,
    patterns: &[Regex],
    still_for: Duration,
    settle: Duration,
) -> Option<String> {
    let text = clean_text(screen);
    let lines: Vec<&str> = text
        .lines()
        .map(content)
        .filter(|l| !l.is_empty())
        .collect();
    if let Some(question) = ask_question(&lines) {
        return Some(question);
    }
    if still_for < settle {
        return None;
    }
    let window = &lines[lines.len().saturating_sub(LOOKBACK_LINES)..];
    let first = window
        .iter()
        .position(|line| patterns.iter().any(|p| p.is_match(line)))?;
    Some(window[first..].join("\n"))
}

/// The question of a trailing `ASK_PREFIX` line, if the screen ends with one.
fn ask_question(lines: &[&str]) -> Option<String> {
    let last_ask = lines.iter().rposition(|l| l.starts_with(ASK_PREFIX))?;
    let after_is_prompt_marks = lines[last_ask + 1..]
        .iter()
        .all(|l| l.chars().count() <= 2 && l.chars().all(|c| !c.is_alphanumeric()));
    if !after_is_prompt_marks {
        return None;
    }
    let question = lines[last_ask][ASK_PREFIX.len()..].trim();
    Some(if question.is_empty() {
        "(the worker asks for input)".to_string()
    } else {
        question.to_string()
    })
}

/// A line without surrounding whitespace and box-drawing borders; a line made only of
/// borders is empty.
fn content(line: &str) -> &str {
    line.trim_matches(|c: char| c.is_whitespace() || ('\u{2500}'..='\u{257F}').contains(&c))
}

/// Tracks how long a pane's screen has been unchanged, from the caller's clock readings.
#[derive(Debug, Clone, Default)]
pub struct StillTracker {
    last: Option<u64>,
    changed_at_ms: u64,
}

impl StillTracker {
    /// Record a capture of the screen taken at `now_ms` (any monotonic millisecond clock)
    /// and return how long it has been unchanged (zero on a change or the first capture).
    pub fn observe(&mut self, screen: &str, now_ms: u64) -> Duration {
        let mut hasher = DefaultHasher::new();
        screen.hash(&mut hasher);
        let digest = hasher.finish();
        if self.last != Some(digest) {
            self.last = Some(digest);
            self.changed_at_ms = now_ms;
        }
        Duration::from_millis(now_ms.saturating_sub(self.changed_at_ms))
    }
}

/// One pane's detector: its patterns, settle delay and [`StillTracker`], fed one capture
/// at a time.
#[derive(Debug, Clone)]
pub struct WaitingDetector {
    patterns: Vec<Regex>,
    settle: Duration,
    still: StillTracker,
}

impl WaitingDetector {
    pub fn new(patterns: Vec<Regex>, settle: Duration) -> Self {
        WaitingDetector {
            patterns,
            settle,
            still: StillTracker::default(),
        }
    }

    /// The default patterns of `provider` and [`DEFAULT_SETTLE`].
    pub fn for_provider(provider: &str) -> Self {
        Self::new(default_patterns(provider), DEFAULT_SETTLE)
    }

    /// The detector of `provider` with `configured` (its `waiting_patterns` as the built-in,
    /// user and project `providers.toml` merge them, compiled) after the default patterns.
    pub fn for_provider_with(provider: &str, configured: Vec<Regex>) -> Self {
        let mut patterns = default_patterns(provider);
        patterns.extend(configured);
        Self::new(patterns, DEFAULT_SETTLE)
    }

    /// Feed a capture taken at `now_ms` (monotonic ms); `Some(question)` while waiting.
    pub fn observe(&mut self, screen: &str, now_ms: u64) -> Option<String> {
        let still_for = self.still.observe(screen, now_ms);
        detect_waiting(screen, &self.patterns, still_for, self.settle)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STILL: Duration = Duration::from_millis(2000);

    fn detect(screen: &str, provider: &str) -> Option<String> {
        detect_waiting(screen, &default_patterns(provider), STILL, DEFAULT_SETTLE)
    }

    #[test]
    fn every_builtin_pattern_compiles_for_every_provider() {
        for provider in [
            "codex", "gemini", "qwen", "claude", "aider", "kimi", "opencode", "sim",
        ] {
            assert!(default_patterns(provider).len() >= COMMON_PATTERNS.len());
        }
    }

    #[test]
    fn the_ask_line_waits_at_once_with_its_question() {
        let screen = "working...\n__CREWMUX_ASK__: Which database should I use?\n> \n";
        assert_eq!(
            detect_waiting(screen, &[], Duration::ZERO, DEFAULT_SETTLE),
            Some("Which database should I use?".to_string())
        );
    }

    #[test]
    fn an_answered_ask_line_no_longer_waits() {
        let screen = "__CREWMUX_ASK__:Which database?\nPostgres\nusing Postgres\n";
        assert_eq!(detect_waiting(screen, &[], STILL, DEFAULT_SETTLE), None);
    }

    #[test]
    fn yes_no_prompts_wait_unless_answered() {
        assert_eq!(
            detect("Applied 2 edits.\nAllow edit to src/lib.rs? (y/n)", "codex"),
            Some("Allow edit to src/lib.rs? (y/n)".to_string())
        );
        assert_eq!(
            detect("Allow edit to src/lib.rs? (y/n) y\nApplied.", "codex"),
            None
        );
        assert!(detect("Overwrite existing config? [Y/n]", "kimi").is_some());
        assert!(detect("Press Enter to continue", "opencode").is_some());
    }

    #[test]
    fn a_question_must_settle_first() {
        let screen = "Do you trust the files in this folder?\n● 1. Trust folder";
        let patterns = default_patterns("gemini");
        let fresh = Duration::from_millis(1499);
        assert_eq!(
            detect_waiting(screen, &patterns, fresh, DEFAULT_SETTLE),
            None
        );
        assert!(detect_waiting(screen, &patterns, DEFAULT_SETTLE, DEFAULT_SETTLE).is_some());
    }

    #[test]
    fn old_questions_above_the_lookback_do_not_count() {
        let mut screen = String::from("Do you want to proceed?\n");
        for i in 0..LOOKBACK_LINES {
            screen.push_str(&format!("compiling crate {i}\n"));
        }
        assert_eq!(detect(&screen, "claude"), None);
    }

    #[test]
    fn box_borders_are_removed_from_the_question() {
        let screen = "╭──────╮\n│ Do you want to proceed? │\n│ ❯ 1. Yes │\n╰──────╯\n";
        assert_eq!(
            detect(screen, "claude"),
            Some("Do you want to proceed?\n❯ 1. Yes".to_string())
        );
    }

    #[test]
    fn still_tracker_measures_time_since_the_last_change() {
        let mut t = StillTracker::default();
        assert_eq!(t.observe("a", 1_000), Duration::ZERO);
        assert_eq!(t.observe("a", 1_400), Duration::from_millis(400));
        assert_eq!(t.observe("b", 1_500), Duration::ZERO);
        assert_eq!(t.observe("b", 3_100), Duration::from_millis(1_600));
    }

    #[test]
    fn a_detector_waits_once_the_screen_has_settled() {
        let mut d = WaitingDetector::for_provider("aider");
        let screen = "Create new file src/new.rs? (Y)es/(N)o [Yes]:";
        assert_eq!(d.observe("Thinking", 0), None);
        assert_eq!(d.observe(screen, 250), None);
        assert_eq!(d.observe(screen, 1_500), None);
        assert_eq!(d.observe(screen, 1_750), Some(screen.to_string()));
        assert_eq!(d.observe(&format!("{screen} y\nCreated."), 2_000), None);
    }

    #[test]
    fn bad_user_patterns_are_named() {
        let err = compile_patterns(&["(unclosed".to_string()]).unwrap_err();
        assert!(
            err.starts_with("waiting pattern \"(unclosed\" does not compile"),
            "{err}"
        );
    }
}
