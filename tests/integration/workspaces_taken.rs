//! Taking a run's result and cleaning up after it: a squash merge is recorded so `clean`
//! removes the run without `--force`, and build output a check left in the integration
//! worktree is neither committed nor "work" that keeps a worktree.

use crate::support::*;
use crate::workspaces::{git, repo, run, run_id, stderr, worker};

#[test]
fn after_merge_squash_clean_removes_the_run_and_build_output_stays_out() {
    let tmp = repo(&[("a.txt", "a\n")]);
    let d = tmp.path();
    let teamdir = crate::support::project();
    // The check builds into target/, which this repository does not ignore.
    let team = team_file(
        teamdir.path(),
        "team.toml",
        &format!(
            "{}[[check]]\nid = \"build\"\ncommand = [\"sh\", \"-c\", \"mkdir -p target/debug && echo bin > target/debug/app\"]\n",
            worker("one", "echo A >> a.txt", "Changed a.txt.")
        ),
    );
    let out = run(d, "unused", "process", &team, &[]);
    assert_eq!(summary(&out)["status"], "done", "{}", stderr(&out));
    let id = run_id(d);
    let integ = d.join(".crewmux/worktrees").join(&id).join("integration");
    assert!(
        integ.join("target/debug/app").exists(),
        "the check ran there"
    );
    let branch = format!("crewmux/{id}/integration");
    let files = git(d, &["diff", "--name-only", &format!("main...{branch}")]);
    assert_eq!(files, "a.txt", "no build output on the integration branch");

    let merged = run_crewmux(d, "unused", &["merge", &id, "--squash"]);
    assert!(merged.status.success(), "{}", stderr(&merged));
    assert_eq!(std::fs::read_to_string(d.join("a.txt")).unwrap(), "a\nA\n");
    let ancestor = std::process::Command::new("git")
        .arg("-C")
        .arg(d)
        .args(["merge-base", "--is-ancestor", &branch, "HEAD"])
        .status()
        .unwrap();
    assert_eq!(
        ancestor.code(),
        Some(1),
        "a squash merge leaves the branch a non-ancestor (what clean must see past)"
    );
    let record =
        std::fs::read_to_string(d.join(".crewmux/runs").join(&id).join("merges.json")).unwrap();
    assert!(record.contains("\"squash\": true"), "{record}");

    let clean = run_crewmux(d, "unused", &["clean", "--run", &id]);
    assert!(clean.status.success(), "{}", stderr(&clean));
    assert!(!stderr(&clean).contains("kept"), "{}", stderr(&clean));
    assert!(!d.join(".crewmux/worktrees").join(&id).exists());
    assert_eq!(git(d, &["branch", "--list", "crewmux/*"]), "");
}

#[test]
fn a_squash_merge_undone_by_a_reset_keeps_the_run() {
    let tmp = repo(&[("a.txt", "a\n")]);
    let d = tmp.path();
    let teamdir = crate::support::project();
    let team = team_file(
        teamdir.path(),
        "team.toml",
        &worker("one", "echo A >> a.txt", "Changed a.txt."),
    );
    let out = run(d, "unused", "process", &team, &[]);
    assert_eq!(summary(&out)["status"], "done", "{}", stderr(&out));
    let id = run_id(d);
    let merged = run_crewmux(d, "unused", &["merge", &id, "--squash"]);
    assert!(merged.status.success(), "{}", stderr(&merged));
    git(d, &["reset", "-q", "--hard", "HEAD~1"]);
    let clean = run_crewmux(d, "unused", &["clean", "--run", &id]);
    assert!(
        stderr(&clean).contains(&format!("kept branch crewmux/{id}/integration")),
        "{}",
        stderr(&clean)
    );
    assert!(d.join(".crewmux/worktrees").join(&id).exists());
}
