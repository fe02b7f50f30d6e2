//! After a run: `crewmux diff` of a cleaned run says so and shows what is left, and
//! `crewmux merge --dry-run` agrees with `crewmux merge` once the run was taken.

use crate::support::*;

/// The problem every run here is given.
const PROBLEM: &str = "change the files";

/// The run ids under the project.
fn runs(d: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(d.join(".crewmux/runs"))
        .map(|r| {
            r.filter_map(|e| e.ok())
                .filter(|e| e.path().join("state.json").exists())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Run the team to `done`; the new run's id.
fn done_run(t: &TeamProject) -> String {
    let before = runs(t.path());
    let out = t.run(PROBLEM).process().output();
    assert_eq!(summary(&out)["status"], "done", "{}", stderr(&out));
    runs(t.path())
        .into_iter()
        .find(|r| !before.contains(r))
        .expect("a new run")
}

#[test]
fn diff_of_a_cleaned_run_names_its_merge_commit_or_says_nothing_is_left() {
    let t = TeamProject::in_repo(
        &[("a.txt", "a\n")],
        &command_worker("one", "echo A >> a.txt", "Changed a.txt."),
    );
    let d = t.path();
    let id = done_run(&t);
    let merged = run_crewmux(d, "unused", &["merge", &id]);
    assert!(merged.status.success(), "{}", stderr(&merged));
    let head = git(d, &["rev-parse", "--short=12", "HEAD"]);
    let clean = run_crewmux(d, "unused", &["clean", "--run", &id]);
    assert!(clean.status.success(), "{}", stderr(&clean));

    let diff = run_crewmux(d, "unused", &["diff", &id, "--stat"]);
    let said = String::from_utf8_lossy(&diff.stdout).to_string();
    assert!(diff.status.success(), "{said}{}", stderr(&diff));
    assert!(!stderr(&diff).contains("fatal"), "{}", stderr(&diff));
    assert!(
        said.contains(&format!("run {id} was cleaned"))
            && said.contains(&format!("merge commit {head}")),
        "{said}"
    );
    assert!(
        said.contains("a.txt | 1 +"),
        "the merge commit's change: {said}"
    );

    // A run cleaned with --force and never merged: one line, exit 2, no git error.
    let id2 = done_run(&t);
    let forced = run_crewmux(d, "unused", &["clean", "--run", &id2, "--force"]);
    assert!(forced.status.success(), "{}", stderr(&forced));
    let diff = run_crewmux(d, "unused", &["diff", &id2]);
    assert_eq!(diff.status.code(), Some(2), "{}", stderr(&diff));
    let err = stderr(&diff);
    assert!(
        err.contains(&format!("run {id2} was cleaned"))
            && err.contains("never merged")
            && !err.contains("fatal"),
        "{err}"
    );
}

#[test]
fn a_dry_run_after_a_merge_says_already_merged_as_the_merge_does() {
    let t = TeamProject::in_repo(
        &[("a.txt", "a\n")],
        &command_worker("one", "echo A >> a.txt", "Changed a.txt."),
    );
    let d = t.path();
    for squash in [false, true] {
        let id = done_run(&t);
        let mut args = vec!["merge", id.as_str()];
        if squash {
            args.push("--squash");
        }
        let merged = run_crewmux(d, "unused", &args);
        assert!(merged.status.success(), "{}", stderr(&merged));
        let want = format!("crewmux/{id}/integration is already merged into main");
        for extra in [None, Some("--dry-run")] {
            let mut a = vec!["merge", id.as_str()];
            a.extend(extra);
            let again = run_crewmux(d, "unused", &a);
            let said = String::from_utf8_lossy(&again.stdout).to_string();
            assert!(again.status.success(), "{a:?}: {}", stderr(&again));
            assert!(said.contains(&want), "squash {squash}, {a:?}: {said}");
            assert!(!said.contains("would merge"), "{a:?}: {said}");
        }
    }
}

#[test]
fn merge_push_sends_the_integration_branch_to_a_remote_and_merges_nothing_here() {
    let t = TeamProject::in_repo(
        &[("a.txt", "a\n")],
        &command_worker("one", "echo A >> a.txt", "Changed a.txt."),
    );
    let d = t.path();
    let id = done_run(&t);
    let head = git(d, &["rev-parse", "HEAD"]);
    let remote = tempfile::tempdir().unwrap();
    git(remote.path(), &["init", "-q", "--bare"]);
    git(
        d,
        &[
            "remote",
            "add",
            "review",
            &remote.path().display().to_string(),
        ],
    );

    // An unknown remote: one line naming it and the remotes there are, exit 2.
    let bad = run_crewmux(d, "unused", &["merge", &id, "--push", "nope"]);
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
    let err = stderr(&bad);
    assert!(
        err.contains("--push nope: no such git remote") && err.contains("use one of review"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");

    let dry = run_crewmux(
        d,
        "unused",
        &["merge", &id, "--push", "review", "--dry-run"],
    );
    let said = String::from_utf8_lossy(&dry.stdout).to_string();
    assert!(
        said.starts_with(&format!("would push crewmux/{id}/integration to review")),
        "{said}"
    );
    assert!(
        git(remote.path(), &["branch", "--list"]).trim().is_empty(),
        "a dry run pushes nothing"
    );

    let pushed = run_crewmux(d, "unused", &["merge", &id, "--push", "review"]);
    assert!(pushed.status.success(), "{}", stderr(&pushed));
    let said = String::from_utf8_lossy(&pushed.stdout).to_string();
    assert!(
        said.starts_with(&format!("pushed crewmux/{id}/integration to review"))
            && said.contains("a.txt | 1 +"),
        "{said}"
    );
    let branch = format!("crewmux/{id}/integration");
    assert_eq!(
        git(remote.path(), &["rev-parse", &branch]),
        git(d, &["rev-parse", &branch]),
        "the remote has the branch at its tip"
    );
    assert_eq!(git(d, &["rev-parse", "HEAD"]), head, "nothing merged here");
    // --push and --squash do not go together.
    let both = run_crewmux(d, "unused", &["merge", &id, "--push", "review", "--squash"]);
    assert_eq!(both.status.code(), Some(2));
}
