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

/// One `[[providers.NAME.exit_output]]` entry.
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
/// Rules whose pattern does not compile were refused at load and are skipped here.
pub fn explain(rules: &[ExitOutputRule], text: &str) -> Option<ExitSaid> {
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
        let (_, rule) = compiled.iter().find(|(re, _)| re.is_match(line))?;
        Some(ExitSaid {
            meaning: ExitMeaning {
                meaning: rule.meaning,
                fix: rule.fix.clone(),
            },
            line: readable(line),
        })
    })
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
        let said = explain(&auth("not logged in"), out).unwrap();
        assert_eq!(said.line, "Not logged in · Please run /login");
        assert_eq!(said.meaning.meaning, ExitKind::Auth);
    }

    #[test]
    fn a_plain_line_is_kept_as_printed_and_long_ones_are_cut() {
        let long = format!("No auth type is selected. {}", "x".repeat(300));
        let said = explain(&auth("no auth type is selected"), &long).unwrap();
        assert!(said.line.starts_with("No auth type is selected."));
        assert_eq!(said.line.chars().count(), LINE_CHARS + 1);
    }

    #[test]
    fn only_the_last_lines_count() {
        let mut out = String::from("the agent wrote: not logged in users see a 401\n");
        for i in 0..TAIL_LINES {
            out.push_str(&format!("line {i}\n"));
        }
        assert_eq!(explain(&auth("not logged in"), &out), None);
        out.push_str("Error: not logged in\n");
        assert!(explain(&auth("not logged in"), &out).is_some());
    }

    #[test]
    fn no_rules_or_no_match_explain_nothing() {
        assert_eq!(explain(&[], "Not logged in"), None);
        assert_eq!(explain(&auth("not logged in"), "segfault"), None);
    }
}
