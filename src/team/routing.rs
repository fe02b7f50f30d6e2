//! Routing: infer the target (codex, gemini or ccg) from the problem text, and pick each
//! worker's provider among the available ones by a scored choice with a fallback chain.
#![allow(
    clippy::expect_used,
    reason = "the pattern is built from escaped words"
)]

use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;

use crate::providers::history::History;
use crate::providers::{AuthState, ProviderHealth, Registry};

/// Words that name both tracks (the OMG seed's `ccg_signals`, extended).
const CCG_SIGNALS: &[&str] = &[
    "full-stack",
    "full stack",
    "fullstack",
    "front-end and back-end",
    "frontend and backend",
    "backend and frontend",
    "back-end and front-end",
    "cross-functional",
    "review everything",
    "architecture",
    "system design",
    "e2e",
    "end-to-end",
    "end to end",
    "whole app",
    "entire app",
    "entire stack",
    "ui and api",
    "api and ui",
];
/// UI words (the seed's `ui_signals`, extended).
const UI_SIGNALS: &[&str] = &[
    "ui",
    "ux",
    "layout",
    "css",
    "visual",
    "responsive",
    "frontend",
    "front-end",
    "component",
    "components",
    "accessibility",
    "a11y",
    "react",
    "vue",
    "svelte",
    "angular",
    "html",
    "tailwind",
    "stylesheet",
    "animation",
    "dark mode",
    "theme",
    "design system",
    "page",
    "screen",
    "button",
    "modal",
    "navbar",
    "mobile view",
];
/// Code-level words (the seed's `code_signals`, extended).
const CODE_SIGNALS: &[&str] = &[
    "auth",
    "authentication",
    "security",
    "backend",
    "back-end",
    "debug",
    "performance",
    "algorithm",
    "api",
    "endpoint",
    "database",
    "sql",
    "migration",
    "server",
    "latency",
    "memory leak",
    "concurrency",
    "race condition",
    "deadlock",
    "crash",
    "segfault",
    "cache",
    "queue",
    "schema",
    "query",
    "throughput",
    "vulnerability",
    "injection",
];

fn word_regex(words: &[&str]) -> Regex {
    let alts: Vec<String> = words.iter().map(|w| regex::escape(w)).collect();
    Regex::new(&format!(r"(?i)\b(?:{})\b", alts.join("|"))).expect("valid")
}

static CCG_RE: LazyLock<Regex> = LazyLock::new(|| word_regex(CCG_SIGNALS));
static UI_RE: LazyLock<Regex> = LazyLock::new(|| word_regex(UI_SIGNALS));
static CODE_RE: LazyLock<Regex> = LazyLock::new(|| word_regex(CODE_SIGNALS));
static NAMED_CCG: LazyLock<Regex> =
    LazyLock::new(|| word_regex(&["ccg", "tri-track", "tri track"]));
static NAMED_GEMINI: LazyLock<Regex> = LazyLock::new(|| word_regex(&["gemini"]));
static NAMED_CODEX: LazyLock<Regex> = LazyLock::new(|| word_regex(&["codex"]));

/// The inferred target and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TargetChoice {
    /// `codex`, `gemini` or `ccg`.
    pub target: String,
    pub reason: String,
}

/// Infer the target from the problem text, in the OMG seed's order: named tracks (`ccg`,
/// `tri-track`, both `gemini` and `codex`), `gemini`, `codex`; then cross-functional words or
/// UI words together with code words → ccg; UI words → gemini; code words → codex; else
/// codex. Unlike the seed, words match whole words only (`ui` does not match `build`).
pub fn infer_target(problem: &str) -> TargetChoice {
    let pick = |t: &str, r: String| TargetChoice {
        target: t.to_string(),
        reason: r,
    };
    let first = |re: &Regex| re.find(problem).map(|m| m.as_str().to_lowercase());
    let (gem, cod) = (first(&NAMED_GEMINI), first(&NAMED_CODEX));
    if let Some(w) = first(&NAMED_CCG) {
        return pick("ccg", format!("the problem names `{w}`"));
    }
    match (gem, cod) {
        (Some(_), Some(_)) => return pick("ccg", "the problem names both gemini and codex".into()),
        (Some(_), None) => return pick("gemini", "the problem names gemini".into()),
        (None, Some(_)) => return pick("codex", "the problem names codex".into()),
        _ => {}
    }
    let (ccg, ui, code) = (first(&CCG_RE), first(&UI_RE), first(&CODE_RE));
    match (ccg, ui, code) {
        (Some(w), _, _) => pick("ccg", format!("cross-functional signal `{w}`")),
        (None, Some(u), Some(c)) => pick("ccg", format!("UI signal `{u}` and code signal `{c}`")),
        (None, Some(u), None) => pick("gemini", format!("UI signal `{u}`")),
        (None, None, Some(c)) => pick("codex", format!("code signal `{c}`")),
        (None, None, None) => pick("codex", "no signal words; codex is the default".into()),
    }
}

/// A scored provider choice for one worker.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Choice {
    pub provider: String,
    pub score: i32,
    pub reason: String,
    /// The other usable providers, best first (the fallback chain).
    pub fallbacks: Vec<String>,
}

/// Score weights (documented here because they decide routing).
pub const W_PREFERRED: i32 = 40;
pub const W_DOMAIN: i32 = 20;
pub const W_AUTHENTICATED: i32 = 15;
pub const W_COST_TIER: i32 = 5;
/// Subtracted times the past failure rate (0..1) in this project.
pub const W_FAILURE_RATE: i32 = 30;

