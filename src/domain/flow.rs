//! What a worker's place in the team's flow adds to its saved state: the workers it waits
//! for, what happens when one of them fails, stall detection, the back-off before a retry
//! and the rate-limit mark.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// What a worker does when a worker it waits for (`after`) ends other than `completed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum UpstreamPolicy {
    /// The worker is `skipped` with the reason `upstream <id> <status>` (the default).
    #[default]
    Skip,
    /// The worker runs anyway, with whatever its upstreams left.
    Run,
}

impl UpstreamPolicy {
    pub fn as_str(self) -> &'static str {
        match self {
            UpstreamPolicy::Skip => "skip",
            UpstreamPolicy::Run => "run",
        }
    }
}

/// A worker's flow facts in `state.json` (all optional: older state files load as "no
/// dependencies, no stall detection, no pending back-off").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct FlowState {
    /// Ids of the workers (same stage and round) that must end before this one starts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub after: Vec<String>,
    /// What happens when one of `after` ends other than `completed`.
    #[serde(default)]
    pub on_upstream_failure: UpstreamPolicy,
    /// Seconds of output made only of the provider's stall lines after which the attempt is
    /// ended `failed` with reason `stalled: <line>`; `None` turns detection off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stall_after_s: Option<u64>,
    /// Seconds a question (an MCP `ask`, an approval, or a question seen on the screen) waits
    /// for the person before it stops waiting: an `ask` returns its default, an approval is
    /// denied, a screen question ends the attempt `failed`. `None`: no limit (the wall timeout
    /// still applies). Default `team::limits::DEFAULT_QUESTION_TIMEOUT_S`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question_timeout_s: Option<u64>,
    /// What happens to an action its agent CLI asks permission for (`approve`).
    #[serde(
        default,
        skip_serializing_if = "super::clarification::ApprovalPolicy::is_ask"
    )]
    pub approvals: super::clarification::ApprovalPolicy,
    /// The fence its agent runs in (`[sandbox]`, resolved); absent: none.
    #[serde(default, skip_serializing_if = "super::Sandbox::is_none")]
    pub sandbox: super::Sandbox,
    /// A pending retry starts no earlier than this (back-off after a stall or rate limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_at: Option<DateTime<Utc>>,
    /// The last rate-limit line of the current attempt (the `rate-limited` mark).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limited: Option<String>,
    /// The current attempt's output has been only stall lines since this window opened
    /// (saved, so a reattached run ends a stalled worker on time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stall: Option<StallWindow>,
    /// `resume = false` in the team file: every attempt starts a new conversation.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_resume: bool,
    /// The agent CLI's conversation of the worker's last attempt that named one: its next
    /// attempt on the same provider and host continues it (docs/design.md "Conversations
    /// that continue").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<AgentSession>,
    /// The current attempt continues `session` (the roster marks it `resumed`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub resumed: bool,
    /// What the person sent the worker after one of its attempts had ended (`s`, `crewmux
    /// steer send`), oldest first: each started a next attempt, and every later prompt
    /// of the worker carries them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub messages: Vec<String>,
    /// Parked on its provider's usage limit: the next attempt starts when it resets
    /// (`retry_at` holds the same time; `engine::parking`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parked: Option<Parked>,
    /// A candidate of a race: which task, which one of how many (`domain::race`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub candidate: Option<super::Candidate>,
    /// Its role's persona when the run's `agents.toml` files define it (a built-in role's
    /// is read from the built-in list).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persona: Option<String>,
}

/// A worker waiting for its provider's usage limit to reset.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Parked {
    /// When the limit resets, by the CLI's own words; the next attempt starts then.
    pub until: DateTime<Utc>,
    /// The provider whose limit it is.
    pub provider: String,
    /// The CLI's line that said so.
    pub line: String,
}

/// An agent CLI's own conversation id (Claude Code's `session_id`, Codex's thread id,
/// Gemini CLI's session id: `providers::output::session_id`) and where it was made: a
/// session lives in that CLI's files on that machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentSession {
    pub provider: String,
    pub id: String,
    /// The SSH host the attempt ran on; `None`: this machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The attempt that made (or last continued) it.
    pub attempt: u32,
}

/// Output made only of stall lines: since when, and the last such line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StallWindow {
    pub since: DateTime<Utc>,
    pub line: String,
}
