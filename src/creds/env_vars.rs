//! Which environment variable carries a provider's API key into a worker.
//!
//! A built-in table until the provider registry supplies the variable itself; each row names
//! where the variable comes from.

use crate::error::{Error, Result};

/// `(provider, variable, source)` for every provider the store holds keys for.
///
/// | provider | variable | source |
/// | --- | --- | --- |
/// | codex | `OPENAI_API_KEY` | Codex CLI docs, API-key authentication |
/// | gemini | `GEMINI_API_KEY` | Gemini CLI docs, authentication |
/// | claude | `ANTHROPIC_API_KEY` | Claude Code docs, environment variables |
/// | kimi | `MOONSHOT_API_KEY` | Moonshot AI platform docs |
/// | qwen | `DASHSCOPE_API_KEY` | Alibaba Cloud Model Studio (DashScope) docs |
/// | aider | `OPENAI_API_KEY` | aider docs, API keys (its default OpenAI models) |
/// | sim | `CREWMUX_SIM_API_KEY` | the built-in simulated agent (tests and demos) |
pub const PROVIDER_KEY_VARS: &[(&str, &str, &str)] = &[
    ("codex", "OPENAI_API_KEY", "Codex CLI docs"),
    ("gemini", "GEMINI_API_KEY", "Gemini CLI docs"),
    ("claude", "ANTHROPIC_API_KEY", "Claude Code docs"),
    ("kimi", "MOONSHOT_API_KEY", "Moonshot AI platform docs"),
    ("qwen", "DASHSCOPE_API_KEY", "DashScope docs"),
    ("aider", "OPENAI_API_KEY", "aider docs"),
    ("sim", "CREWMUX_SIM_API_KEY", "crewmux sim agent"),
];

/// The variable that carries `provider`'s key, or `None` for a provider without one.
pub fn key_var(provider: &str) -> Option<&'static str> {
    PROVIDER_KEY_VARS
        .iter()
        .find(|(name, _, _)| *name == provider)
        .map(|(_, var, _)| *var)
}

/// Like [`key_var`], for commands that need one.
///
/// Errors (usage): the provider has no variable; the message lists those that do.
pub fn require_key_var(provider: &str) -> Result<&'static str> {
    key_var(provider).ok_or_else(|| {
        Error::Usage(format!(
            "provider `{provider}` takes no API key from the credential store; use one of {}",
            known_providers()
        ))
    })
}

/// The providers of [`PROVIDER_KEY_VARS`], comma-separated, for error messages.
pub fn known_providers() -> String {
    PROVIDER_KEY_VARS
        .iter()
        .map(|(name, _, _)| *name)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_covers_the_named_providers() {
        assert_eq!(key_var("codex"), Some("OPENAI_API_KEY"));
        assert_eq!(key_var("gemini"), Some("GEMINI_API_KEY"));
        assert_eq!(key_var("claude"), Some("ANTHROPIC_API_KEY"));
        assert_eq!(key_var("kimi"), Some("MOONSHOT_API_KEY"));
        assert_eq!(key_var("qwen"), Some("DASHSCOPE_API_KEY"));
        assert_eq!(key_var("nope"), None);
        assert!(known_providers().starts_with("codex, gemini"));
        let err = require_key_var("command").unwrap_err().to_string();
        assert!(
            err.contains("`command`") && err.contains("codex, gemini"),
            "{err}"
        );
    }
}
