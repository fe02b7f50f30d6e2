//! How one attempt's agent is told to start its MCP server: the server's argv (the running
//! crewmux, `mcp-serve` and who it serves) and the per-attempt files each CLI reads it from,
//! all inside the attempt's `mcp/` folder; a user's own CLI configuration is never written.
//! Which flag or variable of each CLI names these files is data in `providers.toml`
//! (`mcp_args`, `mcp_env`) with the placeholders [`McpLaunch::expand`] fills.

use std::path::{Path, PathBuf};

use super::exchange::{self, Caller};
use crate::error::{Error, Result};

/// The name the server is registered under in every CLI's configuration; Claude Code names
/// its tools `mcp__crewmux__ask`, `mcp__crewmux__progress`, `mcp__crewmux__approve`.
pub const SERVER_NAME: &str = "crewmux";

/// The variable every worker gets: the path of a JSON file `{"mcpServers": {"crewmux":
/// {"command": …, "args": […]}}}` that starts the attempt's server (the shape Claude Code's
/// `--mcp-config` and most MCP clients read).
pub const CONFIG_ENV: &str = "CREWMUX_MCP_CONFIG";

/// Seconds an MCP client should let one tool call run beyond the question timeout before
/// it gives up on it (the server answers by then: its own grace is shorter).
const CLIENT_SLACK_S: u64 = 60;

/// One attempt's MCP server launch and the files that describe it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpLaunch {
    pub command: PathBuf,
    pub args: Vec<String>,
    /// `<attempt>/mcp/`.
    pub dir: PathBuf,
    /// The worker's `question_timeout_s`.
    pub question_timeout_s: Option<u64>,
    /// The attempt's nonce (its hooks carry it too).
    pub nonce: String,
}

impl McpLaunch {
    /// The launch of `self_exe mcp-serve` for `caller` in `attempt_dir`.
    pub fn new(
        self_exe: &Path,
        attempt_dir: &Path,
        caller: &Caller,
        question_timeout_s: Option<u64>,
    ) -> Self {
        let dir = exchange::dir(attempt_dir);
        let mut args = vec![
            "mcp-serve".to_string(),
            "--dir".into(),
            dir.display().to_string(),
            "--worker".into(),
            caller.worker.clone(),
            "--attempt".into(),
            caller.attempt.to_string(),
            "--nonce".into(),
            caller.nonce.clone(),
        ];
        if let Some(t) = question_timeout_s {
            args.extend(["--question-timeout-s".into(), t.to_string()]);
        }
        Self {
            command: self_exe.to_path_buf(),
            args,
            dir,
            question_timeout_s,
            nonce: caller.nonce.clone(),
        }
    }

    /// The shell command the attempt's hooks run (`crewmux hook-event`, `mcp::hooks`);
    /// also every local worker's `CREWMUX_HOOK_COMMAND`.
    pub fn hook_command(&self) -> String {
        super::hooks::shell_command(&self.command, &self.dir, &self.nonce)
    }

    /// Claude Code's per-attempt settings file: the hooks (`--settings`).
    pub fn claude_settings_path(&self) -> PathBuf {
        self.dir.join("claude-settings.json")
    }

    /// Gemini CLI's per-attempt system-defaults file: the settings file's `mcpServers`
    /// and the hooks.
    pub fn gemini_settings_path(&self) -> PathBuf {
        self.dir.join("gemini-settings.json")
    }

    /// `CREWMUX_MCP_CONFIG`'s file (also Claude Code's `--mcp-config`).
    pub fn config_path(&self) -> PathBuf {
        self.dir.join("config.json")
    }

    /// A settings file in Gemini CLI's and Qwen Code's shape (`mcpServers` with `trust`, so
    /// their headless modes call the tools without a confirmation nobody can give, and a
    /// `timeout` in ms longer than a question may wait).
    pub fn settings_path(&self) -> PathBuf {
        self.dir.join("settings.json")
    }

    /// An OpenCode config file (`mcp.crewmux`, a `local` server).
    pub fn opencode_path(&self) -> PathBuf {
        self.dir.join("opencode.json")
    }

    /// How long a client may let one tool call run, seconds.
    pub fn tool_timeout_s(&self) -> u64 {
        self.question_timeout_s.unwrap_or(24 * 3600) + CLIENT_SLACK_S
    }

    /// Write the five files.
    ///
    /// # Errors
    /// I/O.
    pub fn write_files(&self) -> Result<()> {
        let mut argv = vec![self.command.display().to_string()];
        argv.extend(self.args.iter().cloned());
        let timeout_ms = self.tool_timeout_s() * 1000;
        let server = serde_json::json!({
            "command": self.command.display().to_string(),
            "args": self.args,
        });
        let mut trusted = server.clone();
        trusted["trust"] = true.into();
        trusted["timeout"] = timeout_ms.into();
        let hook = self.hook_command();
        let files = [
            (
                self.config_path(),
                serde_json::json!({"mcpServers": {SERVER_NAME: server}}),
            ),
            (
                self.settings_path(),
                serde_json::json!({"mcpServers": {SERVER_NAME: trusted.clone()}}),
            ),
            (
                self.gemini_settings_path(),
                serde_json::json!({
                    "mcpServers": {SERVER_NAME: trusted},
                    "hooks": super::hooks::gemini_hooks(&hook),
                }),
            ),
            (
                self.claude_settings_path(),
                super::hooks::claude_settings(&hook),
            ),
            (
                self.opencode_path(),
                serde_json::json!({
                    "$schema": "https://opencode.ai/config.json",
                    "mcp": {SERVER_NAME: {
                        "type": "local", "command": argv, "enabled": true,
                    }},
                }),
            ),
        ];
        for (path, value) in files {
            exchange::write_json(&path, &value)?;
        }
        Ok(())
    }

