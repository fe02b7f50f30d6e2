//! Workers that talk to the lead over MCP, end to end: a script worker (tests/fixtures/
//! mcp_client.py, an MCP client as an agent CLI is one) starts the server its
//! `CREWMUX_MCP_CONFIG` names and calls its tools; the test answers as the person would.

use std::time::Duration;

use crate::support::*;

/// A team of one command worker that runs the MCP client with `calls` (tool, JSON args
/// pairs, each a TOML literal string), with `question_timeout_s`.
fn mcp_team(timeout_s: u64, calls: &[&str]) -> String {
    let client = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/mcp_client.py");
    let argv: Vec<String> = calls.iter().map(|c| format!("'''{c}'''")).collect();
    format!(
        "name = \"mcp\"\nquestion_timeout_s = {timeout_s}\n\n[[worker]]\nid = \"asker\"\nrole = \"backend-engineer\"\nprovider = \"command\"\nmax_attempts = 1\ncommand = [\"python3\", \"{client}\", {}]\n",
        argv.join(", ")
    )
}

fn python_ready(test: &str) -> bool {
    let ok = std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("SKIPPED {test}: python3 is not installed");
    }
    ok
}

fn result_of(project: &std::path::Path) -> String {
    let p = only_run_dir(project).join("workers/asker/attempt-1/result.md");
    String::from_utf8(std::fs::read(&p).unwrap()).unwrap()
}

/// 30 KB with tabs, quotes, a backslash, `$(…)` and newlines: what a shell would mangle.
fn hostile_answer() -> String {
    let mut s = String::from("teal\t\"quoted\" 'single' \\ $(touch /tmp/never) `x`\nline two\n");
    while s.len() < 30 * 1024 {
        s.push_str("0123456789abcdef\t");
    }
    s.push_str("\nend");
    s
}

#[test]
fn an_ask_answered_with_crewmux_answer_reaches_the_agent_byte_for_byte() {
    if !tmux_ready("an_ask_answered_with_crewmux_answer_reaches_the_agent_byte_for_byte")
        || !python_ready("an_ask_answered")
    {
        return;
    }
    let server = TmuxServer::new("mcp-ask");
    let t = TeamProject::new(&mcp_team(
        120,
        &[
            "progress",
            r#"{"text": "reading the code"}"#,
            "ask",
            r#"{"question": "Which colour?", "choices": ["red", "teal"], "default": "red"}"#,
        ],
    ));
    let tmp = t.path();
    let child = t.run("pick a colour").tmux(&server).spawn();
    let st = wait_state(tmp, "asker waiting", Duration::from_secs(90), |s| {
        state_worker(s, "asker")["status"] == "waiting"
    });
    let w = state_worker(&st, "asker");
    assert_eq!(w["question"], "Which colour?", "{w}");
    assert_eq!(w["pending"]["choices"], serde_json::json!(["red", "teal"]));
    assert_eq!(w["pending"]["default"], "red");
    assert!(w["pending"]["deadline"].is_string(), "{w}");
    let id = run_id(tmp);
    let answer = hostile_answer();
    let ans = run_crewmux(
        tmp,
        &server.socket,
        &["answer", &id, "--worker", "asker", &answer],
    );
    assert_eq!(ans.status.code(), Some(0), "{}", stderr(&ans));
    let out = wait_limited(child, &["run"]);
    assert_eq!(summary(&out)["status"], "done", "{}", stderr(&out));
    let result = result_of(tmp);
    assert!(result.contains("tools approve ask progress"), "{result}");
    assert!(result.contains("progress error=False\nshown"), "{result}");
    let (_, asked) = result
        .split_once("ask error=False\n")
        .expect("the ask returned");
    assert_eq!(asked, answer, "the answer reached the agent byte for byte");
    assert!(!std::path::Path::new("/tmp/never").exists());
    let run = only_run_dir(tmp);
    assert_eq!(count_events(&run, "worker-progress"), 1);
    assert_eq!(count_events(&run, "worker-answered"), 1);
    assert_eq!(count_events(&run, "worker-unanswered"), 0);
}

