//! Results and usage from the CLIs' structured output, with stand-in CLIs that print what
//! the real ones print: the result is the final answer without terminal chatter, tokens
//! and cost reach the summary JSON, `status` and `report.md`; a text CLI's known noise is
//! dropped from its result but kept in `output.log`.

use crate::support::run::{crewmux, only_run_dir, summary, worker};
use crate::support::standins::{serial, Bin};
use crate::support::TeamProject;

const TEAM: &str = r#"
name = "structured"

[[worker]]
id = "claude-w"
role = "backend-engineer"
provider = "claude"
max_attempts = 1

[[worker]]
id = "gemini-w"
role = "frontend-designer"
provider = "gemini"
max_attempts = 1

[[worker]]
id = "qwen-w"
role = "testing-engineer"
provider = "qwen"
max_attempts = 1
"#;

fn clis() -> Bin {
    let bin = Bin::new();
    bin.script(
        "claude",
        r#"echo '{"type":"system","subtype":"init","session_id":"s1"}'
echo '{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Claude fixed auth.rs."}]}}'
echo '{"type":"result","subtype":"success","is_error":false,"result":"Claude fixed auth.rs.","total_cost_usd":0.25,"usage":{"input_tokens":1000,"cache_read_input_tokens":500,"output_tokens":200}}'"#,
    );
    bin.script(
        "gemini",
        r#"echo 'True color (24-bit) support not detected.'
echo 'Ripgrep is not available. Falling back to GrepTool.'
echo '{"type":"message","role":"assistant","content":"Gemini fixed ","delta":true}'
echo '{"type":"message","role":"assistant","content":"the theme.","delta":true}'
echo '{"type":"result","status":"success","stats":{"input_tokens":3000,"output_tokens":100}}'"#,
    );
    bin.script(
        "qwen",
        "echo 'Ripgrep is not available. Falling back to GrepTool.'\necho 'Qwen wrote the tests.'",
    );
    bin
}

#[test]
fn answers_tokens_and_cost_from_structured_output_and_no_noise() {
    let _g = serial();
    let bin = clis();
    let project = TeamProject::new(TEAM);
    let base = |c: &mut std::process::Command| {
        c.current_dir(project.path())
            .env_clear()
            .env("PATH", format!("{}:/usr/bin:/bin", bin.bin_dir().display()))
            .env("HOME", bin.home())
            .env("CREWMUX_CONFIG_DIR", bin.dir.path().join("config"))
            .env("ANTHROPIC_API_KEY", "k")
            .env("GEMINI_API_KEY", "k")
            .env("OPENAI_API_KEY", "k");
    };
    let mut c = crewmux();
    base(&mut c);
    let out = c
        .args(["run", "--no-clarify", "--headless", "--backend", "process"])
        .args(["--team", project.team_arg(), "Fix the app"])
        .output()
        .unwrap();
    let s = summary(&out);
    let run_dir = only_run_dir(project.path());
    let result = |id: &str| {
        std::fs::read_to_string(run_dir.join(format!("workers/{id}/attempt-1/result.md"))).unwrap()
    };
    assert_eq!(result("claude-w"), "Claude fixed auth.rs.\n");
    assert_eq!(result("gemini-w"), "Gemini fixed the theme.\n");
    assert_eq!(result("qwen-w"), "Qwen wrote the tests.\n");
    // The pane (and so output.log) shows the events as text; the raw events are kept.
    let attempt = |id: &str, file: &str| {
        std::fs::read_to_string(run_dir.join(format!("workers/{id}/attempt-1/{file}"))).unwrap()
    };
    let pane = attempt("claude-w", "output.log");
    assert!(pane.contains("Claude fixed auth.rs."), "{pane}");
    assert!(pane.contains("── 1.5k in / 200 out, $0.25"), "{pane}");
    assert!(!pane.contains("{\"type\""), "no JSON in the pane: {pane}");
    assert!(attempt("claude-w", "cli-events.jsonl").contains("\"total_cost_usd\":0.25"));
    let pane = attempt("gemini-w", "output.log");
    assert!(pane.contains("Gemini fixed the theme.\n"), "{pane}");
    assert!(!pane.contains("{\"type\""), "no JSON in the pane: {pane}");
    let log = std::fs::read_to_string(run_dir.join("workers/qwen-w/attempt-1/output.log")).unwrap();
    assert!(
        log.contains("Ripgrep is not available"),
        "output.log keeps everything"
    );

    let u = &worker(&s, "claude-w")["usage"];
    assert_eq!(
        (u["input_tokens"].as_u64(), u["output_tokens"].as_u64()),
        (Some(1500), Some(200))
    );
    assert_eq!(u["cost_usd"].as_f64(), Some(0.25));
    let u = &worker(&s, "gemini-w")["usage"];
    assert_eq!(u["input_tokens"].as_u64(), Some(3000));
    assert!(u.get("cost_usd").is_none(), "gemini reports no cost");
    assert!(
        worker(&s, "qwen-w")["usage"].is_null(),
        "text output has no usage"
    );
    assert_eq!(s["usage"]["input_tokens"].as_u64(), Some(4500));
    assert_eq!(s["usage"]["output_tokens"].as_u64(), Some(300));

    let report = std::fs::read_to_string(run_dir.join("report.md")).unwrap();
    assert!(report.contains("## Usage"), "{report}");
    assert!(
        report.contains("| claude-w | claude | 1500 | 200 | $0.2500 |"),
        "{report}"
    );
    assert!(
        report.contains("| **run** | | 4500 | 300 | $0.2500 |"),
        "{report}"
    );

    let mut c = crewmux();
    base(&mut c);
    let out = c
        .args(["status", s["run_id"].as_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("usage: 4.5k in / 300 out, $0.25"), "{text}");
    assert!(text.contains("  usage: 1.5k in / 200 out, $0.25"), "{text}");
}
