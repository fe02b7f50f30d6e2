//! The three deterministic critics of the council (docs/design.md "The run"; the OMG seed's
//! `run_critics`, whose bodies the seed does not carry, so the rules are this module's):
//! `skeptic`, `hallucination-auditor` and `evidence-completeness`.
//!
//! Each reads the team's worker results (plain data, no I/O except the caller's
//! `path_exists`) and returns one [`CriticVerdict`] whose findings are one line each, the
//! most important first (fail findings before warn findings, then in worker order).
//!
//! # skeptic: does the work hold up?
//! * fail: a worker ended `failed`, `timeout`, `crashed` or `cancelled`; a `completed`
//!   worker has an empty result; there are no worker results at all.
//! * warn: a result under [`SHORT_RESULT_WORDS`] words; a result that admits it did not
//!   finish (`I could not`, `not implemented`, `TODO`, …); a claim of success (`all tests
//!   pass`, `fixed`, `works now`, …) with no evidence (see [`super::evidence`]); a result
//!   that mentions none of the problem's key terms (words of 4+ letters).
//! * confidence: fail 0.9 (it rests on statuses, which are facts); warn 0.5 + 0.1 per warn
//!   finding, at most 0.8 (heuristics); pass 0.5 + 0.4 × the share of results citing
//!   evidence (a pass nobody can check is a weak pass).
//!
//! # hallucination-auditor: does what the results cite exist?
//! * Every file path with a directory part named in a result (`src/x.rs`, `tests/a/`) is
//!   checked with `path_exists`, except on lines that propose it (`should create`, `will`,
//!   `e.g.`, …). Every command shown as run is checked for what it needs: `cargo` needs
//!   `Cargo.toml`, `cargo test --test NAME` needs `tests/NAME.rs`, `npm` needs
//!   `package.json`, `make` a `Makefile`, path arguments must exist.
//! * Rust module paths (`crate::store::lock`) must have their first module's file
//!   (`src/store.rs` or `src/store/mod.rs`): a module that does not exist is an invented API.
//! * Speculation markers (`hypothetical`, `I assume`, `presumably`, `placeholder`,
//!   `your_api_key`, …) reveal guessed APIs or files.
//! * fail: two or more missing references, or one when it is half or more of all checked;
//!   warn: one missing reference among more, or any speculation marker; pass otherwise.
//! * confidence: fail 0.6 + 0.1 per missing reference, at most 0.95; warn 0.6; pass
//!   0.5 + 0.09 per checked reference, at most 0.95 (nothing checked → 0.5).
//!
//! # evidence-completeness: is everything there?
//! * fail: no workers; a worker not terminal; a worker that ended without completing; a
//!   required artifact missing; a completed worker with an empty result.
//! * warn: a worker `not-run` or `skipped` (an upstream it waits for did not complete); a
//!   result that cites no command, file, test output or code.
//! * confidence: fail 0.95 (statuses and artifacts are read from the state); warn 0.75;
//!   pass 0.9 (evidence is recognised by patterns, which can be fooled).
//!
//! In a run with worktrees the three verdicts are then amended by the rules over each
//! worker's diff and the integration tree ([`super::diff_rules`]): a claimed change with an
//! empty diff, unexplained files, deleted tests or added skips, invented symbols.
#![allow(
    clippy::expect_used,
    reason = "regex literals compiled once; a bad one fails every test of this module"
)]

use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;
use unicode_segmentation::UnicodeSegmentation;

use super::evidence::{self, Evidence};
use crate::domain::{CriticVerdict, Verdict, WorkerStatus};

/// Critic names, as stored in [`CriticVerdict::critic`] and shown in the council panel.
pub const SKEPTIC: &str = "skeptic";
pub const HALLUCINATION_AUDITOR: &str = "hallucination-auditor";
pub const EVIDENCE_COMPLETENESS: &str = "evidence-completeness";

/// A result shorter than this many words is too thin to trust (skeptic warn).
pub const SHORT_RESULT_WORDS: usize = 25;

