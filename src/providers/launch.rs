//! Building one attempt's launch command (argv, environment, stdin) from a provider spec.

use super::output::OutputFormat;
use super::spec::{PromptVia, ProviderKind, ProviderSpec};
use super::Registry;
use super::{LaunchCommand, LaunchRequest};
use crate::error::{Error, Result};

/// Expand `{prompt_file}`, `{result_file}`, `{attempt}`, `{model}` and `{self_exe}` in one
/// argument. Unknown `{...}` text is left as it is (it may be part of a user's argv).
pub fn expand(arg: &str, req: &LaunchRequest<'_>) -> String {
    arg.replace("{prompt_file}", &req.prompt_file.display().to_string())
        .replace("{result_file}", &req.result_file.display().to_string())
        .replace("{attempt}", &req.attempt.to_string())
        .replace("{model}", req.model.unwrap_or(""))
        .replace("{self_exe}", &req.self_exe.display().to_string())
}

/// Say once per provider and reason (a `warn` line in the Log) that Gemini CLI will skip
/// the attempt's system settings file `path`, so its MCP tools and hooks are missing and
/// its status comes from the screen ([`crate::mcp::config::gemini_system_file_refusal`]).
fn say_gemini_skips(provider: &str, path: &str) {
    let Some(why) = crate::mcp::config::gemini_system_file_refusal(std::path::Path::new(path))
    else {
        return;
    };
    static SAID: std::sync::Mutex<Vec<(String, String)>> = std::sync::Mutex::new(Vec::new());
    let key = (provider.to_string(), why.clone());
    if let Ok(mut said) = SAID.lock() {
        if said.contains(&key) {
            return;
        }
        said.push(key);
    }
    tracing::warn!(
        "{provider}: gemini skips the attempt's settings file ({why}; it reads one only where root owns it and every folder above it and nobody else can write them), so its crewmux MCP tools and hooks are off and its status comes from the screen (docs/mcp.md)"
    );
}

impl Registry {
    /// The launch command of `provider` for one attempt: `binary` then `args` with the
    /// placeholders expanded, `model_args` where `{model_args}` stands (or at the end) when
    /// `req.model` is set, the spec's `env` plus `CREWMUX_PROMPT_FILE`, `CREWMUX_RESULT_FILE`,
    /// `CREWMUX_ATTEMPT` (and `CREWMUX_MODEL` when a model is set), and the prompt file as stdin
    /// for `prompt = "stdin"` providers.
    ///
    /// # Errors
    /// An unknown provider, or `command` without an argv.
    pub fn build_launch(&self, provider: &str, req: &LaunchRequest<'_>) -> Result<LaunchCommand> {
        let spec = self.require(provider)?;
        build(provider, spec, req)
    }
}

/// Set `key` to `value`, replacing an earlier value: one variable, one value.
fn set_env(env: &mut Vec<(String, String)>, key: &str, value: String) {
    env.retain(|(k, _)| k != key);
    env.push((key.to_string(), value));
}

/// The attempt's MCP server and hooks (when `req.mcp` is given): their variables set in
/// `env`, and the `{mcp_args}` and `{hook_args}` argv, each expanded.
fn mcp_parts(
    name: &str,
    spec: &ProviderSpec,
    req: &LaunchRequest<'_>,
    env: &mut Vec<(String, String)>,
) -> (Vec<String>, Vec<String>) {
    match req.mcp {
        Some(m) => {
            set_env(
                env,
                crate::mcp::config::CONFIG_ENV,
                m.config_path().display().to_string(),
            );
            set_env(env, crate::mcp::hooks::COMMAND_ENV, m.hook_command());
            for (k, v) in spec.mcp_env.iter().chain(&spec.hook_env) {
                let value = m.expand(&expand(v, req));
                if crate::mcp::config::GEMINI_SYSTEM_ENV.contains(&k.as_str()) {
                    say_gemini_skips(name, &value);
                }
                set_env(env, k, value);
            }
            let args = |list: &[String]| -> Vec<String> {
                list.iter().map(|a| m.expand(&expand(a, req))).collect()
            };
            (args(&spec.mcp_args), args(&spec.hook_args))
        }
        None => (Vec::new(), Vec::new()),
    }
}

