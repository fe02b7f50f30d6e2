//! Worktrees per worker, the integration branch and taking the result, with real git
//! repositories in temporary folders, scripted `command` workers that edit files, and real
//! tmux where the issue asks for it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::*;

pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim_end().to_string()
}

/// A repository with `files` committed on `main`.
pub(crate) fn repo(files: &[(&str, &str)]) -> crate::support::Project {
    let tmp = crate::support::project();
    let d = tmp.path();
    git(d, &["init", "-q", "-b", "main"]);
    git(d, &["config", "user.email", "user@example.com"]);
    git(d, &["config", "user.name", "User"]);
    for (name, text) in files {
        let p = d.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    git(d, &["add", "-A"]);
    git(d, &["commit", "-qm", "start"]);
    tmp
}

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

/// A `command` worker that runs `script` in its working directory and writes `result`.
pub(crate) fn worker(id: &str, script: &str, result: &str) -> String {
    format!(
        "[[worker]]\nid = \"{id}\"\nrole = \"backend-engineer\"\nprovider = \"command\"\nmax_attempts = 1\ncommand = [\"sh\", \"-c\", '''{script}; printf '%s\\n' \"{result}\" > \"$CREWMUX_RESULT_FILE\"''']\n\n"
    )
}

pub(crate) fn run(
    project: &Path,
    socket: &str,
    backend: &str,
    team: &Path,
    extra: &[&str],
) -> Output {
    let mut args = vec![
        "run",
        "--headless",
        "--no-clarify",
        "--backend",
        backend,
        "--team",
        team.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    args.push("change the files");
    run_crewmux(project, socket, &args)
}

pub(crate) fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn backend_for(test: &str) -> &'static str {
    if tmux_ready(test) {
        "tmux"
    } else {
        "process"
    }
}

pub(crate) fn run_id(project: &Path) -> String {
    only_run_dir(project)
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

#[test]
fn three_workers_merge_cleanly_a_check_passes_and_merge_brings_it_home() {
    let tmp = repo(&[("a.txt", "a\n"), ("b.txt", "b\n"), ("README", "x\n")]);
    let d = tmp.path();
    let teamdir = crate::support::project();
    let team = team_file(
        teamdir.path(),
        "team.toml",
        &format!(
            "name = \"three\"\nparallel = 3\n\n{}{}{}[[check]]\nid = \"all\"\ncommand = [\"sh\", \"-c\", \"grep -q A a.txt && grep -q B b.txt && test -f c.txt\"]\n",
            worker("one", "echo A >> a.txt", "Changed a.txt: appended A."),
            worker("two", "echo B >> b.txt", "Changed b.txt: appended B."),
            worker("three", "echo C > c.txt", "Added c.txt with C."),
        ),
    );
    let before = user_view(d);
    let server = TmuxServer::new("ws-a");
    let out = run(d, &server.socket, backend_for("three_workers"), &team, &[]);
    let s = summary(&out);
    assert_eq!(s["status"], "done", "{s}\n{}", stderr(&out));
    let check = worker_of(&s, "check-all");
    assert_eq!(
        check["status"], "completed",
        "the check passed on the merged tree: {s}"
    );
    assert_eq!(user_view(d), before, "the run left the user's tree alone");

    let id = run_id(d);
    assert_eq!(
        worker_of(&s, "one")["diff"],
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
    let status = run_crewmux(d, &server.socket, &["status", &id]);
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

    let dry = run_crewmux(d, &server.socket, &["merge", &id, "--dry-run"]);
    assert!(dry.status.success(), "{}", stderr(&dry));
    assert!(String::from_utf8_lossy(&dry.stdout).contains("3 files changed"));
    assert_eq!(user_view(d), before, "--dry-run changes nothing");

    let merged = run_crewmux(d, &server.socket, &["merge", &id]);
    assert!(merged.status.success(), "{}", stderr(&merged));
    assert_eq!(std::fs::read_to_string(d.join("a.txt")).unwrap(), "a\nA\n");
    assert_eq!(std::fs::read_to_string(d.join("c.txt")).unwrap(), "C\n");
    assert_eq!(git(d, &["status", "--porcelain"]), "");
    assert!(git(d, &["log", "-1", "--format=%s"]).contains(&id));
}

pub(crate) fn worker_of<'a>(s: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    crate::support::worker(s, id)
}

const SAME_LINE: &str = "fn answer() -> u32 {\n    0\n}\n";

fn conflicting_team(dir: &Path, fixer: bool) -> PathBuf {
    let fixer = if fixer {
        // The scripted merge-fixer keeps both sides' intent: the sum.
        "[fixer]\nprovider = \"command\"\ncommand = [\"sh\", \"-c\", \"printf 'fn answer() -> u32 {\\\\n    1 + 2\\\\n}\\\\n' > lib.rs; echo 'Resolved lib.rs: kept 1 + 2.' > \\\"$CREWMUX_RESULT_FILE\\\"\"]\n\n"
    } else {
        ""
    };
    team_file(
        dir,
        "team.toml",
        &format!(
            "name = \"pair\"\nparallel = 2\n\n{}{}{fixer}[[check]]\nid = \"built\"\ncommand = [\"sh\", \"-c\", \"! grep -q '<<<<<<<' lib.rs && grep -q 'u32' lib.rs\"]\n",
            worker("one", "sed -i 's/    0/    1/' lib.rs", "Changed lib.rs: answer is 1."),
            worker("two", "sed -i 's/    0/    2/' lib.rs", "Changed lib.rs: answer is 2."),
        ),
    )
}

#[test]
fn a_conflict_is_resolved_by_the_merge_fixer_and_the_check_passes() {
    let tmp = repo(&[("lib.rs", SAME_LINE)]);
    let d = tmp.path();
    let teamdir = crate::support::project();
    let team = conflicting_team(teamdir.path(), true);
    let server = TmuxServer::new("ws-b");
    let out = run(d, &server.socket, backend_for("merge_fixer"), &team, &[]);
    let s = summary(&out);
    let fixer = worker_of(&s, "merge-fixer-two");
    assert_eq!(fixer["status"], "completed", "{s}");
    assert_eq!(fixer["role"], "fixer");
    assert_eq!(worker_of(&s, "check-built")["status"], "completed", "{s}");
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
    let tmp = repo(&[("lib.rs", SAME_LINE)]);
    let d = tmp.path();
    let teamdir = crate::support::project();
    let team = conflicting_team(teamdir.path(), false);
    let out = run(d, "unused", "process", &team, &[]);
    let s = summary(&out);
    assert_eq!(s["council"]["status"], "blocked", "{s}");
    let findings = s["council"]["verdicts"].to_string();
    assert!(
        findings.contains("merge conflict in lib.rs between one and two"),
        "{findings}"
    );
    assert_eq!(out.status.code(), Some(1));

    // Taking integration would lose `two`'s change: merge (and its dry run) refuse it.
    let id = run_id(d);
    for args in [vec!["merge", &id, "--dry-run"], vec!["merge", &id]] {
        let refused = run_crewmux(d, "unused", &args);
        let text = stderr(&refused);
        assert_eq!(refused.status.code(), Some(2), "{args:?}: {text}");
        for want in [
            "council is blocked",
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
    assert!(run_crewmux(d, "unused", &["merge", &id]).status.success());
    let clean = run_crewmux(d, "unused", &["clean", "--run", &id]);
    assert!(clean.status.success(), "{}", stderr(&clean));
    assert!(!d.join(".crewmux/worktrees").join(&id).exists());
    assert_eq!(git(d, &["branch", "--list", "crewmux/*"]), "");
}

#[test]
fn include_uncommitted_shows_the_dirty_tree_to_workers_and_leaves_it_alone() {
    let tmp = repo(&[("a.txt", "committed\n")]);
    let d = tmp.path();
    std::fs::write(d.join("a.txt"), "uncommitted edit\n").unwrap();
    std::fs::write(d.join("new.txt"), "untracked\n").unwrap();
    git(d, &["add", "new.txt"]);
    let teamdir = crate::support::project();
    let team = team_file(
        teamdir.path(),
        "team.toml",
        &worker("one", "cat a.txt new.txt > seen.txt", "Added seen.txt."),
    );
    let before = user_view(d);
    let stash_before = git(d, &["stash", "list"]);
    let out = run(d, "unused", "process", &team, &["--include-uncommitted"]);
    assert_eq!(summary(&out)["status"], "done", "{}", stderr(&out));
    let id = run_id(d);
    let seen = git(d, &["show", &format!("crewmux/{id}/one:seen.txt")]);
    assert_eq!(seen, "uncommitted edit\nuntracked");
    assert_eq!(user_view(d), before, "tree, index and HEAD untouched");
    assert_eq!(git(d, &["stash", "list"]), stash_before);

    // Without the flag the dirty tree gets a one-line notice.
    let out = run(d, "unused", "process", &team, &[]);
    assert!(
        stderr(&out).contains("uncommitted changes: they are not in the workers' trees"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_project_without_git_runs_shared_with_a_notice() {
    let tmp = crate::support::project();
    let d = tmp.path();
    let teamdir = crate::support::project();
    let team = team_file(
        teamdir.path(),
        "team.toml",
        &worker("one", "echo here > made.txt", "Added made.txt."),
    );
    let out = run(d, "unused", "process", &team, &[]);
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
    let tmp = repo(&[("a.txt", "a\n")]);
    let d = tmp.path();
    let teamdir = crate::support::project();
    let team = team_file(teamdir.path(), "team.toml", &worker("one", "true", "ok"));
    let out = run(d, "unused", "process", &team, &["--base", "no-such-ref"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("--base no-such-ref: not a commit"), "{err}");
    assert!(!d.join(".crewmux/runs").exists());
    assert_eq!(git(d, &["branch", "--list", "crewmux/*"]), "");

    let bare = crate::support::project();
    git(bare.path(), &["init", "-q", "--bare"]);
    let out = run(bare.path(), "unused", "process", &team, &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("bare git repository"),
        "{}",
        stderr(&out)
    );

    // A detached HEAD is allowed: the base is that commit.
    let head = git(d, &["rev-parse", "HEAD"]);
    git(d, &["checkout", "-q", "--detach"]);
    let out = run(d, "unused", "process", &team, &[]);
    assert_eq!(summary(&out)["status"], "done", "{}", stderr(&out));
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(only_run_dir(d).join("manifest.json")).unwrap())
            .unwrap();
    assert_eq!(manifest["workspace"]["base"], head);
}

#[test]
fn a_run_halted_at_the_clarification_gate_makes_no_worktree_until_resumed() {
    let tmp = repo(&[("a.txt", "a\n")]);
    let d = tmp.path();
    let teamdir = crate::support::project();
    let team = team_file(
        teamdir.path(),
        "team.toml",
        &format!(
            "{}{}",
            worker("one", "echo A >> a.txt", "Changed a.txt."),
            worker("two", "echo B > b.txt", "Added b.txt.")
        ),
    );
    let (trees, branches) = (
        git(d, &["worktree", "list"]),
        git(d, &["branch", "--list", "crewmux/*"]),
    );
    let halted = run_crewmux(
        d,
        "unused",
        &[
            "run",
            "--headless",
            "--backend",
            "process",
            "--team",
            team.to_str().unwrap(),
            "fix it",
        ],
    );
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
