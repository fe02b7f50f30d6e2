//! Providers against stand-in CLIs on PATH: the argv, model flag and prompt each real CLI
//! expects; doctor's view of missing, logged-out and hanging CLIs; routing around them.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::standins::{serial, Auth, Bin};
use crewmux::commands::doctor;
use crewmux::providers::{AuthState, LaunchRequest, Registry};
use crewmux::team::{resolve, Mode, ResolveOptions};

const PROMPT: &str =
    "You are a senior backend engineer.\n\nTask:\nFix `it`; don't \"break\" $HOME or 'quotes'.\n";

/// Build the launch of `provider` with `model`, run it for real, return the stand-in's records.
fn launch_and_run(
    bin: &Bin,
    reg: &Registry,
    provider: &str,
    model: &str,
) -> (Vec<String>, String, String) {
    let attempt = bin.dir.path().join("attempt-1");
    std::fs::create_dir_all(&attempt).unwrap();
    let prompt = attempt.join("prompt.md");
    std::fs::write(&prompt, PROMPT).unwrap();
    let result = attempt.join("result.md");
    let req = LaunchRequest {
        prompt_file: &prompt,
        result_file: &result,
        model: Some(model),
        command: None,
        attempt: 1,
        self_exe: Path::new("/nonexistent/crewmux"),
        mcp: None,
        resume: None,
    };
    let l = reg.build_launch(provider, &req).unwrap();
    assert_eq!(l.argv[0], provider, "binary is looked up on PATH by name");
    assert!(
        !l.argv.iter().any(|a| a.contains("Fix `it`")),
        "{provider}: prompt text must not be in argv"
    );
    let stdin = match &l.stdin_file {
        Some(f) => Stdio::from(std::fs::File::open(f).unwrap()),
        None => Stdio::null(),
    };
    let out = Command::new(&l.argv[0])
        .args(&l.argv[1..])
        .env_clear()
        .env("PATH", bin.bin_dir())
        .envs(l.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(stdin)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{provider}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        bin.recorded_argv(provider),
        bin.recorded_stdin(provider),
        bin.recorded_env(provider),
    )
}

#[test]
fn each_builtin_provider_gets_the_argv_model_and_prompt_its_cli_expects() {
    let _g = serial();
    let bin = Bin::new();
    for name in [
        "codex", "gemini", "claude", "kimi", "opencode", "qwen", "aider",
    ] {
        bin.add(name, "", Auth::Says(0, ""));
    }
    let reg = Registry::builtin();
    let attempt = bin.dir.path().join("attempt-1");
    let prompt = attempt.join("prompt.md").display().to_string();
    let result = attempt.join("result.md").display().to_string();
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();

    // codex-cli 0.171.0: `exec` reads the prompt from stdin when the prompt argument is `-`.
    let (argv, stdin, env) = launch_and_run(&bin, &reg, "codex", "gpt-6-luna");
    let mut want = s(&[
        "exec",
        "--json",
        "--skip-git-repo-check",
        "--sandbox",
        "workspace-write",
        "--output-last-message",
    ]);
    want.push(result.clone());
    want.extend(s(&["--model", "gpt-6-luna", "-"]));
    assert_eq!(argv, want);
    assert_eq!(stdin, PROMPT);
    assert!(
        env.contains(&format!("CREWMUX_PROMPT_FILE={prompt}")),
        "{env}"
    );
    assert!(env.contains("CREWMUX_MODEL=gpt-6-luna"));

    // gemini 0.61.0: `-p` is appended to stdin; the prompt itself comes on stdin.
    let (argv, stdin, _) = launch_and_run(&bin, &reg, "gemini", "gemini-2.5-flash");
    assert_eq!(
        argv,
        s(&[
            "--output-format",
            "stream-json",
            "--approval-mode",
            "auto_edit",
            "--skip-trust",
            "--model",
            "gemini-2.5-flash",
            "-p",
            ""
        ])
    );
    assert_eq!(stdin, PROMPT);

    // claude 2.1.197: `-p` without a prompt argument reads stdin.
    let (argv, stdin, _) = launch_and_run(&bin, &reg, "claude", "haiku");
    assert_eq!(
        argv,
        s(&[
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
            "--permission-mode",
            "acceptEdits",
            "--model",
            "haiku"
        ])
    );
    assert_eq!(stdin, PROMPT);

    // kimi-cli: `--print` reads the prompt from stdin when `-p` is absent.
    let (argv, stdin, _) = launch_and_run(&bin, &reg, "kimi", "kimi-k2");
    assert_eq!(
        argv,
        s(&["--print", "--output-format", "text", "--model", "kimi-k2"])
    );
    assert_eq!(stdin, PROMPT);

    // opencode 1.18.33: `run` takes the message from stdin.
    let (argv, stdin, _) = launch_and_run(&bin, &reg, "opencode", "anthropic/claude-sonnet-4");
    assert_eq!(
        argv,
        s(&[
            "run",
            "--format",
            "default",
            "--model",
            "anthropic/claude-sonnet-4"
        ])
    );
    assert_eq!(stdin, PROMPT);

    // qwen 0.15.10: one-shot on stdin.
    let (argv, stdin, _) = launch_and_run(&bin, &reg, "qwen", "coder-model");
    assert_eq!(
        argv,
        s(&[
            "--output-format",
            "text",
            "--approval-mode",
            "auto-edit",
            "--model",
            "coder-model"
        ])
    );
    assert_eq!(stdin, PROMPT);

    // aider 0.86.2: `--message-file PATH`, nothing on stdin.
    let (argv, stdin, _) = launch_and_run(&bin, &reg, "aider", "gpt-4o");
    let mut want = s(&["--message-file"]);
    want.push(prompt.clone());
    want.extend(s(&[
        "--yes-always",
        "--no-check-update",
        "--no-show-model-warnings",
        "--no-pretty",
        "--no-fancy-input",
        "--model",
        "gpt-4o",
    ]));
    assert_eq!(argv, want);
    assert_eq!(stdin, "");
    assert_eq!(std::fs::read_to_string(&argv[1]).unwrap(), PROMPT);
}

