//! Sorting an attempt's new output lines into engine inputs: ordinary output (activity),
//! stall lines (the provider's `stall_patterns`) and rate-limit lines (the `rate-limited`
//! mark). See `engine::stall` for what the engine does with them.

use std::collections::HashMap;

use regex::Regex;

use crate::creds::RateLimitPatterns;
use crate::engine::Input;
use crate::providers::Registry;

/// Compiled stall patterns per provider, made on first use.
#[derive(Default)]
pub struct LineSorter {
    stall: HashMap<String, Vec<Regex>>,
}

impl LineSorter {
    /// The inputs for one read of `worker`'s log: `Output` when the log grew with anything
    /// but stall lines (a partial line counts as output), then `StallLine` with the last of
    /// the stall lines that end the read (those after its last ordinary line), and
    /// `RateLimited` with the last rate-limit line.
    pub fn inputs(
        &mut self,
        registry: &Registry,
        provider: &str,
        (worker, attempt): (&str, u32),
        grew: bool,
        lines: &[String],
        rate_limit: &RateLimitPatterns,
    ) -> Vec<Input> {
        let stall = self.stall.entry(provider.to_string()).or_insert_with(|| {
            registry
                .get(provider)
                .map(|s| s.stall_regexes())
                .unwrap_or_default()
        });
        let clean: Vec<String> = lines
            .iter()
            .map(|l| crate::launch::strip_ansi(l).trim().to_string())
            .collect();
        let is_stall = |l: &str| !l.is_empty() && stall.iter().any(|r| r.is_match(l));
        let last_ordinary = clean.iter().rposition(|l| !l.is_empty() && !is_stall(l));
        let trailing_stall = clean
            .iter()
            .skip(last_ordinary.map_or(0, |i| i + 1))
            .rfind(|l| is_stall(l));
        let mut out = Vec::new();
        let only_stall_lines = last_ordinary.is_none() && clean.iter().any(|l| is_stall(l));
        if grew && !only_stall_lines {
            out.push(Input::Output {
                worker: worker.to_string(),
                attempt,
            });
        }
        if let Some(line) = trailing_stall {
            out.push(Input::StallLine {
                worker: worker.to_string(),
                attempt,
                line: line.clone(),
            });
        }
        if let Some(line) = clean.iter().rev().find(|l| rate_limit.matches(l)) {
            out.push(Input::RateLimited {
                worker: worker.to_string(),
                attempt,
                line: line.clone(),
            });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sort(lines: &[&str]) -> Vec<Input> {
        let lines: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
        LineSorter::default().inputs(
            &Registry::builtin(),
            "codex",
            ("w", 1),
            true,
            &lines,
            &RateLimitPatterns::default(),
        )
    }

    fn stall(line: &str) -> Input {
        Input::StallLine {
            worker: "w".into(),
            attempt: 1,
            line: line.into(),
        }
    }

    const RECONNECT: &str = r#"{"type":"error","message":"Reconnecting... 2/5 (stream disconnected before completion)"}"#;

    #[test]
    fn codex_reconnect_lines_are_stall_lines_not_output() {
        assert_eq!(
            sort(&[RECONNECT, "\x1b[2m", RECONNECT]),
            vec![stall(RECONNECT)]
        );
    }

    #[test]
    fn ordinary_output_after_stall_lines_closes_the_window() {
        let out = sort(&[RECONNECT, "edited src/lib.rs"]);
        assert_eq!(
            out,
            vec![Input::Output {
                worker: "w".into(),
                attempt: 1
            }]
        );
        let out = sort(&["edited src/lib.rs", RECONNECT]);
        assert_eq!(
            out,
            vec![
                Input::Output {
                    worker: "w".into(),
                    attempt: 1
                },
                stall(RECONNECT)
            ]
        );
    }

    #[test]
    fn a_rate_limit_line_sets_the_mark() {
        let out = sort(&["HTTP 429 Too Many Requests"]);
        assert!(out.contains(&Input::RateLimited {
            worker: "w".into(),
            attempt: 1,
            line: "HTTP 429 Too Many Requests".into()
        }));
    }
}
