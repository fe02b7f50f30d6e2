//! Status from the agents' own hooks, end to end: a command worker runs
//! `$CREWMUX_HOOK_COMMAND` with Claude Code-shaped hook events on its stdin, as Claude
//! Code's hooks would (docs/mcp.md "Status from the agents' hooks"). Both backends.

use std::time::Duration;

use crate::support::*;

/// One worker that says through its hooks: it started, it waits on a permission (while its
/// screen shows nothing a pattern would take for a question), a forged line (another
/// attempt's nonce) and a subagent's notification that must change nothing; then, once the
/// answer is typed, it works again and ends its turn.
const TEAM: &str = r#"
[[worker]]
id = "hooked"
role = "backend-engineer"
provider = "command"
max_attempts = 1
command = ["sh", "-c", """
hook() { printf '%s' "$1" | sh -c "$CREWMUX_HOOK_COMMAND"; }
hook '{"hook_event_name":"SessionStart","session_id":"s1"}'
forged=$(printf '%s' "$CREWMUX_HOOK_COMMAND" | sed 's/--nonce .*/--nonce forged/')
printf '%s' '{"hook_event_name":"PreToolUse","session_id":"s1","tool_name":"Forged"}' | sh -c "$forged"
hook '{"hook_event_name":"Notification","session_id":"s1","agent_id":"sub-1","notification_type":"permission_prompt","message":"a subagent asks"}'
hook '{"hook_event_name":"Notification","session_id":"s1","notification_type":"permission_prompt","message":"Claude needs your permission to use Bash"}'
echo 'working quietly'
read reply
hook '{"hook_event_name":"PreToolUse","session_id":"s1","tool_name":"Bash"}'
echo "reply: $reply" > reply.txt
hook '{"hook_event_name":"Stop","session_id":"s1"}'
"""]
"#;

#[test]
fn a_hooks_notification_makes_the_worker_wait_and_its_next_hook_makes_it_run() {
    for backend in backends("hooks") {
        let tmp = TeamProject::new(TEAM);
        let child = tmp.run("hooks").on(&backend).spawn();
        let s = wait_state(
            tmp.path(),
            "the hooked worker waits",
            Duration::from_secs(60),
            |s| state_worker(s, "hooked")["status"] == "waiting",
        );
        let w = state_worker(&s, "hooked");
        assert_eq!(
            w["question"], "Claude needs your permission to use Bash",
            "{backend}: {w}"
        );
        assert_eq!(w["signal"]["state"], "waiting", "{backend}: {w}");
        assert_eq!(w["signal"]["event"], "Notification", "{backend}: {w}");
        let id = run_id(tmp.path());
        let status = run_crewmux(tmp.path(), backend.socket(), &["status", &id]);
        let shown = String::from_utf8_lossy(&status.stdout);
        assert!(
            shown.contains("hooks: waiting · Notification"),
            "{backend}: {shown}"
        );
        let ans = run_crewmux(
            tmp.path(),
            backend.socket(),
            &["answer", &id, "--worker", "hooked", "y"],
        );
        assert_eq!(ans.status.code(), Some(0), "{}", stderr(&ans));
        let out = wait_limited(child, &["run"]);
        let s = summary(&out);
        assert_eq!(
            worker(&s, "hooked")["status"],
            "completed",
            "{backend}: {s}"
        );
        let reply = std::fs::read_to_string(tmp.path().join("reply.txt")).unwrap();
        assert_eq!(reply.trim(), "reply: y", "{backend}");
        let run = only_run_dir(tmp.path());
        let all = events(&run);
        assert_eq!(
            count_events(&run, "worker-waiting"),
            1,
            "{backend}: {all:#?}"
        );
        assert_eq!(count_events(&run, "hook-refused"), 1, "{backend}: {all:#?}");
        assert_eq!(
            count_events(&run, "worker-turn-ended"),
            1,
            "{backend}: {all:#?}"
        );
        assert!(
            !format!("{all:?}").contains("a subagent asks"),
            "{backend}: a subagent's hook changed the worker: {all:#?}"
        );
    }
}
