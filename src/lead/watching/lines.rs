//! Sorting an attempt's new output lines into engine inputs: ordinary output (activity),
//! stall lines (the provider's `stall_patterns`) and rate-limit lines (the `rate-limited`
//! mark). A line the provider's `noise_patterns` name (a runtime's warning such as Node's
//! `(node:PID) DeprecationWarning: …`, a terminal notice) is neither: it is not activity,
//! so it does not restart the idle clock or end a stall window, and it does not end the
//! stall message it interrupts. See `engine::stall` for what the engine does with them.

use std::collections::HashMap;

use regex::Regex;

use crate::creds::RateLimitPatterns;
use crate::engine::Input;
use crate::providers::Registry;

/// Compiled stall patterns per provider, made on first use, and per attempt whether its
/// output so far ends inside a stall message.
#[derive(Default)]
pub struct LineSorter {
    stall: HashMap<String, Vec<Regex>>,
    noise: HashMap<String, Vec<Regex>>,
    in_stall: HashMap<(String, u32), bool>,
}

/// How one output line counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Blank,
    Stall,
    /// An indented line (`    at fetch (…)`) or a lone closing bracket right after a stall
    /// line: the rest of that message. A CLI that logs an error object after its retry
    /// warning (gemini-cli's `console.warn(message, error)`) prints its stack this way.
    Continues,
    /// A line the provider's `noise_patterns` name: no activity, and the stall message it
    /// interrupts goes on after it.
    Noise,
    Ordinary,
}

/// Whether `raw` (ANSI already stripped) reads as the continuation of the line before it.
fn continues(raw: &str) -> bool {
    let t = raw.trim();
    !t.is_empty() && (raw.starts_with([' ', '\t']) || matches!(t, "}" | "]" | ")" | "}," | "],"))
}

