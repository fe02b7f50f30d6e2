//! Event lines as codex-cli 0.171.0, Claude Code 2.1.197 and gemini-cli 0.61.0 print them
//! (shortened), and the text a person sees for them.

use super::*;

fn render(format: OutputFormat, lines: &[&str]) -> String {
    let mut r = Renderer::new(format);
    let mut out: String = lines.iter().map(|l| r.line(l)).collect();
    out.push_str(&r.finish());
    out
}

#[test]
fn codex_events_read_as_a_transcript() {
    let out = render(
        OutputFormat::CodexJson,
        &[
            r#"{"type":"thread.started","thread_id":"01a2"}"#,
            r#"{"type":"turn.started"}"#,
            r#"{"type":"error","message":"Reconnecting... 2/5 (stream disconnected before completion)"}"#,
            r#"{"type":"item.completed","item":{"id":"item_0","type":"reasoning","text":"Looking at the parser"}}"#,
            r#"{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"bash -lc 'cargo test'","status":"in_progress"}}"#,
            r#"{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"bash -lc 'cargo test'","aggregated_output":"...","exit_code":101,"status":"failed"}}"#,
            r#"{"type":"item.completed","item":{"id":"item_2","type":"file_change","changes":[{"path":"src/parse.rs","kind":"update"}],"status":"completed"}}"#,
            r#"{"type":"item.completed","item":{"id":"item_3","type":"agent_message","text":"Empty input is rejected now."}}"#,
            r#"{"type":"turn.completed","usage":{"input_tokens":1234,"cached_input_tokens":0,"output_tokens":56}}"#,
        ],
    );
    assert_eq!(
        out,
        "error: Reconnecting... 2/5 (stream disconnected before completion)\n\
         · Looking at the parser\n\
         $ bash -lc 'cargo test'\n  exit 101\n\
         ✎ update src/parse.rs\n\
         Empty input is rejected now.\n\
         ── 1.2k in / 56 out\n"
    );
}

#[test]
fn claude_events_show_text_tools_errors_and_cost() {
    let out = render(
        OutputFormat::ClaudeJson,
        &[
            r#"{"type":"system","subtype":"init","cwd":"/p","session_id":"s","tools":["Bash","Edit"],"model":"claude-sonnet-4-5"}"#,
            r#"{"type":"assistant","message":{"content":[{"type":"text","text":"I will run the tests."},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"cargo test","description":"Run tests"}}]}}"#,
            r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"error[E0425]: cannot find value","is_error":true}]}}"#,
            r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t2","content":"ok","is_error":false}]}}"#,
            r#"{"type":"system","subtype":"api_retry","attempt":1,"max_retries":2,"retry_delay_ms":500,"error":"rate_limit_error"}"#,
            r#"{"type":"result","subtype":"success","is_error":false,"result":"Done.","total_cost_usd":0.0123,"usage":{"input_tokens":1000,"cache_read_input_tokens":234,"output_tokens":56}}"#,
        ],
    );
    assert_eq!(
        out,
        "I will run the tests.\n→ Bash: cargo test\n\
         \x20 failed: error[E0425]: cannot find value\n\
         retrying the API (attempt 1/2): rate_limit_error\n\
         ── 1.2k in / 56 out, $0.01\n"
    );
}

#[test]
fn claudes_error_result_is_shown_whole() {
    let out = render(
        OutputFormat::ClaudeJson,
        &[
            r#"{"type":"result","is_error":true,"result":"Not logged in · Please run /login","total_cost_usd":0,"usage":{"input_tokens":0,"output_tokens":0}}"#,
        ],
    );
    assert!(
        out.starts_with("error: Not logged in · Please run /login\n"),
        "{out}"
    );
}

#[test]
fn gemini_deltas_join_on_one_line_and_other_lines_pass_through() {
    let out = render(
        OutputFormat::GeminiJson,
        &[
            "Warning: 256-color support not detected.",
            r#"{"type":"init","session_id":"e05","model":"gemini-2.5-pro"}"#,
            r#"{"type":"message","role":"user","content":"the whole prompt"}"#,
            r#"{"type":"message","role":"assistant","content":"Gemini fixed ","delta":true}"#,
            r#"{"type":"message","role":"assistant","content":"the theme.","delta":true}"#,
            r#"{"type":"tool_use","tool_name":"read_file","tool_id":"r1","parameters":{"absolute_path":"/p/theme.css"}}"#,
            r#"{"type":"tool_result","tool_id":"r1","status":"error","error":{"type":"x","message":"File not found"}}"#,
            r#"{"type":"message","role":"assistant","content":"Done.","delta":true}"#,
            r#"{"type":"result","status":"success","stats":{"total_tokens":3100,"input_tokens":3000,"output_tokens":100}}"#,
        ],
    );
    assert_eq!(
        out,
        "Warning: 256-color support not detected.\n\
         Gemini fixed the theme.\n\
         → read_file: /p/theme.css\n\
         \x20 failed: File not found\n\
         Done.\n\
         ── 3.0k in / 100 out\n"
    );
}

#[test]
fn an_open_delta_run_is_closed_at_the_end() {
    let out = render(
        OutputFormat::GeminiJson,
        &[r#"{"type":"message","role":"assistant","content":"cut off","delta":true}"#],
    );
    assert_eq!(out, "cut off\n");
}

#[test]
fn a_long_tool_call_is_cut_to_one_line() {
    let cmd = format!("echo {}\nsecond line", "x".repeat(300));
    let line = serde_json::json!({"type":"assistant","message":{"content":[
        {"type":"tool_use","name":"Bash","input":{"command": cmd}}]}})
    .to_string();
    let out = render(OutputFormat::ClaudeJson, &[&line]);
    assert_eq!(out.lines().count(), 1, "{out}");
    assert!(out.trim_end().ends_with('…'));
}
