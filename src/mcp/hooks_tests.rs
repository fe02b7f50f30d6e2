use std::io::Write;

use serde_json::json;

use super::*;

fn told(raw: &Value) -> Option<(SignalState, Option<String>)> {
    read_event(raw).told
}

#[test]
fn claude_codes_events_tell_working_waiting_and_turn_ended() {
    assert_eq!(
        told(&json!({"hook_event_name": "PreToolUse", "session_id": "s", "tool_name": "Bash"})),
        Some((SignalState::Working, Some("Bash".into())))
    );
    assert_eq!(
        told(
            &json!({"hook_event_name": "Notification", "notification_type": "permission_prompt",
                    "message": "Claude needs your permission to use Bash"})
        ),
        Some((
            SignalState::Waiting,
            Some("Claude needs your permission to use Bash".into())
        ))
    );
    assert_eq!(
        told(
            &json!({"hook_event_name": "Notification", "notification_type": "auth_success", "message": "ok"})
        ),
        None
    );
    assert_eq!(
        told(&json!({"hook_event_name": "Stop", "stop_hook_active": false})),
        Some((SignalState::TurnEnded, None))
    );
    assert_eq!(
        told(&json!({"hook_event_name": "StopFailure", "error": "rate_limit"})),
        Some((SignalState::TurnFailed, Some("rate_limit".into())))
    );
    assert_eq!(told(&json!({"hook_event_name": "SessionEnd"})), None);
}

#[test]
fn gemini_and_codex_events_read_by_the_same_table() {
    assert_eq!(
        told(&json!({"hook_event_name": "BeforeTool", "tool_name": "write_file"})),
        Some((SignalState::Working, Some("write_file".into())))
    );
    assert_eq!(
        told(
            &json!({"hook_event_name": "Notification", "notification_type": "ToolPermission",
                    "message": "Allow run_shell_command?"})
        ),
        Some((
            SignalState::Waiting,
            Some("Allow run_shell_command?".into())
        ))
    );
    assert_eq!(
        told(&json!({"hook_event_name": "AfterAgent"})),
        Some((SignalState::TurnEnded, None))
    );
    let codex = read_event(&json!({"type": "agent-turn-complete", "thread-id": "t-1",
                                   "turn-id": "1", "last-assistant-message": "done"}));
    assert_eq!(codex.event, "agent-turn-complete");
    assert_eq!(codex.session.as_deref(), Some("t-1"));
    assert_eq!(codex.told, Some((SignalState::TurnEnded, None)));
}

#[test]
fn a_subagents_event_is_marked_as_one() {
    let e = read_event(
        &json!({"hook_event_name": "PreToolUse", "agent_id": "a1", "tool_name": "Read"}),
    );
    assert!(e.subagent);
    assert!(read_event(&json!({"hook_event_name": "SubagentStop"})).subagent);
    assert!(!read_event(&json!({"hook_event_name": "PreToolUse", "agent_id": ""})).subagent);
}

#[test]
fn a_long_message_is_kept_on_one_line_and_cut() {
    let msg = format!("line one\nline\ttwo {}", "x".repeat(400));
    let (_, d) = told(&json!({"hook_event_name": "Notification", "message": msg})).unwrap();
    let d = d.unwrap();
    assert!(d.starts_with("line one line two x"));
    assert!(!d.contains('\n'));
    assert_eq!(d.chars().count(), MAX_DETAIL_CHARS + 1);
}

fn record_str(dir: &Path, nonce: &str, json: &str) {
    record(dir, nonce, None, json.as_bytes()).unwrap();
}

