//! Each provider's own `rate_limit_patterns`, compiled once per run: the driver matches a
//! worker's output lines against its provider's set (the credential rotation and the
//! `rate-limited` mark both use it), with or without a credential store. An agent provider
//! that names no pattern gets `creds::DEFAULT_RATE_LIMIT_PATTERNS`; a `command` provider that
//! names none has none: its argv is any program, whose output is not an HTTP client's, so a
//! line like `row 429` is no rate limit (SPEC §5: patterns are each provider's data).

use std::collections::HashMap;

use super::spec::ProviderKind;
use super::Registry;
use crate::creds::RateLimitPatterns;

/// Provider → compiled rate-limit patterns.
#[derive(Debug, Clone, Default)]
pub struct RateLimits {
    by_provider: HashMap<String, RateLimitPatterns>,
    default: RateLimitPatterns,
}

impl RateLimits {
    /// Compile every provider's patterns (patterns were validated when the registry was
    /// loaded; a set that still fails falls back to the defaults, with a warning).
    pub fn of(registry: &Registry) -> Self {
        let mut by_provider = HashMap::new();
        for (name, spec) in registry.iter() {
            if spec.rate_limit_patterns.is_empty() {
                if spec.kind == ProviderKind::Command {
                    by_provider.insert(name.to_string(), RateLimitPatterns::none());
                }
                continue;
            }
            match RateLimitPatterns::new(&spec.rate_limit_patterns) {
                Ok(p) => {
                    by_provider.insert(name.to_string(), p);
                }
                Err(e) => tracing::warn!("provider `{name}`: {e}; using the default patterns"),
            }
        }
        RateLimits {
            by_provider,
            default: RateLimitPatterns::default(),
        }
    }

    /// The patterns of `provider`.
    pub fn get(&self, provider: &str) -> &RateLimitPatterns {
        self.by_provider.get(provider).unwrap_or(&self.default)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_provider_matches_its_own_lines() {
        let reg = Registry::builtin();
        let r = RateLimits::of(&reg);
        // claude's overload error and gemini's RESOURCE_EXHAUSTED are theirs only.
        assert!(r
            .get("claude")
            .matches("API Error: {\"type\":\"overloaded_error\"}"));
        assert!(!r
            .get("codex")
            .matches("API Error: {\"type\":\"overloaded_error\"}"));
        assert!(r.get("gemini").matches("status: RESOURCE_EXHAUSTED"));
        assert!(r.get("kimi").matches("engine_overloaded"));
        assert!(!r.get("gemini").matches("engine_overloaded"));
        // An unknown provider gets the defaults; `command` names none, so has none.
        assert!(r.get("nope").matches("Too Many Requests"));
        for line in ["ligne é ✓ 429", "HTTP 429", "rate limit"] {
            assert!(!r.get("command").matches(line), "{line}");
        }
        let user = Registry::from_layers(&[(
            std::path::Path::new("p.toml"),
            "[providers.x]\nbinary = \"x\"\nrate_limit_patterns = [\"slow down, friend\"]\n",
        )])
        .unwrap();
        let r = RateLimits::of(&user);
        assert!(r.get("x").matches("SLOW DOWN, FRIEND"));
        assert!(!r.get("x").matches("429"));
        // An agent provider without patterns gets the defaults; a command one none, unless
        // the user names some.
        let user = Registry::from_layers(&[(
            std::path::Path::new("p.toml"),
            "[providers.y]\nbinary = \"y\"\n\
             [providers.c]\nkind = \"command\"\n\
             [providers.d]\nkind = \"command\"\nrate_limit_patterns = [\"\\\\b429\\\\b\"]\n",
        )])
        .unwrap();
        let r = RateLimits::of(&user);
        assert!(r.get("y").matches("HTTP 429"));
        assert!(!r.get("c").matches("HTTP 429"));
        assert!(r.get("d").matches("HTTP 429"));
    }
}
