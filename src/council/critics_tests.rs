//! Fixtures for pass, warn and fail of each deterministic critic.

use std::path::Path;

use super::*;

const PROBLEM: &str = "Fix the panic in the config parser when the input file is empty";

const GOOD_RESULT: &str = "\
## Summary
The config parser panicked on an empty input file because `parse_header` indexed
the first line without checking it exists. I changed src/config/parser.rs to return
`Error::EmptyInput` instead and added a regression test in tests/parser_empty.rs.

$ cargo test --test parser_empty
test result: ok. 3 passed; 0 failed; 0 ignored
";

const PROJECT: &[&str] = &[
    "Cargo.toml",
    "src/config/parser.rs",
    "src/lib.rs",
    "tests/parser_empty.rs",
];

fn in_project(path: &Path) -> bool {
    PROJECT.iter().any(|p| Path::new(p) == path)
}

fn worker(id: &str, status: WorkerStatus, result: Option<&str>) -> WorkerResult {
    WorkerResult {
        id: id.to_string(),
        role: "backend-engineer".to_string(),
        status,
        exit_code: match status {
            WorkerStatus::Completed => Some(0),
            WorkerStatus::Failed => Some(1),
            _ => None,
        },
        result_text: result.map(str::to_string),
        required_artifacts_missing: Vec::new(),
        command: false,
        left_out: false,
    }
}

