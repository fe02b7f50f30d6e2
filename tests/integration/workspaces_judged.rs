//! Seeding worktrees (`copy`, `setup`) and the critics' rules over diffs, with real git
//! repositories and scripted `command` workers (helpers in [`super::workspaces`]).

use super::workspaces::{git, repo, run, run_id, stderr, worker, worker_of};
use crate::support::*;

#[test]
fn copy_seeds_each_worktree_setup_runs_first_and_a_shared_worker_stays_home() {
    let tmp = repo(&[("a.txt", "a\n")]);
    let d = tmp.path();
    std::fs::write(d.join(".env"), "SECRET=1\n").unwrap();
    std::fs::write(d.join(".git/info/exclude"), ".env\n").unwrap();
    let teamdir = crate::support::project();
    let team = team_file(
        teamdir.path(),
        "team.toml",
        &format!(
            "name = \"seeded\"\n[workspace]\ncopy = [\".env\"]\nsetup = [\"sh\", \"-c\", \"cp .env seen-by-setup.txt\"]\n\n{}{}workspace = \"shared\"\n",
            worker("one", "cat .env seen-by-setup.txt > both.txt", "Added both.txt."),
            worker("home", "echo shared > shared.txt", "Added shared.txt."),
        ),
    );
    let out = run(d, "unused", "process", &team, &[]);
    let s = summary(&out);
    assert_eq!(
        worker_of(&s, "one")["status"],
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
    assert!(worker_of(&s, "home")["branch"].is_null());
}

#[test]
fn a_failing_setup_fails_the_attempt_with_its_exit_code() {
    let tmp = repo(&[("a.txt", "a\n")]);
    let d = tmp.path();
    let teamdir = crate::support::project();
    let team = team_file(
        teamdir.path(),
        "team.toml",
        &format!(
            "name = \"nosetup\"\n[workspace]\nsetup = [\"sh\", \"-c\", \"exit 4\"]\n\n{}",
            worker("one", "echo never > ran.txt", "ran"),
        ),
    );
    let out = run(d, "unused", "process", &team, &[]);
    let s = summary(&out);
    let one = worker_of(&s, "one");
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
    let tmp = repo(&[("a.txt", "a\n")]);
    let d = tmp.path();
    let teamdir = crate::support::project();
    let team = team_file(
        teamdir.path(),
        "team.toml",
        &worker(
            "one",
            "true",
            "Fixed the bug in a.txt: the parser now accepts empty lines. Ran `cat a.txt`.",
        ),
    );
    let out = run(d, "unused", "process", &team, &[]);
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
    let tmp = repo(&[
        ("src/lib.rs", "pub fn f() {}\n"),
        ("tests/api_test.rs", "#[test]\nfn works() {}\n"),
    ]);
    let d = tmp.path();
    let teamdir = crate::support::project();
    let team = team_file(
        teamdir.path(),
        "team.toml",
        &worker(
            "one",
            "rm tests/api_test.rs; echo 'pub fn g() {}' >> src/lib.rs",
            "Changed src/lib.rs (added g) and removed tests/api_test.rs, which was flaky; ran `cargo check`-free review of src/lib.rs.",
        ),
    );
    let out = run(d, "unused", "process", &team, &[]);
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