#[test]
fn the_watch_takes_its_attempts_events_in_order_and_refuses_others() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut w = HookWatch::new(dir);
    assert!(w.look("n1").is_empty());
    assert!(!w.seen_any());
    record_str(
        dir,
        "n1",
        r#"{"hook_event_name":"SessionStart","session_id":"s1"}"#,
    );
    record_str(
        dir,
        "n1",
        r#"{"hook_event_name":"PreToolUse","session_id":"s1","tool_name":"Edit"}"#,
    );
    // A subagent's tool use: no news.
    record_str(
        dir,
        "n1",
        r#"{"hook_event_name":"PreToolUse","session_id":"s1","agent_id":"x","tool_name":"Read"}"#,
    );
    // Another attempt's nonce, and a nested agent's session.
    record_str(
        dir,
        "other",
        r#"{"hook_event_name":"Stop","session_id":"s1"}"#,
    );
    record_str(dir, "n1", r#"{"hook_event_name":"Stop","session_id":"s2"}"#);
    record_str(dir, "n1", r#"{"hook_event_name":"Stop","session_id":"s2"}"#);
    record(
        dir,
        "n1",
        Some(r#"{"type":"agent-turn-complete","thread-id":"s1"}"#),
        &b""[..],
    )
    .unwrap();
    let news = w.look("n1");
    let states: Vec<_> = news
        .iter()
        .filter_map(|n| match n {
            HookNews::Signal(s) => Some((s.state, s.detail.clone())),
            HookNews::Refused(_) => None,
        })
        .collect();
    assert_eq!(
        states,
        [
            (SignalState::Working, None),
            (SignalState::Working, Some("Edit".into())),
            (SignalState::TurnEnded, None),
        ]
    );
    let refused: Vec<_> = news
        .iter()
        .filter_map(|n| match n {
            HookNews::Refused(r) => Some(r.as_str()),
            HookNews::Signal(_) => None,
        })
        .collect();
    assert_eq!(refused.len(), 2, "{refused:?}");
    assert!(refused[0].contains("nonce"), "{}", refused[0]);
    assert!(refused[1].contains("session s2"), "{}", refused[1]);
    assert!(w.seen_any());
    // Read once.
    assert!(w.look("n1").is_empty());
}

#[test]
fn a_line_being_written_is_read_the_next_time() {
    let tmp = tempfile::tempdir().unwrap();
    let path = events_path(tmp.path());
    let mut w = HookWatch::new(tmp.path());
    std::fs::write(
        &path,
        r#"{"nonce":"n","event":"Stop","state":"turn-ended","at":"2026-12-02T00:00:00Z"}"#,
    )
    .unwrap();
    assert!(w.look("n").is_empty());
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    f.write_all(b"\n").unwrap();
    assert_eq!(w.look("n").len(), 1);
}

#[test]
fn an_event_that_is_not_a_json_object_is_an_error_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    assert!(record(tmp.path(), "n", None, &b"not json"[..]).is_err());
    assert!(record(tmp.path(), "n", Some("[1]"), &b""[..]).is_err());
    assert!(!events_path(tmp.path()).exists());
}

#[test]
fn the_hook_command_survives_a_shell_with_odd_paths() {
    let cmd = shell_command(
        Path::new("/opt/my tools/crewmux"),
        Path::new("/runs/it's/attempt-1/mcp"),
        "n$1",
    );
    let words = shlex::split(&cmd).unwrap();
    assert_eq!(
        words,
        [
            "/opt/my tools/crewmux",
            "hook-event",
            "--dir",
            "/runs/it's/attempt-1/mcp",
            "--nonce",
            "n$1"
        ]
    );
}

#[test]
fn claude_settings_name_one_command_hook_per_event() {
    let s = claude_settings("x hook-event");
    let stop = &s["hooks"]["Stop"][0]["hooks"][0];
    assert_eq!(stop["type"], "command");
    assert_eq!(stop["command"], "x hook-event");
    assert!(s["hooks"]["Notification"].is_array());
    let g = gemini_hooks("x hook-event");
    assert_eq!(g["AfterAgent"][0]["hooks"][0]["command"], "x hook-event");
    assert_eq!(g["BeforeTool"][0]["matcher"], "*");
}

#[test]
fn gemini_skips_a_settings_file_under_a_folder_others_can_write_or_root_does_not_own() {
    use crate::mcp::config::gemini_system_file_refusal;
    // Under /tmp (mode 1777): refused whoever runs this (not owned by root, or /tmp writable).
    let dir = tempfile::tempdir_in("/tmp").unwrap();
    let why =
        gemini_system_file_refusal(&dir.path().join("gemini-settings.json")).expect("refused");
    assert!(
        why.contains("not owned by root") || why.contains("'/tmp' is writable by group or others"),
        "{why}"
    );
    // A file root owns under folders root owns and only root writes: read.
    assert_eq!(
        gemini_system_file_refusal(std::path::Path::new("/etc/hostname.absent")),
        None
    );
}
