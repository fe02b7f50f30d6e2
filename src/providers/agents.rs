//! The agent registry (`assets/agents.toml`): persona, model role, routing domain and
//! preferred target of each worker role.
#![allow(
    clippy::expect_used,
    reason = "built-in assets embedded at compile time; their tests parse them"
)]

use std::collections::BTreeMap;
use std::sync::LazyLock;

use serde::Deserialize;

use crate::error::{Error, Result};
use crate::providers::MODEL_ROLES;

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
    /// The provider this role is routed to first (built-in roles: `codex` or `gemini`).
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

/// The agent of a built-in role, if known (a project's own roles: [`Roles::get`]).
pub fn agent(role: &str) -> Option<&'static AgentSpec> {
    AGENTS.get(role)
}

/// Built-in role names, in name order (with a project's own: [`Roles::names`]).
pub fn roles() -> impl Iterator<Item = &'static str> {
    AGENTS.keys().map(String::as_str)
}

/// The routing domains a role may name (`choose` routes by them; a provider's `domains`).
pub const DOMAINS: &[&str] = &[
    "backend",
    "frontend",
    "plan",
    "security",
    "testing",
    "review",
    "fix",
    "synthesis",
];

/// One `[agents.NAME]` of a user's or project's `agents.toml`: a new role (every field),
/// or fields that replace a built-in role's.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RoleLayer {
    persona: Option<String>,
    model_role: Option<String>,
    domain: Option<String>,
    prefers: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LayerFile {
    #[serde(default)]
    agents: BTreeMap<String, RoleLayer>,
}

/// The worker roles a run may name: the built-in ones (`assets/agents.toml`), then
/// `<config dir>/agents.toml`, then `<project>/.crewmux/agents.toml`, each beside its
/// `providers.toml` and read with it (`Registry::load`).
#[derive(Debug, Clone, PartialEq)]
pub struct Roles {
    roles: BTreeMap<String, AgentSpec>,
    /// The `agents.toml` files that were read, in the order applied.
    pub sources: Vec<std::path::PathBuf>,
}

impl Roles {
    /// The built-in roles only.
    pub fn builtin() -> Self {
        Roles {
            roles: AGENTS.clone(),
            sources: Vec::new(),
        }
    }

    /// The built-in roles with `files` (path, text) over them in order; `providers`: the
    /// provider names a role may prefer.
    ///
    /// # Errors
    /// [`Error::Usage`] naming the file: TOML that does not parse (with its line), an
    /// unknown field, a new role without one of its four fields, a `model_role`, `domain`
    /// or `prefers` that is not one crewmux knows.
    pub fn with_layers(files: &[(std::path::PathBuf, String)], providers: &[&str]) -> Result<Self> {
        let mut roles = AGENTS.clone();
        for (path, text) in files {
            let file = path.display();
            let layer: LayerFile = toml::from_str(text)
                .map_err(|e| Error::Usage(format!("{file}: {}", e.message().trim())))?;
            for (name, l) in layer.agents {
                let base = roles.get(&name).cloned();
                let field = |v: Option<String>, old: Option<&String>, what: &str| {
                    v.or_else(|| old.cloned()).ok_or_else(|| {
                        Error::Usage(format!(
                            "{file}: [agents.{name}] is a new role: add `{what}`"
                        ))
                    })
                };
                let spec = AgentSpec {
                    persona: field(l.persona, base.as_ref().map(|b| &b.persona), "persona")?,
                    model_role: field(
                        l.model_role,
                        base.as_ref().map(|b| &b.model_role),
                        "model_role",
                    )?,
                    domain: field(l.domain, base.as_ref().map(|b| &b.domain), "domain")?,
                    prefers: field(l.prefers, base.as_ref().map(|b| &b.prefers), "prefers")?,
                };
                let bad = |what: &str, v: &str, known: &[&str]| {
                    Error::Usage(format!(
                        "{file}: [agents.{name}] {what} `{v}`: use one of {}",
                        known.join(", ")
                    ))
                };
                if !MODEL_ROLES.contains(&spec.model_role.as_str()) {
                    return Err(bad("model_role", &spec.model_role, &MODEL_ROLES));
                }
                if !DOMAINS.contains(&spec.domain.as_str()) {
                    return Err(bad("domain", &spec.domain, DOMAINS));
                }
                if !providers.contains(&spec.prefers.as_str()) {
                    return Err(bad("prefers", &spec.prefers, providers));
                }
                roles.insert(name, spec);
            }
        }
        Ok(Roles {
            roles,
            sources: files.iter().map(|(p, _)| p.clone()).collect(),
        })
    }

