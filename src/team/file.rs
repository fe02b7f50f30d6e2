//! Team files (docs/design.md "Team files"): reading a TOML team, the built-in modes embedded from
//! `assets/teams/`, and validation that reports ONE line naming the file, line and field.
#![allow(
    clippy::expect_used,
    reason = "a regex literal and lookups of ids checked just before"
)]

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;
use serde::Deserialize;
use toml::Spanned;

use crate::domain::TeamSpec;
use crate::error::{Error, Result};
use crate::providers::spec::{line_col, toml_error};
use crate::providers::{ProviderKind, Registry, MODEL_ROLES};

/// A built-in team (`--mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Five tracks: architect, backend, frontend, security, testing.
    Crazy,
    /// Backend on codex + frontend on gemini.
    Ccg,
    /// One worker on the inferred target.
    Solo,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Crazy => "crazy",
            Mode::Ccg => "ccg",
            Mode::Solo => "solo",
        }
    }

    /// The embedded team file of the mode.
    pub fn source(self) -> &'static str {
        match self {
            Mode::Crazy => include_str!("../../assets/teams/crazy.toml"),
            Mode::Ccg => include_str!("../../assets/teams/ccg.toml"),
            Mode::Solo => include_str!("../../assets/teams/solo.toml"),
        }
    }
}

/// Targets a worker or a run may name besides a provider.
pub const TARGET_WORDS: [&str; 2] = ["auto", "ccg"];

/// A parsed, validated team and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedTeam {
    pub spec: TeamSpec,
    /// `mode:ccg` or the file path.
    pub source: String,
    /// Directory that relative `prompt_file`s are read from.
    pub base_dir: Option<PathBuf>,
}

/// Parse and validate a built-in mode.
///
/// # Errors
/// As [`parse_and_validate`] (a built-in team that fails it is a bug its tests catch).
pub fn load_mode(mode: Mode, registry: &Registry) -> Result<LoadedTeam> {
    let path = PathBuf::from(format!("assets/teams/{}.toml", mode.as_str()));
    let spec = parse_and_validate(&path, mode.source(), registry)?;
    Ok(LoadedTeam {
        spec,
        source: format!("mode:{}", mode.as_str()),
        base_dir: None,
    })
}

/// Read, parse and validate a team file. Errors: one line `FILE:LINE:COL: message`.
///
/// # Errors
/// [`Error::Usage`]: the file cannot be read, or as [`parse_and_validate`].
pub fn load_file(path: &Path, registry: &Registry) -> Result<LoadedTeam> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::Usage(format!("{}: cannot read team file: {e}", path.display())))?;
    let spec = parse_and_validate(path, &text, registry)?;
    Ok(LoadedTeam {
        spec,
        source: path.display().to_string(),
        base_dir: path.parent().map(Path::to_path_buf),
    })
}

// Spans of the fields that validation talks about.
#[derive(Deserialize)]
struct TeamSpans {
    #[serde(default)]
    parallel: Option<Spanned<i64>>,
    #[serde(default)]
    worker: Vec<Spanned<WorkerSpans>>,
    #[serde(default)]
    check: Vec<Spanned<CheckSpans>>,
    #[serde(default)]
    critic: Vec<Spanned<CriticSpans>>,
    #[serde(default)]
    sandbox: Option<Spanned<crate::domain::SandboxSpec>>,
}

#[derive(Deserialize)]
struct CriticSpans {
    id: Spanned<String>,
    #[serde(default)]
    after: Option<Spanned<Vec<Spanned<String>>>>,
}

#[derive(Deserialize)]
struct WorkerSpans {
    id: Spanned<String>,
    role: Spanned<String>,
    #[serde(default)]
    provider: Option<Spanned<String>>,
    #[serde(default)]
    target: Option<Spanned<String>>,
    #[serde(default)]
    command: Option<Spanned<Vec<String>>>,
    #[serde(default)]
    model: Option<Spanned<String>>,
    #[serde(default)]
    role_model: Option<Spanned<String>>,
    #[serde(default)]
    prompt: Option<Spanned<String>>,
    #[serde(default)]
    prompt_file: Option<Spanned<String>>,
    #[serde(default)]
    max_attempts: Option<Spanned<i64>>,
    #[serde(default)]
    artifacts: Option<Spanned<Vec<String>>>,
    #[serde(default)]
    after: Option<Spanned<Vec<Spanned<String>>>>,
    #[serde(default)]
    sandbox: Option<Spanned<crate::domain::SandboxSpec>>,
}

#[derive(Deserialize)]
struct CheckSpans {
    id: Spanned<String>,
    command: Spanned<Vec<String>>,
}

static ID: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^[a-z0-9-]+$").expect("valid"));

/// A worker's or critic's id and its `after` list, with spans.
type After<'a> = (&'a str, Option<&'a Spanned<Vec<Spanned<String>>>>);