fn judge(
    critic: fn(&CouncilInput<'_>) -> CriticVerdict,
    workers: &[WorkerResult],
) -> CriticVerdict {
    let input = CouncilInput {
        problem: PROBLEM,
        workers,
        path_exists: &in_project,
    };
    critic(&input)
}

// --- skeptic ---------------------------------------------------------------------------

#[test]
fn skeptic_passes_a_result_with_evidence_on_the_problem() {
    let v = judge(
        skeptic,
        &[worker(
            "backend",
            WorkerStatus::Completed,
            Some(GOOD_RESULT),
        )],
    );
    assert_eq!(v.verdict, Verdict::Pass, "{v:?}");
    assert_eq!(v.critic, SKEPTIC);
    assert_eq!(v.confidence, 0.9);
    assert_eq!(v.findings, vec!["1 result judged; 1 cites evidence"]);
}

#[test]
fn skeptic_warns_on_an_unbacked_claim_a_thin_result_and_an_off_topic_track() {
    let claim = "All tests pass and everything works now.";
    let off_topic = "I reorganised the marketing page styles: headings are larger, the footer \
        moved to a grid, colours follow the brand sheet, spacing now uses rem units across \
        every section, and the hero image loads lazily for quicker first paint on phones.";
    let v = judge(
        skeptic,
        &[
            worker("backend", WorkerStatus::Completed, Some(claim)),
            worker("frontend", WorkerStatus::Completed, Some(off_topic)),
        ],
    );
    assert_eq!(v.verdict, Verdict::Warn, "{v:?}");
    assert_eq!(
        v.findings,
        vec![
            "backend: result is only 7 words (under 25)",
            "backend: claims success with no command, file or test output to back it: \"All tests pass and everything works now.\"",
            "backend: result mentions none of the problem's key terms (panic, config, parser, input, empty)",
            "frontend: result mentions none of the problem's key terms (panic, config, parser, input, empty)",
        ]
    );
    assert_eq!(v.confidence, 0.8);
}

#[test]
fn skeptic_warns_when_a_result_admits_unfinished_work() {
    let text = format!("{GOOD_RESULT}\nI could not reproduce the second panic on Windows.");
    let v = judge(
        skeptic,
        &[worker("backend", WorkerStatus::Completed, Some(&text))],
    );
    assert_eq!(v.verdict, Verdict::Warn);
    assert_eq!(
        v.findings,
        vec!["backend: result admits unfinished work: \"I could not reproduce the second panic on Windows.\""]
    );
    assert_eq!(v.confidence, 0.6);
}

#[test]
fn skeptic_fails_failed_and_empty_tracks_first() {
    let v = judge(
        skeptic,
        &[
            worker("tests", WorkerStatus::Completed, Some("ok")),
            worker("backend", WorkerStatus::Failed, None),
            worker("docs", WorkerStatus::Completed, Some("  \n")),
        ],
    );
    assert_eq!(v.verdict, Verdict::Fail);
    assert_eq!(v.confidence, 0.9);
    assert_eq!(v.findings[0], "backend: ended failed (exit 1)");
    assert_eq!(v.findings[1], "docs: completed with an empty result");
    assert!(
        v.findings[2].starts_with("tests: result is only 1 words"),
        "{v:?}"
    );
}

#[test]
fn skeptic_fails_with_nothing_to_judge() {
    let v = judge(skeptic, &[]);
    assert_eq!(v.verdict, Verdict::Fail);
    assert_eq!(v.findings, vec!["no worker results to judge"]);
}

// --- hallucination auditor ------------------------------------------------------------

#[test]
fn auditor_passes_when_every_reference_exists() {
    let v = judge(
        hallucination_auditor,
        &[worker(
            "backend",
            WorkerStatus::Completed,
            Some(GOOD_RESULT),
        )],
    );
    assert_eq!(v.verdict, Verdict::Pass, "{v:?}");
    // src/config/parser.rs, tests/parser_empty.rs, Cargo.toml, tests/parser_empty.rs (via --test)
    assert_eq!(
        v.findings,
        vec!["4 file and command references checked; all exist"]
    );
    assert_eq!(v.confidence, 0.86);
}

#[test]
fn auditor_warns_on_one_missing_path_among_several_and_on_speculation() {
    let text =
        format!("{GOOD_RESULT}\nAlso touched src/config/lexer.rs.\nPresumably the caller retries.");
    let v = judge(
        hallucination_auditor,
        &[worker("backend", WorkerStatus::Completed, Some(&text))],
    );
    assert_eq!(v.verdict, Verdict::Warn, "{v:?}");
    assert_eq!(
        v.findings,
        vec![
            "backend: src/config/lexer.rs does not exist in the project",
            "backend: speculative claim: \"Presumably the caller retries.\"",
        ]
    );
    assert_eq!(v.confidence, 0.6);
}

#[test]
fn auditor_flags_an_invented_module() {
    let text = format!("{GOOD_RESULT}\nThe error now goes through `crate::errors::report`.");
    let v = judge(
        hallucination_auditor,
        &[worker("backend", WorkerStatus::Completed, Some(&text))],
    );
    assert_eq!(v.verdict, Verdict::Warn, "{v:?}");
    assert_eq!(
        v.findings,
        vec!["backend: crate::errors::report names a module with no src/errors.rs or src/errors/mod.rs"]
    );
}

#[test]
fn auditor_fails_on_invented_files_and_commands_but_not_on_proposals() {
    let text = "I fixed src/config/reader.rs and ran the new suite:\n\n\
        $ cargo test --test config_reader\n\n\
        We should create src/config/schema.rs next.";
    let v = judge(
        hallucination_auditor,
        &[worker("backend", WorkerStatus::Completed, Some(text))],
    );
    assert_eq!(v.verdict, Verdict::Fail, "{v:?}");
    assert_eq!(
        v.findings,
        vec![
            "backend: src/config/reader.rs does not exist in the project",
            "backend: `cargo test --test config_reader` needs tests/config_reader.rs or tests/config_reader/main.rs, which does not exist",
        ]
    );
    assert_eq!(v.confidence, 0.8);
}

// --- evidence completeness ------------------------------------------------------------

#[test]
fn completeness_passes_when_all_completed_with_evidence() {
    let v = judge(
        evidence_completeness,
        &[
            worker("backend", WorkerStatus::Completed, Some(GOOD_RESULT)),
            worker("tests", WorkerStatus::Completed, Some(GOOD_RESULT)),
        ],
    );
    assert_eq!(v.verdict, Verdict::Pass, "{v:?}");
    assert_eq!(
        v.findings,
        vec!["2 workers completed; every result cites evidence"]
    );
    assert_eq!(v.confidence, 0.9);
}

#[test]
fn completeness_warns_on_a_result_without_evidence_and_a_skipped_worker() {
    let v = judge(
        evidence_completeness,
        &[
            worker(
                "backend",
                WorkerStatus::Completed,
                Some("I made the parser handle it."),
            ),
            worker("security", WorkerStatus::NotRun, None),
            worker("review", WorkerStatus::Skipped, None),
        ],
    );
    assert_eq!(v.verdict, Verdict::Warn, "{v:?}");
    assert_eq!(
        v.findings,
        vec![
            "backend: result cites no command, file, test output or code",
            "security: did not run",
            "review: skipped: a worker it waits for did not complete",
        ]
    );
    assert_eq!(v.confidence, 0.75);
}

#[test]
fn completeness_fails_on_running_failed_and_missing_artifacts() {
    let mut missing = worker("docs", WorkerStatus::Completed, Some(GOOD_RESULT));
    missing.required_artifacts_missing = vec!["result.md".to_string()];
    let v = judge(
        evidence_completeness,
        &[
            worker("backend", WorkerStatus::Running, None),
            worker("tests", WorkerStatus::Timeout, None),
            missing,
            worker("frontend", WorkerStatus::Completed, None),
        ],
    );
    assert_eq!(v.verdict, Verdict::Fail);
    assert_eq!(
        v.findings,
        vec![
            "backend: still running",
            "tests: ended timeout instead of completing",
            "docs: required artifact result.md is missing",
            "frontend: result file is empty",
        ]
    );
    assert_eq!(v.confidence, 0.95);
}

#[test]
fn run_critics_returns_the_three_in_order() {
    let workers = [worker(
        "backend",
        WorkerStatus::Completed,
        Some(GOOD_RESULT),
    )];
    let input = CouncilInput {
        problem: PROBLEM,
        workers: &workers,
        path_exists: &in_project,
    };
    let names: Vec<String> = run_critics(&input).into_iter().map(|v| v.critic).collect();
    assert_eq!(
        names,
        vec![SKEPTIC, HALLUCINATION_AUDITOR, EVIDENCE_COMPLETENESS]
    );
}

#[test]
fn key_terms_skip_short_and_function_words() {
    assert_eq!(
        key_terms("Fix the panic in the config parser when the input file is empty"),
        vec!["panic", "config", "parser", "input", "empty"]
    );
    assert!(key_terms("修复它").is_empty());
}

#[test]
fn a_command_that_succeeds_in_silence_passes_and_a_worker_left_out_by_only_is_no_gap() {
    let mut edit = worker("edit", WorkerStatus::Completed, Some(""));
    edit.command = true;
    let mut docs = worker("docs", WorkerStatus::NotRun, None);
    docs.left_out = true;
    let workers = [edit, docs];
    let input = CouncilInput {
        problem: "Swap the operands of add in calc.py",
        workers: &workers,
        path_exists: &|_| true,
    };
    for v in run_critics(&input) {
        assert_eq!(v.verdict, Verdict::Pass, "{}: {:?}", v.critic, v.findings);
    }
    // An agent's empty result still fails.
    let agent = [worker("agent", WorkerStatus::Completed, Some(""))];
    let input = CouncilInput {
        workers: &agent,
        ..input
    };
    assert_eq!(skeptic(&input).verdict, Verdict::Fail);
}
