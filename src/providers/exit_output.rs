//! Exits explained by the CLI's output: some CLIs exit 1 for a missing login as for every
//! other failure, and only what they print tells the two apart (Claude Code 2.1.197 ends
//! with a `result` event reading "Not logged in · Please run /login"; qwen-code 0.15.10
//! prints "No auth type is selected …" on stderr). A provider's `exit_output` rules name
//! such lines; a match among the last [`TAIL_LINES`] lines of a failed attempt's output
//! gives the exit a meaning, as `exit_codes` does for a code (`engine::exits`).

use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::domain::{ExitKind, ExitMeaning, ExitSaid};

/// Lines at the end of the output a rule is tried on: the CLI's last words, not the
/// agent's work earlier in the log (which may well mention a login).
pub const TAIL_LINES: usize = 20;
/// Characters of the matched line kept for the reason.
const LINE_CHARS: usize = 120;

/// One `[[providers.NAME.exit_output]]` entry. A `limit` rule's pattern may name the reset
/// time with a group `(?P<reset>…)` (`providers::reset_time` reads it); without one, or when
/// the text is not a time, the exit reads as `quota`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExitOutputRule {
    /// Regex (case-insensitive) over one output line.
    pub pattern: String,
    pub meaning: ExitKind,
    /// What the user should do.
    #[serde(default)]
    pub fix: String,
}

