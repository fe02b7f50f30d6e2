//! The real agent CLIs, run through crewmux as a user runs them (`--provider`), against a
//! loopback model server this test starts (`support::model_server`). Opt-in: it runs only
//! with `CREWMUX_REAL_CLIS=1` and the CLIs on PATH (or in `CREWMUX_REAL_CLI_PATH`), e.g.
//!
//! ```sh
//! npm install -g --prefix /tmp/clis @openai/codex @anthropic-ai/claude-code \
//!     @google/gemini-cli @qwen-code/qwen-code
//! CREWMUX_REAL_CLIS=1 CREWMUX_REAL_CLI_PATH=/tmp/clis/bin \
//!     cargo test --test integration real_clis -- --nocapture
//! ```
//!
//! For each installed CLI (`CREWMUX_REAL_CLI_ONLY=codex,gemini` picks some): a run with a
//! key the server takes must exit 0 with the scripted answer as the worker's result and
//! the scripted tokens (and claude's cost) in the summary; a run with a key the server
//! refuses must end after one attempt with a `not authenticated` reason; a run against a
//! loopback port with nothing listening must end with a reason that names the dead
//! endpoint (`endpoint unreachable`, or `stalled: …` for a CLI that reconnects until it is
//! ended) and send no fixer there. Each CLI is pointed
//! at the server the way its own docs allow: `[providers.NAME.env]` in the project's
//! providers.toml (base URL and key variables), and for codex, which reads no base-URL
//! variable, a model provider in `~/.codex/config.toml`.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::model_server::{ModelServer, Script, REJECTED_KEY};
use crate::support::run::{crewmux, only_run_dir, summary, wait_limited, worker};
use crate::support::tmux::{tmux_ready, TmuxServer};

const ENABLE: &str = "CREWMUX_REAL_CLIS";
const ANSWER: &str = "Loopback answer: the parser now rejects empty input.";
const IN: u64 = 1234;
const OUT: u64 = 56;
const GOOD_KEY: &str = "loopback-good-key";

/// How one CLI is pointed at the server.
struct Case {
    provider: &'static str,
    /// `[providers.NAME.env]` lines (`{url}` and `{key}` are filled in).
    env: &'static [(&'static str, &'static str)],
    /// Files under HOME (`{url}` filled in).
    home_files: &'static [(&'static str, &'static str)],
    /// Whether the CLI reports tokens, and a cost.
    usage: bool,
    cost: bool,
    /// The CLI runs crewmux's per-attempt hooks (`hook_args`/`hook_env` in providers.toml).
    hooks: bool,
}

const CASES: &[Case] = &[
    Case {
        provider: "codex",
        env: &[("CODEX_API_KEY", "{key}")],
        // codex-cli 0.171.0 reads no base-URL variable; a custom provider also keeps it off
        // the Responses WebSocket, which its built-in provider tries first.
        home_files: &[(
            ".codex/config.toml",
            "model_provider = \"loopback\"\n\
             [model_providers.loopback]\n\
             name = \"loopback\"\n\
             base_url = \"{url}/v1\"\n\
             env_key = \"CODEX_API_KEY\"\n\
             wire_api = \"responses\"\n",
        )],
        usage: true,
        cost: false,
        hooks: true,
    },
    Case {
        provider: "claude",
        env: &[
            ("ANTHROPIC_BASE_URL", "{url}"),
            ("ANTHROPIC_API_KEY", "{key}"),
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
        ],
        home_files: &[],
        usage: true,
        cost: true,
        hooks: true,
    },
    Case {
        provider: "gemini",
        env: &[
            ("GOOGLE_GEMINI_BASE_URL", "{url}"),
            ("GEMINI_API_KEY", "{key}"),
        ],
        // gemini-cli 0.61.0 takes GOOGLE_GEMINI_BASE_URL alone for its "gateway" auth, which
        // it refuses headless (exit 41); the API-key auth chosen here still uses that URL.
        home_files: &[(
            ".gemini/settings.json",
            r#"{"security":{"auth":{"selectedType":"gemini-api-key"}}}"#,
        )],
        usage: true,
        cost: false,
        hooks: true,
    },
    Case {
        provider: "qwen",
        // qwen-code 0.15.10 picks its OpenAI auth headless only when OPENAI_MODEL is set too.
        env: &[
            ("OPENAI_BASE_URL", "{url}/v1"),
            ("OPENAI_API_KEY", "{key}"),
            ("OPENAI_MODEL", "coder-model"),
        ],
        home_files: &[],
        // Text output (providers.toml says why): no tokens.
        usage: false,
        cost: false,
        hooks: false,
    },
];