#[test]
fn doctor_reports_missing_logged_out_and_hanging_clis_without_hanging() {
    let _g = serial();
    let bin = Bin::new();
    bin.add(
        "codex",
        "login status",
        Auth::Says(0, "Logged in using ChatGPT"),
    );
    bin.add(
        "claude",
        "auth status",
        Auth::Says(1, "{\n  \"loggedIn\": false\n}"),
    );
    bin.add("qwen", "auth status", Auth::Hang);
    // gemini, kimi, opencode, aider: not installed. Short probe timeout for the hanging one.
    bin.user_providers("[providers.qwen.auth]\ntimeout_ms = 300\n");
    let t0 = Instant::now();
    let r = doctor::report(None, &bin.env()).unwrap();
    assert!(
        t0.elapsed() < Duration::from_secs(10),
        "doctor took {:?}",
        t0.elapsed()
    );
    let h = |n: &str| {
        r.providers
            .iter()
            .find(|h| h.provider == n)
            .unwrap()
            .clone()
    };

    let codex = h("codex");
    assert!(codex.installed);
    assert_eq!(codex.version.as_deref(), Some("9.9.9"));
    assert_eq!(codex.auth, AuthState::Authenticated);
    let gemini = h("gemini");
    assert!(!gemini.installed);
    assert_eq!(gemini.summary(), "not-installed");
    assert_eq!(gemini.install_hint, "npm install -g @google/gemini-cli");
    let claude = h("claude");
    assert!(claude.installed);
    assert_eq!(claude.auth, AuthState::NotAuthenticated);
    let qwen = h("qwen");
    assert_eq!(qwen.auth, AuthState::Unknown);
    assert!(
        qwen.auth_detail.contains("timed out after 300 ms"),
        "{}",
        qwen.auth_detail
    );

    assert_eq!(r.ready, ["codex", "qwen"]);
    assert!(r.ok);
    let text = doctor::render(&r);
    assert!(
        text.contains("install: npm install -g @google/gemini-cli"),
        "{text}"
    );
    assert!(
        text.lines().any(|l| l.starts_with("ready: codex, qwen")),
        "{text}"
    );
    // qwen counts (routing may try it) but the person is told its login is a guess.
    assert!(
        text.lines().last().unwrap().starts_with(
            "unconfirmed: qwen may not be logged in (`qwen auth status` timed out after 300 ms)"
        ),
        "{text}"
    );
    assert!(!text.contains("unconfirmed: codex"), "{text}");
}

#[test]
fn a_key_variable_proves_auth_without_running_the_probe() {
    let _g = serial();
    let bin = Bin::new();
    bin.add("codex", "login status", Auth::Hang);
    let mut env = bin.env();
    env.set("CODEX_API_KEY", "sk-test");
    let t0 = Instant::now();
    let r = doctor::report(None, &env).unwrap();
    let codex = r.providers.iter().find(|h| h.provider == "codex").unwrap();
    assert_eq!(codex.auth, AuthState::Authenticated);
    assert_eq!(codex.auth_detail, "$CODEX_API_KEY is set");
    assert!(
        t0.elapsed() < Duration::from_secs(8),
        "the hanging probe was not run"
    );
}

