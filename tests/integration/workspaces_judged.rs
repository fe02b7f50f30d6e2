//! Seeding worktrees (`copy`, `setup`) and the critics' rules over diffs, with real git
//! repositories and scripted `command` workers (helpers in `support`).

use crate::support::*;

/// The problem every run here is given.
const PROBLEM: &str = "change the files";

#[test]
fn copy_seeds_each_worktree_setup_runs_first_and_a_shared_worker_stays_home() {
    let t = TeamProject::in_repo(
        &[("a.txt", "a\n")],
        &format!(
            "name = \"seeded\"\n[workspace]\ncopy = [\".env\"]\nsetup = [\"sh\", \"-c\", \"cp .env seen-by-setup.txt\"]\n\n{}{}workspace = \"shared\"\n",
            command_worker("one", "cat .env seen-by-setup.txt > both.txt", "Added both.txt."),
            command_worker("home", "echo shared > shared.txt", "Added shared.txt."),
        ),
    );
    let d = t.path();
    std::fs::write(d.join(".env"), "SECRET=1\n").unwrap();
    std::fs::write(d.join(".git/info/exclude"), ".env\n").unwrap();
    let out = t.run(PROBLEM).process().output();
    let s = summary(&out);
    assert_eq!(
        worker(&s, "one")["status"],
        "completed",
        "{s}\n{}",
        stderr(&out)
    );
    let id = run_id(d);
    let both = git(d, &["show", &format!("crewmux/{id}/one:both.txt")]);
    assert_eq!(both, "SECRET=1\nSECRET=1");
    let files = git(
        d,
        &["ls-tree", "-r", "--name-only", &format!("crewmux/{id}/one")],
    );
    assert!(
        !files.lines().any(|f| f == ".env"),
        "a copy seed is never committed: {files}"
    );
    assert_eq!(
        std::fs::read_to_string(d.join("shared.txt")).unwrap(),
        "shared\n"
    );
    assert!(worker(&s, "home")["branch"].is_null());
}

#[test]
fn a_failing_setup_fails_the_attempt_with_its_exit_code() {
    let t = TeamProject::in_repo(
        &[("a.txt", "a\n")],
        &format!(
            "name = \"nosetup\"\n[workspace]\nsetup = [\"sh\", \"-c\", \"exit 4\"]\n\n{}",
            command_worker("one", "echo never > ran.txt", "ran"),
        ),
    );
    let d = t.path();
    let out = t.run(PROBLEM).process().output();
    let s = summary(&out);
    let one = worker(&s, "one");
    assert_eq!(one["status"], "failed", "{s}");
    assert_eq!(one["reason"], "setup failed (exit 4)");
    let id = run_id(d);
    assert!(git(
        d,
        &["ls-tree", "-r", "--name-only", &format!("crewmux/{id}/one")]
    )
    .lines()
    .all(|f| f != "ran.txt"));
}

fn verdict<'a>(s: &'a serde_json::Value, critic: &str) -> &'a serde_json::Value {
    s["council"]["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["critic"] == critic)
        .unwrap_or_else(|| panic!("{critic} in {s}"))
}

#[test]
fn a_claimed_fix_with_an_empty_diff_fails_evidence_completeness() {
    let t = TeamProject::in_repo(
        &[("a.txt", "a\n")],
        &command_worker(
            "one",
            "true",
            "Fixed the bug in a.txt: the parser now accepts empty lines. Ran `cat a.txt`.",
        ),
    );
    let out = t.run(PROBLEM).process().output();
    let s = summary(&out);
    let v = verdict(&s, "evidence-completeness");
    assert_eq!(v["verdict"], "fail", "{s}");
    assert!(
        v["findings"][0].as_str().unwrap().contains("diff is empty"),
        "{v}"
    );
    assert_eq!(s["council"]["status"], "blocked");
}

#[test]
fn a_worker_that_deletes_a_test_gets_a_skeptic_warning() {
    let t = TeamProject::in_repo(
        &[
        ("src/lib.rs", "pub fn f() {}\n"),
        ("tests/api_test.rs", "#[test]\nfn works() {}\n"),
    ],
        &command_worker(
            "one",
            "rm tests/api_test.rs; echo 'pub fn g() {}' >> src/lib.rs",
            "Changed src/lib.rs (added g) and removed tests/api_test.rs, which was flaky; ran `cargo check`-free review of src/lib.rs.",
        ),
    );
    let out = t.run(PROBLEM).process().output();
    let s = summary(&out);
    let v = verdict(&s, "skeptic");
    assert_eq!(v["verdict"], "warn", "{s}");
    assert!(
        v["findings"]
            .to_string()
            .contains("deletes the test file tests/api_test.rs"),
        "{v}"
    );
}
