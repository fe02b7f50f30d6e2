//! Prompt packaging (docs/design.md, after the OMG seed's `package_prompt`): persona and model,
//! project, working memory excerpt, profile digest, recent failures, the task, constraints;
//! capped at a character budget by dropping the lowest-priority sections, never the task.

use std::path::Path;

use super::agents;
use super::history::{History, PastFailure};

/// Default cap of a packaged prompt, characters (`--prompt-max-chars`).
pub const DEFAULT_MAX_CHARS: usize = 4000;
/// Working memory excerpt, characters (the seed's 500).
pub const MEMORY_EXCERPT_CHARS: usize = 500;
/// Profile digest, characters (the seed's 300).
pub const PROFILE_DIGEST_CHARS: usize = 300;
/// Past failures listed.
pub const MAX_FAILURES: usize = 5;

const CONSTRAINTS: &str = "Constraints: Follow the project's existing patterns. No hard-coded secrets. \
Verify your changes (build, tests) and say what you verified. Ask a question only when you cannot go on without an answer.";

/// What the attempt's MCP server offers (`crate::mcp`), said to every agent.
const TOOLS: &str =
    "Tools: the MCP server `crewmux` gives you `ask` (a question for the person who runs \
this team, with optional `choices` and a `default`; it waits for their answer and returns it) and \
`progress` (one line shown beside your name in their dashboard). Use `ask` only when you cannot go \
on without the person; otherwise decide, go on, and say in your result what you assumed. Without \
`ask`, a question as the last paragraph of your answer reaches the person too, but only once you \
have finished: their answer comes back as your next turn.";

/// Options of [`package`].
#[derive(Debug, Clone)]
pub struct PackageOptions {
    /// Cap, characters; the task is kept whole even when it alone is longer.
    pub max_chars: usize,
    /// `provider/model` line, e.g. `codex / gpt-6-luna`; None → "provider default".
    pub model: Option<String>,
    /// Failures to list; None → read this project's history.
    pub failures: Option<Vec<PastFailure>>,
    /// The run's inputs besides the problem, read for this attempt ([`Inputs`]).
    pub inputs: Inputs,
    /// The role's persona as the run's `agents.toml` files define it; `None`: the built-in
    /// role's (or `<role> specialist` for a role crewmux does not know).
    pub persona: Option<String>,
}

impl Default for PackageOptions {
    fn default() -> Self {
        Self {
            max_chars: DEFAULT_MAX_CHARS,
            model: None,
            failures: None,
            inputs: Inputs::default(),
            persona: None,
        }
    }
}

/// `--context`, `--files` (each path with its text, `None` when it could not be read) and
/// `--expected-outcome`, as one attempt's prompt gets them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Inputs {
    pub context: Option<String>,
    pub files: Vec<(std::path::PathBuf, Option<String>)>,
    pub expected_outcome: Option<String>,
}

/// A packaged prompt and what was left out to fit the cap.
#[derive(Debug, Clone, PartialEq)]
pub struct Packaged {
    pub text: String,
    /// Names of the dropped sections, in drop order.
    pub dropped: Vec<&'static str>,
    /// The task alone is longer than the cap (it is still kept whole).
    pub task_over_cap: bool,
}

struct Section {
    name: &'static str,
    /// Higher is kept longer; the task has the highest and is never dropped.
    keep: u8,
    text: String,
}

/// Package a worker's prompt; see [`package_report`] for what was dropped.
pub fn package(agent_role: &str, task: &str, project_dir: &Path, opts: &PackageOptions) -> String {
    package_report(agent_role, task, project_dir, opts).text
}

/// Build the sections in docs/design.md order, then, while over `max_chars`, drop the
/// section with the lowest priority: working memory, then profile, project, failures, persona, constraints.
/// The task is never dropped or cut; a task longer than the cap is kept whole and logged.
pub fn package_report(
    agent_role: &str,
    task: &str,
    project_dir: &Path,
    opts: &PackageOptions,
) -> Packaged {
    let mut sections = sections(agent_role, task, project_dir, opts);
    let total = |s: &[Section]| -> usize {
        s.iter().map(|x| x.text.chars().count()).sum::<usize>() + 2 * s.len().saturating_sub(1)
    };
    let mut dropped = Vec::new();
    while total(&sections) > opts.max_chars {
        let Some((i, _)) = sections
            .iter()
            .enumerate()
            .filter(|(_, s)| s.keep != u8::MAX)
            .min_by_key(|(_, s)| s.keep)
        else {
            break;
        };
        dropped.push(sections.remove(i).name);
    }
    let text = sections
        .iter()
        .map(|s| s.text.as_str())
        .collect::<Vec<_>>()
        .join("\n\n");
    let task_over_cap = text.chars().count() > opts.max_chars;
    if task_over_cap {
        tracing::warn!(
            "{agent_role}: the task is {} characters, over --prompt-max-chars {}; it is kept whole",
            task.chars().count(),
            opts.max_chars
        );
    } else if !dropped.is_empty() {
        tracing::info!(
            "{agent_role}: {} left out of the prompt to fit --prompt-max-chars {}",
            dropped.join(", "),
            opts.max_chars
        );
    }
    Packaged {
        text,
        dropped,
        task_over_cap,
    }
}

