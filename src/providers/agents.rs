//! The agent registry (`assets/agents.toml`): persona, model role, routing domain and
//! preferred target of each worker role.
#![allow(
    clippy::expect_used,
    reason = "built-in assets embedded at compile time; their tests parse them"
)]

use std::collections::BTreeMap;
use std::sync::LazyLock;

use serde::Deserialize;

/// The built-in agent registry, embedded at build time.
pub const BUILTIN_AGENTS: &str = include_str!("../../assets/agents.toml");

/// One worker role.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentSpec {
    /// Completes "You are a ...".
    pub persona: String,
    /// Row of a provider's `models` this role asks for.
    pub model_role: String,
    /// Routing domain (backend, frontend, plan, security, testing, review, fix, synthesis).
    pub domain: String,
    /// `codex` or `gemini`: the provider this role is routed to first.
    pub prefers: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentsFile {
    agents: BTreeMap<String, AgentSpec>,
}

static AGENTS: LazyLock<BTreeMap<String, AgentSpec>> = LazyLock::new(|| {
    toml::from_str::<AgentsFile>(BUILTIN_AGENTS)
        .expect("assets/agents.toml is valid (checked by tests)")
        .agents
});

/// The agent of a role, if known.
pub fn agent(role: &str) -> Option<&'static AgentSpec> {
    AGENTS.get(role)
}

/// Known role names, in name order.
pub fn roles() -> impl Iterator<Item = &'static str> {
    AGENTS.keys().map(String::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::MODEL_ROLES;

    #[test]
    fn registry_has_the_spec_roles_with_valid_fields() {
        for r in [
            "architect",
            "backend-engineer",
            "frontend-designer",
            "security-auditor",
            "testing-engineer",
            "reviewer",
            "fixer",
            "synthesizer",
        ] {
            let a = agent(r).unwrap_or_else(|| panic!("missing {r}"));
            assert!(MODEL_ROLES.contains(&a.model_role.as_str()), "{r}");
            assert!(["codex", "gemini"].contains(&a.prefers.as_str()), "{r}");
        }
        assert_eq!(agent("frontend-designer").unwrap().prefers, "gemini");
        assert!(agent("nobody").is_none());
    }
}