#[test]
fn routing_goes_around_missing_and_logged_out_clis() {
    let _g = serial();
    let bin = Bin::new();
    bin.add(
        "codex",
        "login status",
        Auth::Says(0, "Logged in using an API key"),
    );
    bin.add(
        "claude",
        "auth status",
        Auth::Says(1, "{\"loggedIn\": false}"),
    );
    let project = crate::support::project();
    let mut opts = ResolveOptions::new(
        "Make the settings page responsive and fix the auth API",
        project.path(),
    );
    opts.env = bin.env();
    opts.mode = Some(Mode::Ccg);
    opts.role = Some("smol".into());
    let team = resolve(&opts).unwrap();
    assert_eq!(team.target, "ccg");
    let w = |id: &str| team.workers.iter().find(|w| w.id == id).unwrap().clone();
    let backend = w("backend");
    assert_eq!(backend.provider, "codex");
    assert_eq!(
        backend.model.as_deref(),
        Some("gpt-6-luna"),
        "--role smol picks codex's smol model"
    );
    assert!(backend
        .task
        .contains("Backend implementation strategy for: Make the settings page"));
    // gemini is missing and claude (which fits frontend) is logged out: codex takes it.
    let frontend = w("frontend");
    assert_eq!(frontend.provider, "codex", "{}", frontend.reason);
    assert!(frontend.fallbacks.is_empty());
    assert_eq!(frontend.health, "ready");

    // Past failures of codex in this project do not remove it, but are in the reason.
    let run = project.path().join(".crewmux/runs/r1");
    std::fs::create_dir_all(&run).unwrap();
    std::fs::write(
        run.join("state.json"),
        r#"{"run_id":"r1","workers":[{"id":"backend","provider":"codex","status":"timeout"}]}"#,
    )
    .unwrap();
    let team = resolve(&opts).unwrap();
    assert!(
        team.workers[0].reason.contains("1/1 past runs failed here"),
        "{}",
        team.workers[0].reason
    );
}

#[test]
fn no_agent_cli_fails_fast_with_what_to_install_or_falls_back_to_sim() {
    let _g = serial();
    let bin = Bin::new();
    let project = crate::support::project();
    let mut opts = ResolveOptions::new("Review the checkout flow", project.path());
    opts.env = bin.env();
    opts.mode = Some(Mode::Ccg);
    let t0 = Instant::now();
    let err = resolve(&opts).unwrap_err().to_string();
    assert!(t0.elapsed() < Duration::from_secs(5));
    // The cause on one line, then each CLI's install command on a line of its own.
    let first = err.lines().next().unwrap_or_default();
    assert!(first.ends_with("; or install one of:"), "{err}");
    for hint in [
        "  codex: npm install -g @openai/codex",
        "  gemini: npm install -g @google/gemini-cli",
        "  claude: npm install -g @anthropic-ai/claude-code",
    ] {
        assert!(err.lines().any(|l| l == hint), "{hint} missing in: {err}");
    }
    assert!(err.contains("--allow-sim-fallback"), "{err}");

    opts.allow_sim_fallback = true;
    let team = resolve(&opts).unwrap();
    assert_eq!(team.workers.len(), 3, "two tracks and the synthesis");
    assert!(team
        .workers
        .iter()
        .all(|w| w.provider == "sim" && w.model.is_none()));
    // The sim launch is the sim agent, and the packaged prompt names it.
    let w = &team.workers[0];
    let l = team
        .build_launch(
            w,
            Path::new("/p.md"),
            Path::new("/r.md"),
            1,
            Path::new("/usr/local/bin/crewmux"),
        )
        .unwrap();
    assert_eq!(l.argv[..2], ["/usr/local/bin/crewmux", "sim-agent"]);
    let prompt = w.package_prompt(project.path(), 4000);
    assert!(prompt.contains("Model: sim / provider default"), "{prompt}");
    assert!(
        prompt.contains("Task:\nBackend implementation strategy for: Review the checkout flow"),
        "{prompt}"
    );
}

#[test]
fn forced_provider_and_project_override() {
    let _g = serial();
    let bin = Bin::new();
    bin.add("gemini", "", Auth::Says(0, ""));
    let project = crate::support::project();
    std::fs::create_dir_all(project.path().join(".crewmux")).unwrap();
    std::fs::write(
        project.path().join(".crewmux/providers.toml"),
        "[providers.gemini.models]\ndefault = \"gemini-house\"\n",
    )
    .unwrap();
    let mut opts = ResolveOptions::new("Debug the crash in the parser", project.path());
    opts.env = bin.env();
    opts.env.set("GEMINI_API_KEY", "k");
    opts.mode = Some(Mode::Crazy);
    opts.provider = Some("gemini".into());
    let team = resolve(&opts).unwrap();
    assert_eq!(team.workers.len(), 6, "five tracks and the synthesis");
    assert!(team.workers.iter().all(|w| w.provider == "gemini"));
    assert_eq!(
        team.workers[1].model.as_deref(),
        Some("gemini-house"),
        "project override of the default model"
    );
    // A forced provider that is not installed fails with its install hint.
    opts.provider = Some("codex".into());
    let err = resolve(&opts).unwrap_err().to_string();
    assert!(err.contains("npm install -g @openai/codex"), "{err}");
}