#[test]
fn an_unanswered_ask_returns_its_default_after_the_question_timeout() {
    if !python_ready("an_unanswered_ask_returns_its_default_after_the_question_timeout") {
        return;
    }
    let backend = tmux_or_process("mcp-default");
    let t = TeamProject::new(&mcp_team(
        2,
        &[
            "ask",
            r#"{"question": "Which colour?", "default": "red"}"#,
            "ask",
            r#"{"question": "And the size?"}"#,
        ],
    ));
    let out = t.run("pick").on(&backend).output();
    assert_eq!(summary(&out)["status"], "done", "{}", stderr(&out));
    let result = result_of(t.path());
    assert!(result.contains("ask error=False\nred\n---"), "{result}");
    assert!(
        result.contains("No answer came within 2 s and the question gave no default"),
        "{result}"
    );
    let run = only_run_dir(t.path());
    assert_eq!(count_events(&run, "worker-unanswered"), 2);
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    assert!(
        report.contains("not answered within 2s: the agent's default `red` applied"),
        "{report}"
    );
}

#[test]
fn a_call_with_another_attempts_nonce_is_refused_and_logged() {
    if !python_ready("a_call_with_another_attempts_nonce_is_refused_and_logged") {
        return;
    }
    let backend = tmux_or_process("mcp-forged");
    let team = mcp_team(
        30,
        &[
            "progress",
            r#"{"text": "all done, completed"}"#,
            "ask",
            r#"{"question": "Forged?"}"#,
        ],
    )
    .replace(
        "mcp_client.py\", ",
        "mcp_client.py\", \"--nonce\", \"0000forged000000\", ",
    );
    let t = TeamProject::new(&team);
    let out = t.run("forge").on(&backend).output();
    assert_eq!(summary(&out)["status"], "done", "{}", stderr(&out));
    let result = result_of(t.path());
    assert!(result.contains("ask error=True\nrefused: "), "{result}");
    let run = only_run_dir(t.path());
    assert_eq!(count_events(&run, "worker-waiting"), 0);
    assert_eq!(
        count_events(&run, "worker-progress"),
        0,
        "a forged progress is not shown"
    );
    assert_eq!(count_events(&run, "mcp-refused"), 2);
}

/// The `approve` call Claude Code makes through `--permission-prompt-tool`: run `command`.
fn approve_bash(command: &str) -> String {
    format!(
        r#"{{"tool_name": "Bash", "input": {{"command": "{command}"}}, "tool_use_id": "toolu_1"}}"#
    )
}

#[test]
fn an_approval_denied_with_crewmux_answer_reaches_the_agent_with_the_reason() {
    if !tmux_ready("an_approval_denied_with_crewmux_answer_reaches_the_agent_with_the_reason")
        || !python_ready("an_approval_denied")
    {
        return;
    }
    let server = TmuxServer::new("mcp-deny");
    let call = approve_bash("rm -rf build");
    let t = TeamProject::new(&mcp_team(120, &["approve", &call]));
    let tmp = t.path();
    let child = t.run("clean up").tmux(&server).spawn();
    let st = wait_state(tmp, "asker waiting", Duration::from_secs(90), |s| {
        state_worker(s, "asker")["status"] == "waiting"
    });
    let w = state_worker(&st, "asker");
    assert_eq!(w["question"], "Bash wants to run: rm -rf build", "{w}");
    assert_eq!(w["pending"]["approval"]["tool"], "Bash", "{w}");
    let id = run_id(tmp);
    // --allow on a worker that waits on a plain question is refused; here it waits on an
    // approval, so a bad flag mix is what clap refuses.
    let bad = run_crewmux(tmp, &server.socket, &["answer", &id, "--deny", "x", "text"]);
    assert_ne!(bad.status.code(), Some(0), "{}", stderr(&bad));
    let ans = run_crewmux(
        tmp,
        &server.socket,
        &[
            "answer",
            &id,
            "--worker",
            "asker",
            "--deny",
            "not on this machine",
        ],
    );
    assert_eq!(ans.status.code(), Some(0), "{}", stderr(&ans));
    let out = wait_limited(child, &["run"]);
    assert_eq!(summary(&out)["status"], "done", "{}", stderr(&out));
    let result = result_of(tmp);
    let (_, said) = result
        .split_once("approve error=False\n")
        .expect("the approve call returned");
    let said: serde_json::Value = serde_json::from_str(said).unwrap();
    assert_eq!(
        said,
        serde_json::json!({"behavior": "deny", "message": "not on this machine"})
    );
    let run = only_run_dir(tmp);
    assert_eq!(count_events(&run, "worker-waiting"), 1);
    assert_eq!(count_events(&run, "worker-answered"), 1);
}