/// Where the CLIs are: `CREWMUX_REAL_CLI_PATH` first, then PATH.
fn search_path() -> String {
    let path = std::env::var("PATH").unwrap_or_default();
    match std::env::var("CREWMUX_REAL_CLI_PATH") {
        Ok(dir) if !dir.is_empty() => format!("{dir}:{path}"),
        _ => path,
    }
}

fn installed(binary: &str, path: &str) -> Option<PathBuf> {
    path.split(':')
        .map(|d| Path::new(d).join(binary))
        .find(|p| p.is_file())
}

fn version(bin: &Path, path: &str) -> String {
    Command::new(bin)
        .arg("--version")
        .env("PATH", path)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|e| format!("? ({e})"))
}

/// A project and HOME set up for `case`, with `key`; returns (project, home) dirs.
fn setup(case: &Case, url: &str, key: &str) -> (crate::support::Project, crate::support::Project) {
    let fill = |s: &str| s.replace("{url}", url).replace("{key}", key);
    let home = crate::support::project();
    for (rel, text) in case.home_files {
        let p = home.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, fill(text)).unwrap();
    }
    // Under the build's own temporary folder, not /tmp (mode 1777): Gemini skips a settings
    // file below a folder others can write (see `check_good`).
    let project =
        crate::support::project_in(&Path::new(env!("CARGO_TARGET_TMPDIR")).join("real-clis"));
    let mut toml = format!("[providers.{}.env]\n", case.provider);
    for (k, v) in case.env {
        toml.push_str(&format!("{k} = {:?}\n", fill(v)));
    }
    std::fs::create_dir_all(project.path().join(".crewmux")).unwrap();
    std::fs::write(project.path().join(".crewmux/providers.toml"), toml).unwrap();
    (project, home)
}

/// One finished run: its summary, exit code and run directory (the temp dirs live as long
/// as this).
struct Ran {
    summary: serde_json::Value,
    code: Option<i32>,
    run_dir: PathBuf,
    _dirs: (crate::support::Project, crate::support::Project),
}

/// One `crewmux run --provider` of `case` with `key` (two attempts).
fn run(case: &Case, url: &str, key: &str, path: &str, tmux: Option<&TmuxServer>) -> Ran {
    run_with(case, url, key, path, tmux, &["--max-attempts", "2"])
}

/// [`run`] with `limits` instead of its attempt count.
fn run_with(
    case: &Case,
    url: &str,
    key: &str,
    path: &str,
    tmux: Option<&TmuxServer>,
    limits: &[&str],
) -> Ran {
    let (project, home) = setup(case, url, key);
    let mut c = crewmux();
    c.current_dir(project.path())
        .env_clear()
        .env("PATH", path)
        .env("HOME", home.path())
        .env("TERM", "xterm-256color")
        // tmux 3.3a refuses to start a server without a UTF-8 locale.
        .env("LANG", "C.UTF-8")
        .env("CREWMUX_CONFIG_DIR", home.path().join(".config/crewmux"))
        .args(["run", "--no-clarify", "--headless"])
        .args(["--provider", case.provider])
        .args(limits);
    match tmux {
        Some(t) => c.env("CREWMUX_TMUX_SOCKET", &t.socket),
        None => c.args(["--backend", "process"]),
    };
    c.arg("Make the parser reject empty input.")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let out = wait_limited(c.spawn().unwrap(), &[case.provider]);
    Ran {
        summary: summary(&out),
        code: out.status.code(),
        run_dir: only_run_dir(project.path()),
        _dirs: (project, home),
    }
}