fn build(name: &str, spec: &ProviderSpec, req: &LaunchRequest<'_>) -> Result<LaunchCommand> {
    let mut env = vec![
        (
            "CREWMUX_PROMPT_FILE".to_string(),
            req.prompt_file.display().to_string(),
        ),
        (
            "CREWMUX_RESULT_FILE".to_string(),
            req.result_file.display().to_string(),
        ),
        ("CREWMUX_ATTEMPT".to_string(), req.attempt.to_string()),
    ];
    if let Some(m) = req.model {
        env.push(("CREWMUX_MODEL".to_string(), m.to_string()));
    }
    for (k, v) in &spec.env {
        env.push((k.clone(), expand(v, req)));
    }
    let (mcp_args, hook_args) = mcp_parts(name, spec, req, &mut env);
    let model_args: Vec<String> = match req.model {
        Some(m) if !m.is_empty() => spec
            .model_args
            .iter()
            .map(|a| a.replace("{model}", m))
            .collect(),
        _ => Vec::new(),
    };

    let argv: Vec<String> = if spec.kind == ProviderKind::Command {
        let cmd = req.command.filter(|c| !c.is_empty()).ok_or_else(|| {
            Error::Usage(format!(
                "provider `{name}` needs `command = [argv...]` in the team file"
            ))
        })?;
        cmd.iter().map(|a| expand(a, req)).collect()
    } else {
        let mut argv = vec![expand(&spec.binary, req)];
        let (mut placed, mut mcp_placed, mut hooks_placed) = (false, false, false);
        let args = match req.resume {
            Some(_) if !spec.resume_args.is_empty() => &spec.resume_args,
            _ => &spec.args,
        };
        for a in args {
            if a == "{model_args}" {
                argv.extend(model_args.iter().cloned());
                placed = true;
            } else if a == "{mcp_args}" {
                argv.extend(mcp_args.iter().cloned());
                mcp_placed = true;
            } else if a == "{hook_args}" {
                argv.extend(hook_args.iter().cloned());
                hooks_placed = true;
            } else {
                argv.push(expand(a, req).replace("{session}", req.resume.unwrap_or("")));
            }
        }
        if !mcp_placed {
            argv.extend(mcp_args);
        }
        if !hooks_placed {
            argv.extend(hook_args);
        }
        if !placed {
            argv.extend(model_args);
        }
        argv
    };
    let stdin_file = (spec.prompt == PromptVia::Stdin).then(|| req.prompt_file.to_path_buf());
    let render = (spec.output != OutputFormat::Text).then(|| {
        let format = serde_json::to_value(spec.output)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        vec![
            req.self_exe.display().to_string(),
            "pane-text".into(),
            "--format".into(),
            format,
        ]
    });
    Ok(LaunchCommand {
        argv,
        env,
        stdin_file,
        render,
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn req<'a>(model: Option<&'a str>, command: Option<&'a [String]>) -> LaunchRequest<'a> {
        LaunchRequest {
            prompt_file: Path::new("/r/w/attempt-1/prompt.md"),
            result_file: Path::new("/r/w/attempt-1/result.md"),
            model,
            command,
            attempt: 2,
            self_exe: Path::new("/bin/crewmux"),
            mcp: None,
            resume: None,
        }
    }

    #[test]
    fn a_resumed_attempt_continues_the_session_with_the_providers_resume_args() {
        let reg = Registry::builtin();
        let resumed = |p: &str| {
            let mut r = req(Some("m1"), None);
            r.resume = Some("sess-42");
            reg.build_launch(p, &r).unwrap().argv
        };
        let claude = resumed("claude");
        let at = claude.iter().position(|a| a == "--resume").unwrap();
        assert_eq!(claude[at + 1], "sess-42", "{claude:?}");
        assert!(claude.contains(&"-p".to_string()), "{claude:?}");
        let codex = resumed("codex");
        assert_eq!(
            codex[1..3],
            ["exec".to_string(), "resume".into()],
            "{codex:?}"
        );
        // The session, then `-` (the prompt from stdin) last; the sandbox as a config key
        // (`exec resume` has no --sandbox in codex-cli 0.171.0).
        assert_eq!(
            codex[codex.len() - 2..],
            ["sess-42".to_string(), "-".into()],
            "{codex:?}"
        );
        assert!(
            codex.contains(&"sandbox_mode=\"workspace-write\"".to_string()),
            "{codex:?}"
        );
        assert!(
            codex.windows(2).any(|w| w == ["--model", "m1"]),
            "{codex:?}"
        );
        // Without a session, or for a CLI without resume_args, the usual argv.
        let fresh = reg.build_launch("claude", &req(None, None)).unwrap().argv;
        assert!(!fresh.contains(&"--resume".to_string()), "{fresh:?}");
        let gemini = resumed("gemini");
        let plain = reg
            .build_launch("gemini", &req(Some("m1"), None))
            .unwrap()
            .argv;
        assert_eq!(gemini, plain);
    }

    #[test]
    fn json_event_clis_are_rendered_for_the_pane_and_text_clis_are_not() {
        let reg = Registry::builtin();
        for (name, format) in [
            ("codex", Some("codex-json")),
            ("claude", Some("claude-json")),
            ("gemini", Some("gemini-json")),
            ("qwen", None),
            ("aider", None),
            ("sim", None),
        ] {
            let l = reg.build_launch(name, &req(None, None)).unwrap();
            let want = format.map(|f| {
                ["/bin/crewmux", "pane-text", "--format", f]
                    .map(String::from)
                    .to_vec()
            });
            assert_eq!(l.render, want, "{name}");
        }
    }

    #[test]
    fn codex_gets_exec_json_model_and_stdin() {
        let reg = Registry::builtin();
        let l = reg
            .build_launch("codex", &req(Some("gpt-6-luna"), None))
            .unwrap();
        assert_eq!(&l.argv[..3], ["codex", "exec", "--json"]);
        let i = l.argv.iter().position(|a| a == "--model").unwrap();
        assert_eq!(l.argv[i + 1], "gpt-6-luna");
        assert_eq!(l.argv.last().unwrap(), "-");
        assert!(l.argv.contains(&"/r/w/attempt-1/result.md".to_string()));
        assert_eq!(
            l.stdin_file.as_deref(),
            Some(Path::new("/r/w/attempt-1/prompt.md"))
        );
    }

    #[test]
    fn no_model_means_no_model_flag() {
        let reg = Registry::builtin();
        let l = reg.build_launch("gemini", &req(None, None)).unwrap();
        assert!(!l.argv.iter().any(|a| a == "--model"));
        assert_eq!(&l.argv[l.argv.len() - 2..], ["-p", ""]);
    }

    #[test]
    fn sim_argv_is_the_sim_agent() {
        let l = Registry::builtin()
            .build_launch("sim", &req(None, None))
            .unwrap();
        assert_eq!(
            l.argv,
            [
                "/bin/crewmux",
                "sim-agent",
                "--prompt-file",
                "/r/w/attempt-1/prompt.md",
                "--result-file",
                "/r/w/attempt-1/result.md",
                "--attempt",
                "2"
            ]
        );
        assert_eq!(l.stdin_file, None);
    }

    #[test]
    fn command_expands_placeholders_and_needs_argv() {
        let reg = Registry::builtin();
        let cmd = vec!["lint".to_string(), "{prompt_file}".to_string()];
        let l = reg.build_launch("command", &req(None, Some(&cmd))).unwrap();
        assert_eq!(l.argv, ["lint", "/r/w/attempt-1/prompt.md"]);
        assert!(l.env.contains(&(
            "CREWMUX_PROMPT_FILE".into(),
            "/r/w/attempt-1/prompt.md".into()
        )));
        let err = reg.build_launch("command", &req(None, None)).unwrap_err();
        assert!(err.to_string().contains("command = [argv...]"));
    }
}