/// What the output of a failed attempt says its exit means: the last of its final
/// [`TAIL_LINES`] non-empty lines that a rule matches, with that rule's meaning. A JSON
/// event line is quoted by its message (`result`, `message`, `error`), not as JSON.
/// Rules whose pattern does not compile were refused at load and are skipped here. `now`
/// is when the output is read, the time a reset time is read against.
pub fn explain(
    rules: &[ExitOutputRule],
    text: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Option<ExitSaid> {
    let compiled: Vec<(Regex, &ExitOutputRule)> = rules
        .iter()
        .filter_map(|r| Some((super::spec::compile(&r.pattern).ok()?, r)))
        .collect();
    if compiled.is_empty() {
        return None;
    }
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = &lines[lines.len().saturating_sub(TAIL_LINES)..];
    tail.iter().rev().find_map(|line| {
        let (re, rule) = compiled.iter().find(|(re, _)| re.is_match(line))?;
        let mut meaning = rule.meaning;
        let mut resets_at = None;
        if meaning == ExitKind::Limit {
            resets_at = re
                .captures(line)
                .and_then(|c| c.name("reset"))
                .and_then(|r| super::reset_time::parse(unquoted(r.as_str()), now));
            if resets_at.is_none() {
                meaning = ExitKind::Quota;
            }
        }
        Some(ExitSaid {
            meaning: ExitMeaning {
                meaning,
                fix: rule.fix.clone(),
            },
            line: readable(line),
            resets_at,
            other_key: false,
        })
    })
}

/// A reset text caught inside a JSON event line ends at its string's closing quote.
fn unquoted(s: &str) -> &str {
    s.split('"').next().unwrap_or(s)
}

/// The message of a JSON event line, else the line; trimmed and cut to [`LINE_CHARS`].
fn readable(line: &str) -> String {
    let t = line.trim();
    let message = serde_json::from_str::<Value>(t).ok().and_then(|v| {
        ["result", "message", "error"]
            .iter()
            .find_map(|k| match &v[k] {
                Value::String(s) => Some(s.clone()),
                Value::Object(o) => o.get("message")?.as_str().map(str::to_string),
                _ => None,
            })
    });
    let s = message.as_deref().unwrap_or(t).trim();
    match s.char_indices().nth(LINE_CHARS) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ex(rules: &[ExitOutputRule], text: &str) -> Option<ExitSaid> {
        explain(rules, text, chrono::Utc::now())
    }

    fn limit() -> Vec<ExitOutputRule> {
        vec![ExitOutputRule {
            pattern: r"you've hit your [a-z ]*limit(?: · resets (?P<reset>.+))?".into(),
            meaning: ExitKind::Limit,
            fix: "wait for the reset".into(),
        }]
    }

    #[test]
    fn a_limit_rule_reads_its_reset_time_and_without_one_is_a_quota() {
        let now = chrono::DateTime::parse_from_rfc3339("2026-12-03T10:00:00Z")
            .unwrap()
            .with_timezone(&chrono::Utc);
        let out = "{\"type\":\"result\",\"is_error\":true,\"result\":\"You've hit your session limit · resets 3pm (UTC)\"}\n";
        let said = explain(&limit(), out, now).unwrap();
        assert_eq!(said.meaning.meaning, ExitKind::Limit);
        assert_eq!(
            said.resets_at.map(|t| t.to_rfc3339()),
            Some("2026-12-03T15:00:00+00:00".into())
        );
        assert_eq!(
            said.line,
            "You've hit your session limit · resets 3pm (UTC)"
        );
        let said = explain(&limit(), "You've hit your weekly limit\n", now).unwrap();
        assert_eq!(
            (said.meaning.meaning, said.resets_at),
            (ExitKind::Quota, None)
        );
        let said = explain(
            &limit(),
            "You've hit your weekly limit · resets whenever\n",
            now,
        )
        .unwrap();
        assert_eq!(said.meaning.meaning, ExitKind::Quota);
    }

    fn auth(pattern: &str) -> Vec<ExitOutputRule> {
        vec![ExitOutputRule {
            pattern: pattern.into(),
            meaning: ExitKind::Auth,
            fix: "set ANTHROPIC_API_KEY".into(),
        }]
    }

    #[test]
    fn claudes_result_event_is_quoted_by_its_message() {
        let out = "{\"type\":\"system\",\"subtype\":\"init\"}\n\
                   {\"type\":\"result\",\"is_error\":true,\"result\":\"Not logged in · Please run /login\"}\n";
        let said = ex(&auth("not logged in"), out).unwrap();
        assert_eq!(said.line, "Not logged in · Please run /login");
        assert_eq!(said.meaning.meaning, ExitKind::Auth);
    }

    #[test]
    fn a_plain_line_is_kept_as_printed_and_long_ones_are_cut() {
        let long = format!("No auth type is selected. {}", "x".repeat(300));
        let said = ex(&auth("no auth type is selected"), &long).unwrap();
        assert!(said.line.starts_with("No auth type is selected."));
        assert_eq!(said.line.chars().count(), LINE_CHARS + 1);
    }

    #[test]
    fn only_the_last_lines_count() {
        let mut out = String::from("the agent wrote: not logged in users see a 401\n");
        for i in 0..TAIL_LINES {
            out.push_str(&format!("line {i}\n"));
        }
        assert_eq!(ex(&auth("not logged in"), &out), None);
        out.push_str("Error: not logged in\n");
        assert!(ex(&auth("not logged in"), &out).is_some());
    }

    #[test]
    fn no_rules_or_no_match_explain_nothing() {
        assert_eq!(ex(&[], "Not logged in"), None);
        assert_eq!(ex(&auth("not logged in"), "segfault"), None);
    }

    #[test]
    fn the_built_in_clis_usage_limit_lines_park_until_their_reset() {
        let reg = crate::providers::Registry::builtin();
        let now = chrono::DateTime::parse_from_rfc3339("2026-12-03T10:00:00Z")
            .unwrap()
            .with_timezone(&chrono::Utc);
        let rules = |p: &str| reg.get(p).unwrap().exit_output.clone();
        let cases = [
            // Claude Code 2.1.197's result event.
            (
                "claude",
                "{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":true,\"result\":\"You've hit your session limit · resets 3pm (UTC)\"}",
                "2026-12-03T15:00:00+00:00",
            ),
            (
                "claude",
                "You've hit your weekly limit · resets Dec 9, 3:45pm (UTC)",
                "2026-12-09T15:45:00+00:00",
            ),
            // codex-cli 0.171.0, text and --json.
            (
                "codex",
                "ERROR: You've hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit https://chatgpt.com/settings/usage to purchase more credits or try again at 3:04 PM (UTC).",
                "2026-12-03T15:04:00+00:00",
            ),
            (
                "codex",
                "{\"type\":\"turn.failed\",\"error\":{\"message\":\"You've hit your usage limit. Try again at Dec 5th, 2026 9:00 AM (UTC).\"}}",
                "2026-12-05T09:00:00+00:00",
            ),
            // gemini-cli 0.61.0: the API's own message.
            (
                "gemini",
                "TerminalQuotaError: You exceeded your current quota, please check your plan and billing details. Please retry in 3600s.",
                "2026-12-03T11:00:00+00:00",
            ),
        ];
        for (provider, line, reset) in cases {
            let said = explain(&rules(provider), line, now)
                .unwrap_or_else(|| panic!("{provider}: nothing matched {line}"));
            assert_eq!(said.meaning.meaning, ExitKind::Limit, "{provider}: {line}");
            assert_eq!(
                said.resets_at.map(|t| t.to_rfc3339()).as_deref(),
                Some(reset),
                "{provider}: {line}"
            );
        }
        // Without a reset time the same words are a quota, as before.
        let said = explain(&rules("codex"), "You've hit your usage limit.", now).unwrap();
        assert_eq!(said.meaning.meaning, ExitKind::Quota);
        let said = explain(
            &rules("gemini"),
            "You have exhausted your daily quota on this model.",
            now,
        )
        .unwrap();
        assert_eq!(said.meaning.meaning, ExitKind::Quota);
    }
}
