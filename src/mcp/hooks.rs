//! Status from the agents' own hooks (docs/mcp.md "Status from the agents' hooks"): each
//! attempt's CLI is told (per attempt, `providers.toml` `hook_args`/`hook_env`) to run
//! `crewmux hook-event` at points of its turn; that command reads the CLI's event,
//! keeps what the lead needs of it and appends one line to `<attempt>/mcp/hooks.jsonl`.
//! The lead reads those lines ([`HookWatch`]) and takes `working`, `waiting` and `turn
//! ended` from them.
//!
//! Event names and fields, read from each CLI's bundled source or binary:
//! - Claude Code 2.1.197 (`--settings <file>` with `hooks`): every event's stdin JSON has
//!   `session_id`, `hook_event_name`, and `agent_id` when a subagent (Task) fired it;
//!   `Notification` has `message` and `notification_type` (`permission_prompt`,
//!   `idle_prompt`, `elicitation_dialog`, `auth_success`, …); `StopFailure` has `error`.
//! - Gemini CLI 0.61.0 (settings `hooks`, read from the system-defaults file): `session_id`,
//!   `hook_event_name` (`SessionStart`, `BeforeAgent`, `BeforeTool`, `AfterTool`,
//!   `Notification` with `notification_type` `ToolPermission`, `AfterAgent`).
//! - Codex CLI 0.171.0 (`notify = [argv]`): the program gets one JSON argument,
//!   `{"type": "agent-turn-complete", "thread-id", "turn-id", …}`.

use std::io::Read;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::domain::{AgentSignal, SignalState};
use crate::error::{Error, Result};

/// The variable every local worker gets: the shell command a script (or an agent crewmux
/// does not know) runs with one hook event's JSON on its stdin, as Claude Code's and
/// Gemini CLI's hooks do.
pub const COMMAND_ENV: &str = "CREWMUX_HOOK_COMMAND";

/// The most of one event's stdin the command reads (a `PostToolUse` carries the tool's
/// whole response; only names and short fields are kept).
const MAX_EVENT_BYTES: u64 = 4 * 1024 * 1024;

/// The longest `detail` kept (a notification's message, a tool's name, an error).
const MAX_DETAIL_CHARS: usize = 300;

/// `<exchange dir>/hooks.jsonl`.
pub fn events_path(dir: &Path) -> PathBuf {
    dir.join("hooks.jsonl")
}

/// One line of `hooks.jsonl`: what `crewmux hook-event` kept of one CLI event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HookLine {
    /// The nonce the command was started with (the attempt's, from its configuration).
    pub nonce: String,
    /// The CLI's event name (`Stop`, `AfterAgent`, `agent-turn-complete`).
    pub event: String,
    /// The CLI's conversation id (`session_id`, Codex's `thread-id`), when it said one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// A subagent fired it (Claude Code's `agent_id`, `SubagentStart`/`SubagentStop`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub subagent: bool,
    /// What it tells; `None`: nothing crewmux reads (`SessionEnd`, `auth_success`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<SignalState>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    pub at: DateTime<Utc>,
}

/// What one CLI event tells (see [`read_event`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventRead {
    pub event: String,
    pub session: Option<String>,
    pub subagent: bool,
    /// The state and its detail; `None`: nothing crewmux reads.
    pub told: Option<(SignalState, Option<String>)>,
}

