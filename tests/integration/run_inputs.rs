//! What `run` takes besides the problem, as the seeds took it: `--context TEXT|@FILE`,
//! `--files`, `--expected-outcome` as sections of the workers' prompts, and `--only` to run
//! part of a team; each bad value one line, exit 2, no run made.

use crate::support::*;

const TEAM: &str = r#"name = "pair"

[[worker]]
id = "one"
role = "backend-engineer"
provider = "command"
max_attempts = 1
command = ["sh", "-c", "cp \"$CREWMUX_PROMPT_FILE\" \"$CREWMUX_RESULT_FILE\""]

[[worker]]
id = "two"
role = "testing-engineer"
provider = "command"
max_attempts = 1
after = ["one"]
command = ["sh", "-c", "echo two > \"$CREWMUX_RESULT_FILE\""]
"#;

fn runs_made(t: &TeamProject) -> usize {
    std::fs::read_dir(t.path().join(".crewmux/runs"))
        .map(|d| d.count())
        .unwrap_or(0)
}

#[test]
fn context_files_and_expected_outcome_are_prompt_sections_and_only_runs_part_of_the_team() {
    let t = TeamProject::new(TEAM);
    std::fs::write(t.path().join("limits.py"), "LIMIT = 10\n").unwrap();
    std::fs::write(t.path().join("ctx.md"), "Clients retry on 503.\n").unwrap();
    let out = t
        .run("Add rate limits")
        .process()
        .args(&[
            "--context",
            &format!("@{}", t.path().join("ctx.md").display()),
            "--files",
            "limits.py",
            "--expected-outcome",
            "429 with Retry-After over the limit",
            "--only",
            "one",
        ])
        .output();
    let s = summary(&out);
    assert_eq!(s["status"], "done", "{}", stderr(&out));
    let prompt =
        std::fs::read_to_string(only_run_dir(t.path()).join("workers/one/attempt-1/prompt.md"))
            .unwrap();
    for part in [
        "Context from the person running this team:\nClients retry on 503.",
        "Files this task is about:\n- limits.py",
        "limits.py:\n```\nLIMIT = 10\n```",
        "Expected outcome:\n429 with Retry-After over the limit",
    ] {
        assert!(prompt.contains(part), "{part:?} not in:\n{prompt}");
    }
    assert_eq!(worker(&s, "one")["status"], "completed");
    assert_eq!(worker(&s, "two")["status"], "not-run");
    assert_eq!(worker(&s, "two")["reason"], "not in --only");

    // Bad values: one line naming it, exit 2, and no run made.
    let before = runs_made(&t);
    for (args, said) in [
        (
            vec!["--files", "nope.py"],
            "--files nope.py: not a file of the project",
        ),
        (
            vec!["--context", "@/nonexistent/ctx"],
            "--context @/nonexistent/ctx: cannot read it",
        ),
        (
            vec!["--expected-outcome", "  "],
            "--expected-outcome: the text is empty",
        ),
        (vec!["--only", "three"], "--only three: team"),
        (
            vec!["--only", "two"],
            "worker `two` runs after `one`, which --only leaves out",
        ),
    ] {
        let out = t.run("Add rate limits").process().args(&args).output();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.contains(said) && err.trim().lines().count() == 1,
            "{args:?}: {err}"
        );
    }
    assert_eq!(runs_made(&t), before, "a refused run leaves nothing");
}
