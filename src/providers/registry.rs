//! The [`Registry`]: the built-in `assets/providers.toml`, merged per field with the user's
//! and the project's `providers.toml`, validated once.
#![allow(
    clippy::expect_used,
    reason = "built-in assets embedded at compile time; their tests parse them"
)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::spec::{
    compile, toml_error, PromptVia, ProviderKind, ProviderSpec, BUILTIN_PROVIDERS, MODEL_ROLES,
};
use crate::error::{Error, Result};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProvidersFile {
    // Parsed only to report unknown fields and wrong types with their line.
    #[allow(dead_code)]
    #[serde(default)]
    providers: BTreeMap<String, ProviderSpec>,
}

/// All known providers, in name order, after merging the override files.
#[derive(Debug, Clone, PartialEq)]
pub struct Registry {
    providers: BTreeMap<String, ProviderSpec>,
    /// Override files that were read, in the order applied.
    pub sources: Vec<PathBuf>,
    /// The worker roles: built-in, then the `agents.toml` beside each providers.toml.
    roles: super::agents::Roles,
    /// Where a user's and a project's `agents.toml` go (for the unknown-role line).
    role_dirs: (Option<PathBuf>, Option<PathBuf>),
}

/// Where the user's config lives: `$CREWMUX_CONFIG_DIR`, else `$XDG_CONFIG_HOME/crewmux`,
/// else `$HOME/.config/crewmux`.
pub fn user_config_dir(env: &crate::providers::EnvSnapshot) -> Option<PathBuf> {
    if let Some(dir) = env.get("CREWMUX_CONFIG_DIR") {
        return Some(PathBuf::from(dir));
    }
    if let Some(dir) = env.get("XDG_CONFIG_HOME") {
        return Some(PathBuf::from(dir).join("crewmux"));
    }
    env.get("HOME")
        .map(|h| PathBuf::from(h).join(".config").join("crewmux"))
}

impl Registry {
    /// The built-in providers only (parsed and validated once per process).
    pub fn builtin() -> Self {
        static BUILTIN: std::sync::LazyLock<Registry> = std::sync::LazyLock::new(|| {
            Registry::from_layers(&[(Path::new("assets/providers.toml"), BUILTIN_PROVIDERS)])
                .expect("assets/providers.toml is valid (checked by tests)")
        });
        BUILTIN.clone()
    }

    /// Built-ins, then `<config dir>/providers.toml`, then `<project>/.crewmux/providers.toml`
    /// when they exist.
    ///
    /// # Errors
    /// A file that cannot be read or parsed, named with its line.
    pub fn load(project: Option<&Path>, env: &crate::providers::EnvSnapshot) -> Result<Self> {
        let mut files: Vec<PathBuf> = Vec::new();
        if let Some(dir) = user_config_dir(env) {
            files.push(dir.join("providers.toml"));
        }
        if let Some(p) = project {
            files.push(p.join(".crewmux").join("providers.toml"));
        }
        let mut texts: Vec<(PathBuf, String)> = Vec::new();
        for f in files {
            match std::fs::read_to_string(&f) {
                Ok(t) => texts.push((f, t)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::Usage(format!("{}: cannot read: {e}", f.display()))),
            }
        }
        let mut layers: Vec<(&Path, &str)> =
            vec![(Path::new("assets/providers.toml"), BUILTIN_PROVIDERS)];
        layers.extend(texts.iter().map(|(p, t)| (p.as_path(), t.as_str())));
        let mut reg = Self::from_layers(&layers)?;
        reg.sources = texts.into_iter().map(|(p, _)| p).collect();
        // The roles beside the providers: `agents.toml` in the same two folders.
        let dirs = (user_config_dir(env), project.map(|p| p.join(".crewmux")));
        let mut role_files: Vec<(PathBuf, String)> = Vec::new();
        for d in [&dirs.0, &dirs.1].into_iter().flatten() {
            let f = d.join("agents.toml");
            match std::fs::read_to_string(&f) {
                Ok(t) => role_files.push((f, t)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::Usage(format!("{}: cannot read: {e}", f.display()))),
            }
        }
        let names: Vec<&str> = reg.names().collect();
        reg.roles = super::agents::Roles::with_layers(&role_files, &names)?;
        reg.role_dirs = dirs;
        Ok(reg)
    }