/// The prompt's sections in docs/design.md order, each with its priority.
fn sections(
    agent_role: &str,
    task: &str,
    project_dir: &Path,
    opts: &PackageOptions,
) -> Vec<Section> {
    let mut sections: Vec<Section> = Vec::new();
    let own = opts
        .persona
        .as_deref()
        .or_else(|| agents::agent(agent_role).map(|a| a.persona.as_str()));
    let persona = match own {
        Some(p) => format!("You are {}.", with_article(p)),
        None => format!(
            "You are {}.",
            with_article(&format!("{agent_role} specialist"))
        ),
    };
    let model = opts
        .model
        .clone()
        .unwrap_or_else(|| "provider default".into());
    sections.push(Section {
        name: "persona",
        keep: 5,
        text: format!("{persona}\nModel: {model}"),
    });
    sections.push(Section {
        name: "project",
        keep: 2,
        text: format!("Project: {}", project_dir.display()),
    });
    if let Some(mem) = memory_excerpt(project_dir) {
        sections.push(Section {
            name: "memory",
            keep: 0,
            text: format!("Working memory:\n{mem}"),
        });
    }
    if let Some(profile) = profile_digest(project_dir) {
        sections.push(Section {
            name: "profile",
            keep: 1,
            text: format!("Profile:\n{profile}"),
        });
    }
    let failures = opts.failures.clone().unwrap_or_else(|| {
        History::load(project_dir)
            .recent_failures(MAX_FAILURES)
            .to_vec()
    });
    if !failures.is_empty() {
        let lines: Vec<String> = failures
            .iter()
            .take(MAX_FAILURES)
            .map(|f| {
                let reason = f
                    .reason
                    .as_deref()
                    .map(|r| format!(": {r}"))
                    .unwrap_or_default();
                format!(
                    "- run {} worker {} on {}: {}{reason}",
                    f.run_id, f.worker, f.provider, f.status
                )
            })
            .collect();
        sections.push(Section {
            name: "failures",
            keep: 3,
            text: format!("Recent failures:\n{}", lines.join("\n")),
        });
    }
    input_sections(&opts.inputs, &mut sections);
    sections.push(Section {
        name: "task",
        keep: u8::MAX,
        text: format!("Task:\n{task}"),
    });
    sections.push(Section {
        name: "constraints",
        keep: 4,
        text: CONSTRAINTS.to_string(),
    });
    sections.push(Section {
        name: "tools",
        keep: 4,
        text: TOOLS.to_string(),
    });
    sections
}

/// The sections of the run's inputs, before the task: the context and the expected outcome
/// (kept longest after the task), the list of files, then each file's text (dropped first
/// of them, one file at a time, when the prompt is over its cap).
fn input_sections(inputs: &Inputs, sections: &mut Vec<Section>) {
    if let Some(c) = &inputs.context {
        sections.push(Section {
            name: "context",
            keep: 6,
            text: format!(
                "Context from the person running this team:\n{}",
                c.trim_end()
            ),
        });
    }
    if !inputs.files.is_empty() {
        let list: Vec<String> = inputs
            .files
            .iter()
            .map(|(p, text)| match text {
                Some(_) => format!("- {}", p.display()),
                None => format!("- {} (could not be read)", p.display()),
            })
            .collect();
        sections.push(Section {
            name: "files",
            keep: 6,
            text: format!("Files this task is about:\n{}", list.join("\n")),
        });
        for (p, text) in &inputs.files {
            if let Some(t) = text {
                sections.push(Section {
                    name: "file text",
                    keep: 3,
                    text: format!("{}:\n```\n{}\n```", p.display(), t.trim_end()),
                });
            }
        }
    }
    if let Some(e) = &inputs.expected_outcome {
        sections.push(Section {
            name: "expected outcome",
            keep: 7,
            text: format!("Expected outcome:\n{}", e.trim_end()),
        });
    }
}

