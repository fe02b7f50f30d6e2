//! What a run hands over and judges, with real git in a temporary repository and `command`
//! workers on the process backend: after `steer retry` and the run's next pass the
//! integration branch, the checks, `crewmux diff` and `crewmux merge` carry the new
//! attempt's work, not the first one's; a conflict nobody can resolve leaves one worker
//! out and the checks still judge the rest, each ending with its verdict.

use crate::support::*;

/// The problem every run here is given.
const PROBLEM: &str = "change the files";

/// `one` writes its attempt number into `one.txt`; the check prints what it judges.
fn team() -> TeamProject {
    TeamProject::in_repo(
        &[("a.txt", "a\n")],
        &format!(
            "{}[[check]]\nid = \"show\"\ncommand = [\"sh\", \"-c\", \"cat one.txt\"]\n",
            command_worker(
                "one",
                "echo \"attempt $CREWMUX_ATTEMPT\" > one.txt",
                "Wrote one.txt."
            )
        ),
    )
}

#[test]
fn a_retried_worker_s_new_attempt_is_integrated_judged_diffed_and_merged() {
    let t = team();
    let d = t.path();
    let out = t.run(PROBLEM).process().output();
    assert_eq!(summary(&out)["status"], "done", "{}", stderr(&out));
    let id = run_id(d);
    let integration = format!("crewmux/{id}/integration");
    assert_eq!(
        git(d, &["show", &format!("{integration}:one.txt")]),
        "attempt 1"
    );

    let retry = run_crewmux(d, "unused", &["steer", &id, "retry", "one"]);
    assert!(retry.status.success(), "{}", stderr(&retry));
    let again = run_crewmux(d, "unused", &["resume", &id, "--headless"]);
    let s = summary(&again);
    assert_eq!(s["status"], "done", "{}", stderr(&again));
    assert_eq!(worker(&s, "one")["attempts"], 2, "{s}");
    assert_eq!(
        git(d, &["show", &format!("crewmux/{id}/one:one.txt")]),
        "attempt 2"
    );
    assert_eq!(
        git(d, &["show", &format!("{integration}:one.txt")]),
        "attempt 2",
        "the integration branch holds the second attempt"
    );
    // The check judged the second attempt's work.
    let run = only_run_dir(d);
    let judged =
        std::fs::read_to_string(run.join("workers/check-show/attempt-2/output.log")).unwrap();
    assert!(judged.contains("attempt 2"), "{judged}");

    let diff = run_crewmux(d, "unused", &["diff", &id]);
    let shown = String::from_utf8_lossy(&diff.stdout);
    assert!(
        shown.contains("+attempt 2") && !shown.contains("attempt 1"),
        "{shown}"
    );
    let merged = run_crewmux(d, "unused", &["merge", &id]);
    assert!(merged.status.success(), "{}", stderr(&merged));
    assert_eq!(
        std::fs::read_to_string(d.join("one.txt")).unwrap(),
        "attempt 2\n"
    );
}

#[test]
fn a_conflict_left_out_of_integration_lets_the_check_judge_and_the_run_end_blocked() {
    let t = TeamProject::in_repo(
        &[("a.txt", "a\n")],
        &format!(
            "{}{}[[check]]\nid = \"show\"\ncommand = [\"sh\", \"-c\", \"cat same.txt\"]\n",
            command_worker("one", "echo ONE > same.txt", "Wrote same.txt."),
            command_worker("two", "echo TWO > same.txt", "Wrote same.txt."),
        ),
    );
    let out = t.run(PROBLEM).process().output();
    let s = summary(&out);
    assert_eq!(
        (
            s["status"].as_str(),
            s["outcome"].as_str(),
            s["reason"].as_str()
        ),
        (
            Some("done"),
            Some("blocked"),
            Some("the council blocked: integration failed")
        ),
        "{s}\n{}",
        stderr(&out)
    );
    assert_eq!(worker(&s, "check-show")["status"], "completed", "{s}");
    let critics: Vec<&str> = s["council"]["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["critic"].as_str().unwrap())
        .collect();
    assert!(
        critics.first() == Some(&"integration") && critics.contains(&"check-show"),
        "{critics:?}"
    );
    let id = run_id(t.path());
    assert_eq!(
        git(
            t.path(),
            &["show", &format!("crewmux/{id}/integration:same.txt")]
        ),
        "ONE",
        "the worker merged first is in"
    );
}

#[test]
fn a_reviewer_that_changes_nothing_is_not_charged_with_its_upstream_s_work() {
    let t = TeamProject::in_repo(
        &[("base.txt", "base\n")],
        &format!(
            "{}{}after = [\"a\"]\n",
            command_worker("a", "echo A-WORK > a.txt", "Wrote a.txt."),
            command_worker(
                "review",
                "test -f a.txt",
                "Reviewed the work of a: it is fine as it is."
            ),
        ),
    );
    let d = t.path();
    let out = t.run(PROBLEM).process().output();
    let s = summary(&out);
    assert_eq!(worker(&s, "review")["status"], "completed", "{s}");
    assert_eq!(worker(&s, "a")["diff"]["files"], 1, "{s}");
    assert_eq!(
        worker(&s, "review")["diff"]["files"],
        0,
        "the reviewer changed nothing: {s}"
    );
    let verdicts = s["council"]["verdicts"].to_string();
    assert!(!verdicts.contains("review: the diff touches"), "{verdicts}");
    let id = run_id(d);
    let diff = run_crewmux(d, "unused", &["diff", &id, "--worker", "review"]);
    assert_eq!(
        String::from_utf8_lossy(&diff.stdout).trim(),
        format!("crewmux/{id}/review: no change"),
        "{}",
        stderr(&diff)
    );
    let report = std::fs::read_to_string(only_run_dir(d).join("report.md")).unwrap();
    assert!(
        report.contains(&format!("- **review**: `crewmux/{id}/review` — 0 commits")),
        "{report}"
    );
    // Its branch still holds what it was given, for `crewmux merge --worker review`.
    assert_eq!(
        git(d, &["show", &format!("crewmux/{id}/review:a.txt")]),
        "A-WORK"
    );
}
