//! Worktrees per worker, the integration branch and taking the result, with real git
//! repositories in temporary folders, scripted `command` workers that edit files, and real
//! tmux where the issue asks for it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::support::*;

/// The problem every run here is given.
const PROBLEM: &str = "change the files";

/// Every file of the user's tree (crewmux's folder and .git aside) with its content, then
/// `git status --porcelain=v2` and HEAD: what a run must never change.
fn user_view(d: &Path) -> (BTreeMap<PathBuf, Vec<u8>>, String, String) {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            if name == ".git" || name == ".crewmux" {
                continue;
            }
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                out.insert(
                    p.strip_prefix(root).unwrap().into(),
                    std::fs::read(&p).unwrap(),
                );
            }
        }
    }
    let mut files = BTreeMap::new();
    walk(d, d, &mut files);
    (
        files,
        git(d, &["status", "--porcelain=v2", "--branch"]),
        git(d, &["rev-parse", "HEAD"]),
    )
}

#[test]
fn three_workers_merge_cleanly_a_check_passes_and_merge_brings_it_home() {
    let t = TeamProject::in_repo(
        &[("a.txt", "a\n"), ("b.txt", "b\n"), ("README", "x\n")],
        &format!(
            "name = \"three\"\nparallel = 3\n\n{}{}{}[[check]]\nid = \"all\"\ncommand = [\"sh\", \"-c\", \"grep -q A a.txt && grep -q B b.txt && test -f c.txt\"]\n",
            command_worker("one", "echo A >> a.txt", "Changed a.txt: appended A."),
            command_worker("two", "echo B >> b.txt", "Changed b.txt: appended B."),
            command_worker("three", "echo C > c.txt", "Added c.txt with C."),
        ),
    );
    let d = t.path();
    let before = user_view(d);
    let backend = tmux_or_process("ws-a");
    let out = t.run(PROBLEM).on(&backend).output();
    let s = summary(&out);
    assert_eq!(s["status"], "done", "{s}\n{}", stderr(&out));
    let check = worker(&s, "check-all");
    assert_eq!(
        check["status"], "completed",
        "the check passed on the merged tree: {s}"
    );
    assert_eq!(user_view(d), before, "the run left the user's tree alone");

    let id = run_id(d);
    assert_eq!(
        worker(&s, "one")["diff"],
        serde_json::json!({"added": 1, "removed": 0, "files": 1})
    );
    assert_eq!(
        s["workspace"]["integration"]["merged"],
        serde_json::json!(["one", "two", "three"])
    );
    assert_eq!(s["workspace"]["integration"]["diff"]["files"], 3);
    let report = std::fs::read_to_string(only_run_dir(d).join("report.md")).unwrap();
    assert!(report.contains("## Branches"), "{report}");
    assert!(
        report.contains(&format!("`crewmux/{id}/two` — 1 commit, +1 −0 · 1 file")),
        "{report}"
    );
    assert!(
        report.contains(&format!(
            "Integration: `crewmux/{id}/integration` — merged one, two, three; +3 −0 · 3 files"
        )),
        "{report}"
    );
    let status = run_crewmux(d, backend.socket(), &["status", &id]);
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(
        text.contains(&format!("crewmux/{id}/three · +1 −0 · 1 file")),
        "{text}"
    );
    let branches = git(d, &["branch", "--list", "crewmux/*"]);
    for w in ["one", "two", "three", "integration"] {
        assert!(
            branches.contains(&format!("crewmux/{id}/{w}")),
            "{branches}"
        );
    }
    let log = git(d, &["log", "--format=%B", &format!("crewmux/{id}/one")]);
    assert!(log.contains(&format!("Crewmux-Run: {id}")), "{log}");
    assert!(log.contains("Crewmux-Worker: one"), "{log}");
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(only_run_dir(d).join("manifest.json")).unwrap())
            .unwrap();
    assert_eq!(manifest["workspace"]["base"], before.2);
    assert_eq!(
        git(d, &["status", "--porcelain"]),
        "",
        ".crewmux is excluded"
    );
    assert!(!d.join(".gitignore").exists());

    let dry = run_crewmux(d, backend.socket(), &["merge", &id, "--dry-run"]);
    assert!(dry.status.success(), "{}", stderr(&dry));
    assert!(String::from_utf8_lossy(&dry.stdout).contains("3 files changed"));
    assert_eq!(user_view(d), before, "--dry-run changes nothing");

    let merged = run_crewmux(d, backend.socket(), &["merge", &id]);
    assert!(merged.status.success(), "{}", stderr(&merged));
    assert_eq!(std::fs::read_to_string(d.join("a.txt")).unwrap(), "a\nA\n");
    assert_eq!(std::fs::read_to_string(d.join("c.txt")).unwrap(), "C\n");
    assert_eq!(git(d, &["status", "--porcelain"]), "");
    assert!(git(d, &["log", "-1", "--format=%s"]).contains(&id));
}

