//! Connection, quota and auth failures of every built-in CLI, end to end with stand-in CLIs
//! that print what the real ones print (the strings and versions are in
//! assets/providers.toml and docs/failures.md) and exit 1: each ends after one launch with
//! a reason that names the cause and the fix, never a bare `exit code 1`.

use std::path::Path;
use std::process::Output;

use crate::support::run::{crewmux, summary, worker};
use crate::support::standins::{serial, Bin};

/// A stand-in `cli` that answers its auth probe, counts its launches, prints `stdout` and
/// `stderr` (one line each, when not empty) and exits 1.
fn failing(bin: &Bin, cli: &str, stdout: &str, stderr: &str) {
    failing_with(bin, cli, stdout, stderr, 1);
}

/// As [`failing`], exiting `code` (kimi's 75, aider's 0). aider takes its prompt as a file
/// (`--message-file`) and nothing on stdin, which stays open: its stand-in reads none.
fn failing_with(bin: &Bin, cli: &str, stdout: &str, stderr: &str, code: i32) {
    let read = if cli == "aider" {
        "true"
    } else {
        "cat > /dev/null"
    };
    let quote = |s: &str| s.replace('\'', r"'\''");
    bin.script(
        cli,
        &format!(
            "[ \"$1\" = auth ] && {{ echo '1 credentials'; exit 0; }}\n\
             [ \"$1\" = login ] && exit 0\n\
             echo launch >> \"$REC/launches\"\n\
             {read}\n\
             [ -n '{out}' ] && printf '%s\\n' '{out}'\n\
             [ -n '{err}' ] && printf '%s\\n' '{err}' >&2\n\
             exit {code}",
            out = quote(stdout),
            err = quote(stderr),
        ),
    );
}