/// Pick the best usable agent provider for a worker of `domain` that prefers `preferred`.
/// Usable: installed and auth not `not-authenticated`. Score: preferred +40, domain fit +20,
/// authenticated +15, −5 per cost tier, −30 × past failure rate; ties go to the name first
/// in order. Returns None when no agent provider is usable.
pub fn choose(
    domain: &str,
    preferred: Option<&str>,
    registry: &Registry,
    health: &[ProviderHealth],
    history: &History,
) -> Option<Choice> {
    let mut scored: Vec<(i32, String, String)> = Vec::new();
    for (name, spec) in registry.agents() {
        let Some(h) = health.iter().find(|h| h.provider == name) else {
            continue;
        };
        if !h.usable() {
            continue;
        }
        let mut score = 0;
        let mut why: Vec<String> = Vec::new();
        if preferred == Some(name) {
            score += W_PREFERRED;
            why.push("preferred target".into());
        }
        if spec.domains.iter().any(|d| d == domain) {
            score += W_DOMAIN;
            why.push(format!("fits {domain}"));
        }
        if matches!(h.auth, AuthState::Authenticated | AuthState::Keyless) {
            score += W_AUTHENTICATED;
            why.push(format!("authenticated ({})", h.auth_detail));
        } else {
            why.push("auth unknown".into());
        }
        score -= W_COST_TIER * i32::from(spec.cost_tier);
        why.push(format!("cost tier {}", spec.cost_tier));
        let rec = history.record(name);
        if rec.finished > 0 {
            score -= (W_FAILURE_RATE as f64 * rec.failure_rate()).round() as i32;
            why.push(format!(
                "{}/{} past runs failed here",
                rec.failed, rec.finished
            ));
        }
        scored.push((score, name.to_string(), why.join(", ")));
    }
    // Stable sort keeps name order among equal scores.
    scored.sort_by_key(|s| std::cmp::Reverse(s.0));
    let mut it = scored.into_iter();
    let (score, provider, why) = it.next()?;
    Some(Choice {
        reason: format!("{provider}: {why}; score {score}"),
        provider,
        score,
        fallbacks: it.map(|(_, n, _)| n).collect(),
    })
}

/// What the engine needs to route around providers during a run: each provider's declared
/// exit codes (agent CLIs', and the `command` provider's shell codes 126 and 127), and each
/// worker's fallback chain with the model for the run's role there (`default` without
/// `--role`). Saved in `state.json` at plan time.
pub fn run_routing(team: &crate::team::ResolvedTeam) -> crate::domain::RunRouting {
    let role = team.role.as_deref().unwrap_or("default");
    let exit_codes = team
        .registry
        .iter()
        .map(|(n, s)| (n.to_string(), s.exit_meanings()))
        .filter(|(_, codes)| !codes.is_empty())
        .collect();
    let fallbacks = team
        .workers
        .iter()
        .filter(|w| !w.fallbacks.is_empty())
        .map(|w| {
            let chain = w
                .fallbacks
                .iter()
                .map(|p| crate::domain::Fallback {
                    provider: p.clone(),
                    model: team
                        .registry
                        .get(p)
                        .and_then(|s| s.model_for_role(role))
                        .map(str::to_string),
                })
                .collect();
            (w.id.clone(), chain)
        })
        .collect();
    crate::domain::RunRouting {
        exit_codes,
        fallbacks,
        failed: Default::default(),
        stalled: Default::default(),
        failing: Default::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::history::ProviderRecord;
    use crate::providers::ProviderKind;

    #[test]
    fn infers_like_the_seed_with_whole_words() {
        assert_eq!(
            infer_target("Fix the CSS layout of the settings page").target,
            "gemini"
        );
        assert_eq!(infer_target("Debug the auth token refresh").target, "codex");
        assert_eq!(
            infer_target("Make the login form responsive and fix the API auth").target,
            "ccg"
        );
        assert_eq!(
            infer_target("Review everything before release").target,
            "ccg"
        );
        assert_eq!(infer_target("ask gemini about it").target, "gemini");
        assert_eq!(infer_target("ask gemini and codex").target, "ccg");
        assert_eq!(infer_target("tri-track review of the parser").target, "ccg");
        // `ui` inside `build` and `guide` is not a UI signal (the seed matched substrings).
        let t = infer_target("Write a build guide");
        assert_eq!(t.target, "codex");
        assert!(t.reason.contains("no signal"), "{}", t.reason);
    }

    fn health(name: &str, installed: bool, auth: AuthState) -> ProviderHealth {
        ProviderHealth {
            provider: name.into(),
            kind: ProviderKind::Agent,
            installed,
            path: None,
            version: None,
            auth,
            auth_detail: "test".into(),
            install_hint: String::new(),
            silent_retries: String::new(),
        }
    }

    #[test]
    fn scored_choice_skips_unusable_and_weighs_history() {
        let reg = Registry::builtin();
        let hs = vec![
            health("codex", true, AuthState::Authenticated),
            health("gemini", true, AuthState::NotAuthenticated),
            health("claude", false, AuthState::Unknown),
            health("qwen", true, AuthState::Unknown),
        ];
        let h = History::default();
        let c = choose("frontend", Some("gemini"), &reg, &hs, &h).unwrap();
        // gemini is logged out and claude missing; qwen fits frontend work, codex does not.
        assert_eq!(c.provider, "qwen", "{c:?}");
        assert_eq!(c.fallbacks, ["codex"]);
        // Codex failing every past run here loses to qwen for backend work.
        let mut bad = History::default();
        bad.by_provider.insert(
            "codex".into(),
            ProviderRecord {
                finished: 4,
                failed: 4,
            },
        );
        let c = choose("backend", None, &reg, &hs, &bad).unwrap();
        assert_eq!(c.provider, "qwen", "{c:?}");
        assert!(choose(
            "backend",
            None,
            &reg,
            &[health("codex", false, AuthState::Unknown)],
            &h
        )
        .is_none());
    }
}