    /// Merge TOML layers (first is the base) field by field and validate the result.
    ///
    /// # Errors
    /// [`Error::Usage`] naming the layer's file and line: TOML that does not parse, or a provider
    /// that fails validation.
    pub fn from_layers(layers: &[(&Path, &str)]) -> Result<Self> {
        let mut merged = toml::Table::new();
        for (path, text) in layers {
            // Typed parse first: unknown fields and wrong types are reported with their line.
            toml::from_str::<ProvidersFile>(text).map_err(|e| toml_error(path, text, &e))?;
            let table: toml::Table =
                toml::from_str(text).map_err(|e| toml_error(path, text, &e))?;
            if let Some(toml::Value::Table(provs)) = table.get("providers") {
                for (name, value) in provs {
                    let toml::Value::Table(fields) = value else {
                        continue;
                    };
                    let entry = merged
                        .entry(name.clone())
                        .or_insert_with(|| toml::Value::Table(toml::Table::new()));
                    let toml::Value::Table(target) = entry else {
                        unreachable!()
                    };
                    for (k, v) in fields {
                        match (k.as_str(), v, target.get_mut(k)) {
                            (
                                "auth" | "models" | "env" | "exit_codes" | "prices",
                                toml::Value::Table(sub),
                                Some(toml::Value::Table(old)),
                            ) => {
                                for (sk, sv) in sub {
                                    old.insert(sk.clone(), sv.clone());
                                }
                            }
                            _ => {
                                target.insert(k.clone(), v.clone());
                            }
                        }
                    }
                }
            }
        }
        let mut providers = BTreeMap::new();
        for (name, value) in merged {
            let spec: ProviderSpec = value.try_into().map_err(|e: toml::de::Error| {
                Error::Usage(format!("provider `{name}`: {}", e.message()))
            })?;
            validate(&name, &spec)?;
            providers.insert(name, spec);
        }
        Ok(Registry {
            providers,
            sources: Vec::new(),
            roles: super::agents::Roles::builtin(),
            role_dirs: (None, None),
        })
    }

    /// The worker roles a team may name (built-in and the `agents.toml` files read).
    pub fn roles(&self) -> &super::agents::Roles {
        &self.roles
    }

    /// The one line for a role nobody defined: the known roles, and both `agents.toml`
    /// files a role of one's own goes in.
    pub fn unknown_role(&self, role: &str) -> String {
        self.roles.unknown(
            role,
            self.role_dirs.0.as_deref(),
            self.role_dirs.1.as_deref(),
        )
    }

    pub fn get(&self, name: &str) -> Option<&ProviderSpec> {
        self.providers.get(name)
    }

    /// A provider by name, or a usage error listing the known names.
    ///
    /// # Errors
    /// [`Error::Usage`] when `name` is not a known provider; the message lists the known names.
    pub fn require(&self, name: &str) -> Result<&ProviderSpec> {
        self.get(name).ok_or_else(|| {
            Error::Usage(format!(
                "unknown provider `{name}`: use one of {}",
                self.names().collect::<Vec<_>>().join(", ")
            ))
        })
    }

    /// Provider names in name order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.providers.keys().map(String::as_str)
    }

    /// `(name, spec)` pairs in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &ProviderSpec)> {
        self.providers.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// Real agent CLIs only.
    pub fn agents(&self) -> impl Iterator<Item = (&str, &ProviderSpec)> {
        self.iter().filter(|(_, s)| s.is_agent())
    }
}