const SAME_LINE: &str = "fn answer() -> u32 {\n    0\n}\n";

fn conflicting_team(fixer: bool) -> TeamProject {
    let fixer = if fixer {
        // The scripted merge-fixer keeps both sides' intent: the sum.
        "[fixer]\nprovider = \"command\"\ncommand = [\"sh\", \"-c\", \"printf 'fn answer() -> u32 {\\\\n    1 + 2\\\\n}\\\\n' > lib.rs; echo 'Resolved lib.rs: kept 1 + 2.' > \\\"$CREWMUX_RESULT_FILE\\\"\"]\n\n"
    } else {
        ""
    };
    TeamProject::in_repo(
        &[("lib.rs", SAME_LINE)],
        &format!(
            "name = \"pair\"\nparallel = 3\n\n{}{}{}{fixer}[[check]]\nid = \"built\"\ncommand = [\"sh\", \"-c\", \"! grep -q '<<<<<<<' lib.rs && grep -q 'u32' lib.rs\"]\n",
            command_worker("one", "sed -i 's/    0/    1/' lib.rs", "Changed lib.rs: answer is 1."),
            // Touches nothing the others do: its work belongs in integration whatever they
            // do, and a conflict in lib.rs is not with it (merged before two, it is not named).
            command_worker("three", "echo docs > notes.md", "Wrote notes.md."),
            command_worker("two", "sed -i 's/    0/    2/' lib.rs", "Changed lib.rs: answer is 2."),
        ),
    )
}

#[test]
fn a_conflict_is_resolved_by_the_merge_fixer_and_the_check_passes() {
    let t = conflicting_team(true);
    let d = t.path();
    let out = t.run(PROBLEM).on(&tmux_or_process("ws-b")).output();
    let s = summary(&out);
    let fixer = worker(&s, "merge-fixer-two");
    assert_eq!(fixer["status"], "completed", "{s}");
    assert_eq!(fixer["role"], "fixer");
    assert_eq!(worker(&s, "check-built")["status"], "completed", "{s}");
    let id = run_id(d);
    let merged = git(d, &["show", &format!("crewmux/{id}/integration:lib.rs")]);
    assert_eq!(merged, "fn answer() -> u32 {\n    1 + 2\n}");
    let prompt = std::fs::read_to_string(
        only_run_dir(d).join("workers/merge-fixer-two/attempt-1/prompt.md"),
    )
    .unwrap();
    assert!(prompt.contains("lib.rs"), "{prompt}");
    assert!(
        prompt.contains("<<<<<<<"),
        "the hunks are in the prompt: {prompt}"
    );
    assert!(
        prompt.contains("answer is 1") && prompt.contains("answer is 2"),
        "{prompt}"
    );
}

