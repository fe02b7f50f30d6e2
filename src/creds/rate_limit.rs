//! Recognising a provider's rate-limit message in a worker's output line.
#![allow(
    clippy::expect_used,
    reason = "the default patterns are literals; their tests compile them"
)]

use std::sync::LazyLock;

use regex::{RegexSet, RegexSetBuilder};

/// Patterns used when a provider names none: an HTTP 429 status, "rate limit(ed)",
/// "rate_limit_exceeded" (OpenAI's error code), "quota exceeded" (Gemini's
/// RESOURCE_EXHAUSTED text) and "too many requests" (HTTP 429's reason phrase, RFC 6585).
pub const DEFAULT_RATE_LIMIT_PATTERNS: &[&str] = &[
    r"\b429\b",
    r"rate[ _-]?limit",
    r"quota[ _-]?exceeded",
    r"too many requests",
];

/// A compiled, case-insensitive set of rate-limit patterns.
#[derive(Debug, Clone)]
pub struct RateLimitPatterns(RegexSet);

impl RateLimitPatterns {
    /// Compile `patterns` (regex syntax of the `regex` crate), matched case-insensitively.
    ///
    /// # Errors
    /// The first pattern that does not compile, quoted, with the parser's reason.
    pub fn new<S: AsRef<str>>(patterns: &[S]) -> Result<Self, String> {
        for p in patterns {
            if let Err(e) = regex::Regex::new(p.as_ref()) {
                return Err(format!(
                    "rate-limit pattern `{}` is not a regex: {e}",
                    p.as_ref()
                ));
            }
        }
        RegexSetBuilder::new(patterns)
            .case_insensitive(true)
            .build()
            .map(Self)
            .map_err(|e| format!("rate-limit patterns do not compile: {e}"))
    }

    /// Whether any pattern matches somewhere in `line`.
    pub fn matches(&self, line: &str) -> bool {
        self.0.is_match(line)
    }
}

impl RateLimitPatterns {
    /// The empty set: matches no line.
    pub fn none() -> Self {
        Self::new::<&str>(&[]).expect("the empty set compiles")
    }
}

impl Default for RateLimitPatterns {
    /// [`DEFAULT_RATE_LIMIT_PATTERNS`].
    fn default() -> Self {
        static DEFAULT: LazyLock<RateLimitPatterns> = LazyLock::new(|| {
            RateLimitPatterns::new(DEFAULT_RATE_LIMIT_PATTERNS).expect("default patterns compile")
        });
        DEFAULT.clone()
    }
}

/// Whether one line of a worker's output says the provider is rate-limiting it.
/// Strip ANSI escapes first: a colour code inside a word hides it from the patterns.
pub fn rate_limit_matches(output_line: &str, patterns: &RateLimitPatterns) -> bool {
    patterns.matches(output_line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_patterns_match_provider_messages_case_insensitively() {
        let p = RateLimitPatterns::default();
        for line in [
            "Error: 429 Too Many Requests",
            "HTTP status 429",
            "You have hit your RATE LIMIT, slow down",
            "{\"code\":\"rate_limit_exceeded\"}",
            "Rate-limited; retrying",
            "RESOURCE_EXHAUSTED: Quota exceeded for quota metric",
            "too many requests",
        ] {
            assert!(rate_limit_matches(line, &p), "{line}");
        }
        for line in [
            "wrote 14290 bytes",
            "all tests passed",
            "limit the rate of change",
            "",
        ] {
            assert!(!rate_limit_matches(line, &p), "{line}");
        }
    }

    #[test]
    fn custom_patterns_and_a_bad_one() {
        let p = RateLimitPatterns::new(&["overloaded_error"]).unwrap();
        assert!(p.matches("type: OVERLOADED_ERROR"));
        assert!(!p.matches("429"));
        let err = RateLimitPatterns::new(&["ok", "(unclosed"]).unwrap_err();
        assert!(err.contains("`(unclosed`"), "{err}");
    }
}