    /// Fill the MCP placeholders of one provider argument or variable: `{mcp_config}`,
    /// `{mcp_settings}`, `{mcp_opencode}` (the files' paths), `{mcp_command_toml}` and
    /// `{mcp_args_toml}` (the server's command and args as TOML values, for Codex's
    /// `-c key=value`), `{mcp_tool_timeout_s}`.
    /// The hooks' placeholders: `{hook_claude_settings}`, `{hook_gemini_settings}` (the
    /// files' paths) and `{hook_notify_toml}` (Codex's `notify` argv, a TOML array).
    pub fn expand(&self, arg: &str) -> String {
        if !arg.contains("{mcp_") && !arg.contains("{hook_") {
            return arg.to_string();
        }
        let notify = super::hooks::notify_argv(&self.command, &self.dir, &self.nonce);
        arg.replace(
            "{hook_claude_settings}",
            &self.claude_settings_path().display().to_string(),
        )
        .replace(
            "{hook_gemini_settings}",
            &self.gemini_settings_path().display().to_string(),
        )
        .replace(
            "{hook_notify_toml}",
            &toml_value(&toml::Value::Array(
                notify.into_iter().map(toml::Value::String).collect(),
            )),
        )
        .replace("{mcp_config}", &self.config_path().display().to_string())
        .replace(
            "{mcp_settings}",
            &self.settings_path().display().to_string(),
        )
        .replace(
            "{mcp_opencode}",
            &self.opencode_path().display().to_string(),
        )
        .replace(
            "{mcp_command_toml}",
            &toml_value(&toml::Value::String(self.command.display().to_string())),
        )
        .replace(
            "{mcp_args_toml}",
            &toml_value(&toml::Value::Array(
                self.args.iter().cloned().map(toml::Value::String).collect(),
            )),
        )
        .replace("{mcp_tool_timeout_s}", &self.tool_timeout_s().to_string())
    }
}

/// The variables through which Gemini CLI reads a system settings file
/// (`GEMINI_CLI_SYSTEM_DEFAULTS_PATH`, `GEMINI_CLI_SYSTEM_SETTINGS_PATH`, gemini 0.61.0).
pub const GEMINI_SYSTEM_ENV: [&str; 2] = [
    "GEMINI_CLI_SYSTEM_DEFAULTS_PATH",
    "GEMINI_CLI_SYSTEM_SETTINGS_PATH",
];

/// Why Gemini CLI would skip the system settings file `path`, or `None` when it reads it.
///
/// gemini 0.61.0 (`loadSystemFile` and `isFileAndDirectorySecureSync` in its bundle) skips
/// a system settings file, with a "Security Warning: Skipping system defaults file" line,
/// unless the file and every directory above it (as named and as resolved) are owned by
/// root (uid 0) and writable by neither group nor others. A missing file or directory is no
/// refusal. So for a user other than root, or for a state directory under `/tmp` (mode
/// 1777), the attempt's MCP server and hooks never reach gemini; crewmux then reads its
/// status from the screen and says so (docs/mcp.md "Status from the agents' hooks").
pub fn gemini_system_file_refusal(path: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let mut paths: Vec<PathBuf> = path.ancestors().map(Path::to_path_buf).collect();
    if let Ok(real) = std::fs::canonicalize(path.parent().unwrap_or(path)) {
        paths.extend(real.ancestors().map(Path::to_path_buf));
    }
    for p in paths.iter().filter(|p| !p.as_os_str().is_empty()) {
        let Ok(meta) = std::fs::metadata(p) else {
            continue;
        };
        if meta.uid() != 0 {
            return Some(format!("'{}' is not owned by root", p.display()));
        }
        if meta.mode() & 0o022 != 0 {
            return Some(format!(
                "'{}' is writable by group or others (mode {:o})",
                p.display(),
                meta.mode() & 0o7777
            ));
        }
    }
    None
}

/// A TOML value written inline (`"…"`, `["…", …]`).
fn toml_value(v: &toml::Value) -> String {
    v.to_string()
}

/// Parse `mcp-serve`'s view of who it serves from its flags.
///
/// # Errors
/// [`Error::Usage`] for an empty worker or nonce.
pub fn caller(worker: &str, attempt: u32, nonce: &str) -> Result<Caller> {
    if worker.is_empty() || nonce.is_empty() {
        return Err(Error::Usage(
            "mcp-serve needs --worker and --nonce (crewmux writes them into each attempt's CREWMUX_MCP_CONFIG)".into(),
        ));
    }
    Ok(Caller {
        worker: worker.to_string(),
        attempt,
        nonce: nonce.to_string(),
    })
}
