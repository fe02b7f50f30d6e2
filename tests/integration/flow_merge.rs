//! Teams that flow in a git project, end to end in real tmux panes with scripted `command`
//! workers on throwaway repositories: a downstream worker's worktree holds its upstreams'
//! changes; a conflict between them goes to a merge-fixer before the downstream starts,
//! and one nobody resolves skips it (or, when it runs anyway, its prompt says what it
//! lacks); a worktree that cannot be made fails only its own worker.

use crate::support::*;

/// A git repository with one commit and a team: `a` and `b` write `A-WORK` and `B-WORK`
/// into their files; `review` waits for both and prints the `*.txt` its worktree holds,
/// then its prompt. `extra` goes into `review`'s table, `fixer` is the `[fixer]` command
/// (none: no agent can fix).
fn git_pipeline(a_file: &str, b_file: &str, extra: &str, fixer: Option<&str>) -> TeamProject {
    let fixer = fixer
        .map(|c| format!("[fixer]\nprovider = \"command\"\ncommand = [\"sh\", \"-c\", {c:?}]\n"))
        .unwrap_or_default();
    let body = format!(
        r#"
name = "git-pipeline"
max_fix_rounds = 0
{fixer}
[[worker]]
id = "a"
role = "backend-engineer"
provider = "command"
command = ["sh", "-c", "echo A-WORK > {a_file}; echo done a"]

[[worker]]
id = "b"
role = "frontend-designer"
provider = "command"
command = ["sh", "-c", "echo B-WORK > {b_file}; echo done b"]

[[worker]]
id = "review"
role = "reviewer"
provider = "command"
command = ["sh", "-c", "cat *.txt; cat \"$CREWMUX_PROMPT_FILE\""]
after = ["a", "b"]
{extra}
"#
    );
    TeamProject::in_repo(&[("README", "base\n")], &body)
}

/// One headless run of the team, one attempt per worker, on `backend`.
fn run_team(tp: &TeamProject, backend: &Backend) -> (std::process::Output, serde_json::Value) {
    let out = tp
        .run("Review a and b")
        .on(backend)
        .args(&["--max-attempts", "1"])
        .output();
    let s = summary(&out);
    (out, s)
}

