//! Taking a run's result and cleaning up after it: a squash merge is recorded so `clean`
//! removes the run without `--force`, and build output a check left in the integration
//! worktree is neither committed nor "work" that keeps a worktree.

use crate::support::*;

/// The problem every run here is given.
const PROBLEM: &str = "change the files";

#[test]
fn after_merge_squash_clean_removes_the_run_and_build_output_stays_out() {
    // The check builds into target/, which this repository does not ignore.
    let t = TeamProject::in_repo(
        &[("a.txt", "a\n")],
        &format!(
            "{}[[check]]\nid = \"build\"\ncommand = [\"sh\", \"-c\", \"mkdir -p target/debug && echo bin > target/debug/app\"]\n",
            command_worker("one", "echo A >> a.txt", "Changed a.txt.")
        ),
    );
    let d = t.path();
    let out = t.run(PROBLEM).process().output();
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
    assert!(
        !git_ok(d, &["merge-base", "--is-ancestor", &branch, "HEAD"]),
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
    let t = TeamProject::in_repo(
        &[("a.txt", "a\n")],
        &command_worker("one", "echo A >> a.txt", "Changed a.txt."),
    );
    let d = t.path();
    let out = t.run(PROBLEM).process().output();
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
    let t = TeamProject::in_repo(
        &[("a.txt", "a\n"), ("b.txt", "b\n")],
        &command_worker("one", "echo A >> a.txt", "Changed a.txt."),
    );
    let d = t.path();
    let out = t.run(PROBLEM).process().output();
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

/// A merge that conflicts with a commit the user made after the run started is aborted:
/// exit 1 (not a refusal: the input was fine), one line naming the file and what to run,
/// and the user's tree and branch exactly as they were.
#[test]
fn a_merge_that_conflicts_with_the_users_own_commit_exits_1_and_changes_nothing() {
    let t = TeamProject::in_repo(
        &[("a.txt", "a\n")],
        &command_worker("one", "echo A >> a.txt", "Changed a.txt."),
    );
    let d = t.path();
    let out = t.run(PROBLEM).process().output();
    assert_eq!(summary(&out)["status"], "done", "{}", stderr(&out));
    let id = run_id(d);
    std::fs::write(d.join("a.txt"), "a\nmine\n").unwrap();
    git(d, &["commit", "-qam", "mine"]);
    let head = git(d, &["rev-parse", "HEAD"]);

    // The dry run says what the merge would meet, the same way.
    let dry = run_crewmux(d, "unused", &["merge", &id, "--dry-run"]);
    assert_eq!(dry.status.code(), Some(1), "{}", stderr(&dry));
    let err = stderr(&dry);
    assert!(
        err.lines().count() == 1 && err.contains("would conflict in a.txt"),
        "{err}"
    );
    let merged = run_crewmux(d, "unused", &["merge", &id]);
    assert_eq!(merged.status.code(), Some(1), "{}", stderr(&merged));
    let err = stderr(&merged);
    assert!(
        err.lines().count() == 1
            && err.contains("conflicts in a.txt")
            && err.contains(&format!("git merge crewmux/{id}/integration"))
            && !err.contains("--worker"),
        "no worker was taken on its own, so none is named: {err}"
    );
    assert_eq!(git(d, &["rev-parse", "HEAD"]), head);
    assert_eq!(git(d, &["status", "--porcelain"]), "");
    assert_eq!(
        std::fs::read_to_string(d.join("a.txt")).unwrap(),
        "a\nmine\n"
    );
}

#[test]
fn two_merges_at_once_take_turns_and_both_land() {
    use std::io::BufRead;
    use std::time::Duration;

    use fs4::fs_std::FileExt;

    let t = TeamProject::in_repo(
        &[("a.txt", "a\n"), ("b.txt", "b\n")],
        &command_worker("one", "echo A >> a.txt", "Changed a.txt."),
    );
    let d = t.path();
    let out = t.run(PROBLEM).process().output();
    assert_eq!(summary(&out)["status"], "done", "{}", stderr(&out));
    let first = run_id(d);
    let other = team_file(
        t.team().parent().unwrap(),
        "other-team.toml",
        &command_worker("two", "echo B >> b.txt", "Changed b.txt."),
    );
    let out = crate::support::run_crewmux(
        d,
        "unused",
        &[
            "run",
            "--team",
            other.to_str().unwrap(),
            "--no-clarify",
            "--headless",
            "--backend",
            "process",
            "--",
            PROBLEM,
        ],
    );
    assert_eq!(summary(&out)["status"], "done", "{}", stderr(&out));
    let second = std::fs::read_dir(d.join(".crewmux/runs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .find(|id| *id != first)
        .unwrap();

    // A merge holds the checkout's lock: both merges started meanwhile wait their turn.
    let lock = std::fs::File::create(d.join(".git/crewmux-merge.lock")).unwrap();
    lock.lock_exclusive().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let merges: Vec<_> = [&first, &second]
        .into_iter()
        .map(|id| {
            let mut child = spawn_crewmux(d, "unused", &["merge", id]);
            let err = child.stderr.take().unwrap();
            let tx = tx.clone();
            let lines = std::thread::spawn(move || {
                let mut all = String::new();
                for line in std::io::BufReader::new(err).lines().map_while(Result::ok) {
                    if line.contains("another crewmux merge is running") {
                        tx.send(()).unwrap();
                    }
                    all.push_str(&line);
                    all.push('\n');
                }
                all
            });
            (child, lines)
        })
        .collect();
    for _ in 0..2 {
        rx.recv_timeout(Duration::from_secs(60))
            .expect("each merge says it waits for the one holding the lock");
    }
    drop(lock);
    for (child, lines) in merges {
        let out = wait_limited(child, &["merge"]);
        let err = lines.join().unwrap();
        assert!(out.status.success(), "{err}");
        assert!(!err.contains("Unable to write index"), "{err}");
    }
    assert_eq!(std::fs::read_to_string(d.join("a.txt")).unwrap(), "a\nA\n");
    assert_eq!(std::fs::read_to_string(d.join("b.txt")).unwrap(), "b\nB\n");
}
