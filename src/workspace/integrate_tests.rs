//! The integration pass over a real throwaway repository.

use std::path::Path;

use super::*;
use crate::workspace::create::{branch_name, make_pending, plan, start, WorkspaceOptions};

fn sh_git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A run of one completed worker `w0` whose branch holds one commit (`w0.txt`).
fn completed_team(d: &Path) -> RunState {
    sh_git(d, &["init", "-q", "-b", "main"]);
    std::fs::write(d.join("a.txt"), "a\n").unwrap();
    sh_git(d, &["add", "."]);
    sh_git(d, &["commit", "-q", "-m", "base"]);
    let mut state = crate::engine::tests::run(1, 1);
    state.project_dir = d.to_path_buf();
    let ids = [("w0".to_string(), None)];
    let opts = WorkspaceOptions::default();
    let planned = plan(d, &Default::default(), &ids, &opts).unwrap();
    let mut ws = start(&planned.plan.unwrap(), d, &state.run_id).unwrap();
    assert!(make_pending(&mut ws, d, &state.run_id).unwrap().is_empty());
    let tree = ws.workers["w0"].path.clone();
    std::fs::write(tree.join("w0.txt"), "from w0\n").unwrap();
    sh_git(&tree, &["add", "."]);
    sh_git(&tree, &["commit", "-q", "-m", "w0's work"]);
    state.workers[0].status = WorkerStatus::Completed;
    state.workspace = Some(ws);
    state
}

/// A driver killed after it made the integration worktree and branch but before it saved
/// them left both; the resumed pass (the state names no integration yet) makes them again
/// and merges the worker's branch, where `git worktree add -b` refused the branch before.
#[test]
fn an_integration_branch_left_by_a_killed_driver_is_made_again() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let mut state = completed_team(d);
    let integration = branch_name(&state.run_id, "integration");
    let root = state.workspace.as_ref().unwrap().root.clone();
    let stale = root.join("integration");
    sh_git(
        d,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            &integration,
            &stale.to_string_lossy(),
            "main",
        ],
    );
    std::fs::write(stale.join("half.txt"), "a pass that never saved\n").unwrap();

    let outcome = integrate(&mut state).unwrap();
    assert!(matches!(outcome, Outcome::Clean), "{outcome:?}");
    let i = state
        .workspace
        .as_ref()
        .unwrap()
        .integration
        .clone()
        .unwrap();
    assert_eq!(i.merged, ["w0"]);
    let files = sh_git(d, &["ls-tree", "--name-only", &integration]);
    assert!(files.lines().any(|f| f == "w0.txt"), "{files}");
    assert!(!stale.join("half.txt").exists(), "the stale tree went");
}

/// `clean --force` removes what a killed driver left and the state does not name: the
/// integration worktree and its branch, and a still-pending worker's worktree.
#[test]
fn clean_removes_worktrees_the_state_does_not_name() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let mut state = completed_team(d);
    let run_id = state.run_id.clone();
    let ws = state.workspace.as_mut().unwrap();
    let integration = branch_name(&run_id, "integration");
    let stale = ws.root.join("integration");
    sh_git(
        d,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            &integration,
            &stale.to_string_lossy(),
            "main",
        ],
    );
    let pending = ws.root.join("late");
    let late = branch_name(&run_id, "late");
    sh_git(
        d,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            &late,
            &pending.to_string_lossy(),
            "main",
        ],
    );
    ws.pending.push("late".into());

    let report = crate::workspace::clean::clean_run(ws, &run_id, &[], true).unwrap();
    assert!(!stale.exists() && !pending.exists(), "{:?}", report.lines);
    let branches = sh_git(d, &["branch", "--list", &format!("crewmux/{run_id}/*")]);
    assert!(branches.trim().is_empty(), "{branches}");
}
