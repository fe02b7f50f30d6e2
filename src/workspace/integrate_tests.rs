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

    let report = crate::workspace::clean::clean_run(ws, &run_id, &[], true, "").unwrap();
    assert!(!stale.exists() && !pending.exists(), "{:?}", report.lines);
    let branches = sh_git(d, &["branch", "--list", &format!("crewmux/{run_id}/*")]);
    assert!(branches.trim().is_empty(), "{branches}");
}

/// Commit `text` as `file` on `worker`'s branch, in its worktree (what the end of a later
/// attempt leaves there).
fn commit_in(state: &RunState, worker: &str, file: &str, text: Option<&str>) {
    let tree = state.workspace.as_ref().unwrap().workers[worker]
        .path
        .clone();
    match text {
        Some(t) => std::fs::write(tree.join(file), t).unwrap(),
        None => std::fs::remove_file(tree.join(file)).unwrap(),
    }
    sh_git(&tree, &["add", "-A"]);
    sh_git(&tree, &["commit", "-q", "-m", &format!("{worker}: {file}")]);
}

fn integration_file(state: &RunState, file: &str) -> Option<String> {
    let ws = state.workspace.as_ref().unwrap();
    let branch = &ws.integration.as_ref().unwrap().branch;
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(&ws.repo)
        .args(["show", &format!("{branch}:{file}")])
        .output()
        .unwrap();
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A retried worker's second attempt commits on the branch the first attempt's merge took:
/// the next pass merges the branch again, so the integration branch holds the second
/// attempt's work (a file changed, one removed), not the first's.
#[test]
fn a_later_attempt_of_a_merged_worker_is_merged_again() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let mut state = completed_team(d);
    commit_in(&state, "w0", "gone.txt", Some("first attempt only\n"));
    assert_eq!(integrate(&mut state).unwrap(), Outcome::Clean);
    assert_eq!(
        integration_file(&state, "w0.txt").as_deref(),
        Some("from w0\n")
    );

    commit_in(&state, "w0", "w0.txt", Some("from w0, attempt 2\n"));
    commit_in(&state, "w0", "gone.txt", None);
    assert_eq!(integrate(&mut state).unwrap(), Outcome::Clean);
    assert_eq!(
        integration_file(&state, "w0.txt").as_deref(),
        Some("from w0, attempt 2\n")
    );
    assert_eq!(integration_file(&state, "gone.txt"), None);
    let i = state
        .workspace
        .as_ref()
        .unwrap()
        .integration
        .clone()
        .unwrap();
    assert_eq!(i.merged, ["w0"], "named once");
    let ws = state.workspace.as_ref().unwrap();
    let tip = sh_git(d, &["rev-parse", &ws.workers["w0"].branch]);
    assert_eq!(i.tips["w0"], tip.trim());
    // Nothing moved: a third pass merges nothing and makes no commit.
    let head = sh_git(d, &["rev-parse", &i.branch]);
    assert_eq!(integrate(&mut state).unwrap(), Outcome::Clean);
    assert_eq!(sh_git(d, &["rev-parse", &i.branch]), head);
}

/// A worker left out on a conflict (no agent to fix it) is tried again once a later
/// attempt moved its branch: the new attempt no longer conflicts and is merged.
#[test]
fn a_worker_left_out_on_a_conflict_is_tried_again_after_a_later_attempt() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let mut state = completed_team(d);
    let mut w1 = state.workers[0].clone();
    w1.id = "w1".into();
    w1.order = 1;
    state.workers.push(w1);
    for w in &mut state.workers {
        w.provider = "command".into();
    }
    let run_id = state.run_id.clone();
    let ws = state.workspace.as_mut().unwrap();
    ws.workers.insert(
        "w1".into(),
        crate::workspace::create::add_worktree(&Git::new(d), ws, &run_id, "w1").unwrap(),
    );
    commit_in(&state, "w1", "w0.txt", Some("from w1\n"));
    assert_eq!(integrate(&mut state).unwrap(), Outcome::Clean);
    let i = state
        .workspace
        .as_ref()
        .unwrap()
        .integration
        .clone()
        .unwrap();
    assert_eq!(i.merged, ["w0"]);
    assert_eq!(i.left_out.len(), 1, "{i:?}");
    let ws = state.workspace.as_ref().unwrap().clone();
    assert_eq!(
        crate::workspace::guard::shortfall(&state, &ws).left_out,
        ["w1"]
    );

    // The retry gives up on w0.txt and writes a file of its own.
    commit_in(&state, "w1", "w0.txt", None);
    commit_in(&state, "w1", "w1.txt", Some("from w1, attempt 2\n"));
    assert_eq!(integrate(&mut state).unwrap(), Outcome::Clean);
    let i = state
        .workspace
        .as_ref()
        .unwrap()
        .integration
        .clone()
        .unwrap();
    assert_eq!(i.merged, ["w0", "w1"]);
    assert!(i.left_out.is_empty(), "{i:?}");
    assert_eq!(
        integration_file(&state, "w1.txt").as_deref(),
        Some("from w1, attempt 2\n")
    );
    assert_eq!(
        integration_file(&state, "w0.txt").as_deref(),
        Some("from w0\n")
    );
}