#[test]
fn auto_allows_a_write_inside_the_worktree_and_deny_refuses_without_asking() {
    if !python_ready("auto_allows_a_write_inside_the_worktree_and_deny_refuses_without_asking") {
        return;
    }
    let backend = tmux_or_process("mcp-auto");
    let inside = r#"{"tool_name": "Write", "input": {"file_path": "notes.md", "content": "x"}, "tool_use_id": "t1"}"#;
    let outside = r#"{"tool_name": "Write", "input": {"file_path": "/etc/crewmux-never", "content": "x"}, "tool_use_id": "t2"}"#;
    let team = mcp_team(2, &["approve", inside, "approve", outside]).replace(
        "\n\n[[worker]]",
        "\n\n[approvals]\npolicy = \"auto\"\n\n[[worker]]",
    );
    let t = TeamProject::new(&team);
    let out = t.run("write notes").on(&backend).output();
    assert_eq!(summary(&out)["status"], "done", "{}", stderr(&out));
    let result = result_of(t.path());
    let calls: Vec<serde_json::Value> = result
        .split("approve error=False\n")
        .skip(1)
        .map(|s| serde_json::from_str(s.split("\n---").next().unwrap()).unwrap())
        .collect();
    assert_eq!(calls[0]["behavior"], "allow", "{result}");
    assert_eq!(calls[0]["updatedInput"]["file_path"], "notes.md");
    // Outside the worktree it asked; nobody answered within 2 s, so it was denied.
    assert_eq!(calls[1]["behavior"], "deny", "{result}");
    let run = only_run_dir(t.path());
    assert_eq!(
        count_events(&run, "worker-waiting"),
        1,
        "only the outside write asked"
    );

    // `deny`: refused at once, the worker never waits.
    let team = mcp_team(600, &["approve", inside]).replace(
        "max_attempts = 1",
        "max_attempts = 1\napprovals = { policy = \"deny\" }",
    );
    let t = TeamProject::new(&team);
    let out = t.run("write notes").on(&backend).output();
    assert_eq!(summary(&out)["status"], "done", "{}", stderr(&out));
    let result = result_of(t.path());
    assert!(result.contains(r#""behavior":"deny""#), "{result}");
    assert!(
        result.contains("policy for this worker is `deny`"),
        "{result}"
    );
    assert_eq!(count_events(&only_run_dir(t.path()), "worker-waiting"), 0);
}

#[test]
fn an_approval_is_allowed_with_y_in_the_dashboard() {
    if !tmux_ready("an_approval_is_allowed_with_y_in_the_dashboard")
        || !python_ready("an_approval_is_allowed_with_y")
    {
        return;
    }
    let workers = TmuxServer::new("mcp-dash-workers");
    let call = approve_bash("make deploy");
    let t = TeamProject::new(&mcp_team(300, &["approve", &call]));
    let tmp = t.path();
    let cmd = dashboard_cmd(tmp, &workers, "", t.team(), "deploy it", "");
    let viewer = Viewer::start("mcp-dash-viewer", (140, 42), &cmd);
    let screen = viewer.wait_screen("asker asks for your approval", Duration::from_secs(90));
    assert!(
        screen.contains("Bash wants to run: make deploy"),
        "{screen}"
    );
    assert!(screen.contains("press y, n or A"), "{screen}");
    viewer.keys(&["y"]);
    viewer.wait_screen("done  council", Duration::from_secs(90));
    let result = result_of(tmp);
    let (_, said) = result
        .split_once("approve error=False\n")
        .expect("the approve call returned");
    let said: serde_json::Value = serde_json::from_str(said).unwrap();
    assert_eq!(
        said,
        serde_json::json!({"behavior": "allow", "updatedInput": {"command": "make deploy"}})
    );
    viewer.keys(&["q"]);
    let after = viewer.wait_screen("EXITED", Duration::from_secs(60));
    assert!(after.contains("EXITED 0"), "{after}");
}