fn state_of(tmp: &TeamProject) -> serde_json::Value {
    let text = std::fs::read_to_string(only_run_dir(tmp.path()).join("state.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn field(state: &serde_json::Value, id: &str, key: &str) -> String {
    state["workers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["id"] == id)
        .unwrap_or_else(|| panic!("no worker {id}"))[key]
        .as_str()
        .unwrap_or_else(|| panic!("{id} has no {key}"))
        .to_string()
}

fn review_result(tmp: &TeamProject) -> String {
    let run = only_run_dir(tmp.path());
    std::fs::read_to_string(run.join("workers/review/attempt-1/result.md")).unwrap()
}

#[test]
fn a_downstream_worktree_holds_its_upstreams_changes() {
    if !tmux_ready("a_downstream_worktree_holds_its_upstreams_changes") {
        return;
    }
    let tmp = git_pipeline("a.txt", "b.txt", "", None);
    let (_, s) = run_team(&tmp, &Backend::tmux("flowgit"));
    assert_eq!(worker(&s, "review")["status"], "completed", "{s}");
    let result = review_result(&tmp);
    assert!(
        result.contains("A-WORK") && result.contains("B-WORK"),
        "{result}"
    );
    assert!(
        result.contains("Your worktree already holds the work of: a ("),
        "{result}"
    );
    // The user's checkout has none of it.
    assert!(!tmp.path().join("a.txt").exists());
}

/// The merge-fixer keeps both sides: both lines, no conflict marker.
const KEEP_BOTH: &str =
    "printf 'A-WORK\\nB-WORK\\n' > same.txt; echo 'Kept both lines of same.txt.' > \"$CREWMUX_RESULT_FILE\"";

#[test]
fn a_conflict_between_upstreams_is_resolved_by_the_merge_fixer_before_the_downstream_starts() {
    if !tmux_ready(
        "a_conflict_between_upstreams_is_resolved_by_the_merge_fixer_before_the_downstream_starts",
    ) {
        return;
    }
    let tmp = git_pipeline("same.txt", "same.txt", "", Some(KEEP_BOTH));
    let (out, s) = run_team(&tmp, &Backend::tmux("flowfix"));
    let fixer = worker(&s, "merge-fixer-b-into-review");
    assert_eq!(fixer["status"], "completed", "{s}");
    assert_eq!(fixer["role"], "fixer", "{s}");
    assert_eq!(worker(&s, "review")["status"], "completed", "{s}");
    // The downstream saw both upstreams' changes, resolved, and was told so.
    let result = review_result(&tmp);
    assert!(result.starts_with("A-WORK\nB-WORK\n"), "{result}");
    assert!(!result.contains("<<<<<<<"), "{result}");
    assert!(
        result.contains(
            "The work of b conflicted with a in same.txt; merge-fixer-b-into-review resolved it"
        ),
        "{result}"
    );
    // The fixer worked in the downstream's worktree, on the hunks, after both upstreams
    // and before the downstream (RFC 3339 UTC strings sort by time).
    let run = only_run_dir(tmp.path());
    let prompt =
        std::fs::read_to_string(run.join("workers/merge-fixer-b-into-review/attempt-1/prompt.md"))
            .unwrap();
    assert!(
        prompt.contains("the worktree of `review`") && prompt.contains("<<<<<<<"),
        "{prompt}"
    );
    let state = state_of(&tmp);
    let fixer_start = field(&state, "merge-fixer-b-into-review", "started_at");
    let fixer_end = field(&state, "merge-fixer-b-into-review", "ended_at");
    for up in ["a", "b"] {
        assert!(fixer_start >= field(&state, up, "ended_at"), "{state}");
    }
    assert!(
        field(&state, "review", "started_at") >= fixer_end,
        "{state}"
    );
    // The resolution is committed on review's branch, and the integration found nothing
    // left to fix: no second merge-fixer.
    let id = state["run_id"].as_str().unwrap();
    let log = git(
        tmp.path(),
        &["log", "--format=%s", &format!("crewmux/{id}/review")],
    );
    assert!(
        log.contains("crewmux: review takes b's work (conflicts resolved by its merge-fixer)"),
        "{log}"
    );
    let merged = git(
        tmp.path(),
        &["show", &format!("crewmux/{id}/integration:same.txt")],
    );
    assert_eq!(merged, "A-WORK\nB-WORK");
    assert!(
        state["workers"]
            .as_array()
            .unwrap()
            .iter()
            .all(|w| w["id"] != "merge-fixer-b"),
        "the integration needed no merge-fixer: {state}"
    );
    assert_eq!(out.status.code(), Some(0), "{s}");
}

#[test]
fn a_merge_fixer_that_fails_skips_the_downstream_with_the_conflict_as_its_reason() {
    if !tmux_ready("a_merge_fixer_that_fails_skips_the_downstream_with_the_conflict_as_its_reason")
    {
        return;
    }
    let tmp = git_pipeline("same.txt", "same.txt", "", Some("exit 3"));
    let (out, s) = run_team(&tmp, &Backend::tmux("flowfixfail"));
    assert_eq!(
        worker(&s, "merge-fixer-b-into-review")["status"],
        "failed",
        "{s}"
    );
    let review = worker(&s, "review");
    assert_eq!(review["status"], "skipped", "{s}");
    assert_eq!(
        review["reason"],
        "upstream b conflicts with a in same.txt (merge-fixer-b-into-review failed)",
        "{s}"
    );
    assert_eq!(review["attempts"], 0, "never started: {s}");
    // The conflicted merge is not left in the downstream's worktree.
    let id = state_of(&tmp)["run_id"].as_str().unwrap().to_string();
    let wt = tmp.path().join(format!(".crewmux/worktrees/{id}/review"));
    assert_eq!(git(&wt, &["status", "--porcelain"]), "", "a clean worktree");
    assert_eq!(out.status.code(), Some(1), "{s}");
}

#[test]
fn with_no_merge_fixer_a_downstream_that_runs_anyway_is_told_what_it_lacks() {
    if !tmux_ready("with_no_merge_fixer_a_downstream_that_runs_anyway_is_told_what_it_lacks") {
        return;
    }
    let extra = "on_upstream_failure = \"run\"";
    let tmp = git_pipeline("same.txt", "same.txt", extra, None);
    let (_, s) = run_team(&tmp, &Backend::tmux("flowgitc"));
    assert_eq!(worker(&s, "review")["status"], "completed", "{s}");
    let result = review_result(&tmp);
    assert!(result.starts_with("A-WORK"), "a's work is there: {result}");
    assert!(
        result.contains("The work of b (")
            && result.contains("conflicts with a in same.txt and is NOT in your worktree"),
        "{result}"
    );
}

/// Worktrees are backend-independent: this one runs on the process backend.
#[test]
fn a_worktree_that_cannot_be_made_fails_only_its_own_worker() {
    let mut body = String::from("name = \"three\"\nparallel = 3\nmax_fix_rounds = 0\n");
    for id in ["one", "two", "three"] {
        body.push_str(&format!(
            "\n[[worker]]\nid = \"{id}\"\nrole = \"backend-engineer\"\nprovider = \"command\"\ncommand = [\"sh\", \"-c\", \"echo {id} > {id}.txt\"]\n"
        ));
    }
    let tmp = TeamProject::in_repo(&[("README", "base\n")], &body);
    // `git worktree add` runs the post-checkout hook in the new worktree and fails with it.
    let hook = tmp.path().join(".git/hooks/post-checkout");
    std::fs::write(
        &hook,
        "#!/bin/sh\ncase \"$PWD\" in */two) echo 'no checkout for two' >&2; exit 1;; esac\n",
    )
    .unwrap();
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let (_, s) = run_team(&tmp, &Backend::process());
    for id in ["one", "three"] {
        assert_eq!(worker(&s, id)["status"], "completed", "{id}: {s}");
    }
    let two = worker(&s, "two");
    assert_eq!(two["status"], "failed", "{s}");
    let reason = two["reason"].as_str().unwrap();
    assert!(
        reason.contains("cannot make its worktree")
            && reason.contains("/two")
            && reason.contains("no checkout for two"),
        "its own reason: {reason}"
    );
    assert!(
        !reason.contains("/one") && !reason.contains("/three"),
        "{reason}"
    );
}