/// What went wrong with one CLI ("" when nothing).
fn check_good(case: &Case, ran: &Ran) -> String {
    let (code, run_dir) = (ran.code, &ran.run_dir);
    let w = worker(&ran.summary, "solo");
    let mut bad = Vec::new();
    if code != Some(0) || w["status"] != "completed" {
        bad.push(format!(
            "exit {code:?}, status {}, reason {}",
            w["status"], w["reason"]
        ));
    }
    let result = std::fs::read_to_string(run_dir.join("workers/solo/attempt-1/result.md"))
        .unwrap_or_default();
    if result.trim() != ANSWER {
        bad.push(format!("result {result:?}"));
    }
    let u = &w["usage"];
    let (i, o) = (
        u["input_tokens"].as_u64().unwrap_or(0),
        u["output_tokens"].as_u64().unwrap_or(0),
    );
    // A CLI may make more than one model call in a turn; each reports the scripted usage.
    let scripted = i > 0 && i % IN == 0 && o > 0 && o % OUT == 0 && i / IN == o / OUT;
    if case.usage != scripted || (!case.usage && !u.is_null()) {
        bad.push(format!("usage {u}"));
    }
    let cost = u["cost_usd"].as_f64();
    if case.cost != cost.is_some_and(|c| c > 0.0) {
        bad.push(format!("cost {cost:?}"));
    }
    // The CLI's own hooks reached crewmux: the events it ran `crewmux hook-event` for, and
    // the end of its turn among them (docs/mcp.md "Status from the agents' hooks").
    let hooks = hook_events(run_dir);
    eprintln!(
        "real_clis: {} hook events: {}",
        case.provider,
        hooks.join(" ")
    );
    // Gemini reads the attempt's settings only where root owns every folder and nobody
    // else writes them (`gemini_system_file_refusal`); elsewhere the screen is the source.
    let settings = run_dir.join("workers/solo/attempt-1/mcp/gemini-settings.json");
    let skipped = case.provider == "gemini"
        && crewmux::mcp::config::gemini_system_file_refusal(&settings).is_some();
    if case.hooks && !skipped && !hooks.iter().any(|e| e.ends_with("=turn-ended")) {
        bad.push(format!("no turn-ended hook event (saw {hooks:?})"));
    }
    bad.join("; ")
}

/// `EVENT=STATE` of each line of the solo worker's first attempt's `mcp/hooks.jsonl`.
fn hook_events(run_dir: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(run_dir.join("workers/solo/attempt-1/mcp/hooks.jsonl"))
        .unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .map(|v| {
            format!(
                "{}={}",
                v["event"].as_str().unwrap_or("?"),
                v["state"].as_str().unwrap_or("-")
            )
        })
        .collect()
}

/// A port on loopback with nothing listening: every connection is refused.
const REFUSED_URL: &str = "http://127.0.0.1:1";

/// Against [`REFUSED_URL`]: the worker's reason names the dead endpoint (the CLI's own
/// words, or its stall lines for a CLI that keeps reconnecting), and no fixer goes there.
fn check_refused(s: &serde_json::Value) -> String {
    let w = worker(s, "solo");
    let reason = w["reason"].as_str().unwrap_or_default();
    let mut bad = Vec::new();
    if w["status"] != "failed"
        || !(reason.contains("endpoint unreachable") || reason.starts_with("stalled: "))
    {
        bad.push(format!("status {}, reason {reason:?}", w["status"]));
    }
    let fixers = s["workers"]
        .as_array()
        .map(|ws| {
            ws.iter()
                .filter(|w| w["id"] == "fixer-r1" && w["attempts"].as_u64().unwrap_or(0) > 0)
                .count()
        })
        .unwrap_or(0);
    if fixers > 0 {
        bad.push("a fixer was sent to the dead endpoint".into());
    }
    bad.join("; ")
}

fn check_rejected(s: &serde_json::Value) -> String {
    let w = worker(s, "solo");
    let reason = w["reason"].as_str().unwrap_or_default();
    let mut bad = Vec::new();
    if w["status"] != "failed" || !reason.contains("not authenticated") {
        bad.push(format!("status {}, reason {reason:?}", w["status"]));
    }
    if w["attempts"].as_u64() != Some(1) {
        bad.push(format!(
            "{} attempts (retried on the same provider)",
            w["attempts"]
        ));
    }
    bad.join("; ")
}

