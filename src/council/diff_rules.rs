//! Critic rules over what a worker changed, not only what it wrote: each worker's diff
//! (`base..branch`) and the integration tree amend the three deterministic critics'
//! verdicts ([`amend`]). A verdict only ever gets stricter (pass → warn → fail), its new
//! findings come first when they fail and last when they warn.
//!
//! # evidence-completeness
//! * fail: a worker's result says it changed code (a verb of changing code in the past
//!   tense agents report their work in, alone or perfect: "changed", "added", "appended",
//!   "inserted", "have updated", "replaced", "moved", … together with what it changed: a file,
//!   a line, a function, a field, a test, code) while its diff is empty. Reason: the user takes the
//!   diff, not the prose; a claim with no change behind it is the most common way an agent
//!   reports work it did not do.
//! * warn: the diff touches files the result never mentions (by path or file name).
//!   Reason: unexplained edits are where unintended changes hide; a reviewer should know
//!   why each file moved.
//!
//! # hallucination-auditor
//! * A backticked symbol in a result (`parse_config`, `Store::open`, `retryAfter()`) must
//!   occur in the integration tree (`git grep -F` of its last `::`/`.` segment); a symbol
//!   found nowhere counts as a missing reference, as a missing path does. Reason: an
//!   invented API name is the tell of a hallucinated change, and the integration tree is
//!   what the user would get. Cited paths are checked against that tree too (the caller's
//!   `path_exists`).
//!
//! # skeptic
//! * warn: the diff deletes a test file, removes more test functions than it adds, or adds
//!   a skip (`#[ignore]`, `@skip`, `@pytest.mark.skip`, `xfail`, `.only(`, `.skip(`,
//!   `t.Skip(`). Reason: making the checks pass by weakening them is a known failure mode
//!   of coding agents; it must be visible before the merge even when the checks pass.
#![allow(
    clippy::expect_used,
    reason = "regex literals compiled once; a bad one fails every test of this module"
)]

use std::sync::LazyLock;

use regex::Regex;

use crate::domain::{CriticVerdict, Verdict};

/// One file of a worker's diff.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ChangedFile {
    pub path: String,
    pub deleted: bool,
    /// Lines added (without the leading `+`).
    pub added: Vec<String>,
    /// Lines removed (without the leading `-`).
    pub removed: Vec<String>,
}

/// A worker's change, parsed from `git diff -U0 base branch`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WorkerChange {
    pub files: Vec<ChangedFile>,
}

/// Parse a unified diff (as `git diff -U0 --no-renames` prints it).
pub fn parse_diff(text: &str) -> WorkerChange {
    let mut files: Vec<ChangedFile> = vec![];
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("diff --git a/") {
            let path = rest.split(" b/").next().unwrap_or(rest).to_string();
            files.push(ChangedFile {
                path,
                ..Default::default()
            });
            continue;
        }
        let Some(f) = files.last_mut() else {
            continue;
        };
        if line.starts_with("deleted file mode") {
            f.deleted = true;
        } else if line.starts_with("+++") || line.starts_with("---") {
            continue;
        } else if let Some(l) = line.strip_prefix('+') {
            f.added.push(l.to_string());
        } else if let Some(l) = line.strip_prefix('-') {
            f.removed.push(l.to_string());
        }
    }
    WorkerChange { files }
}

/// One worker as the diff rules see it.
#[derive(Debug, Clone, PartialEq)]
pub struct DiffInput {
    pub id: String,
    pub result_text: Option<String>,
    /// `None`: the worker had no worktree (shared), so there is no diff to judge.
    pub change: Option<WorkerChange>,
}

