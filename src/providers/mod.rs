//! Provider specs (data) and how a worker's launch command is built from them.
//!
//! This first version knows the built-in `sim` agent and the `command` provider; the full
//! registry (assets/providers.toml, user overrides, doctor, routing) grows from here.

pub mod prompt;

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// What a launch needs to know about an attempt.
#[derive(Debug, Clone)]
pub struct LaunchRequest<'a> {
    /// The packaged prompt file of the attempt.
    pub prompt_file: &'a Path,
    /// Where the agent should write its markdown result (sim does; others are collected
    /// from `output.log`).
    pub result_file: &'a Path,
    /// Model to pass, if the provider has a model flag.
    pub model: Option<&'a str>,
    /// argv for the `command` provider.
    pub command: Option<&'a [String]>,
    /// 1-based attempt number.
    pub attempt: u32,
    /// The running crewmux binary (for `sim`).
    pub self_exe: &'a Path,
}

/// How to start one attempt: an argv (never a shell string), extra environment and an
/// optional file fed on stdin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchCommand {
    pub argv: Vec<String>,
    pub env: Vec<(String, String)>,
    pub stdin_file: Option<PathBuf>,
}

/// Build the launch command of `provider` for one attempt.
///
/// Errors: an unknown provider, or `command` without an argv.
pub fn build_launch(provider: &str, req: &LaunchRequest<'_>) -> Result<LaunchCommand> {
    let env = vec![
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
    match provider {
        "sim" => Ok(LaunchCommand {
            argv: vec![
                req.self_exe.display().to_string(),
                "sim-agent".into(),
                "--prompt-file".into(),
                req.prompt_file.display().to_string(),
                "--result-file".into(),
                req.result_file.display().to_string(),
                "--attempt".into(),
                req.attempt.to_string(),
            ],
            env,
            stdin_file: None,
        }),
        "command" => {
            let argv = req
                .command
                .filter(|c| !c.is_empty())
                .ok_or_else(|| {
                    Error::Usage(
                        "provider `command` needs `command = [argv...]` in the team file".into(),
                    )
                })?
                .to_vec();
            Ok(LaunchCommand {
                argv,
                env,
                stdin_file: None,
            })
        }
        other => Err(Error::Usage(format!(
            "unknown provider `{other}`: use one of sim, command"
        ))),
    }
}