/// One team worker as the critics see it (not checks or critic workers).
#[derive(Debug, Clone, PartialEq)]
pub struct WorkerResult {
    pub id: String,
    pub role: String,
    pub status: WorkerStatus,
    pub exit_code: Option<i32>,
    /// The text of its result file (`result.md`), `None` when there is none.
    pub result_text: Option<String>,
    /// Required artifacts (relative to the attempt directory) that do not exist.
    pub required_artifacts_missing: Vec<String>,
    /// A `command` worker (a program, not an agent): its exit code is its evidence, so the
    /// rules that judge an agent's prose (an empty or short result, no evidence cited, no
    /// key term, a success claim) do not apply to it; many tools print nothing on success.
    pub command: bool,
    /// `not-run` because the person left it out (`--only`): not a gap in the work.
    pub left_out: bool,
}

/// What the council's deterministic critics read.
pub struct CouncilInput<'a> {
    pub problem: &'a str,
    pub workers: &'a [WorkerResult],
    /// Whether a path relative to the project directory exists.
    pub path_exists: &'a dyn Fn(&Path) -> bool,
}

/// Run the three critics, in the order skeptic, hallucination auditor, evidence
/// completeness.
pub fn run_critics(input: &CouncilInput<'_>) -> Vec<CriticVerdict> {
    vec![
        skeptic(input),
        hallucination_auditor(input),
        evidence_completeness(input),
    ]
}

static ADMISSION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(?:i (?:could not|couldn't|was unable to|am unable to|can't|cannot)|unable to (?:complete|finish|run|access|find|reproduce)|not (?:yet )?implemented|todo\b|fixme\b|gave up|did not finish|didn't finish|ran out of time|i'm sorry|i apologi[sz]e)",
    )
    .expect("admission regex compiles")
});

static SUCCESS_CLAIM: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(?:all tests pass(?:ed)?|tests pass(?:ed)?|everything works|works (?:now|correctly|perfectly|as expected)|successfully|(?:is|are|was|has been|have been) (?:fixed|resolved|done|verified)|no issues? (?:found|remain))\b",
    )
    .expect("success-claim regex compiles")
});

static SPECULATION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(?:hypothetical(?:ly)?|i assume|assuming (?:that )?(?:the|there)|presumably|should already exist|if (?:it|this|such an? \w+) exists|placeholder|lorem ipsum|your[_-]?api[_-]?key|i (?:don't|do not|cannot|can't) (?:see|access|verify) the (?:code|repo|repository|file)s?)",
    )
    .expect("speculation regex compiles")
});

const KEY_TERM_STOPWORDS: &[&str] = &[
    "that", "this", "with", "from", "when", "then", "than", "into", "have", "should", "would",
    "could", "there", "their", "what", "which", "where", "while", "make", "sure", "please", "also",
    "some", "only", "each", "every", "them", "they", "does", "done", "work", "code", "file",
    "files", "using", "about", "after", "before", "without", "within",
];