static CHANGE_CLAIM: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(?:changed|modified|added|appended|inserted|fixed|implemented|updated|edited|created|wrote|written|rewrote|rewritten|refactored|removed|deleted|renamed|patched|replaced|moved|introduced|extended|bumped|converted|adjusted|tweaked|cleaned up|reformatted|commented out)\b[^\n]{0,80}(?:\.[a-z]{1,5}\b|\bfiles?\b|\bfunctions?\b|\bmethods?\b|\bmodules?\b|\btests?\b|\bcode\b|\blines?\b|\bentr(?:y|ies)\b|\bfields?\b|\bclass(?:es)?\b|\bstructs?\b|\benums?\b|\bvariables?\b|\bconstants?\b|\bimports?\b|\bcomments?\b|\bdocstrings?\b|\bsections?\b|\bheaders?\b|\bhandlers?\b|\bendpoints?\b|\broutes?\b|\bflags?\b|\boptions?\b|\bdependenc(?:y|ies)\b|\bconfig\b|\bREADME\b|\bscripts?\b|\bcheck\b|`)",
    )
    .expect("change-claim regex compiles")
});

static SKIP: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"#\[ignore|@skip|@pytest\.mark\.skip|@unittest\.skip|\bxfail\b|\.only\(|\b(?:it|describe|test)\.skip\(|\bt\.Skip(?:Now|f)?\(",
    )
    .expect("skip regex compiles")
});

static TEST_FN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"#\[test\]|#\[tokio::test|\bdef test_|\bfunc Test[A-Z_]|\b(?:it|test)\(\s*['\x22`]")
        .expect("test-fn regex compiles")
});

static BACKTICK_SYMBOL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"`((?:[A-Za-z_][A-Za-z0-9_]*(?:::|\.))*[A-Za-z_][A-Za-z0-9_]*)(?:\(\))?`")
        .expect("symbol regex compiles")
});

fn is_test_path(p: &str) -> bool {
    let l = p.to_ascii_lowercase();
    l.starts_with("test/")
        || l.starts_with("tests/")
        || l.contains("/test/")
        || l.contains("/tests/")
        || l.contains("_test.")
        || l.contains(".test.")
        || l.contains(".spec.")
        || l.rsplit('/').next().is_some_and(|n| n.starts_with("test_"))
}

/// Findings of evidence-completeness: (fails, warns).
pub fn evidence_findings(workers: &[DiffInput]) -> (Vec<String>, Vec<String>) {
    let (mut fails, mut warns) = (vec![], vec![]);
    for w in workers {
        let (Some(change), Some(text)) = (&w.change, &w.result_text) else {
            continue;
        };
        if change.files.is_empty() {
            if let Some(m) = CHANGE_CLAIM.find(text) {
                fails.push(format!(
                    "{}: the result says it changed code (\"{}\") but its diff is empty",
                    w.id,
                    m.as_str().trim()
                ));
            }
            continue;
        }
        let unmentioned: Vec<&str> = change
            .files
            .iter()
            .map(|f| f.path.as_str())
            .filter(|p| {
                let name = p.rsplit('/').next().unwrap_or(p);
                !text.contains(p) && !text.contains(name)
            })
            .collect();
        if !unmentioned.is_empty() {
            warns.push(format!(
                "{}: the diff touches files the result never mentions: {}",
                w.id,
                unmentioned.join(", ")
            ));
        }
    }
    (fails, warns)
}

/// Findings of the skeptic over diffs: warns.
pub fn skeptic_findings(workers: &[DiffInput]) -> Vec<String> {
    let mut warns = vec![];
    for w in workers {
        let Some(change) = &w.change else { continue };
        for f in &change.files {
            if f.deleted && is_test_path(&f.path) {
                warns.push(format!(
                    "{}: the diff deletes the test file {}",
                    w.id, f.path
                ));
                continue;
            }
            let gone = f.removed.iter().filter(|l| TEST_FN.is_match(l)).count();
            let new = f.added.iter().filter(|l| TEST_FN.is_match(l)).count();
            if gone > new {
                warns.push(format!(
                    "{}: the diff removes {} test{} from {}",
                    w.id,
                    gone - new,
                    if gone - new == 1 { "" } else { "s" },
                    f.path
                ));
            }
            if let Some(l) = f.added.iter().find(|l| SKIP.is_match(l)) {
                warns.push(format!(
                    "{}: the diff adds a skip in {}: \"{}\"",
                    w.id,
                    f.path,
                    l.trim()
                ));
            }
        }
    }
    warns
}

