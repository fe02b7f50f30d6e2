//! Result and usage from each CLI's structured output, and noise dropped from text output.

use super::*;

/// `codex exec --json` of codex-cli 0.171 (shape of its events).
const CODEX: &str = r#"{"type":"thread.started","thread_id":"019a"}
{"type":"turn.started"}
{"type":"item.completed","item":{"id":"item_0","type":"reasoning","text":"**Thinking**"}}
{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"ls","aggregated_output":"a\n","exit_code":0,"status":"completed"}}
{"type":"item.completed","item":{"id":"item_2","type":"agent_message","text":"Added the endpoint."}}
{"type":"turn.completed","usage":{"input_tokens":12000,"cached_input_tokens":3000,"output_tokens":450}}
"#;

/// `claude -p --output-format stream-json --verbose` of Claude Code 2.1 (first and last
/// events).
const CLAUDE: &str = r#"{"type":"system","subtype":"init","session_id":"s1","model":"claude-sonnet"}
{"type":"assistant","message":{"content":[{"type":"text","text":"Working"}]}}
{"type":"result","subtype":"success","is_error":false,"num_turns":3,"result":"Fixed the bug in `auth.rs`.","session_id":"s1","total_cost_usd":0.0421,"usage":{"input_tokens":10,"cache_creation_input_tokens":2000,"cache_read_input_tokens":5000,"output_tokens":300}}
"#;

/// `gemini --output-format stream-json` of gemini-cli 0.61, with its terminal warnings.
const GEMINI: &str = r#"True color (24-bit) support not detected. Using a terminal with true color enabled will result in a better visual experience.
Ripgrep is not available. Falling back to GrepTool.
{"type":"init","timestamp":"t","session_id":"s","model":"gemini-2.5-pro"}
{"type":"message","timestamp":"t","role":"user","content":"Task"}
{"type":"message","timestamp":"t","role":"assistant","content":"Let me look.","delta":true}
{"type":"tool_use","timestamp":"t","tool_name":"read_file","tool_id":"1","parameters":{}}
{"type":"tool_result","timestamp":"t","tool_id":"1","status":"success"}
{"type":"message","timestamp":"t","role":"assistant","content":"The theme ","delta":true}
{"type":"message","timestamp":"t","role":"assistant","content":"is fixed.","delta":true}
{"type":"result","timestamp":"t","status":"success","stats":{"total_tokens":9100,"input_tokens":8000,"output_tokens":1100,"cached":0,"input":8000,"duration_ms":5000,"tool_calls":1}}
"#;

#[test]
fn codex_answer_and_tokens_without_cost() {
    let e = extract(OutputFormat::CodexJson, CODEX);
    assert_eq!(e.answer.as_deref(), Some("Added the endpoint."));
    let u = e.usage.unwrap();
    assert_eq!(
        (u.input_tokens, u.output_tokens, u.cost_usd),
        (12000, 450, None)
    );
    // Two turns add up.
    let two = format!("{CODEX}{CODEX}");
    assert_eq!(
        extract(OutputFormat::CodexJson, &two)
            .usage
            .unwrap()
            .input_tokens,
        24000
    );
}

#[test]
fn claude_answer_tokens_with_cache_and_cost() {
    let e = extract(OutputFormat::ClaudeJson, CLAUDE);
    assert_eq!(e.answer.as_deref(), Some("Fixed the bug in `auth.rs`."));
    let u = e.usage.unwrap();
    assert_eq!((u.input_tokens, u.output_tokens), (7010, 300));
    assert_eq!(u.cost_usd, Some(0.0421));
    assert_eq!(u.short(), "7.0k in / 300 out, $0.04");
    // An error result is no answer, but its usage still counts.
    let err = CLAUDE.replace("\"is_error\":false", "\"is_error\":true");
    let e = extract(OutputFormat::ClaudeJson, &err);
    assert_eq!(e.answer, None);
    assert!(e.usage.is_some());
}