/// What one event of any of the CLIs above tells: its name, its session, whether a
/// subagent fired it, its state and detail. Event names do not clash between the CLIs,
/// so one table reads them all.
pub fn read_event(raw: &Value) -> EventRead {
    let text = |k: &str| raw.get(k).and_then(Value::as_str).map(str::to_string);
    let event = text("hook_event_name")
        .or_else(|| text("type"))
        .unwrap_or_default();
    let session = text("session_id").or_else(|| text("thread-id"));
    let subagent = text("agent_id").is_some_and(|a| !a.is_empty())
        || matches!(event.as_str(), "SubagentStart" | "SubagentStop");
    let tool = || text("tool_name");
    let told = match event.as_str() {
        "SessionStart" | "UserPromptSubmit" | "BeforeAgent" | "PreCompact" | "PreCompress" => {
            Some((SignalState::Working, None))
        }
        "PreToolUse" | "PostToolUse" | "PostToolUseFailure" | "BeforeTool" | "AfterTool" => {
            Some((SignalState::Working, tool()))
        }
        "Notification" => {
            let kind = text("notification_type").unwrap_or_default();
            let waits = matches!(
                kind.as_str(),
                "" | "permission_prompt" | "idle_prompt" | "elicitation_dialog" | "ToolPermission"
            );
            waits.then(|| {
                let message = text("message").unwrap_or_else(|| format!("{event} {kind}"));
                (SignalState::Waiting, Some(message))
            })
        }
        "Stop" | "AfterAgent" | "agent-turn-complete" => Some((SignalState::TurnEnded, None)),
        "StopFailure" => Some((SignalState::TurnFailed, text("error"))),
        _ => None,
    };
    let told = told.map(|(s, d)| (s, d.map(|d| one_line(&d))));
    EventRead {
        event,
        session,
        subagent,
        told,
    }
}

/// `text` on one line, cut to [`MAX_DETAIL_CHARS`].
fn one_line(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(MAX_DETAIL_CHARS) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line,
    }
}

/// `crewmux hook-event`'s work: read one event (`arg`, Codex's `notify` JSON argument, or
/// else stdin up to 4 MiB) and append what it tells to `<dir>/hooks.jsonl` as one line.
///
/// # Errors
/// An event that is not a JSON object, or I/O; the command still exits 0 (a hook must
/// never stop the agent) and says so on stderr.
pub fn record(dir: &Path, nonce: &str, arg: Option<&str>, stdin: impl Read) -> Result<()> {
    let mut text = String::new();
    match arg {
        Some(a) => text.push_str(a),
        None => {
            stdin
                .take(MAX_EVENT_BYTES)
                .read_to_string(&mut text)
                .map_err(|e| Error::Other(format!("reading the hook event: {e}")))?;
        }
    }
    let raw: Value = serde_json::from_str(text.trim())
        .map_err(|e| Error::Other(format!("the hook event is not JSON: {e}")))?;
    if !raw.is_object() {
        return Err(Error::Other("the hook event is not a JSON object".into()));
    }
    let EventRead {
        event,
        session,
        subagent,
        told,
    } = read_event(&raw);
    let (state, detail) = match told {
        Some((s, d)) => (Some(s), d),
        None => (None, None),
    };
    let line = HookLine {
        nonce: nonce.to_string(),
        event,
        session,
        subagent,
        state,
        detail,
        at: Utc::now(),
    };
    super::exchange::append_line(dir, &events_path(dir), &line)
}

/// What one look at an attempt's `hooks.jsonl` found.
#[derive(Debug, Clone, PartialEq)]
pub enum HookNews {
    /// A state of this attempt's agent.
    Signal(AgentSignal),
    /// An event that does not belong to it (another nonce, another session), refused.
    Refused(String),
}

/// The lead's reading position in one attempt's `hooks.jsonl`, and the session its
/// first event named (later events of another session are refused: a nested agent the
/// worker started, which inherited its environment).
#[derive(Debug, Clone, Default)]
pub struct HookWatch {
    path: PathBuf,
    at: u64,
    session: Option<String>,
    seen: bool,
    refused_session: bool,
}

impl HookWatch {
    /// A watch of `<exchange dir>/hooks.jsonl`.
    pub fn new(dir: &Path) -> Self {
        Self {
            path: events_path(dir),
            ..Self::default()
        }
    }

    /// Whether any event of this attempt has been read: its CLI's hooks work, so the
    /// screen's waiting patterns are not needed.
    pub fn seen_any(&self) -> bool {
        self.seen
    }

