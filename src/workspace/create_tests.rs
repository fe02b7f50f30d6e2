//! Worktree creation over a real throwaway repository.

use super::*;

fn repo_with_workers(d: &Path, ids: &[&str]) -> RunWorkspace {
    sh_git(d, &["init", "-q", "-b", "main"]);
    std::fs::write(d.join("a.txt"), "a\n").unwrap();
    sh_git(d, &["add", "."]);
    sh_git(d, &["commit", "-q", "-m", "base"]);
    let workers: Vec<_> = ids.iter().map(|id| (id.to_string(), None)).collect();
    let planned = plan(
        d,
        &WorkspaceSpec::default(),
        &workers,
        &WorkspaceOptions::default(),
    )
    .unwrap();
    start(&planned.plan.unwrap(), d, "r1").unwrap()
}

fn sh_git(dir: &Path, args: &[&str]) {
    let ok = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .output()
        .unwrap();
    assert!(ok.status.success(), "git {args:?}: {ok:?}");
}

/// A `git worktree add` that fails on the parallel pass (here: its branch left behind by a
/// failed add, as concurrent adds can leave) is cleaned up and made again on its own.
#[test]
fn a_worktree_whose_first_add_failed_is_made_again_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    sh_git(d, &["init", "-q", "-b", "main"]);
    std::fs::write(d.join("a.txt"), "a\n").unwrap();
    sh_git(d, &["add", "."]);
    sh_git(d, &["commit", "-q", "-m", "base"]);
    let workers = vec![("one".to_string(), None), ("two".to_string(), None)];
    let planned = plan(
        d,
        &WorkspaceSpec::default(),
        &workers,
        &WorkspaceOptions::default(),
    )
    .unwrap();
    let mut ws = start(&planned.plan.unwrap(), d, "r1").unwrap();
    sh_git(d, &["branch", &branch_name("r1", "one")]);
    let (failed, log) = crate::logging::info_lines(|| make_pending(&mut ws, d, "r1").unwrap());
    assert!(failed.is_empty(), "{failed:?}");
    // A recovered first try is one info line, not git's `fatal:` (a failure to the eye).
    assert!(
        log.contains("worktree of one made on a second try"),
        "{log}"
    );
    assert!(!log.contains("fatal"), "{log}");
    assert!(ws.pending.is_empty());
    for id in ["one", "two"] {
        assert!(ws.root.join(id).join("a.txt").is_file(), "{id}'s worktree");
    }
}

/// One worktree that cannot be made (a file stands where it goes) fails alone, with a
/// reason naming its own path; the others are made, and it stays pending for a later try.
#[test]
fn a_worktree_that_cannot_be_made_fails_alone_with_its_own_reason() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let mut ws = repo_with_workers(d, &["one", "two", "three"]);
    std::fs::create_dir_all(&ws.root).unwrap();
    std::fs::write(ws.root.join("two"), "in the way\n").unwrap();
    let (failed, log) = crate::logging::info_lines(|| make_pending(&mut ws, d, "r1").unwrap());
    let ids: Vec<&str> = failed.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["two"]);
    let reason = failed[0].1.to_string();
    // An unrecovered one quotes git's own message, in the reason and in the log.
    assert!(reason.contains("fatal: "), "{reason}");
    assert!(
        log.contains("worktree of two could not be made") && log.contains("fatal: "),
        "{log}"
    );
    assert!(reason.contains("worktrees/r1/two"), "{reason}");
    assert!(
        !reason.contains("/one") && !reason.contains("/three"),
        "{reason}"
    );
    assert_eq!(ws.pending, ["two"]);
    for id in ["one", "three"] {
        assert!(ws.root.join(id).join("a.txt").is_file(), "{id}'s worktree");
        assert!(ws.workers.contains_key(id), "{id} is recorded");
    }
    // Once the way is clear, the next launch makes it.
    std::fs::remove_file(ws.root.join("two")).unwrap();
    assert!(make_pending(&mut ws, d, "r1").unwrap().is_empty());
    assert!(ws.pending.is_empty() && ws.workers.contains_key("two"));
}
