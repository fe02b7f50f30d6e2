//! Conversations that continue: a retried attempt of an agent worker continues its CLI's
//! conversation with the provider's `resume_args` and the session id the CLI's events named
//! (here a stand-in CLI that speaks Claude Code's stream-json), the dispatch records say
//! which attempt made and which continued it, and `resume = false` starts fresh.

use std::path::Path;

use crate::support::*;

/// The stand-in CLI: appends its argv to `calls.txt`, prints a stream-json `init` event
/// naming the session `s-<n>` (its n-th call) and a `result`; the first call exits 1 so the
/// worker is retried.
const CLI: &str = r#"#!/bin/sh
dir=$(dirname "$0")
n=$(( $(cat "$dir/calls.txt" 2>/dev/null | wc -l) + 1 ))
echo "$*" >> "$dir/calls.txt"
cat > /dev/null
printf '{"type":"system","subtype":"init","session_id":"s-%s"}\n' "$n"
printf '{"type":"result","subtype":"success","is_error":false,"session_id":"s-%s","result":"Changed notes.md in attempt %s."}\n' "$n" "$n"
[ "$n" -gt 1 ]
"#;

fn providers_toml(cli: &Path) -> String {
    format!(
        r#"[providers.talker]
kind = "agent"
binary = "{}"
args = ["--fresh"]
resume_args = ["--resume", "{{session}}"]
prompt = "stdin"
output = "claude-json"
auth = "none"
"#,
        cli.display()
    )
}

fn team(resume: bool) -> String {
    format!(
        "name = \"talk\"\nresume = {resume}\n\n[[worker]]\nid = \"talker\"\nrole = \"backend-engineer\"\nprovider = \"talker\"\nmax_attempts = 2\n"
    )
}

/// Run the team once with the stand-in; the CLI's calls, one argv a line, and the state.
fn run_it(resume: bool) -> (Vec<String>, serde_json::Value) {
    let t = TeamProject::new(&team(resume));
    let bin = tempfile::tempdir().unwrap();
    let cli = bin.path().join("talker");
    std::fs::write(&cli, CLI).unwrap();
    std::fs::set_permissions(&cli, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    std::fs::create_dir_all(t.path().join(".crewmux")).unwrap();
    std::fs::write(
        t.path().join(".crewmux/providers.toml"),
        providers_toml(&cli),
    )
    .unwrap();
    let out = t.run("Change the notes").process().output();
    assert_eq!(summary(&out)["status"], "done", "{}", stderr(&out));
    let calls = std::fs::read_to_string(bin.path().join("calls.txt")).unwrap();
    let state: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(only_run_dir(t.path()).join("state.json")).unwrap(),
    )
    .unwrap();
    let prompt =
        std::fs::read_to_string(only_run_dir(t.path()).join("workers/talker/attempt-2/prompt.md"))
            .unwrap();
    assert_eq!(
        prompt.starts_with("[crewmux: this continues your conversation of attempt 1"),
        resume,
        "{prompt}"
    );
    (calls.lines().map(str::to_string).collect(), state)
}

#[test]
fn a_retried_agent_continues_its_conversation_and_resume_false_starts_fresh() {
    let (calls, state) = run_it(true);
    assert_eq!(
        calls,
        ["--fresh", "--resume s-1"],
        "the retry continues session s-1"
    );
    let records: Vec<&serde_json::Value> = state["dispatches"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["worker_id"] == "talker")
        .collect();
    assert_eq!(records[0]["session"], "s-1", "{records:?}");
    assert!(records[0].get("resumed").is_none(), "{records:?}");
    assert_eq!(records[1]["resumed"], "s-1", "{records:?}");
    assert_eq!(records[1]["session"], "s-2", "{records:?}");
    assert_eq!(state_worker(&state, "talker")["flow"]["resumed"], true);

    let (calls, state) = run_it(false);
    assert_eq!(
        calls,
        ["--fresh", "--fresh"],
        "resume = false starts each attempt fresh"
    );
    assert!(state["dispatches"][1].get("resumed").is_none(), "{state:#}");
}
