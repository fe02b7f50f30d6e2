//! Content of the deterministic `report.md` merge.

use super::*;
use crate::domain::{CriticVerdict, Verdict};

fn verdict(critic: &str, verdict: Verdict, confidence: f64, findings: &[&str]) -> CriticVerdict {
    CriticVerdict {
        critic: critic.to_string(),
        verdict,
        confidence,
        findings: findings.iter().map(|f| f.to_string()).collect(),
    }
}

fn worker(id: &str, kind: WorkerKind, round: u32, status: WorkerStatus) -> ReportWorker {
    ReportWorker {
        id: id.to_string(),
        role: match kind {
            WorkerKind::Check => "check".to_string(),
            WorkerKind::Fixer => "fixer".to_string(),
            _ => "backend-engineer".to_string(),
        },
        provider: if kind == WorkerKind::Check {
            "command".to_string()
        } else {
            "sim".to_string()
        },
        kind,
        round,
        status,
        exit_code: match status {
            WorkerStatus::Completed => Some(0),
            WorkerStatus::Failed => Some(101),
            _ => None,
        },
        attempts: 1,
        reason: None,
        result_text: None,
        placement: None,
    }
}

fn run_with_a_fix_round() -> ReportInput {
    let mut backend = worker("backend", WorkerKind::Worker, 0, WorkerStatus::Completed);
    backend.attempts = 2;
    backend.result_text = Some(
        "\x1b[1m## Done\x1b[0m\n\nChanged src/parser.rs to reject empty input.\n\n$ cargo test\ntest result: ok. 4 passed"
            .to_string(),
    );
    let mut tests = worker("tests", WorkerKind::Check, 0, WorkerStatus::Failed);
    tests.reason = Some("exit 101".to_string());
    let mut fixer = worker(
        "fix-1-backend",
        WorkerKind::Fixer,
        1,
        WorkerStatus::Completed,
    );
    fixer.result_text = Some("Fixed the off-by-one | in the pager.".to_string());
    let first = Council::from_verdicts(vec![
        verdict(
            "skeptic",
            Verdict::Pass,
            0.9,
            &["1 results judged; 1 cite evidence"],
        ),
        verdict(
            "tests",
            Verdict::Fail,
            1.0,
            &["exited 101", "test pager::next_page ... FAILED"],
        ),
    ]);
    let second = Council::from_verdicts(vec![
        verdict(
            "skeptic",
            Verdict::Pass,
            0.9,
            &["2 results judged; 2 cite evidence"],
        ),
        verdict("tests", Verdict::Pass, 1.0, &["exited 0"]),
    ]);
    ReportInput {
        run_id: "r-20260101-abcd".to_string(),
        problem: "Fix the empty-input panic in the parser".to_string(),
        team: "solo".to_string(),
        clarifications: vec![Clarification {
            question:
                "\"fix it\": could you say which file, module, function or feature it concerns?"
                    .to_string(),
            answer: Some("the parser,\nin src/parser.rs".to_string()),
        }],
        workers: vec![backend, tests, fixer],
        verify_passes: vec![first, second],
        providers_out: vec![],
    }
}

#[test]
fn the_report_has_every_section_in_order() {
    let report = merge_report(&run_with_a_fix_round());
    let order = [
        "# Report of run r-20260101-abcd",
        "## Problem\n\nFix the empty-input panic in the parser",
        "Team: solo · workers: 3 · council: ok · fix rounds: 1",
        "## Clarifications",
        "## Workers",
        "## Council: ok",
        "## Fix rounds",
    ];
    let mut at = 0;
    for heading in order {
        let found = report[at..]
            .find(heading)
            .unwrap_or_else(|| panic!("{heading:?} missing or out of order in:\n{report}"));
        at += found + heading.len();
    }
}

#[test]
fn the_report_content_is_stable() {
    insta::assert_snapshot!(merge_report(&run_with_a_fix_round()));
}

#[test]
fn clarifications_show_questions_and_answers_on_one_line() {
    let report = merge_report(&run_with_a_fix_round());
    assert!(report.contains(
        "1. **Q:** \"fix it\": could you say which file, module, function or feature it concerns?\n   **A:** the parser, in src/parser.rs\n"
    ), "{report}");
}

#[test]
fn workers_show_status_exit_attempts_and_an_excerpt() {
    let report = merge_report(&run_with_a_fix_round());
    assert!(
        report.contains("| backend | backend-engineer | sim | worker | 0 | completed | 0 | 2 |")
    );
    assert!(report.contains("| tests | check | command | check | 0 | failed | 101 | 1 |"));
    assert!(report.contains("> ## Done\n> Changed src/parser.rs to reject empty input.\n"));
    assert!(report.contains("### tests (check)\n\nEnded failed: exit 101\n\n_No result._"));
    assert!(
        !report.contains('\x1b'),
        "ANSI escapes leak into the report"
    );
}

#[test]
fn fix_rounds_list_the_failing_findings_and_the_fixers() {
    let report = merge_report(&run_with_a_fix_round());
    assert!(report.contains(
        "### Round 1: blocked → ok\n\nFailing findings sent to the fixers:\n\n- tests: exited 101\n- tests: test pager::next_page ... FAILED\n\nFixers: fix-1-backend (completed)"
    ), "{report}");
}

#[test]
fn an_empty_run_says_so_in_each_section() {
    let report = merge_report(&ReportInput {
        run_id: "r1".into(),
        problem: "Add a --json flag".into(),
        team: "solo".into(),
        clarifications: vec![],
        workers: vec![],
        verify_passes: vec![],
        providers_out: vec![],
    });
    for line in [
        "None were needed.",
        "No worker ran.",
        "## Council: pending",
        "The council has not sat.",
        "## Fix rounds\n\nNone.",
    ] {
        assert!(report.contains(line), "{line:?} missing in:\n{report}");
    }
    assert!(!report.ends_with("\n\n"));
}

#[test]
fn excerpts_are_cut_by_lines_and_characters() {
    let long: String = (1..=20).map(|i| format!("line {i}\n\n")).collect();
    let cut = excerpt(&long);
    assert_eq!(cut.lines().count(), EXCERPT_LINES);
    assert!(cut.ends_with("line 12 …"), "{cut}");
    let wide = "x".repeat(EXCERPT_CHARS + 10);
    assert_eq!(excerpt(&wide).chars().count(), EXCERPT_CHARS + 2);
    assert_eq!(excerpt("short"), "short");
}

#[test]
fn the_merge_is_deterministic() {
    let input = run_with_a_fix_round();
    assert_eq!(merge_report(&input), merge_report(&input));
}

#[test]
fn a_worker_moved_off_a_lost_host_says_where_it_ran() {
    let mut moved = worker("backend", WorkerKind::Worker, 0, WorkerStatus::Completed);
    moved.attempts = 2;
    moved.placement = Some("attempt 2 on local (box lost)".to_string());
    let report = merge_report(&ReportInput {
        run_id: "r".into(),
        problem: "p".into(),
        team: "t".into(),
        clarifications: vec![],
        workers: vec![
            moved,
            worker("tests", WorkerKind::Check, 0, WorkerStatus::Completed),
        ],
        verify_passes: vec![],
        providers_out: vec![],
    });
    assert!(
        report.contains("### backend (backend-engineer)\n\nRan attempt 2 on local (box lost).\n"),
        "{report}"
    );
    assert_eq!(report.matches("Ran ").count(), 1, "{report}");
}