#[test]
fn a_conflict_without_an_agent_blocks_the_council_with_the_finding() {
    let t = conflicting_team(false);
    let d = t.path();
    let out = t.run(PROBLEM).process().output();
    let s = summary(&out);
    assert_eq!(s["council"]["status"], "blocked", "{s}");
    let findings = s["council"]["verdicts"].to_string();
    assert!(
        findings.contains("merge conflict in lib.rs between one and two"),
        "{findings}"
    );
    assert!(findings.contains("two left out"), "{findings}");
    assert_eq!(out.status.code(), Some(1));

    // The conflicted merge was aborted, and the worker that conflicted with nobody is in.
    let id = run_id(d);
    let integration = d.join(".crewmux/worktrees").join(&id).join("integration");
    assert_eq!(git(&integration, &["status", "--porcelain"]), "");
    assert_eq!(
        git(d, &["show", &format!("crewmux/{id}/integration:notes.md")]),
        "docs"
    );

    // Taking integration would lose `two`'s change: merge (and its dry run) refuse it.
    for args in [vec!["merge", &id, "--dry-run"], vec!["merge", &id]] {
        let refused = run_crewmux(d, "unused", &args);
        let text = stderr(&refused);
        assert_eq!(refused.status.code(), Some(2), "{args:?}: {text}");
        for want in [
            "council is blocked (",
            "merge conflict in lib.rs",
            "left out two",
            "--force",
            "--worker two",
        ] {
            assert!(text.contains(want), "{args:?} lacks {want:?}: {text}");
        }
    }
    assert!(std::fs::read_to_string(d.join("lib.rs"))
        .unwrap()
        .contains("    0"));
    // clean keeps the branch and names the merge that takes it: the one merge accepts.
    let kept = stderr(&run_crewmux(d, "unused", &["clean", "--run", &id]));
    let line = kept
        .lines()
        .find(|l| l.contains(&format!("kept branch crewmux/{id}/integration")))
        .unwrap_or_else(|| panic!("{kept}"));
    assert!(
        line.contains(&format!("`crewmux merge {id} --force` takes it anyway"))
            && line.contains("council is blocked"),
        "{line}"
    );
    let forced = run_crewmux(d, "unused", &["merge", &id, "--force"]);
    assert!(forced.status.success(), "{}", stderr(&forced));
    let said = String::from_utf8_lossy(&forced.stdout).to_string();
    assert!(said.contains("not in what is merged: two"), "{said}");
    assert!(std::fs::read_to_string(d.join("lib.rs"))
        .unwrap()
        .contains("    1"));
}

#[test]
fn clean_keeps_unmerged_work_and_says_so_and_force_removes_it() {
    let t = TeamProject::in_repo(
        &[("a.txt", "a\n")],
        &command_worker("one", "echo A >> a.txt", "Changed a.txt."),
    );
    let d = t.path();
    let out = t.run(PROBLEM).process().output();
    assert_eq!(summary(&out)["status"], "done", "{}", stderr(&out));
    let id = run_id(d);
    let tree = d.join(".crewmux/worktrees").join(&id).join("one");
    assert!(tree.exists());

    let kept = run_crewmux(d, "unused", &["clean", "--run", &id]);
    let text = stderr(&kept);
    assert!(
        text.contains(&format!("kept branch crewmux/{id}/one")),
        "{text}"
    );
    assert!(
        text.contains(&format!("crewmux merge {id} --worker one")),
        "{text}"
    );
    assert!(tree.exists(), "unmerged work stays");
    assert!(git(d, &["branch", "--list", "crewmux/*"]).contains("/one"));

    // Uncommitted work in a worktree is never removed without --force.
    std::fs::write(tree.join("a.txt"), "edited by hand\n").unwrap();
    let kept = run_crewmux(d, "unused", &["clean", "--run", &id]);
    assert!(
        stderr(&kept).contains("uncommitted changes"),
        "{}",
        stderr(&kept)
    );
    assert!(tree.exists());

    let forced = run_crewmux(d, "unused", &["clean", "--run", &id, "--force"]);
    assert!(forced.status.success(), "{}", stderr(&forced));
    assert!(!tree.exists());
    assert_eq!(git(d, &["branch", "--list", "crewmux/*"]), "");
    assert_eq!(git(d, &["worktree", "list"]).lines().count(), 1);
}

