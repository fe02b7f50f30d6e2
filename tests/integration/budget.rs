//! Budgets: a run whose workers' CLIs report tokens (a stand-in speaking Claude Code's
//! stream-json) stops at its budget: the worker still running is ended, the one not yet
//! started never starts, what completed is integrated, and the run ends `failed` with
//! reason `budget`. Bad budgets are one line, exit 2, nothing made.

use crate::support::*;

/// `w1` edits `one.md` and reports 19 990 tokens; the others sleep (reporting nothing, so
/// their running attempts count their prompt's and output's bytes / 4).
const CLI: &str = r#"#!/bin/sh
cat > /dev/null
if [ "$CREWMUX_WORKER" = w1 ]; then
  echo "one" > one.md
  printf '{"type":"result","subtype":"success","is_error":false,"session_id":"s","result":"Wrote one.md.","usage":{"input_tokens":19000,"output_tokens":990}}\n'
else
  sleep 60
fi
"#;

#[test]
fn a_run_at_its_token_budget_ends_its_running_worker_starts_no_other_and_keeps_the_work() {
    let backend = tmux_or_process("budget");
    let mut team = String::from("name = \"spend\"\nparallel = 2\n\n[budget]\ntokens = 20000\n\n");
    for i in 1..=3 {
        team.push_str(&format!(
            "[[worker]]\nid = \"w{i}\"\nrole = \"backend-engineer\"\nprovider = \"spender\"\nmax_attempts = 1\n\n"
        ));
    }
    let t = TeamProject::in_repo(&[("notes.md", "# Notes\n")], &team);
    let bin = tempfile::tempdir().unwrap();
    let cli = bin.path().join("spender");
    std::fs::write(&cli, CLI).unwrap();
    std::fs::set_permissions(&cli, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    std::fs::create_dir_all(t.path().join(".crewmux")).unwrap();
    std::fs::write(
        t.path().join(".crewmux/providers.toml"),
        format!(
            "[providers.spender]\nkind = \"agent\"\nbinary = \"{}\"\nprompt = \"stdin\"\noutput = \"claude-json\"\nauth = \"none\"\n",
            cli.display()
        ),
    )
    .unwrap();
    let out = t.run("Write the notes").on(&backend).output();
    let s = summary(&out);
    assert_eq!(s["status"], "failed", "{}", stderr(&out));
    let state: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(only_run_dir(t.path()).join("state.json")).unwrap(),
    )
    .unwrap();
    let reason = state["reason"].as_str().unwrap();
    assert!(reason.starts_with("budget: "), "{reason}");
    assert_eq!(state_worker(&state, "w1")["status"], "completed");
    let w2 = state_worker(&state, "w2");
    assert_eq!(w2["status"], "cancelled", "{w2}");
    assert!(w2["reason"].as_str().unwrap().contains("budget"), "{w2}");
    let w3 = state_worker(&state, "w3");
    assert_eq!(w3["status"], "cancelled", "{w3}");
    assert_eq!(w3["attempt"], 0, "never started: {w3}");
    assert!(state["budget"]["spent"]["tokens"].as_u64().unwrap() >= 20000);
    let run = only_run_dir(t.path());
    assert_eq!(count_events(&run, "budget-warning"), 1);
    assert_eq!(count_events(&run, "budget-spent"), 1);
    assert_eq!(count_events(&run, "critic-verdict"), 0, "no council sat");
    // What completed is in the integration branch; `status` says the budget.
    let id = run_id(t.path());
    let status = run_crewmux(t.path(), backend.socket(), &["status", &id]);
    let said = String::from_utf8_lossy(&status.stdout).to_string();
    assert!(
        said.contains("budget: ") && said.contains("of 20.0k tokens"),
        "{said}"
    );
    let one = git(
        t.path(),
        &["show", &format!("crewmux/{id}/integration:one.md")],
    );
    assert_eq!(one.trim(), "one");
}

#[test]
fn a_budget_of_zero_or_less_is_one_line_and_nothing_is_made() {
    let t = TeamProject::new(
        "name = \"b\"\n\n[[worker]]\nid = \"w\"\nrole = \"backend-engineer\"\nprovider = \"sim\"\n",
    );
    for (flag, value, says) in [
        ("--budget-usd", "0", "use a positive amount of US dollars"),
        ("--budget-usd", "-2", "use a positive amount of US dollars"),
        (
            "--budget-tokens",
            "0",
            "use a positive whole number of tokens",
        ),
    ] {
        let out = t
            .run("Write the notes")
            .process()
            .args(&[flag, value])
            .output();
        assert_eq!(
            out.status.code(),
            Some(2),
            "{flag} {value}: {}",
            stderr(&out)
        );
        assert!(
            stderr(&out).contains(says),
            "{flag} {value}: {}",
            stderr(&out)
        );
    }
    let t = TeamProject::new(
        "name = \"b\"\n\n[budget]\nusd = -1.5\n\n[[worker]]\nid = \"w\"\nrole = \"backend-engineer\"\nprovider = \"sim\"\n",
    );
    let out = t.run("Write the notes").process().output();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("[budget] usd -1.5: a budget is a positive amount"),
        "{}",
        stderr(&out)
    );
    let made = std::fs::read_dir(t.path().join(".crewmux/runs"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!(made, 0, "no run folder is left");
}

#[test]
fn a_price_without_its_date_is_refused_with_its_place() {
    let t = TeamProject::new(
        "name = \"b\"\n\n[[worker]]\nid = \"w\"\nrole = \"backend-engineer\"\nprovider = \"sim\"\n",
    );
    std::fs::create_dir_all(t.path().join(".crewmux")).unwrap();
    std::fs::write(
        t.path().join(".crewmux/providers.toml"),
        "[providers.codex.prices.\"gpt-5\"]\ninput_usd_per_mtok = 1.0\noutput_usd_per_mtok = 8.0\nsource = \"a price list\"\n",
    )
    .unwrap();
    let out = t.run("Write the notes").process().output();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("providers.toml") && err.contains("date"),
        "{err}"
    );
}