/// Backticked symbols of a result that `symbol_exists` cannot find: (checked, missing
/// findings). Only names of 4+ characters with an `_`, a `::`/`.`, a `()` or an inner
/// capital are checked (plain words in backticks are not symbols).
pub fn missing_symbols(
    workers: &[DiffInput],
    symbol_exists: &dyn Fn(&str) -> bool,
) -> (usize, Vec<String>) {
    let (mut checked, mut missing) = (0, vec![]);
    for w in workers {
        let Some(text) = &w.result_text else { continue };
        let mut seen = std::collections::HashSet::new();
        for c in BACKTICK_SYMBOL.captures_iter(text) {
            let full = &c[0];
            let sym = &c[1];
            let last = sym.rsplit(['.', ':']).next().unwrap_or(sym);
            let symbolic = sym.contains('_')
                || sym.contains("::")
                || full.ends_with("()`")
                || last.chars().skip(1).any(|ch| ch.is_ascii_uppercase());
            if last.len() < 4 || !symbolic || sym.contains('/') || !seen.insert(last.to_string()) {
                continue;
            }
            // A path-looking name (`main.rs`) is the path check's business.
            if sym.contains('.')
                && sym
                    .rsplit('.')
                    .next()
                    .is_some_and(|e| e.len() <= 4 && e.chars().all(|c| c.is_ascii_lowercase()))
                && !full.ends_with("()`")
            {
                continue;
            }
            checked += 1;
            if !symbol_exists(last) {
                missing.push(format!("{}: `{sym}` is not in the integration tree", w.id));
            }
        }
    }
    (checked, missing)
}

/// Make `v` at least `to`, with `findings` (fails first, warns last).
fn escalate(v: &mut CriticVerdict, to: Verdict, findings: Vec<String>, confidence: f64) {
    if findings.is_empty() {
        return;
    }
    let rank = |x: Verdict| match x {
        Verdict::Pass => 0,
        Verdict::Warn => 1,
        Verdict::Fail => 2,
    };
    let was_pass = v.verdict == Verdict::Pass;
    if rank(to) > rank(v.verdict) {
        v.verdict = to;
        v.confidence = confidence;
    }
    if was_pass {
        // A pass's findings are its summary line: the new findings replace it.
        v.findings = findings;
    } else if to == Verdict::Fail {
        let mut f = findings;
        f.append(&mut v.findings);
        v.findings = f;
    } else {
        v.findings.extend(findings);
    }
}

/// Amend the three critics' verdicts (by name) with the diff rules of this module.
pub fn amend(
    verdicts: &mut [CriticVerdict],
    workers: &[DiffInput],
    symbol_exists: &dyn Fn(&str) -> bool,
) {
    use super::critics::{EVIDENCE_COMPLETENESS, HALLUCINATION_AUDITOR, SKEPTIC};
    let (ev_fails, ev_warns) = evidence_findings(workers);
    let skeptic_warns = skeptic_findings(workers);
    let (checked, missing) = missing_symbols(workers, symbol_exists);
    for v in verdicts.iter_mut() {
        match v.critic.as_str() {
            EVIDENCE_COMPLETENESS => {
                escalate(v, Verdict::Fail, ev_fails.clone(), 0.95);
                escalate(v, Verdict::Warn, ev_warns.clone(), 0.75);
            }
            SKEPTIC => escalate(v, Verdict::Warn, skeptic_warns.clone(), 0.7),
            HALLUCINATION_AUDITOR => {
                let to = if missing.len() >= 2 || (missing.len() == 1 && checked <= 2) {
                    Verdict::Fail
                } else {
                    Verdict::Warn
                };
                let conf = (0.6 + 0.1 * missing.len() as f64).min(0.95);
                escalate(v, to, missing.clone(), conf);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
#[path = "diff_rules_tests.rs"]
mod tests;
