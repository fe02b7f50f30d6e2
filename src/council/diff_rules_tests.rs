use super::*;

const DIFF: &str = "diff --git a/src/lib.rs b/src/lib.rs
index 1..2 100644
--- a/src/lib.rs
+++ b/src/lib.rs
@@ -1 +1,2 @@
-fn old() {}
+fn parse_config() {}
+#[ignore]
diff --git a/tests/api.rs b/tests/api.rs
deleted file mode 100644
--- a/tests/api.rs
+++ /dev/null
@@ -1,2 +0,0 @@
-#[test]
-fn works() {}
";

fn input(result: &str, diff: Option<&str>) -> Vec<DiffInput> {
    vec![DiffInput {
        id: "w".into(),
        result_text: Some(result.into()),
        change: diff.map(parse_diff),
    }]
}

fn pass(critic: &str) -> CriticVerdict {
    CriticVerdict {
        critic: critic.into(),
        verdict: Verdict::Pass,
        confidence: 0.9,
        findings: vec!["1 result judged".into()],
    }
}

#[test]
fn a_diff_parses_into_files_lines_and_deletions() {
    let c = parse_diff(DIFF);
    assert_eq!(c.files.len(), 2);
    assert_eq!(c.files[0].path, "src/lib.rs");
    assert_eq!(c.files[0].added, vec!["fn parse_config() {}", "#[ignore]"]);
    assert_eq!(c.files[0].removed, vec!["fn old() {}"]);
    assert!(c.files[1].deleted && !c.files[0].deleted);
}

#[test]
fn every_common_verb_of_changing_code_is_a_claim_an_empty_diff_fails() {
    for claim in [
        "Appended a line with the total to notes.txt.",
        "Added a line that logs the retry.",
        "I've added a `--verbose` flag.",
        "I have inserted the missing import.",
        "Replaced the hard-coded port with a config field.",
        "Moved the helper into its own module.",
        "Deleted the unused constant.",
    ] {
        let (fails, _) = evidence_findings(&input(claim, Some("")));
        assert_eq!(fails.len(), 1, "{claim}: {fails:?}");
    }
    // Words of reading, not changing, stay quiet, and so does a review that tells what
    // another worker's change does (present tense).
    for quiet in [
        "The backend change adds a `--verbose` flag; it reads well.",
        "Read the parser and found nothing to change.",
        "The tests already pass; no edit was needed.",
    ] {
        assert!(
            evidence_findings(&input(quiet, Some(""))).0.is_empty(),
            "{quiet}"
        );
    }
}

#[test]
fn a_claimed_change_with_an_empty_diff_fails_evidence_completeness() {
    let (fails, _) = evidence_findings(&input("Fixed the bug in src/lib.rs.", Some("")));
    assert_eq!(fails.len(), 1, "{fails:?}");
    assert!(fails[0].contains("diff is empty"));
    // No claim, no fail; a shared worker (no diff) is not judged on its diff.
    assert!(
        evidence_findings(&input("Looked around; nothing to do.", Some("")))
            .0
            .is_empty()
    );
    assert!(evidence_findings(&input("Fixed src/lib.rs.", None))
        .0
        .is_empty());
}

#[test]
fn files_the_result_never_mentions_are_a_warning() {
    let (_, warns) = evidence_findings(&input("Changed src/lib.rs to parse it.", Some(DIFF)));
    assert_eq!(warns.len(), 1);
    assert!(warns[0].ends_with("tests/api.rs"), "{warns:?}");
}

#[test]
fn deleted_tests_and_added_skips_are_skeptic_warnings() {
    let warns = skeptic_findings(&input("x", Some(DIFF)));
    assert!(
        warns
            .iter()
            .any(|w| w.contains("deletes the test file tests/api.rs")),
        "{warns:?}"
    );
    assert!(
        warns
            .iter()
            .any(|w| w.contains("adds a skip in src/lib.rs")),
        "{warns:?}"
    );
    for skip in [
        "@pytest.mark.skip",
        "xfail",
        "it.only(",
        "t.Skip(\"slow\")",
        "@skip",
    ] {
        let d = format!("diff --git a/a.py b/a.py\n+{skip}\n");
        assert_eq!(skeptic_findings(&input("x", Some(&d))).len(), 1, "{skip}");
    }
    let removed = "diff --git a/src/x.rs b/src/x.rs\n-#[test]\n-fn a() {}\n";
    assert!(skeptic_findings(&input("x", Some(removed)))[0].contains("removes 1 test"));
}

#[test]
fn backticked_symbols_missing_from_the_tree_are_reported() {
    let w = input(
        "Added `parse_config` and `Store::open_all()`; see `main.rs` and `the` word.",
        None,
    );
    let (checked, missing) = missing_symbols(&w, &|s| s == "parse_config");
    assert_eq!(checked, 2);
    assert_eq!(
        missing,
        vec!["w: `Store::open_all` is not in the integration tree".to_string()]
    );
}

#[test]
fn amend_only_makes_verdicts_stricter_and_puts_fails_first() {
    let mut v = vec![
        pass(crate::council::critics::EVIDENCE_COMPLETENESS),
        pass(crate::council::critics::SKEPTIC),
        pass(crate::council::critics::HALLUCINATION_AUDITOR),
    ];
    amend(
        &mut v,
        &input("Fixed `nothing_here` in src/lib.rs.", Some("")),
        &|_| false,
    );
    assert_eq!(v[0].verdict, Verdict::Fail);
    assert!(v[0].findings[0].contains("diff is empty"));
    assert_eq!(v[1].verdict, Verdict::Pass, "nothing for the skeptic");
    assert_eq!(v[2].verdict, Verdict::Fail, "one symbol, missing");
    let mut w = vec![pass(crate::council::critics::SKEPTIC)];
    amend(
        &mut w,
        &input("Changed src/lib.rs and tests/api.rs.", Some(DIFF)),
        &|_| true,
    );
    assert_eq!(w[0].verdict, Verdict::Warn);
    assert!(
        w[0].findings.iter().all(|f| f.starts_with("w: ")),
        "{:?}",
        w[0].findings
    );
}