fn truncate_chars(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n).collect();
        t.push_str("...");
        t
    }
}

/// The first 500 characters of `<project>/.crewmux/memory.md`.
pub fn memory_excerpt(project: &Path) -> Option<String> {
    let text = std::fs::read_to_string(project.join(".crewmux").join("memory.md")).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| truncate_chars(text, MEMORY_EXCERPT_CHARS))
}

/// A short digest of the project, at most 300 characters. Source, first found:
/// `<project>/.crewmux/profile.toml` (written by the user: its text is used as is), else facts
/// read from `Cargo.toml`, `package.json`, `pyproject.toml` and `go.mod`.
pub fn profile_digest(project: &Path) -> Option<String> {
    if let Ok(t) = std::fs::read_to_string(project.join(".crewmux").join("profile.toml")) {
        let t = t.trim();
        if !t.is_empty() {
            return Some(truncate_chars(t, PROFILE_DIGEST_CHARS));
        }
    }
    let mut facts: Vec<String> = Vec::new();
    if let Some(v) = read_toml(&project.join("Cargo.toml")) {
        let name = v
            .get("package")
            .and_then(|p| p.get("name"))
            .and_then(|n| n.as_str());
        let edition = v
            .get("package")
            .and_then(|p| p.get("edition"))
            .and_then(|n| n.as_str());
        let deps = v
            .get("dependencies")
            .and_then(|d| d.as_table())
            .map_or(0, |t| t.len());
        let ws = v.get("workspace").is_some();
        let mut f = format!("Rust {}", if ws { "workspace" } else { "crate" });
        if let Some(n) = name {
            f.push_str(&format!(" `{n}`"));
        }
        if let Some(e) = edition {
            f.push_str(&format!(", edition {e}"));
        }
        f.push_str(&format!(", {deps} dependencies; check with `cargo test`"));
        facts.push(f);
    }
    if let Some(v) = std::fs::read_to_string(project.join("package.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
    {
        let name = v.get("name").and_then(|n| n.as_str()).unwrap_or("?");
        let scripts: Vec<&str> = v
            .get("scripts")
            .and_then(|s| s.as_object())
            .map(|o| o.keys().map(String::as_str).take(6).collect())
            .unwrap_or_default();
        facts.push(format!(
            "Node package `{name}`, scripts: {}",
            scripts.join(", ")
        ));
    }
    if let Some(v) = read_toml(&project.join("pyproject.toml")) {
        let name = v
            .get("project")
            .and_then(|p| p.get("name"))
            .and_then(|n| n.as_str())
            .unwrap_or("?");
        facts.push(format!("Python project `{name}`"));
    }
    if let Ok(t) = std::fs::read_to_string(project.join("go.mod")) {
        if let Some(m) = t.lines().find_map(|l| l.strip_prefix("module ")) {
            facts.push(format!("Go module `{}`", m.trim()));
        }
    }
    (!facts.is_empty()).then(|| truncate_chars(&facts.join("\n"), PROFILE_DIGEST_CHARS))
}

fn read_toml(path: &Path) -> Option<toml::Table> {
    toml::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

/// `a` or `an` before a noun phrase (by its first letter: a vowel takes `an`).
fn with_article(phrase: &str) -> String {
    let vowel = phrase
        .chars()
        .next()
        .is_some_and(|c| "aeiouAEIOU".contains(c));
    format!("{} {phrase}", if vowel { "an" } else { "a" })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project() -> tempfile::TempDir {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join(".crewmux")).unwrap();
        std::fs::write(tmp.path().join(".crewmux/memory.md"), "m".repeat(2000)).unwrap();
        std::fs::write(
            tmp.path().join("Cargo.toml"),
            "[package]\nname = \"demo\"\nedition = \"2021\"\n[dependencies]\nserde = \"1\"\n",
        )
        .unwrap();
        tmp
    }

    fn failures() -> Vec<PastFailure> {
        (0..7)
            .map(|i| PastFailure {
                run_id: format!("r{i}"),
                worker: "backend".into(),
                provider: "codex".into(),
                status: "failed".into(),
                reason: Some("exit 1".into()),
                when: String::new(),
            })
            .collect()
    }

    #[test]
    fn sections_in_spec_order() {
        let p = project();
        let opts = PackageOptions {
            max_chars: 100_000,
            model: Some("codex / gpt-6-luna".into()),
            failures: Some(failures()),
            ..PackageOptions::default()
        };
        let out = package_report("backend-engineer", "Fix the login bug", p.path(), &opts);
        let t = &out.text;
        let at = |s: &str| t.find(s).unwrap_or_else(|| panic!("missing {s} in {t}"));
        assert!(at("You are a senior backend engineer") < at("Model: codex / gpt-6-luna"));
        assert!(at("Model:") < at("Project:"));
        assert!(at("Project:") < at("Working memory:"));
        assert!(
            at("Working memory:") < at("Profile:\nRust crate `demo`, edition 2021, 1 dependencies")
        );
        assert!(at("Profile:") < at("Recent failures:"));
        assert!(at("Recent failures:") < at("Task:\nFix the login bug"));
        assert!(at("Task:") < at("Constraints:"));
        assert_eq!(t.matches("- run r").count(), 5, "at most five failures");
        assert!(t.contains(&format!("{}...", "m".repeat(500))));
        assert!(!t.contains(&"m".repeat(501)));
        assert!(out.dropped.is_empty());
    }

    #[test]
    fn cap_drops_lowest_sections_first_and_keeps_the_task() {
        let p = project();
        let opts = PackageOptions {
            max_chars: 700,
            model: None,
            failures: Some(failures()),
            ..PackageOptions::default()
        };
        let out = package_report("backend-engineer", "Fix the login bug", p.path(), &opts);
        assert!(out.text.chars().count() <= 700, "{}", out.text.len());
        assert_eq!(out.dropped[0], "memory");
        assert!(out.text.contains("Task:\nFix the login bug"));
        assert!(out.text.contains("You are a"), "persona kept while it fits");
        assert!(!out.task_over_cap);
    }

    #[test]
    fn long_task_is_kept_whole_over_the_cap() {
        let p = project();
        let task = "x".repeat(5000);
        let opts = PackageOptions {
            max_chars: 4000,
            model: None,
            failures: Some(vec![]),
            ..PackageOptions::default()
        };
        let out = package_report("reviewer", &task, p.path(), &opts);
        assert!(out.text.contains(&task));
        assert!(out.task_over_cap);
        assert_eq!(out.text, format!("Task:\n{task}"));
    }

    #[test]
    fn profile_toml_wins_and_empty_project_has_no_profile() {
        let p = project();
        std::fs::write(
            p.path().join(".crewmux/profile.toml"),
            "stack = \"axum + sqlx\"\n",
        )
        .unwrap();
        assert_eq!(
            profile_digest(p.path()).as_deref(),
            Some("stack = \"axum + sqlx\"")
        );
        let empty = tempfile::tempdir().unwrap();
        assert_eq!(profile_digest(empty.path()), None);
        assert_eq!(memory_excerpt(empty.path()), None);
    }
}

#[cfg(test)]
mod input_tests {
    use super::*;

    #[test]
    fn the_runs_inputs_are_sections_of_their_own_and_file_text_goes_first_when_over_the_cap() {
        let p = tempfile::tempdir().unwrap();
        let inputs = Inputs {
            context: Some("The API is public; clients retry on 503.".into()),
            files: vec![
                ("src/limits.py".into(), Some("LIMIT = 10\n".repeat(40))),
                ("gone.py".into(), None),
            ],
            expected_outcome: Some("429 with Retry-After over the limit.".into()),
        };
        let mut opts = PackageOptions {
            max_chars: 100_000,
            failures: Some(vec![]),
            inputs,
            ..PackageOptions::default()
        };
        let text = package("backend-engineer", "Add rate limits", p.path(), &opts);
        let at = |s: &str| text.find(s).unwrap_or_else(|| panic!("{s:?} in {text}"));
        assert!(
            at("Context from the person running this team:\nThe API is public") < at("Task:\n")
        );
        assert!(
            at("Files this task is about:\n- src/limits.py\n- gone.py (could not be read)")
                < at("Task:\n")
        );
        assert!(at("src/limits.py:\n```\nLIMIT = 10") < at("Expected outcome:\n429"));
        assert!(at("Expected outcome:\n429") < at("Task:\n"));
        // Over the cap, the file's text is left out before the context, list and outcome.
        opts.max_chars = 700;
        let out = package_report("backend-engineer", "Add rate limits", p.path(), &opts);
        assert!(out.dropped.contains(&"file text"), "{:?}", out.dropped);
        assert!(
            out.text.contains("Files this task is about:"),
            "{}",
            out.text
        );
        assert!(out.text.contains("Expected outcome:"), "{}", out.text);
        assert!(out.text.contains("Context from the person"), "{}", out.text);
    }
}