fn validate(name: &str, spec: &ProviderSpec) -> Result<()> {
    let bad = |what: String| Err(Error::Usage(format!("provider `{name}`: {what}")));
    if spec.kind != ProviderKind::Command && spec.binary.trim().is_empty() {
        return bad("`binary` is empty: name the program to run".into());
    }
    if spec.prompt == PromptVia::ArgvFile && !spec.args.iter().any(|a| a.contains("{prompt_file}"))
    {
        return bad("`prompt = \"argv-file\"` needs `{prompt_file}` in `args`".into());
    }
    for code in spec.exit_codes.keys() {
        if !code
            .trim()
            .parse::<i32>()
            .is_ok_and(|c| (1..=255).contains(&c))
        {
            return bad(format!(
                "`exit_codes` key `{code}` is not an exit code: use 1..=255"
            ));
        }
    }
    for role in spec.models.keys() {
        if !MODEL_ROLES.contains(&role.as_str()) {
            return bad(format!(
                "unknown model role `{role}` in `models`: use {}",
                MODEL_ROLES.join(", ")
            ));
        }
    }
    for p in spec
        .rate_limit_patterns
        .iter()
        .chain(&spec.waiting_patterns)
        .chain(&spec.noise_patterns)
        .chain(&spec.stall_patterns)
        .chain(&spec.auth.not_patterns)
        .chain(&spec.auth.ok_patterns)
        .chain(spec.exit_output.iter().map(|r| &r.pattern))
    {
        if let Err(e) = compile(p) {
            let first = e.to_string().lines().last().unwrap_or_default().to_string();
            return bad(format!("bad pattern `{p}`: {first}"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_parse_and_have_the_spec_providers() {
        let reg = Registry::builtin();
        for name in [
            "codex", "gemini", "claude", "kimi", "opencode", "qwen", "aider", "command", "sim",
        ] {
            assert!(reg.get(name).is_some(), "missing {name}");
        }
        assert_eq!(reg.agents().count(), 7);
        assert_eq!(
            reg.get("codex").unwrap().model_for_role("smol"),
            Some("gpt-6-luna")
        );
        // A role without a row falls back to `default`.
        assert_eq!(
            reg.get("qwen").unwrap().model_for_role("slow"),
            Some("coder-model")
        );
        assert_eq!(reg.get("kimi").unwrap().model_for_role("slow"), None);
    }

    #[test]
    fn later_layer_wins_per_field_and_merges_tables() {
        let user = "[providers.codex]\ninstall_hint = \"brew install codex\"\n[providers.codex.models]\nsmol = \"tiny\"\n[providers.mine]\nbinary = \"mine\"\n";
        let reg = Registry::from_layers(&[
            (Path::new("builtin"), BUILTIN_PROVIDERS),
            (Path::new("user.toml"), user),
        ])
        .unwrap();
        let codex = reg.get("codex").unwrap();
        assert_eq!(codex.install_hint, "brew install codex");
        assert_eq!(codex.model_for_role("smol"), Some("tiny"));
        // Untouched fields and table rows stay.
        assert_eq!(codex.model_for_role("slow"), Some("gpt-6.2-astra"));
        assert_eq!(codex.binary, "codex");
        assert!(reg.get("mine").unwrap().is_agent());
    }

    #[test]
    fn unknown_field_in_override_names_file_line_and_field() {
        let user = "[providers.codex]\nbinary = \"codex\"\nargz = []\n";
        let err = Registry::from_layers(&[
            (Path::new("builtin"), BUILTIN_PROVIDERS),
            (Path::new("/home/u/.config/crewmux/providers.toml"), user),
        ])
        .unwrap_err()
        .to_string();
        assert!(
            err.starts_with("/home/u/.config/crewmux/providers.toml:3:"),
            "{err}"
        );
        assert!(err.contains("argz"), "{err}");
        assert!(!err.contains('\n'));
    }

    #[test]
    fn argv_file_without_placeholder_is_refused() {
        let user = "[providers.x]\nbinary = \"x\"\nprompt = \"argv-file\"\nargs = [\"run\"]\n";
        let err = Registry::from_layers(&[(Path::new("p.toml"), user)])
            .unwrap_err()
            .to_string();
        assert!(err.contains("{prompt_file}"), "{err}");
    }
}
