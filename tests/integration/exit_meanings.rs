//! Exit codes with a meaning, end to end with stand-in CLIs: gemini's 41 (auth) is not
//! retried on gemini; the worker moves to codex, or, forced onto gemini, ends with a reason
//! that says what to do, after one launch.

use std::path::Path;
use std::process::Output;

use crate::support::run::{crewmux, summary, worker};
use crate::support::standins::{serial, Bin};
use crate::support::wait::count_events;

/// gemini fails auth (41) and counts its launches; codex answers.
fn clis() -> Bin {
    let bin = Bin::new();
    bin.script(
        "gemini",
        "echo launch >> \"$REC/launches\"\necho 'Error authenticating: no credentials' >&2\nexit 41",
    );
    bin.script(
        "codex",
        "echo launch >> \"$REC/launches\"\necho 'codex: the theme is fixed'",
    );
    bin
}

fn run(bin: &Bin, project: &Path, args: &[&str]) -> Output {
    let out = crewmux()
        .current_dir(project)
        .env_clear()
        .env("PATH", format!("{}:/usr/bin:/bin", bin.bin_dir().display()))
        .env("HOME", bin.home())
        .env("CREWMUX_CONFIG_DIR", bin.dir.path().join("config"))
        .env("GEMINI_API_KEY", "expired-key")
        .env("CODEX_API_KEY", "codex-key")
        .args(["run", "--no-clarify", "--headless", "--backend", "process"])
        .args(args)
        .output()
        .unwrap();
    out
}

fn launches(bin: &Bin, name: &str) -> usize {
    std::fs::read_to_string(bin.rec(name).join("launches"))
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

#[test]
fn an_auth_exit_moves_the_worker_to_the_next_usable_provider() {
    let _g = serial();
    let bin = clis();
    let project = crate::support::project();
    let out = run(
        &bin,
        project.path(),
        &["--target", "gemini", "Polish the dark mode theme"],
    );
    let s = summary(&out);
    let w = worker(&s, "solo");
    assert_eq!(w["status"], "completed", "{s}");
    assert_eq!(w["provider"], "codex");
    assert_eq!((launches(&bin, "gemini"), launches(&bin, "codex")), (1, 1));
    let run_dir = crate::support::run::only_run_dir(project.path());
    assert_eq!(count_events(&run_dir, "provider-switched"), 1);
}

#[test]
fn forced_onto_gemini_an_auth_exit_ends_once_with_what_to_do() {
    let _g = serial();
    let bin = clis();
    let project = crate::support::project();
    let out = run(
        &bin,
        project.path(),
        &["--provider", "gemini", "Polish the dark mode theme"],
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = summary(&out);
    let w = worker(&s, "solo");
    assert_eq!(w["status"], "failed");
    let reason = w["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("gemini: not authenticated (exit 41): set GEMINI_API_KEY"),
        "{reason}"
    );
    assert_eq!(
        launches(&bin, "gemini"),
        1,
        "not retried on the same provider"
    );
}

/// claude and qwen exit 1 for a missing login as for anything else; what they print (as
/// Claude Code 2.1.197 and qwen-code 0.15.10 do) is what tells crewmux it was auth.
fn output_auth_clis() -> Bin {
    let bin = Bin::new();
    bin.script(
        "claude",
        r#"[ "$1" = auth ] && exit 1
echo launch >> "$REC/launches"
echo '{"type":"system","subtype":"init","session_id":"s1"}'
echo '{"type":"result","subtype":"success","is_error":true,"result":"Not logged in · Please run /login","total_cost_usd":0,"usage":{"input_tokens":0,"output_tokens":0}}'
exit 1"#,
    );
    bin.script(
        "qwen",
        "[ \"$1\" = auth ] && exit 0\necho launch >> \"$REC/launches\"\necho 'No auth type is selected. Please configure an auth type (e.g. via settings or `--auth-type`) before running in non-interactive mode.' >&2\nexit 1",
    );
    bin
}

#[test]
fn an_auth_failure_only_the_output_tells_is_not_retried_and_says_what_to_set() {
    let _g = serial();
    let bin = output_auth_clis();
    for (provider, says, fix) in [
        (
            "claude",
            "claude: not authenticated (exit 1: \"Not logged in · Please run /login\"): ",
            "set ANTHROPIC_API_KEY",
        ),
        (
            "qwen",
            "qwen: not authenticated (exit 1: \"No auth type is selected.",
            "set OPENAI_API_KEY",
        ),
    ] {
        let project = crate::support::project();
        let out = run(
            &bin,
            project.path(),
            &["--provider", provider, "Add a test"],
        );
        assert_eq!(out.status.code(), Some(1), "{provider}");
        let s = summary(&out);
        let w = worker(&s, "solo");
        assert_eq!(w["status"], "failed", "{provider}: {s}");
        let reason = w["reason"].as_str().unwrap();
        assert!(reason.starts_with(says), "{provider}: {reason}");
        assert!(reason.contains(fix), "{provider}: {reason}");
        assert_eq!(launches(&bin, provider), 1, "{provider} retried");
    }
}

#[test]
fn an_ordinary_exit_1_is_still_retried() {
    let _g = serial();
    let bin = Bin::new();
    bin.script(
        "claude",
        r#"[ "$1" = auth ] && exit 1
echo launch >> "$REC/launches"
echo '{"type":"result","subtype":"success","is_error":true,"result":"API Error: 500 internal error"}'
exit 1"#,
    );
    let project = crate::support::project();
    let out = run(
        &bin,
        project.path(),
        &["--provider", "claude", "Add a test"],
    );
    let s = summary(&out);
    assert_eq!(worker(&s, "solo")["reason"], "exit code 1", "{s}");
    assert!(launches(&bin, "claude") > 1, "retried");
}
