//! Judge and steer, end to end on the process backend (the tmux path is covered by the
//! lifecycle and dashboard tests): a failing check sends its finding to a fixer and the
//! second verify passes; critic workers' verdicts are parsed from their output; a vague
//! problem halts at the gate until answered, then resumes to done.

use crate::support::*;

const FIX_TEAM: &str = r#"
name = "fix-loop"
max_fix_rounds = 1

[[worker]]
id = "impl"
role = "backend-engineer"
provider = "command"
command = ["sh", "-c", "printf '# impl result\n\nRead `notes.txt` and changed the handler.\n\n```text\nhandler: return 429 when the bucket is empty\n```\n' > \"$CREWMUX_RESULT_FILE\""]

[[check]]
id = "tests"
command = ["sh", "-c", "test -f fixed.txt || { echo 'cargo test failed: 1 test (limits::rejects_when_empty)'; exit 101; }"]

[[critic]]
id = "review"
provider = "command"
command = ["sh", "-c", "printf 'Looks right.\n```json\n{\"verdict\": \"pass\", \"confidence\": 0.7, \"findings\": [\"handler returns 429\"]}\n```\n'"]

[[critic]]
id = "mute"
provider = "command"
command = ["sh", "-c", "echo 'I have no opinion.'"]

[fixer]
provider = "command"
command = ["sh", "-c", "grep -q 'cargo test failed' \"$CREWMUX_PROMPT_FILE\" && touch fixed.txt && printf '# fix\n\nCreated `fixed.txt`.\n' > \"$CREWMUX_RESULT_FILE\""]
"#;

#[test]
fn a_failing_check_goes_to_a_fixer_and_the_second_verify_passes() {
    let tmp = TeamProject::new(FIX_TEAM);
    std::fs::write(tmp.path().join("notes.txt"), "rate limits\n").unwrap();
    let out = tmp
        .run("Return 429 when a client's bucket is empty")
        .process()
        .output();
    let s = summary(&out);
    assert_eq!(
        s["status"],
        "done",
        "{s}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(s["fix_round"], 1);
    assert_eq!(worker(&s, "check-tests")["status"], "failed");
    assert_eq!(worker(&s, "check-tests")["exit_code"], 101);
    assert_eq!(worker(&s, "fixer-r1")["status"], "completed");
    assert_eq!(worker(&s, "check-tests-r1")["status"], "completed");
    // The fixer's prompt carried the failing finding (its command checked that too).
    let run = only_run_dir(tmp.path());
    let fixer_prompt =
        std::fs::read_to_string(run.join("workers/fixer-r1/attempt-1/prompt.md")).unwrap();
    assert!(
        fixer_prompt.contains("cargo test failed: 1 test"),
        "{fixer_prompt}"
    );
    assert!(
        fixer_prompt.contains("impl result"),
        "the fixer sees the team's results"
    );
    // Second verify: the check passes, the critic worker's JSON verdict is read, the mute
    // critic gives no verdict and counts as warn, so the council needs attention.
    let verdicts = s["council"]["verdicts"].as_array().unwrap();
    let by = |name: &str| {
        verdicts
            .iter()
            .find(|v| v["critic"] == name)
            .unwrap_or_else(|| panic!("{name} in {verdicts:?}"))
    };
    assert_eq!(by("check-tests-r1")["verdict"], "pass");
    assert_eq!(by("critic-review-r1")["verdict"], "pass");
    assert_eq!(by("critic-review-r1")["confidence"], 0.7);
    assert_eq!(by("critic-mute-r1")["verdict"], "warn");
    assert_eq!(s["council"]["status"], "attention");
    assert_eq!(out.status.code(), Some(0));
    let events = std::fs::read_to_string(run.join("events.jsonl")).unwrap();
    assert!(
        events.contains("team-verify → team-fix (fix round 1)"),
        "{events}"
    );
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    assert!(
        report.contains("fixer-r1") && report.to_lowercase().contains("fix round"),
        "{report}"
    );
}

#[test]
fn a_vague_problem_halts_until_answered_then_resumes_to_done() {
    let tmp = crate::support::project();
    let out = run_crewmux(
        tmp.path(),
        "unused",
        &[
            "run",
            "--mode",
            "solo",
            "--provider",
            "sim",
            "--headless",
            "--backend",
            "process",
            "fix it",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = summary(&out);
    assert_eq!(s["status"], "halted");
    assert_eq!(s["stage"], "team-plan");
    assert_eq!(s["clarification"]["pending"], true);
    assert!(s["clarification"]["prompt"].as_str().unwrap().len() > 10);
    let run = only_run_dir(tmp.path());
    assert!(
        !run.join("workers/solo").exists(),
        "nothing launched while the gate holds"
    );
    let id = s["run_id"].as_str().unwrap();

    let resume_early = run_crewmux(tmp.path(), "unused", &["resume", id]);
    assert_eq!(
        resume_early.status.code(),
        Some(2),
        "resume refuses while the question is open"
    );

    let ans = run_crewmux(
        tmp.path(),
        "unused",
        &["answer", id, "The login form crashes on submit when the email field is empty; fix the validation in the signup handler"],
    );
    assert_eq!(
        ans.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&ans.stderr)
    );
    let out = run_crewmux(tmp.path(), "unused", &["resume", id]);
    let s = summary(&out);
    assert_eq!(
        s["status"],
        "done",
        "{s}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(worker(&s, "solo")["status"], "completed");
    let prompt = std::fs::read_to_string(run.join("workers/solo/attempt-1/prompt.md")).unwrap();
    assert!(
        prompt.contains("email field is empty"),
        "the answer joins the worker's context:\n{prompt}"
    );
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    assert!(report.contains("email field is empty"), "{report}");
}