    /// The agent of `role`, if known.
    pub fn get(&self, role: &str) -> Option<&AgentSpec> {
        self.roles.get(role)
    }

    /// Role names, in name order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.roles.keys().map(String::as_str)
    }

    /// `unknown role `X`: use one of …; a role of your own goes in <user file> or
    /// <project file>`: the one line for a role nobody defined, naming both files.
    pub fn unknown(
        &self,
        role: &str,
        user: Option<&std::path::Path>,
        project: Option<&std::path::Path>,
    ) -> String {
        let files: Vec<String> = [user, project]
            .into_iter()
            .flatten()
            .map(|d| d.join("agents.toml").display().to_string())
            .collect();
        let mut s = format!(
            "unknown role `{role}`: use one of {}",
            self.names().collect::<Vec<_>>().join(", ")
        );
        if !files.is_empty() {
            s.push_str(&format!(", or define it in {}", files.join(" or ")));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    fn layered(text: &str) -> Result<Roles> {
        Roles::with_layers(
            &[(
                std::path::PathBuf::from("/p/.crewmux/agents.toml"),
                text.to_string(),
            )],
            &["codex", "claude", "gemini"],
        )
    }

    #[test]
    fn an_agents_toml_adds_roles_and_overrides_built_in_fields() {
        let roles = layered(
            "[agents.data-engineer]\npersona = \"data engineer who keeps pipelines idempotent\"\nmodel_role = \"default\"\ndomain = \"backend\"\nprefers = \"claude\"\n\n[agents.reviewer]\nprefers = \"claude\"\n",
        )
        .unwrap();
        let d = roles.get("data-engineer").unwrap();
        assert_eq!(
            (d.domain.as_str(), d.prefers.as_str()),
            ("backend", "claude")
        );
        let r = roles.get("reviewer").unwrap();
        assert_eq!(r.prefers, "claude");
        assert_eq!(
            r.persona,
            agent("reviewer").unwrap().persona,
            "the rest stays built in"
        );
        assert!(roles.names().any(|n| n == "architect"));
    }

    #[test]
    fn a_bad_agents_toml_is_one_line_naming_the_file() {
        for (text, says) in [
            (
                "[agents.x]\npersona = \"p\"\n",
                "/p/.crewmux/agents.toml: [agents.x] is a new role: add `model_role`",
            ),
            (
                "[agents.reviewer]\nmodel_role = \"huge\"\n",
                "/p/.crewmux/agents.toml: [agents.reviewer] model_role `huge`: use one of",
            ),
            (
                "[agents.reviewer]\ndomain = \"cooking\"\n",
                "[agents.reviewer] domain `cooking`: use one of backend,",
            ),
            (
                "[agents.reviewer]\nprefers = \"nosuch\"\n",
                "[agents.reviewer] prefers `nosuch`: use one of codex, claude, gemini",
            ),
            (
                "[agents.reviewer]\ncolour = \"red\"\n",
                "/p/.crewmux/agents.toml: unknown field `colour`",
            ),
        ] {
            let e = layered(text).unwrap_err().to_string();
            assert!(e.contains(says), "{text}: {e}");
            assert_eq!(e.lines().count(), 1, "{e}");
        }
    }

    #[test]
    fn an_unknown_role_names_both_files() {
        let roles = Roles::builtin();
        let line = roles.unknown(
            "poet",
            Some(std::path::Path::new("/home/u/.config/crewmux")),
            Some(std::path::Path::new("/p/.crewmux")),
        );
        assert!(
            line.starts_with("unknown role `poet`: use one of architect,"),
            "{line}"
        );
        assert!(
            line.ends_with(
                "or define it in /home/u/.config/crewmux/agents.toml or /p/.crewmux/agents.toml"
            ),
            "{line}"
        );
    }
}
