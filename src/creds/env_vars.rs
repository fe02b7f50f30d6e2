//! Which environment variable carries a provider's API key into a worker: the provider's
//! own `api_key_env` (assets/providers.toml, merged with the user's and the project's
//! providers.toml), so that `creds add` names the variable the launch sets and the CLI reads.
//! The `creds` commands read the project file of the current directory, as `doctor` does;
//! a run's launch reads its own project's (`Store::select_for_launch_in`). The variables
//! and their sources are in README's provider table.

use crate::error::{Error, Result};
use crate::providers::{EnvSnapshot, Registry};

/// The providers as the user configured them for the current directory: the built-ins, the
/// user's providers.toml and `<current dir>/.crewmux/providers.toml` (without the project
/// file when it is broken, built-ins alone when the user's is: the command that reads it
/// reports that itself).
pub(crate) fn registry() -> Registry {
    let env = EnvSnapshot::current();
    let project = std::env::current_dir().ok();
    Registry::load(project.as_deref(), &env)
        .or_else(|_| Registry::load(None, &env))
        .unwrap_or_else(|_| Registry::builtin())
}

/// `api_key_env` of `provider` in `registry`, when it names one.
pub fn key_var_in(registry: &Registry, provider: &str) -> Option<String> {
    registry
        .get(provider)?
        .api_key_env
        .clone()
        .filter(|v| !v.trim().is_empty())
}

/// The variable that carries `provider`'s key, or `None` for a provider without one.
pub fn key_var(provider: &str) -> Option<String> {
    key_var_in(&registry(), provider)
}

/// Like [`key_var`], for commands that need one.
///
/// # Errors
/// Usage errors: the provider has no variable; the message lists those that do.
pub fn require_key_var(provider: &str) -> Result<String> {
    let reg = registry();
    key_var_in(&reg, provider).ok_or_else(|| {
        Error::Usage(format!(
            "provider `{provider}` takes no API key from the credential store; use one of {}",
            providers_with_key_var(&reg)
        ))
    })
}

/// The providers that name an `api_key_env`, comma-separated, for error messages.
pub fn known_providers() -> String {
    providers_with_key_var(&registry())
}

fn providers_with_key_var(reg: &Registry) -> String {
    reg.names()
        .filter(|n| key_var_in(reg, n).is_some())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_variable_is_the_providers_api_key_env() {
        let reg = Registry::builtin();
        // Read from each CLI (see assets/providers.toml): codex exec 0.171 sends
        // $CODEX_API_KEY (not $OPENAI_API_KEY), kimi-cli reads $KIMI_API_KEY, qwen 0.15
        // reads $OPENAI_API_KEY.
        for (p, v) in [
            ("codex", "CODEX_API_KEY"),
            ("gemini", "GEMINI_API_KEY"),
            ("claude", "ANTHROPIC_API_KEY"),
            ("kimi", "KIMI_API_KEY"),
            ("qwen", "OPENAI_API_KEY"),
            ("aider", "OPENAI_API_KEY"),
            ("sim", "CREWMUX_SIM_API_KEY"),
        ] {
            assert_eq!(key_var_in(&reg, p).as_deref(), Some(v), "{p}");
        }
        assert_eq!(key_var_in(&reg, "opencode"), None);
        assert_eq!(key_var_in(&reg, "nope"), None);
        let known = providers_with_key_var(&reg);
        assert!(known.starts_with("aider, claude, codex"), "{known}");
        assert!(!known.contains("opencode") && !known.contains("command"));
    }
}