#[test]
fn clean_removes_worktrees_whose_branches_are_merged() {
    let t = TeamProject::in_repo(
        &[("a.txt", "a\n")],
        &command_worker("one", "echo A >> a.txt", "Changed a.txt."),
    );
    let d = t.path();
    let out = t.run(PROBLEM).process().output();
    assert_eq!(summary(&out)["status"], "done", "{}", stderr(&out));
    let id = run_id(d);
    assert!(run_crewmux(d, "unused", &["merge", &id]).status.success());
    let clean = run_crewmux(d, "unused", &["clean", "--run", &id]);
    assert!(clean.status.success(), "{}", stderr(&clean));
    assert!(
        stderr(&clean).contains(&format!("and branch crewmux/{id}/one")),
        "{}",
        stderr(&clean)
    );
    assert!(!d.join(".crewmux/worktrees").join(&id).exists());
    assert_eq!(git(d, &["branch", "--list", "crewmux/*"]), "");
    // A second clean has nothing left to remove, and says only that.
    let again = run_crewmux(d, "unused", &["clean", "--run", &id]);
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(stderr(&again).trim(), "crewmux: nothing to remove");
}

#[test]
fn clean_prunes_a_worktree_deleted_by_hand_and_removes_its_branch() {
    let t = TeamProject::in_repo(
        &[("a.txt", "a\n")],
        &command_worker("one", "echo A >> a.txt", "Changed a.txt."),
    );
    let d = t.path();
    let out = t.run(PROBLEM).process().output();
    assert_eq!(summary(&out)["status"], "done", "{}", stderr(&out));
    let id = run_id(d);
    assert!(run_crewmux(d, "unused", &["merge", &id]).status.success());
    let tree = d.join(".crewmux/worktrees").join(&id).join("one");
    std::fs::remove_dir_all(&tree).unwrap();

    let clean = run_crewmux(d, "unused", &["clean", "--run", &id]);
    let text = stderr(&clean);
    assert!(clean.status.success(), "{text}");
    assert!(
        text.contains(&format!(
            "pruned git's record of worktree {}: its folder was deleted",
            tree.display()
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!("removed branch crewmux/{id}/one")),
        "{text}"
    );
    assert_eq!(git(d, &["branch", "--list", "crewmux/*"]), "");
    assert_eq!(git(d, &["worktree", "list"]).lines().count(), 1);
    assert!(!d.join(".crewmux/worktrees").join(&id).exists());
}

#[test]
fn include_uncommitted_shows_the_dirty_tree_to_workers_and_leaves_it_alone() {
    let t = TeamProject::in_repo(
        &[("a.txt", "committed\n")],
        &command_worker("one", "cat a.txt new.txt > seen.txt", "Added seen.txt."),
    );
    let d = t.path();
    std::fs::write(d.join("a.txt"), "uncommitted edit\n").unwrap();
    std::fs::write(d.join("new.txt"), "untracked\n").unwrap();
    git(d, &["add", "new.txt"]);
    let before = user_view(d);
    let stash_before = git(d, &["stash", "list"]);
    let out = t
        .run(PROBLEM)
        .process()
        .args(&["--include-uncommitted"])
        .output();
    assert_eq!(summary(&out)["status"], "done", "{}", stderr(&out));
    let id = run_id(d);
    let seen = git(d, &["show", &format!("crewmux/{id}/one:seen.txt")]);
    assert_eq!(seen, "uncommitted edit\nuntracked");
    assert_eq!(user_view(d), before, "tree, index and HEAD untouched");
    assert_eq!(git(d, &["stash", "list"]), stash_before);

    // Without the flag the dirty tree gets a one-line notice.
    let out = t.run(PROBLEM).process().output();
    assert!(
        stderr(&out).contains("uncommitted changes: they are not in the workers' trees"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_project_without_git_runs_shared_with_a_notice() {
    let t = TeamProject::new(&command_worker(
        "one",
        "echo here > made.txt",
        "Added made.txt.",
    ));
    let d = t.path();
    let out = t.run(PROBLEM).process().output();
    assert_eq!(summary(&out)["status"], "done", "{}", stderr(&out));
    assert!(
        stderr(&out).contains("is not a git repository: workers share the project directory"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        std::fs::read_to_string(d.join("made.txt")).unwrap(),
        "here\n"
    );
    assert!(!d.join(".crewmux/worktrees").exists());
}

#[test]
fn bad_workspace_input_is_one_line_exit_2_and_creates_nothing() {
    let t = TeamProject::in_repo(&[("a.txt", "a\n")], &command_worker("one", "true", "ok"));
    let d = t.path();
    let out = t
        .run(PROBLEM)
        .process()
        .args(&["--base", "no-such-ref"])
        .output();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("--base no-such-ref: not a commit"), "{err}");
    assert!(!d.join(".crewmux/runs").exists());
    assert_eq!(git(d, &["branch", "--list", "crewmux/*"]), "");

    let bare = crate::support::project();
    git(bare.path(), &["init", "-q", "--bare"]);
    let out = t.run(PROBLEM).process().in_dir(bare.path()).output();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("bare git repository"),
        "{}",
        stderr(&out)
    );

    // A detached HEAD is allowed: the base is that commit.
    let head = git(d, &["rev-parse", "HEAD"]);
    git(d, &["checkout", "-q", "--detach"]);
    let out = t.run(PROBLEM).process().output();
    assert_eq!(summary(&out)["status"], "done", "{}", stderr(&out));
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(only_run_dir(d).join("manifest.json")).unwrap())
            .unwrap();
    assert_eq!(manifest["workspace"]["base"], head);
}

#[test]
fn a_team_of_command_workers_is_not_held_at_the_gate_by_a_vague_problem() {
    let t = TeamProject::in_repo(
        &[("a.txt", "a\n")],
        &command_worker("one", "echo A >> a.txt", "Changed a.txt."),
    );
    let out = t.run("fix it").process().clarify().output();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let s = summary(&out);
    assert_eq!(s["status"], "done", "{s}");
    assert_eq!(s["clarification"]["pending"], false, "{s}");
}

#[test]
fn a_run_halted_at_the_clarification_gate_makes_no_worktree_until_resumed() {
    let t = TeamProject::in_repo(
        &[("a.txt", "a\n")],
        // A team of command workers skips the gate unless it asks for it.
        &format!(
            "clarify = true\n{}{}",
            command_worker("one", "echo A >> a.txt", "Changed a.txt."),
            command_worker("two", "echo B > b.txt", "Added b.txt.")
        ),
    );
    let d = t.path();
    let (trees, branches) = (
        git(d, &["worktree", "list"]),
        git(d, &["branch", "--list", "crewmux/*"]),
    );
    let halted = t.run("fix it").process().clarify().output();
    assert_eq!(halted.status.code(), Some(3), "{}", stderr(&halted));
    assert_eq!(git(d, &["worktree", "list"]), trees);
    assert_eq!(git(d, &["branch", "--list", "crewmux/*"]), branches);
    let id = run_id(d);
    assert!(!d.join(".crewmux/worktrees").join(&id).exists());

    let ans = run_crewmux(
        d,
        "unused",
        &[
            "answer",
            &id,
            "Append A to a.txt and add b.txt with B in it",
        ],
    );
    assert!(ans.status.success(), "{}", stderr(&ans));
    let done = run_crewmux(d, "unused", &["resume", &id, "--headless"]);
    assert_eq!(summary(&done)["status"], "done", "{}", stderr(&done));
    let branches = git(d, &["branch", "--list", "crewmux/*"]);
    for w in ["one", "two"] {
        assert!(
            branches.contains(&format!("crewmux/{id}/{w}")),
            "{branches}"
        );
    }
    assert!(run_crewmux(d, "unused", &["merge", &id]).status.success());
    assert_eq!(std::fs::read_to_string(d.join("b.txt")).unwrap(), "B\n");
}

#[test]
fn clean_keeps_a_run_whose_hosts_json_is_corrupt_and_exits_1() {
    let t = TeamProject::in_repo(
        &[("a.txt", "a\n")],
        &command_worker("one", "echo A >> a.txt", "Changed a.txt."),
    );
    let d = t.path();
    let out = t.run(PROBLEM).process().output();
    assert_eq!(summary(&out)["status"], "done", "{}", stderr(&out));
    let id = run_id(d);
    let run_dir = d.join(".crewmux/runs").join(&id);
    let hosts = run_dir.join("hosts.json");
    std::fs::write(&hosts, "{ not json").unwrap();
    let tree = d.join(".crewmux/worktrees").join(&id).join("one");

    let cleaned = run_crewmux(d, "unused", &["clean", "--purge", "--force"]);
    let text = stderr(&cleaned);
    assert_eq!(cleaned.status.code(), Some(1), "{text}");
    assert!(
        text.contains(&format!("kept {id}:"))
            && text.contains("hosts.json: not the hosts crewmux saved")
            && text.contains("restore that file, or delete it"),
        "{text}"
    );
    assert_eq!(text.trim().lines().count(), 1, "{text}");
    assert_eq!(std::fs::read_to_string(&hosts).unwrap(), "{ not json");
    assert!(tree.exists(), "nothing of the run is removed: {text}");
    assert_events_once(d);
}

#[test]
fn with_include_uncommitted_a_worker_that_changed_nothing_leaves_no_branch_to_merge() {
    let team = format!(
        "{}{}",
        command_worker("edit", "echo B >> a.txt", "Changed a.txt."),
        command_worker("idle", "true", "Looked, changed nothing.")
    );
    let t = TeamProject::in_repo(&[("a.txt", "a\n")], &team);
    let d = t.path();
    std::fs::write(d.join("notes.txt"), "my own notes\n").unwrap();
    let out = t
        .run(PROBLEM)
        .process()
        .args(&["--include-uncommitted"])
        .output();
    assert_eq!(summary(&out)["status"], "done", "{}", stderr(&out));
    let id = run_id(d);
    let clean = run_crewmux(d, "unused", &["clean", "--run", &id]);
    let said = stderr(&clean);
    // The idle worker's branch is only the snapshot of your own changes: not offered.
    assert!(
        said.contains("removed")
            && said.contains(&format!("branch crewmux/{id}/idle"))
            && !said.contains(&format!("kept branch crewmux/{id}/idle")),
        "the idle branch is removed, not kept: {said}"
    );
    assert!(
        !git_ok(
            d,
            &["rev-parse", "--verify", "-q", &format!("crewmux/{id}/idle")]
        ),
        "{said}"
    );
    // The worker with work of its own is kept until it is merged.
    assert!(
        said.contains(&format!("kept branch crewmux/{id}/edit")),
        "{said}"
    );
}

#[test]
fn a_setup_program_that_is_not_there_is_refused_before_the_run_is_made() {
    let team = format!(
        "[workspace]\nsetup = [\"nosuchsetup-xyz\", \"--quick\"]\n\n{}",
        command_worker("one", "true", "ok")
    );
    let t = TeamProject::in_repo(&[("a.txt", "a\n")], &team);
    let out = t.run(PROBLEM).process().output();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.trim().lines().count() == 1
            && err.contains("`[workspace] setup`: command `nosuchsetup-xyz` not found on PATH")
            && err.contains("fix `setup`"),
        "{err}"
    );
    assert!(
        !t.path().join(".crewmux/runs").exists()
            || std::fs::read_dir(t.path().join(".crewmux/runs"))
                .unwrap()
                .count()
                == 0
    );
}

#[test]
fn a_copy_seed_that_is_not_there_is_said_at_the_start() {
    let team = format!(
        "[workspace]\ncopy = [\".env\"]\n\n{}",
        command_worker("one", "true", "ok")
    );
    let t = TeamProject::in_repo(&[("a.txt", "a\n")], &team);
    let out = t.run(PROBLEM).process().output();
    assert_eq!(summary(&out)["status"], "done", "{}", stderr(&out));
    assert!(
        stderr(&out).contains("[workspace] copy: .env is not in the project"),
        "{}",
        stderr(&out)
    );
}