/// A case to run and its CLI's binary (`None`: not installed).
type ToRun = (&'static Case, Option<PathBuf>);

/// The opt-in's gate and what every real-CLI test starts from: `None` (said on stderr) unless
/// `CREWMUX_REAL_CLIS=1`; else the CLIs' PATH, the loopback server answering [`ANSWER`], and
/// the cases to run (`CREWMUX_REAL_CLI_ONLY` picks some) with each one's binary, `None` for a
/// CLI that is not installed.
fn opted_in(test: &str) -> Option<(String, ModelServer, Vec<ToRun>)> {
    if std::env::var(ENABLE).as_deref() != Ok("1") {
        eprintln!("{test}: skipped; set {ENABLE}=1 with the agent CLIs installed to run it");
        return None;
    }
    let path = search_path();
    let only = std::env::var("CREWMUX_REAL_CLI_ONLY").unwrap_or_default();
    let server = ModelServer::start(Script {
        answer: ANSWER.into(),
        input_tokens: IN,
        output_tokens: OUT,
    });
    let cases = CASES
        .iter()
        .filter(|c| only.is_empty() || only.split(',').any(|o| o == c.provider))
        .map(|c| (c, installed(c.provider, &path)))
        .collect();
    Some((path, server, cases))
}

#[test]
fn real_clis() {
    let Some((path, server, cases)) = opted_in("real_clis") else {
        return;
    };
    let tmux = tmux_ready("real_clis").then(|| TmuxServer::new("real-clis"));
    let mut report = Vec::new();
    let mut failed = false;
    for (case, bin) in cases {
        let Some(bin) = bin else {
            report.push(format!("{}: not installed", case.provider));
            continue;
        };
        let v = version(&bin, &path);
        let before = server.seen().len();
        let ran = run(case, &server.url(), GOOD_KEY, &path, tmux.as_ref());
        let mut good = check_good(case, &ran);
        let answered = server.seen()[before..]
            .iter()
            .filter(|r| r.status == 200 && r.key.as_deref() == Some(GOOD_KEY))
            .count();
        if answered == 0 {
            good.push_str("; no request with the key reached the server");
        }
        let ran = run(case, &server.url(), REJECTED_KEY, &path, tmux.as_ref());
        let rejected = check_rejected(&ran.summary);
        // One attempt, a 30 s stall limit: within the command's limit for a CLI that
        // reconnects for good (codex).
        let started = std::time::Instant::now();
        let limits = ["--max-attempts", "1", "--stall-after", "30"];
        let ran = run_with(case, REFUSED_URL, GOOD_KEY, &path, tmux.as_ref(), &limits);
        let refused = check_refused(&ran.summary);
        let took = started.elapsed().as_secs();
        let why = worker(&ran.summary, "solo")["reason"].clone();
        failed |= !good.is_empty() || !rejected.is_empty() || !refused.is_empty();
        let verdict = |bad: &str| {
            if bad.is_empty() {
                "pass".to_string()
            } else {
                format!("FAIL: {bad}")
            }
        };
        report.push(format!(
            "{} ({v}): answer {}; refused key {}; refused port {} ({took} s, {why})",
            case.provider,
            verdict(&good),
            verdict(&rejected),
            verdict(&refused),
        ));
    }
    let seen = server.seen();
    eprintln!("real_clis against {}:", server.url());
    for line in &report {
        eprintln!("  {line}");
    }
    eprintln!("  {} requests", seen.len());
    for r in seen.iter().filter(|r| r.status == 404) {
        eprintln!("  unanswered: {} {}", r.method, r.path);
    }
    assert!(
        report.iter().any(|l| !l.ends_with("not installed")),
        "no agent CLI on PATH: {path}"
    );
    assert!(!failed, "{}", report.join("\n"));
}

/// `crewmux <args>` in `project` as [`run_with`] runs it (the same PATH, HOME and config).
fn crewmux_in(project: &Path, home: &Path, path: &str, args: &[&str]) -> std::process::Output {
    let mut c = crewmux();
    c.current_dir(project)
        .env_clear()
        .env("PATH", path)
        .env("HOME", home)
        .env("TERM", "xterm-256color")
        .env("LANG", "C.UTF-8")
        .env("CREWMUX_CONFIG_DIR", home.join(".config/crewmux"))
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    wait_limited(c.spawn().unwrap(), args)
}

/// A retried worker of each CLI that can resume (claude, codex) continues its
/// conversation: the retry's model request carries the first attempt's answer, and its
/// dispatch record says which session it resumed.
#[test]
fn real_clis_resume() {
    let Some((path, server, cases)) = opted_in("real_clis_resume") else {
        return;
    };
    let mut report = Vec::new();
    let mut failed = false;
    for (case, bin) in cases
        .into_iter()
        .filter(|(c, _)| matches!(c.provider, "claude" | "codex"))
    {
        let Some(bin) = bin else {
            report.push(format!("{}: not installed", case.provider));
            continue;
        };
        let v = version(&bin, &path);
        let ran = run_with(
            case,
            &server.url(),
            GOOD_KEY,
            &path,
            None,
            &["--max-attempts", "1"],
        );
        let project = ran._dirs.0.path();
        let home = ran._dirs.1.path();
        let id = ran
            .run_dir
            .file_name()
            .unwrap()
            .to_string_lossy()
            .to_string();
        let before = server.seen().len();
        let steer = crewmux_in(
            project,
            home,
            &path,
            &[
                "steer",
                &id,
                "retry",
                "solo",
                "--task",
                "Now also reject whitespace-only input.",
            ],
        );
        let resumed = crewmux_in(project, home, &path, &["resume", &id, "--headless"]);
        let state: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(ran.run_dir.join("state.json")).unwrap_or_default(),
        )
        .unwrap_or_default();
        let records: Vec<&serde_json::Value> = state["dispatches"]
            .as_array()
            .map(|a| a.iter().filter(|d| d["worker_id"] == "solo").collect())
            .unwrap_or_default();
        let first = records
            .first()
            .and_then(|d| d["session"].as_str())
            .unwrap_or("");
        let second = records
            .get(1)
            .and_then(|d| d["resumed"].as_str())
            .unwrap_or("");
        let carried = server.seen()[before..]
            .iter()
            .filter(|r| r.status == 200 && r.body.contains(ANSWER))
            .count();
        let mut bad = Vec::new();
        if !steer.status.success() || !resumed.status.success() {
            bad.push(format!(
                "steer {:?} resume {:?}: {}",
                steer.status.code(),
                resumed.status.code(),
                String::from_utf8_lossy(&resumed.stderr)
            ));
        }
        if first.is_empty() || second != first {
            bad.push(format!("session {first:?}, resumed {second:?}"));
        }
        if carried == 0 {
            bad.push("no request of the retry carried the first attempt's answer".into());
        }
        // The answer came from the conversation, not from crewmux's prompt.
        let prompt = std::fs::read_to_string(ran.run_dir.join("workers/solo/attempt-2/prompt.md"))
            .unwrap_or_default();
        if prompt.contains(ANSWER) || !prompt.starts_with("[crewmux: this continues") {
            bad.push(format!("attempt 2's prompt: {:?}", prompt.get(..200)));
        }
        failed |= !bad.is_empty();
        report.push(format!(
            "{} ({v}): session {first}, retry resumed {second}, {carried} request(s) with the earlier turn: {}",
            case.provider,
            if bad.is_empty() { "pass".to_string() } else { format!("FAIL: {}", bad.join("; ")) }
        ));
    }
    eprintln!("real_clis_resume against {}:", server.url());
    for line in &report {
        eprintln!("  {line}");
    }
    assert!(!failed, "{}", report.join("\n"));
}