/// The skeptic: does each track's result hold up? (rules in the module docs)
pub fn skeptic(input: &CouncilInput<'_>) -> CriticVerdict {
    let mut fails = Vec::new();
    let mut warns = Vec::new();
    let key_terms = key_terms(input.problem);
    let (mut judged, mut with_evidence) = (0usize, 0usize);
    if input.workers.is_empty() {
        fails.push("no worker results to judge".to_string());
    }
    for w in input.workers {
        if ended_badly(w.status) {
            fails.push(format!("{}: ended {}{}", w.id, w.status, exit_suffix(w)));
            continue;
        }
        if w.status != WorkerStatus::Completed {
            continue;
        }
        if w.command {
            // Exit 0 of a program is what it has to show.
            judged += 1;
            with_evidence += 1;
            continue;
        }
        let text = w.result_text.as_deref().unwrap_or("").trim();
        if text.is_empty() {
            fails.push(format!("{}: completed with an empty result", w.id));
            continue;
        }
        judged += 1;
        let ev = evidence::scan(text);
        if ev.any() {
            with_evidence += 1;
        }
        let words = text.unicode_words().count();
        if words < SHORT_RESULT_WORDS {
            warns.push(format!(
                "{}: result is only {words} words (under {SHORT_RESULT_WORDS})",
                w.id
            ));
        }
        if let Some(line) = first_matching_line(&ADMISSION, text) {
            warns.push(format!(
                "{}: result admits unfinished work: \"{line}\"",
                w.id
            ));
        }
        if !ev.any() {
            if let Some(line) = first_matching_line(&SUCCESS_CLAIM, text) {
                warns.push(format!(
                    "{}: claims success with no command, file or test output to back it: \"{line}\"",
                    w.id
                ));
            }
        }
        if !key_terms.is_empty() && !addresses_any(text, &key_terms) {
            warns.push(format!(
                "{}: result mentions none of the problem's key terms ({})",
                w.id,
                key_terms.join(", ")
            ));
        }
    }
    let pass_summary = format!(
        "{judged} result{} judged; {with_evidence} cite{} evidence",
        if judged == 1 { "" } else { "s" },
        if with_evidence == 1 { "s" } else { "" }
    );
    let evidence_share = if judged == 0 {
        0.0
    } else {
        with_evidence as f64 / judged as f64
    };
    let warn_confidence = 0.5 + 0.1 * warns.len().min(3) as f64;
    verdict(
        SKEPTIC,
        fails,
        warns,
        pass_summary,
        [0.9, warn_confidence, 0.5 + 0.4 * evidence_share],
    )
}

/// The hallucination auditor: do the files and commands the results cite exist?
pub fn hallucination_auditor(input: &CouncilInput<'_>) -> CriticVerdict {
    let mut missing = Vec::new();
    let mut speculation = Vec::new();
    let mut checked = 0usize;
    for w in input.workers {
        let Some(text) = w.result_text.as_deref() else {
            continue;
        };
        let ev: Evidence = evidence::scan(text);
        for mention in ev.paths.iter().filter(|m| m.locatable && !m.proposed) {
            checked += 1;
            if !(input.path_exists)(Path::new(&mention.path)) {
                missing.push(format!(
                    "{}: {} does not exist in the project",
                    w.id, mention.path
                ));
            }
        }
        for command in &ev.commands {
            for alternatives in evidence::command_requirements(command) {
                checked += 1;
                if !alternatives
                    .iter()
                    .any(|p| (input.path_exists)(Path::new(p)))
                {
                    missing.push(format!(
                        "{}: `{command}` needs {}, which does not exist",
                        w.id,
                        alternatives.join(" or ")
                    ));
                }
            }
        }
        for (written, alternatives) in evidence::module_requirements(text) {
            checked += 1;
            if !alternatives
                .iter()
                .any(|p| (input.path_exists)(Path::new(p)))
            {
                missing.push(format!(
                    "{}: {written} names a module with no {}",
                    w.id,
                    alternatives.join(" or ")
                ));
            }
        }
        if let Some(line) = first_matching_line(&SPECULATION, text) {
            speculation.push(format!("{}: speculative claim: \"{line}\"", w.id));
        }
    }
    let n_missing = missing.len();
    let fail = n_missing >= 2 || (n_missing == 1 && n_missing * 2 >= checked);
    let (fails, mut warns) = if fail {
        (missing, Vec::new())
    } else {
        (Vec::new(), missing)
    };
    warns.extend(speculation);
    let pass_summary = if checked == 0 {
        "no file path or command in the results to check".to_string()
    } else {
        format!("{checked} file and command references checked; all exist")
    };
    verdict(
        HALLUCINATION_AUDITOR,
        fails,
        warns,
        pass_summary,
        [
            (0.6 + 0.1 * n_missing as f64).min(0.95),
            0.6,
            (0.5 + 0.09 * checked as f64).min(0.95),
        ],
    )
}