/// `after` names only ids of `nodes` (or of `also`, ids that have ended by the time these
/// run), never the node itself, and makes no cycle (spelled out `a → b → a`).
fn check_after(
    what: &str,
    nodes: &[After],
    also: &[&str],
    at: &dyn Fn(std::ops::Range<usize>, String) -> Error,
) -> Result<()> {
    let ids: Vec<&str> = nodes.iter().map(|n| n.0).collect();
    for (id, after) in nodes {
        for up in after.iter().flat_map(|a| a.get_ref()) {
            let name = up.get_ref().as_str();
            if name == *id {
                return Err(at(
                    up.span(),
                    format!("{what} `{id}`: `after` names itself: remove `{name}`"),
                ));
            }
            if !ids.contains(&name) && !also.contains(&name) {
                let known: Vec<&str> = ids
                    .iter()
                    .chain(also)
                    .copied()
                    .filter(|k| k != id)
                    .collect();
                let fix = if known.is_empty() {
                    format!("no other {what} to wait for: remove `after`")
                } else {
                    format!("use one of {}", known.join(", "))
                };
                return Err(at(
                    up.span(),
                    format!("{what} `{id}`: `after` names unknown id `{name}`: {fix}"),
                ));
            }
        }
    }
    let graph: Vec<(&str, Vec<&str>)> = nodes
        .iter()
        .map(|(id, after)| {
            let ups = after
                .iter()
                .flat_map(|a| a.get_ref())
                .map(|u| u.get_ref().as_str())
                .collect();
            (*id, ups)
        })
        .collect();
    if let Some(cycle) = crate::engine::graph::find_cycle(&graph) {
        // Point at the entry of the first node that leads into the cycle.
        let entry = nodes
            .iter()
            .find(|n| n.0 == cycle[0])
            .and_then(|n| n.1)
            .and_then(|a| a.get_ref().iter().find(|u| u.get_ref() == &cycle[1]))
            .expect("a node in a cycle names the next one");
        return Err(at(
            entry.span(),
            format!(
                "{what} `{}`: `after` makes a cycle: {}: remove one of these dependencies",
                cycle[0],
                cycle.join(" → ")
            ),
        ));
    }
    Ok(())
}

