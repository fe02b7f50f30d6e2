//! Worktree creation over a real throwaway repository.

use super::*;

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
    make_pending(&mut ws, d, "r1").unwrap();
    assert!(ws.pending.is_empty());
    for id in ["one", "two"] {
        assert!(ws.root.join(id).join("a.txt").is_file(), "{id}'s worktree");
    }
}