/// Evidence completeness: every worker done, every artifact there, every result citing
/// something checkable.
pub fn evidence_completeness(input: &CouncilInput<'_>) -> CriticVerdict {
    let mut fails = Vec::new();
    let mut warns = Vec::new();
    if input.workers.is_empty() {
        fails.push("no worker ran".to_string());
    }
    for w in input.workers {
        if !w.status.is_terminal() {
            fails.push(format!("{}: still {}", w.id, w.status));
            continue;
        }
        if ended_badly(w.status) {
            fails.push(format!(
                "{}: ended {}{} instead of completing",
                w.id,
                w.status,
                exit_suffix(w)
            ));
        }
        if w.status == WorkerStatus::NotRun && !w.left_out {
            warns.push(format!("{}: did not run", w.id));
        }
        if w.status == WorkerStatus::Skipped {
            // The upstream that did not complete is judged on its own; this one never ran.
            warns.push(format!(
                "{}: skipped: a worker it waits for did not complete",
                w.id
            ));
        }
        for artifact in &w.required_artifacts_missing {
            fails.push(format!("{}: required artifact {artifact} is missing", w.id));
        }
        if w.status == WorkerStatus::Completed && !w.command {
            match w.result_text.as_deref().map(str::trim) {
                None | Some("") => fails.push(format!("{}: result file is empty", w.id)),
                Some(text) if !evidence::scan(text).any() => warns.push(format!(
                    "{}: result cites no command, file, test output or code",
                    w.id
                )),
                Some(_) => {}
            }
        }
    }
    let n = input.workers.len();
    let pass_summary = format!(
        "{n} worker{} completed; every result cites evidence",
        if n == 1 { "" } else { "s" }
    );
    verdict(
        EVIDENCE_COMPLETENESS,
        fails,
        warns,
        pass_summary,
        [0.95, 0.75, 0.9],
    )
}

/// Build a verdict from fail and warn findings; `confidence` is `[fail, warn, pass]`.
fn verdict(
    critic: &str,
    fails: Vec<String>,
    warns: Vec<String>,
    pass_summary: String,
    confidence: [f64; 3],
) -> CriticVerdict {
    let (verdict, confidence) = if !fails.is_empty() {
        (Verdict::Fail, confidence[0])
    } else if !warns.is_empty() {
        (Verdict::Warn, confidence[1])
    } else {
        (Verdict::Pass, confidence[2])
    };
    let findings = if verdict == Verdict::Pass {
        vec![pass_summary]
    } else {
        fails.into_iter().chain(warns).collect()
    };
    CriticVerdict {
        critic: critic.to_string(),
        verdict,
        confidence: (confidence * 100.0).round() / 100.0,
        findings,
    }
}

fn ended_badly(status: WorkerStatus) -> bool {
    matches!(
        status,
        WorkerStatus::Failed
            | WorkerStatus::Timeout
            | WorkerStatus::Crashed
            | WorkerStatus::Cancelled
    )
}

fn exit_suffix(w: &WorkerResult) -> String {
    w.exit_code
        .map(|code| format!(" (exit {code})"))
        .unwrap_or_default()
}

/// The first line of `text` matching `re`, trimmed and cut to 80 characters.
fn first_matching_line(re: &Regex, text: &str) -> Option<String> {
    let line = text.lines().find(|l| re.is_match(l))?.trim();
    let mut short: String = line.chars().take(80).collect();
    if line.chars().count() > 80 {
        short.push('…');
    }
    Some(short)
}

/// Up to 8 distinct words of 4+ letters from the problem, in order, minus function words.
fn key_terms(problem: &str) -> Vec<String> {
    let mut terms: Vec<String> = Vec::new();
    for word in problem.unicode_words() {
        let w = word.to_lowercase();
        if w.chars().count() >= 4
            && w.chars().all(|c| c.is_alphanumeric() || c == '_')
            && !w.chars().all(|c| c.is_ascii_digit())
            && !KEY_TERM_STOPWORDS.contains(&w.as_str())
            && !terms.contains(&w)
        {
            terms.push(w);
        }
        if terms.len() == 8 {
            break;
        }
    }
    terms
}

/// True when the text mentions any key term, by its first five characters (so `parser`
/// matches `parsing`, `timeout` matches `timeouts`).
fn addresses_any(text: &str, terms: &[String]) -> bool {
    let lower = text.to_lowercase();
    terms.iter().any(|t| {
        let prefix: String = t.chars().take(5).collect();
        lower.contains(&prefix)
    })
}

#[cfg(test)]
#[path = "critics_tests.rs"]
mod tests;