#[test]
fn gemini_answer_is_the_text_after_the_last_tool_call_and_warnings_are_not_in_it() {
    let e = extract(OutputFormat::GeminiJson, GEMINI);
    assert_eq!(e.answer.as_deref(), Some("The theme is fixed."));
    let u = e.usage.unwrap();
    assert_eq!(
        (u.input_tokens, u.output_tokens, u.cost_usd),
        (8000, 1100, None)
    );
    let r = result_text(OutputFormat::GeminiJson, &[], GEMINI).unwrap();
    assert_eq!(r, "The theme is fixed.\n");
}

#[test]
fn gemini_single_object_json_output() {
    let text = "Loaded cached credentials.\n{\n  \"session_id\": \"s\",\n  \"response\": \"Done.\",\n  \"stats\": {\n    \"models\": {\n      \"gemini-2.5-pro\": {\n        \"tokens\": {\"prompt\": 900, \"candidates\": 40, \"thoughts\": 10, \"total\": 950}\n      }\n    }\n  }\n}\n";
    let e = extract(OutputFormat::GeminiJson, text);
    assert_eq!(e.answer.as_deref(), Some("Done."));
    assert_eq!(e.usage.unwrap().output_tokens, 50);
}

#[test]
fn text_output_drops_noise_lines_and_keeps_the_rest() {
    let noise: Vec<Regex> = ["^true color", "ripgrep is not available"]
        .iter()
        .map(|p| crate::providers::spec::compile(p).unwrap())
        .collect();
    let text = "True color (24-bit) support not detected.\nRipgrep is not available. Falling back.\nThe answer is 42.\n";
    assert_eq!(
        result_text(OutputFormat::Text, &noise, text).as_deref(),
        Some("The answer is 42.\n")
    );
    assert_eq!(
        result_text(OutputFormat::Text, &noise, "Ripgrep is not available.\n"),
        None
    );
    // A structured CLI that died before its answer: its text lines, not its JSON events.
    let cut = "{\"type\":\"turn.started\"}\nERROR: stream disconnected\n";
    assert_eq!(
        result_text(OutputFormat::CodexJson, &[], cut).as_deref(),
        Some("ERROR: stream disconnected\n")
    );
}

#[test]
fn usage_file_round_trip_and_sums() {
    let dir = tempfile::tempdir().unwrap();
    record_usage(OutputFormat::ClaudeJson, CLAUDE, dir.path());
    let u = read_usage(dir.path()).unwrap();
    assert_eq!(u.output_tokens, 300);
    record_usage(OutputFormat::Text, "no usage here", dir.path());
    assert_eq!(read_usage(dir.path()), Some(u), "text output leaves it");
    let mut total = Usage::default();
    total.add(&u);
    total.add(&Usage {
        input_tokens: 1,
        output_tokens: 2,
        cost_usd: None,
    });
    assert_eq!((total.input_tokens, total.output_tokens), (7011, 302));
    assert_eq!(total.cost_usd, Some(0.0421));
    assert_eq!(tokens(1_234_567), "1.2M");
}

#[test]
fn a_cost_under_a_cent_is_not_shown_as_zero() {
    assert_eq!(dollars(0.0046), "$0.0046");
    assert_eq!(dollars(0.0), "$0.00");
    assert_eq!(dollars(1.239), "$1.24");
}

#[test]
fn the_session_id_of_each_cli_is_read_from_its_events() {
    let codex =
        "{\"type\":\"thread.started\",\"thread_id\":\"0199a-th\"}\n{\"type\":\"turn.started\"}\n";
    assert_eq!(
        session_id(OutputFormat::CodexJson, codex).as_deref(),
        Some("0199a-th")
    );
    let claude = "{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"5c1e-s\",\"tools\":[]}\n{\"type\":\"result\",\"session_id\":\"5c1e-s\",\"result\":\"ok\"}\n";
    assert_eq!(
        session_id(OutputFormat::ClaudeJson, claude).as_deref(),
        Some("5c1e-s")
    );
    let gemini =
        "{\"type\":\"init\",\"timestamp\":\"t\",\"session_id\":\"g-77\",\"model\":\"m\"}\n";
    assert_eq!(
        session_id(OutputFormat::GeminiJson, gemini).as_deref(),
        Some("g-77")
    );
    assert_eq!(session_id(OutputFormat::Text, claude), None);
    assert_eq!(
        session_id(OutputFormat::CodexJson, "{\"type\":\"turn.started\"}\n"),
        None
    );
}
