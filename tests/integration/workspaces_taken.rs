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

/// With uncommitted changes in the user's tree, `--dry-run` (which changes nothing) still
/// shows the diffstat, and a real merge is refused with the very command to run after,
/// flags included.
#[test]
fn a_dirty_tree_allows_a_dry_run_and_the_refusal_names_the_same_command() {
    let tmp = repo(&[("a.txt", "a\n"), ("b.txt", "b\n")]);
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
    std::fs::write(d.join("b.txt"), "b, edited by hand\n").unwrap();
    let dry = run_crewmux(d, "unused", &["merge", &id, "--worker", "one", "--dry-run"]);
    assert!(dry.status.success(), "{}", stderr(&dry));
    let shown = format!("{}{}", String::from_utf8_lossy(&dry.stdout), stderr(&dry));
    assert!(shown.contains("a.txt"), "{shown}");
    let refused = run_crewmux(d, "unused", &["merge", &id, "--worker", "one", "--squash"]);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains(&format!("then crewmux merge {id} --worker one --squash")),
        "{}",
        stderr(&refused)
    );
    assert_eq!(std::fs::read_to_string(d.join("a.txt")).unwrap(), "a\n");
    assert_eq!(
        std::fs::read_to_string(d.join("b.txt")).unwrap(),
        "b, edited by hand\n"
    );
}