fn run(bin: &Bin, project: &Path, provider: &str) -> Output {
    crewmux()
        .current_dir(project)
        .env_clear()
        .env("PATH", format!("{}:/usr/bin:/bin", bin.bin_dir().display()))
        .env("HOME", bin.home())
        .env("CREWMUX_CONFIG_DIR", bin.dir.path().join("config"))
        .env("GEMINI_API_KEY", "k")
        .env("CODEX_API_KEY", "k")
        .env("ANTHROPIC_API_KEY", "k")
        .env("OPENAI_API_KEY", "k")
        .env("OPENAI_MODEL", "coder-model")
        .env("KIMI_API_KEY", "k")
        .args(["run", "--no-clarify", "--headless", "--backend", "process"])
        .args(["--provider", provider, "Add a test"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

fn claude_result(text: &str) -> String {
    format!(
        "{{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":true,\"result\":{text:?},\
         \"total_cost_usd\":0,\"usage\":{{\"input_tokens\":0,\"output_tokens\":0}}}}"
    )
}

/// (CLI, stdout, stderr, the reason's start, a piece of its fix).
fn cases() -> Vec<(
    &'static str,
    String,
    &'static str,
    &'static str,
    &'static str,
)> {
    vec![
        (
            "claude",
            claude_result("API Error: Unable to connect to API (ConnectionRefused)"),
            "",
            "claude: endpoint unreachable (exit 1: \"API Error: Unable to connect to API (ConnectionRefused)\"): ",
            "check ANTHROPIC_BASE_URL",
        ),
        (
            "claude",
            claude_result("Credit balance is too low"),
            "",
            "claude: out of quota (exit 1: \"Credit balance is too low\"): ",
            "add credits",
        ),
        (
            "codex",
            String::new(),
            "ERROR: stream disconnected before completion: error sending request for url (http://127.0.0.1:1/v1/responses)",
            "codex: endpoint unreachable (exit 1: \"ERROR: stream disconnected before completion",
            "base_url in ~/.codex/config.toml",
        ),
        (
            "codex",
            String::new(),
            "ERROR: Quota exceeded. Check your plan and billing details.",
            "codex: out of quota (exit 1: \"ERROR: Quota exceeded.",
            "plan and billing",
        ),
        (
            "gemini",
            String::new(),
            "Error when talking to Gemini API Full report available at: /tmp/r.json Error: exception TypeError: fetch failed sending request",
            "gemini: endpoint unreachable (exit 1: \"Error when talking to Gemini API",
            "check GOOGLE_GEMINI_BASE_URL",
        ),
        (
            "gemini",
            String::new(),
            "You have exhausted your daily quota on this model.",
            "gemini: out of quota (exit 1: \"You have exhausted your daily quota on this model.\"): ",
            "daily quota to reset",
        ),
        (
            "qwen",
            String::new(),
            "[API Error: Connection error. (cause: fetch failed)]",
            "qwen: endpoint unreachable (exit 1: \"[API Error: Connection error. (cause: fetch failed)]\"): ",
            "check OPENAI_BASE_URL",
        ),
        (
            "qwen",
            String::new(),
            "[API Error: Qwen OAuth quota exceeded: daily limit reached]",
            "qwen: out of quota (exit 1: \"[API Error: Qwen OAuth quota exceeded",
            "quota to reset",
        ),
        (
            "opencode",
            String::new(),
            "Error: Cannot connect to API: Unable to connect. Is the computer able to access the url?",
            "opencode: endpoint unreachable (exit 1: \"Error: Cannot connect to API",
            "baseURL in opencode's config",
        ),
        (
            "opencode",
            String::new(),
            "Error: Quota exceeded. Check your plan and billing details.",
            "opencode: out of quota (exit 1: \"Error: Quota exceeded.",
            "plan and billing",
        ),
        (
            "opencode",
            String::new(),
            "Error: AI Gateway authentication failed: Invalid API key.",
            "opencode: not authenticated (exit 1: \"Error: AI Gateway authentication failed",
            "opencode auth login",
        ),
    ]
}

#[test]
fn connection_quota_and_auth_failures_of_every_cli_name_the_cause_and_the_fix() {
    let _g = serial();
    let mut bad = Vec::new();
    for (cli, stdout, stderr, says, fix) in cases() {
        let bin = Bin::new();
        failing(&bin, cli, &stdout, stderr);
        let project = crate::support::project();
        let out = run(&bin, project.path(), cli);
        let s = summary(&out);
        let w = worker(&s, "solo");
        let reason = w["reason"].as_str().unwrap_or_default();
        let launches = std::fs::read_to_string(bin.rec(cli).join("launches"))
            .map(|t| t.lines().count())
            .unwrap_or(0);
        if w["status"] != "failed" || !reason.starts_with(says) || !reason.contains(fix) {
            bad.push(format!("{cli}: status {}, reason {reason:?}", w["status"]));
        }
        if launches != 1 {
            bad.push(format!("{cli} ({says}): {launches} launches, not 1"));
        }
        if out.status.code() != Some(1) {
            bad.push(format!("{cli}: exit {:?}", out.status.code()));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn kimi_and_aider_failures_name_the_cause_even_when_aider_exits_0() {
    let _g = serial();
    let mut bad = Vec::new();
    // (CLI, its last line, its exit code, the reason's start, a piece of its fix): the
    // strings of kimi-cli 1.52.0 and aider-chat 0.86.2 (assets/providers.toml).
    for (cli, line, code, says, fix) in [
        (
            "kimi",
            "Connection error.",
            75,
            "kimi: endpoint unreachable (exit 75: \"Connection error.\"): ",
            "Kimi endpoint",
        ),
        (
            "kimi",
            "LLM not set",
            1,
            "kimi: not authenticated (exit 1: \"LLM not set\"): ",
            "KIMI_API_KEY",
        ),
        (
            "aider",
            "litellm.APIConnectionError: OpenAIException - Connection error.",
            0,
            "aider: endpoint unreachable (exit 0: \"litellm.APIConnectionError",
            "OPENAI_API_BASE",
        ),
        (
            "aider",
            "The API provider is not able to authenticate you. Check your API key.",
            0,
            "aider: not authenticated (exit 0: ",
            "OPENAI_API_KEY",
        ),
        (
            "aider",
            "Insufficient credits with the API provider. Please add credits.",
            0,
            "aider: out of quota (exit 0: ",
            "add credits",
        ),
    ] {
        let bin = Bin::new();
        failing_with(&bin, cli, line, "", code);
        let project = crate::support::project();
        let out = run(&bin, project.path(), cli);
        let s = summary(&out);
        let w = worker(&s, "solo");
        let reason = w["reason"].as_str().unwrap_or_default();
        if w["status"] != "failed" || !reason.starts_with(says) || !reason.contains(fix) {
            bad.push(format!(
                "{cli} ({line}): status {}, reason {reason:?}",
                w["status"]
            ));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