/// Parse `text` as a team (unknown fields are errors) and validate it: at least one worker; ids
/// `[a-z0-9-]+` and unique; a known role (assets/agents.toml); a known provider, or a target that
/// is `auto`, `ccg` or a provider, not both; `command` given exactly when the provider is
/// `command`; `model` and `role_model` not both, `role_model` a model role; `prompt` and
/// `prompt_file` not both; attempts and parallel ≥ 1 (timeouts ≥ 0, 0 is off); artifacts relative
/// without `..`; `after` naming known ids, not itself, without cycles (workers name workers;
/// critics name critics or workers); checks with unique ids and a non-empty command.
///
/// # Errors
/// [`Error::Usage`], one line `FILE:LINE:COL: message` naming the field and the fix: TOML
/// that does not parse, an unknown field, or the first rule above that fails.
#[allow(clippy::too_many_lines, reason = "one check per field in file order")]
pub fn parse_and_validate(path: &Path, text: &str, registry: &Registry) -> Result<TeamSpec> {
    let spec: TeamSpec = toml::from_str(text).map_err(|e| {
        super::missing::missing_field(path, text, &e).unwrap_or_else(|| {
            let err = toml_error(path, text, &e);
            match e.span() {
                Some(span) => super::missing::with_entry(err, text, span.start),
                None => err,
            }
        })
    })?;
    let spans: TeamSpans = toml::from_str(text).map_err(|e| toml_error(path, text, &e))?;
    let at = |span: std::ops::Range<usize>, msg: String| -> Error {
        let (line, col) = line_col(text, span.start);
        Error::Usage(format!("{}:{line}:{col}: {msg}", path.display()))
    };
    if spans.worker.is_empty() {
        return Err(at(
            0..0,
            "no `[[worker]]`: a team needs at least one worker".into(),
        ));
    }
    if let Some(p) = &spans.parallel {
        if !(1..=256).contains(p.get_ref()) {
            return Err(at(
                p.span(),
                format!("`parallel` = {}: use 1..=256", p.get_ref()),
            ));
        }
    }
    let mut ids = HashSet::new();
    for w in &spans.worker {
        let w = w.get_ref();
        let id = w.id.get_ref();
        let field = |name: &str| format!("worker `{id}`: `{name}`");
        if !ID.is_match(id) {
            return Err(at(
                w.id.span(),
                format!("worker id `{id}`: use lowercase letters, digits and `-`"),
            ));
        }
        if !ids.insert(id.clone()) {
            return Err(at(
                w.id.span(),
                format!("worker id `{id}` is used twice: ids must be unique"),
            ));
        }
        let role = w.role.get_ref();
        if registry.roles().get(role).is_none() {
            return Err(at(
                w.role.span(),
                format!("{}: {}", field("role"), registry.unknown_role(role)),
            ));
        }
        if let (Some(_), Some(t)) = (&w.provider, &w.target) {
            return Err(at(
                t.span(),
                format!("{}: give `provider` or `target`, not both", field("target")),
            ));
        }
        let mut kind = None;
        if let Some(p) = &w.provider {
            match registry.get(p.get_ref()) {
                Some(s) => kind = Some(s.kind),
                None => {
                    return Err(at(
                        p.span(),
                        format!(
                            "{}: unknown provider `{}`: use one of {}",
                            field("provider"),
                            p.get_ref(),
                            registry.names().collect::<Vec<_>>().join(", ")
                        ),
                    ))
                }
            }
        }
        if let Some(t) = &w.target {
            let t_str = t.get_ref().as_str();
            if !TARGET_WORDS.contains(&t_str)
                && registry
                    .get(t_str)
                    .is_none_or(|s| s.kind != ProviderKind::Agent)
            {
                return Err(at(
                    t.span(),
                    format!(
                        "{}: unknown target `{t_str}`: use auto, ccg or an agent provider ({})",
                        field("target"),
                        registry
                            .agents()
                            .map(|(n, _)| n)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            }
        }
        match (kind == Some(ProviderKind::Command), &w.command) {
            (true, None) => {
                let p = w.provider.as_ref().expect("kind came from provider");
                return Err(at(
                    p.span(),
                    format!(
                        "{}: provider `command` needs `command = [argv...]`",
                        field("command")
                    ),
                ));
            }
            (true, Some(c)) if c.get_ref().is_empty() || c.get_ref()[0].trim().is_empty() => {
                return Err(at(
                    c.span(),
                    format!(
                        "{}: is empty: give the program and its arguments",
                        field("command")
                    ),
                ));
            }
            (false, Some(c)) => {
                return Err(at(
                    c.span(),
                    format!("{}: only for `provider = \"command\"`", field("command")),
                ));
            }
            _ => {}
        }
        if let (Some(_), Some(r)) = (&w.model, &w.role_model) {
            return Err(at(
                r.span(),
                format!(
                    "{}: give `model` or `role_model`, not both",
                    field("role_model")
                ),
            ));
        }
        if let Some(r) = &w.role_model {
            if !MODEL_ROLES.contains(&r.get_ref().as_str()) {
                return Err(at(
                    r.span(),
                    format!(
                        "{}: unknown model role `{}`: use {}",
                        field("role_model"),
                        r.get_ref(),
                        MODEL_ROLES.join(", ")
                    ),
                ));
            }
        }
        if let (Some(_), Some(pf)) = (&w.prompt, &w.prompt_file) {
            return Err(at(
                pf.span(),
                format!(
                    "{}: give `prompt` or `prompt_file`, not both",
                    field("prompt_file")
                ),
            ));
        }
        // Timeouts may be 0 (off); a negative one fails to parse as a u64 above.
        for (name, v) in [("max_attempts", &w.max_attempts)] {
            if let Some(v) = v {
                if *v.get_ref() < 1 {
                    return Err(at(
                        v.span(),
                        format!("{}: is {}: use 1 or more", field(name), v.get_ref()),
                    ));
                }
            }
        }
        let team_sandbox = spans.sandbox.as_ref().map(Spanned::get_ref);
        if let Some(msg) =
            super::sandbox::problem(team_sandbox, w.sandbox.as_ref().map(Spanned::get_ref))
        {
            let span = match (&w.sandbox, &spans.sandbox) {
                (Some(s), _) | (None, Some(s)) => s.span(),
                (None, None) => w.id.span(),
            };
            return Err(at(span, format!("{}: {msg}", field("sandbox"))));
        }
        if let Some(a) = &w.artifacts {
            if let Some(bad) = a.get_ref().iter().find(|p| {
                let p = Path::new(p);
                p.is_absolute() || p.components().any(|c| c == std::path::Component::ParentDir)
            }) {
                return Err(at(
                    a.span(),
                    format!(
                        "{}: `{bad}` must be relative to the attempt dir, without `..`",
                        field("artifacts")
                    ),
                ));
            }
        }
    }
    let workers: Vec<After> = spans
        .worker
        .iter()
        .map(|w| {
            (
                w.get_ref().id.get_ref().as_str(),
                w.get_ref().after.as_ref(),
            )
        })
        .collect();
    check_after("worker", &workers, &[], &at)?;
    let critics: Vec<After> = spans
        .critic
        .iter()
        .map(|c| {
            (
                c.get_ref().id.get_ref().as_str(),
                c.get_ref().after.as_ref(),
            )
        })
        .collect();
    let worker_ids: Vec<&str> = workers.iter().map(|w| w.0).collect();
    check_after("critic", &critics, &worker_ids, &at)?;
    let mut check_ids = HashSet::new();
    for c in &spans.check {
        let c = c.get_ref();
        let id = c.id.get_ref();
        if !ID.is_match(id) {
            return Err(at(
                c.id.span(),
                format!("check id `{id}`: use lowercase letters, digits and `-`"),
            ));
        }
        if !check_ids.insert(id.clone()) {
            return Err(at(
                c.id.span(),
                format!("check id `{id}` is used twice: ids must be unique"),
            ));
        }
        if c.command.get_ref().is_empty() {
            return Err(at(
                c.command.span(),
                format!("check `{id}`: `command` is empty: give the program and its arguments"),
            ));
        }
    }
    Ok(spec)
}
