//! What an agent's own hooks said of its attempt (docs/mcp.md "Status from the agents'
//! hooks"): the CLI runs `crewmux hook-event` at points of its turn, and the lead takes
//! `working`, `waiting` and `turn ended` from those events instead of from the screen.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// The state one hook event tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SignalState {
    /// The agent works: a session or turn started, a tool is about to run or ran.
    Working,
    /// The agent waits for the person (Claude Code's `Notification` of a permission or
    /// idle prompt, Gemini CLI's `Notification` of a tool permission).
    Waiting,
    /// The agent's turn ended (Claude Code `Stop`, Gemini CLI `AfterAgent`, Codex's
    /// `notify` program with `agent-turn-complete`).
    TurnEnded,
    /// The turn ended on an API error (Claude Code `StopFailure`, whose `error` is one of
    /// `authentication_failed`, `billing_error`, `rate_limit`, `overloaded`, … in 2.1.197).
    TurnFailed,
}

impl SignalState {
    /// The words the roster and `status` print.
    pub fn as_str(self) -> &'static str {
        match self {
            SignalState::Working => "working",
            SignalState::Waiting => "waiting",
            SignalState::TurnEnded => "turn ended",
            SignalState::TurnFailed => "turn failed",
        }
    }
}

/// The last state a worker's current attempt told through its hooks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentSignal {
    pub state: SignalState,
    /// The CLI's own event name (`PreToolUse`, `Stop`, `AfterAgent`, `agent-turn-complete`).
    pub event: String,
    /// What the event names: the tool (`Bash`), the notification's message, the error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    pub at: DateTime<Utc>,
}

impl AgentSignal {
    /// One line for the roster's note and `status`: `hooks: working (Bash)`,
    /// `hooks: turn ended`, `hooks: turn failed (rate_limit)`.
    pub fn line(&self) -> String {
        match &self.detail {
            Some(d) if self.state != SignalState::Waiting => {
                format!("hooks: {} ({d})", self.state.as_str())
            }
            _ => format!("hooks: {}", self.state.as_str()),
        }
    }
}