    /// The new whole lines since the last look, for the attempt whose nonce is `nonce`.
    /// A subagent's events and events that tell nothing are skipped; a missing file is
    /// nothing new.
    pub fn look(&mut self, nonce: &str) -> Vec<HookNews> {
        let mut news = vec![];
        for l in super::exchange::new_lines(&self.path, &mut self.at) {
            let line = match serde_json::from_slice::<HookLine>(&l) {
                Ok(line) => line,
                Err(e) => {
                    news.push(HookNews::Refused(format!("hook line unreadable: {e}")));
                    continue;
                }
            };
            if line.nonce != nonce {
                news.push(HookNews::Refused(format!(
                    "hook event {} refused: its nonce is not this attempt's",
                    line.event
                )));
                continue;
            }
            if line.subagent {
                continue;
            }
            match (&self.session, &line.session) {
                (None, Some(s)) => self.session = Some(s.clone()),
                (Some(ours), Some(s)) if ours != s => {
                    // Said once: a nested agent may fire many.
                    if !self.refused_session {
                        self.refused_session = true;
                        news.push(HookNews::Refused(format!(
                            "hook event {} refused: it names session {s}, this attempt's agent is session {ours} (a nested agent?)",
                            line.event
                        )));
                    }
                    continue;
                }
                _ => {}
            }
            self.seen = true;
            if let Some(state) = line.state {
                news.push(HookNews::Signal(AgentSignal {
                    state,
                    event: line.event,
                    detail: line.detail,
                    at: line.at,
                }));
            }
        }
        news
    }
}

/// The shell command a CLI's hook runs (Claude Code's and Gemini CLI's `command` is run by
/// a shell): `'<crewmux>' hook-event --dir '<dir>' --nonce '<nonce>'`, every word quoted.
pub fn shell_command(self_exe: &Path, dir: &Path, nonce: &str) -> String {
    let quote = |s: &str| {
        shlex::try_quote(s)
            .map(|q| q.into_owned())
            .unwrap_or_else(|_| format!("'{}'", s.replace('\'', r"'\''")))
    };
    format!(
        "{} hook-event --dir {} --nonce {}",
        quote(&self_exe.display().to_string()),
        quote(&dir.display().to_string()),
        quote(nonce)
    )
}

/// The argv of Codex's `notify` (it appends the event's JSON as the last argument).
pub fn notify_argv(self_exe: &Path, dir: &Path, nonce: &str) -> Vec<String> {
    vec![
        self_exe.display().to_string(),
        "hook-event".into(),
        "--dir".into(),
        dir.display().to_string(),
        "--nonce".into(),
        nonce.to_string(),
    ]
}

/// Claude Code's per-attempt settings (`--settings <file>`): one command hook for each
/// event crewmux reads. `--settings` adds to the user's own settings; their hooks run too.
pub fn claude_settings(command: &str) -> Value {
    let hook = serde_json::json!([{ "hooks": [{ "type": "command", "command": command }] }]);
    let events = [
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "Notification",
        "Stop",
        "StopFailure",
    ];
    let map: serde_json::Map<String, Value> = events
        .iter()
        .map(|e| (e.to_string(), hook.clone()))
        .collect();
    serde_json::json!({ "hooks": map })
}

/// Gemini CLI's `hooks` settings (merged into the attempt's system-defaults file with its
/// `mcpServers`; the `hooks` lists concatenate with the user's, settings schema 0.61.0
/// `mergeStrategy: concat`).
pub fn gemini_hooks(command: &str) -> Value {
    let hook = serde_json::json!([{
        "matcher": "*",
        "hooks": [{ "name": "crewmux", "type": "command", "command": command, "timeout": 10000 }],
    }]);
    let events = [
        "SessionStart",
        "BeforeAgent",
        "BeforeTool",
        "AfterTool",
        "Notification",
        "AfterAgent",
    ];
    let map: serde_json::Map<String, Value> = events
        .iter()
        .map(|e| (e.to_string(), hook.clone()))
        .collect();
    Value::Object(map)
}

#[cfg(test)]
#[path = "hooks_tests.rs"]
mod tests;