/// Each installed CLI answers through the loopback server from inside a `bwrap` fence
/// (`--sandbox bwrap`): its home is the fence's (its provider's `sandbox_home` only), its
/// network the host's.
#[test]
fn real_clis_sandboxed() {
    let Some((path, server, cases)) = opted_in("real_clis_sandboxed") else {
        return;
    };
    let mut report = Vec::new();
    let mut failed = false;
    for (case, bin) in cases {
        let Some(bin) = bin else {
            report.push(format!("{}: not installed", case.provider));
            continue;
        };
        let v = version(&bin, &path);
        let limits = ["--max-attempts", "1", "--sandbox", "bwrap"];
        let ran = run_with(case, &server.url(), GOOD_KEY, &path, None, &limits);
        let mut bad = check_good(case, &ran);
        if !bad.is_empty() {
            // What the CLI said inside the fence, for the report.
            let log =
                std::fs::read_to_string(ran.run_dir.join("workers/solo/attempt-1/output.log"))
                    .unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(6).collect();
            bad.push_str(&format!(
                " | output: {}",
                tail.into_iter().rev().collect::<Vec<_>>().join(" / ")
            ));
        }
        failed |= !bad.is_empty();
        let why = worker(&ran.summary, "solo")["reason"].clone();
        report.push(format!(
            "{} ({v}) in bwrap: {}",
            case.provider,
            if bad.is_empty() {
                "pass".to_string()
            } else {
                format!("FAIL: {bad} ({why})")
            }
        ));
    }
    eprintln!("real_clis_sandboxed against {}:", server.url());
    for line in &report {
        eprintln!("  {line}");
    }
    assert!(!failed, "{}", report.join("\n"));
}