impl LineSorter {
    /// The inputs for one read of `worker`'s log: `Output` when the log grew with anything
    /// but stall lines, their continuations and noise lines (a partial line counts as
    /// output), then
    /// `StallLine` with the last of the stall lines that end the read (those after its last
    /// ordinary line), and `RateLimited` with the last rate-limit line.
    ///
    /// A catch-up read (the tail of a log written before a reattach) that ends in stall
    /// lines is not `Output`: what came before them is older than the saved stall window,
    /// which the trailing stall lines keep open (the window is rebuilt from the log).
    pub fn inputs(
        &mut self,
        registry: &Registry,
        provider: &str,
        (worker, attempt): (&str, u32),
        (grew, catch_up): (bool, bool),
        lines: &[String],
        rate_limit: &RateLimitPatterns,
    ) -> Vec<Input> {
        let stall = self.stall.entry(provider.to_string()).or_insert_with(|| {
            registry
                .get(provider)
                .map(|s| s.stall_regexes())
                .unwrap_or_default()
        });
        let noise = self.noise.entry(provider.to_string()).or_insert_with(|| {
            registry
                .get(provider)
                .map(|s| s.noise_regexes())
                .unwrap_or_default()
        });
        let raw: Vec<String> = lines
            .iter()
            .map(|l| crate::launch::strip_ansi(l).trim_end().to_string())
            .collect();
        let clean: Vec<String> = raw.iter().map(|l| l.trim().to_string()).collect();
        let in_stall = self
            .in_stall
            .entry((worker.to_string(), attempt))
            .or_insert(false);
        let kinds: Vec<Kind> = raw
            .iter()
            .zip(&clean)
            .map(|(r, c)| {
                let k = if c.is_empty() {
                    Kind::Blank
                } else if stall.iter().any(|re| re.is_match(c)) {
                    Kind::Stall
                } else if *in_stall && continues(r) {
                    Kind::Continues
                } else if noise.iter().any(|re| re.is_match(c)) {
                    Kind::Noise
                } else {
                    Kind::Ordinary
                };
                if !matches!(k, Kind::Blank | Kind::Noise) {
                    *in_stall = k != Kind::Ordinary;
                }
                k
            })
            .collect();
        let last_ordinary = kinds.iter().rposition(|k| *k == Kind::Ordinary);
        let trailing_stall = (last_ordinary.map_or(0, |i| i + 1)..clean.len())
            .rev()
            .find(|&i| kinds[i] == Kind::Stall)
            .map(|i| &clean[i]);
        let no_activity = last_ordinary.is_none()
            && kinds
                .iter()
                .any(|k| matches!(k, Kind::Stall | Kind::Continues | Kind::Noise));
        let mut out = Vec::new();
        if grew && !no_activity && !(catch_up && trailing_stall.is_some()) {
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
            (true, false),
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

    fn sort_as(provider: &str, reads: &[&[&str]]) -> Vec<Vec<Input>> {
        let mut sorter = LineSorter::default();
        reads
            .iter()
            .map(|lines| {
                let lines: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
                sorter.inputs(
                    &Registry::builtin(),
                    provider,
                    ("w", 1),
                    (true, false),
                    &lines,
                    &RateLimitPatterns::default(),
                )
            })
            .collect()
    }

    /// The lines the CLIs print while they cannot reach their API, as their sources write
    /// them (see the comments on `stall_patterns` in assets/providers.toml).
    #[test]
    fn each_clis_own_retry_lines_are_stall_lines() {
        let cases: [(&str, &[&str]); 3] = [
            (
                "codex",
                &[
                    "ERROR: Reconnecting... 2/5",
                    "ERROR: Reconnecting... waiting for network",
                    r#"{"type":"error","message":"Reconnecting... waiting for network (Connection failed: error sending request)"}"#,
                    "warning: Falling back from WebSockets to HTTPS transport. stream disconnected before completion: error sending request",
                    "2026-08-31T05:07:32.113464Z ERROR codex_api::endpoint::responses_websocket: failed to connect to websocket: IO error: Connection refused (os error 111), url: ws://127.0.0.1:9/v1/responses",
                ],
            ),
            (
                "gemini",
                &[
                    "Attempt 1 failed. Retrying with backoff... TypeError: fetch failed",
                    "Attempt 2 failed with status 503. Retrying with backoff... ApiError: {\"error\":{\"code\":503}}",
                    "Attempt 3 failed: You exceeded your current quota. Retrying after 31245ms...",
                ],
            ),
            (
                "claude",
                &[
                    r#"{"type":"system","subtype":"api_retry","attempt":1,"max_retries":2,"retry_delay_ms":612,"error_status":529,"error":"server_error","session_id":"s","uuid":"u"}"#,
                    r#"{"type":"result","subtype":"success","is_error":true,"result":"API Error: Connection error."}"#,
                ],
            ),
        ];
        for (provider, lines) in cases {
            for line in lines {
                assert_eq!(
                    sort_as(provider, &[&[line]]),
                    vec![vec![Input::StallLine {
                        worker: "w".into(),
                        attempt: 1,
                        line: (*line).into()
                    }]],
                    "{provider}: {line}"
                );
            }
        }
    }

    #[test]
    fn a_stack_after_a_stall_line_continues_it_even_across_reads() {
        let warn = "Attempt 1 failed. Retrying with backoff... TypeError: fetch failed";
        let reads: [&[&str]; 3] = [
            &[warn, "    at node:internal/deps/undici/undici:13510:13"],
            &[
                "    at async GeminiClient.generateContent (file:///g/chunk.js:1:2) {",
                "  [cause]: Error: connect ECONNREFUSED 127.0.0.1:443",
                "}",
            ],
            &["    at not.a.continuation (after ordinary output)"],
        ];
        let out = sort_as("gemini", &reads);
        assert_eq!(
            out[0],
            vec![Input::StallLine {
                worker: "w".into(),
                attempt: 1,
                line: warn.into()
            }]
        );
        assert_eq!(out[1], vec![], "the stack's rest neither opens nor closes");
        // After a stall message, indentation alone is what continues it; an ordinary
        // line before breaks the chain.
        let out = sort_as("gemini", &[&["edited src/a.rs"], reads[2]]);
        assert_eq!(
            out[1],
            vec![Input::Output {
                worker: "w".into(),
                attempt: 1
            }]
        );
    }

    /// Node's warnings (Node 20's own format) and gemini-cli 0.61.0's terminal notice in
    /// the middle of its retries are no activity: the stall window stays open, and the
    /// stack after them still continues the stall message.
    #[test]
    fn node_warnings_between_stall_lines_neither_close_the_window_nor_count_as_output() {
        let warn = "Attempt 2 failed. Retrying with backoff... Error: exception TypeError: fetch failed sending request";
        let reads: [&[&str]; 4] = [
            &[warn],
            &["(node:4242) [DEP0040] DeprecationWarning: The `punycode` module is deprecated. Please use a userland alternative instead."],
            &[
                "(Use `node --trace-deprecation ...` to show where the warning was created)",
                "    at async retryWithBackoff (file:///g/chunk.js:308039:23)",
            ],
            &[
                "(node:4242) MaxListenersExceededWarning: Possible EventEmitter memory leak detected.",
                "Warning: True color (24-bit) support not detected. Using a terminal with true color enabled will result in a better visual experience.",
                warn,
            ],
        ];
        // qwen-code (a gemini-cli fork) prints the same Node warnings.
        assert_eq!(
            sort_as("qwen", &[reads[1], &reads[2][..1]]),
            vec![vec![], vec![]]
        );
        {
            let provider = "gemini";
            let out = sort_as(provider, &reads);
            let open = vec![Input::StallLine {
                worker: "w".into(),
                attempt: 1,
                line: warn.into(),
            }];
            assert_eq!(out[0], open, "{provider}");
            assert_eq!(out[1], vec![], "{provider}: a warning is not output");
            assert_eq!(
                out[2],
                vec![],
                "{provider}: nor is its hint, nor the stack after it"
            );
            assert_eq!(out[3], open, "{provider}: the window goes on");
        }
        // Any other line is still activity.
        let out = sort_as("gemini", &[&[warn], &["edited src/a.rs"]]);
        assert_eq!(
            out[1],
            vec![Input::Output {
                worker: "w".into(),
                attempt: 1
            }]
        );
    }

    #[test]
    fn a_catch_up_read_ending_in_stall_lines_keeps_the_saved_window() {
        let mut sorter = LineSorter::default();
        let lines: Vec<String> = ["edited src/lib.rs", RECONNECT, RECONNECT]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let mut read = |catch_up| {
            sorter.inputs(
                &Registry::builtin(),
                "codex",
                ("w", 1),
                (true, catch_up),
                &lines,
                &RateLimitPatterns::default(),
            )
        };
        assert_eq!(read(true), vec![stall(RECONNECT)], "no Output to close it");
        assert_eq!(
            read(false),
            vec![
                Input::Output {
                    worker: "w".into(),
                    attempt: 1
                },
                stall(RECONNECT)
            ],
            "live, the ordinary line is news"
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
