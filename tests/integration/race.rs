//! A race (README "Races"), with real git in a temporary repository and scripted `command`
//! candidates: three candidates of one task, one failing the team's check, one passing with
//! a bigger change and one passing with a smaller one, are ranked smaller-passing first,
//! only that pick reaches the integration branch, and `crewmux merge --worker` takes
//! another; bad race values are refused before anything is made.

use crate::support::*;

/// Candidate 1 writes what the check refuses; 2 passes and writes a second file; 3 passes
/// with the one line.
const SCRIPT: &str = r#"case "$CREWMUX_CANDIDATE" in 1) echo broken > impl.txt ;; 2) printf 'ok\nmore\nlines\n' > impl.txt; echo extra > extra.txt ;; 3) echo ok > impl.txt ;; esac"#;

fn team(race: &str) -> TeamProject {
    TeamProject::in_repo(
        &[("a.txt", "a\n")],
        &format!(
            "{}{race}\n[[check]]\nid = \"works\"\ncommand = [\"sh\", \"-c\", \"grep -qx ok impl.txt || {{ echo impl.txt does not start ok; exit 1; }}\"]\n",
            command_worker("fix", SCRIPT, "Wrote impl.txt.")
        ),
    )
}

#[test]
fn three_candidates_are_ranked_by_their_checks_then_their_change_and_only_the_pick_is_integrated() {
    let t = team("race = 3");
    let d = t.path();
    let out = t.run("make impl.txt say ok").process().output();
    let s = summary(&out);
    assert_eq!(s["status"], "done", "{}", stderr(&out));
    let id = run_id(d);
    let st: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(only_run_dir(d).join("state.json")).unwrap())
            .unwrap();
    let race = &st["races"]["fix"];
    assert_eq!(race["pick"], "fix-c3", "{race:#}");
    let ranking: Vec<&str> = race["ranking"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(ranking, ["fix-c3", "fix-c2", "fix-c1"], "{race:#}");
    assert!(
        race["ranking"][2]["why"]
            .as_str()
            .unwrap()
            .contains("checks 0/1"),
        "{race:#}"
    );
    assert_eq!(race["checked"]["fix-c1"][0]["passed"], false, "{race:#}");
    assert_eq!(race["checked"]["fix-c2"][0]["passed"], true, "{race:#}");
    for c in ["fix-c1", "fix-c2", "fix-c3"] {
        assert_eq!(state_worker(&st, c)["status"], "completed", "{st:#}");
    }
    // Only the pick is in the integration branch.
    let integration = format!("crewmux/{id}/integration");
    assert_eq!(git(d, &["show", &format!("{integration}:impl.txt")]), "ok");
    let files = git(d, &["ls-tree", "--name-only", &integration]);
    assert!(!files.contains("extra.txt"), "{files}");
    // The check that judged each candidate left its output.
    let log = std::fs::read_to_string(only_run_dir(d).join("race/fix/fix-c1-works.log")).unwrap();
    assert!(log.contains("does not start ok"), "{log}");
    let run = only_run_dir(d);
    assert_eq!(count_events(&run, "race-ranked"), 1);
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    assert!(
        report.contains("## Race") && report.contains("fix-c3") && report.contains("picked"),
        "{report}"
    );
    // Another candidate is one merge away.
    let merged = run_crewmux(d, "unused", &["merge", &id, "--worker", "fix-c2"]);
    assert!(merged.status.success(), "{}", stderr(&merged));
    assert_eq!(
        std::fs::read_to_string(d.join("extra.txt")).unwrap(),
        "extra\n"
    );
}

#[test]
fn bad_races_are_one_line_and_make_nothing() {
    for (race, says) in [
        ("race = 1", "`race = 1`: a race has 2 to 8 candidates"),
        ("race = 9", "`race = 9`: a race has 2 to 8 candidates"),
    ] {
        let t = team(race);
        let out = t.run("make impl.txt say ok").process().output();
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(stderr(&out).contains(says), "{}", stderr(&out));
        assert!(
            !t.path().join(".crewmux/runs").exists()
                || std::fs::read_dir(t.path().join(".crewmux/runs"))
                    .unwrap()
                    .next()
                    .is_none()
        );
    }
    let t = TeamProject::in_repo(
        &[("a.txt", "a\n")],
        &format!(
            "{}race = 2\n{}after = [\"fix\"]\n",
            command_worker("fix", "true", "ok"),
            command_worker("review", "true", "ok")
        ),
    );
    let out = t.run("x").process().output();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("worker `review` waits for `fix`, which races"),
        "{}",
        stderr(&out)
    );
    for n in ["0", "1", "9"] {
        let t = team("");
        let out = t.run("x").process().args(&["--race", n]).output();
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(stderr(&out).contains("--race"), "{}", stderr(&out));
    }
}

#[test]
fn a_candidate_that_failed_is_not_judged_with_the_pick() {
    let t = TeamProject::in_repo(
        &[("a.txt", "a\n")],
        &format!(
            "{}race = 2\n",
            command_worker(
                "fix",
                r#"if [ "$CREWMUX_CANDIDATE" = 1 ]; then exit 1; fi; echo ok > impl.txt"#,
                "Wrote impl.txt with ok in it, as asked: the file impl.txt now reads ok."
            )
        ),
    );
    let out = t.run("make impl.txt say ok").process().output();
    let s = summary(&out);
    assert_eq!(s["status"], "done", "{}", stderr(&out));
    let run = only_run_dir(t.path());
    let st: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("state.json")).unwrap()).unwrap();
    assert_eq!(st["races"]["fix"]["pick"], "fix-c2", "{st:#}");
    let verdicts = st["council"]["verdicts"].to_string();
    assert!(
        !verdicts.contains("fix-c1"),
        "the losing candidate is not the team's result: {verdicts}"
    );
    assert_ne!(st["council"]["status"], "blocked", "{verdicts}");
    let status = run_crewmux(t.path(), "unused", &["status", &run_id(t.path())]);
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(text.contains("race fix: #1 picked"), "{text}");
}
