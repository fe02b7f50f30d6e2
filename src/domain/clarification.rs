//! Clarification: the run-level gate's decision and the pending question saved in the state.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// The line prefix of the explicit question protocol: a line `__CREWMUX_ASK__:<question>`
/// as the last line of a worker's output means it waits for an answer to `<question>`. The
/// sim agent asks this way; any command agent may. The question may end with what the
/// agent does when nobody answers: ` __DEFAULT__:<answer>` (the answer it takes) and
/// ` __AFTER_S__:<n>` (after how many seconds), read by [`ScreenAsk::parse`].
pub const ASK_PREFIX: &str = "__CREWMUX_ASK__:";

/// The marker of an explicit question's own default (see [`ASK_PREFIX`]).
pub const ASK_DEFAULT_MARK: &str = " __DEFAULT__:";
/// The marker of an explicit question's own wait, in seconds (see [`ASK_PREFIX`]).
pub const ASK_AFTER_MARK: &str = " __AFTER_S__:";

/// An explicit question as the agent wrote it after [`ASK_PREFIX`]: the text the person
/// reads, and what the agent itself does when nobody answers (the sim agent's
/// `ask-default` after `ask-timeout`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ScreenAsk {
    pub question: String,
    /// The answer the agent takes on its own when the wait ends.
    pub default: Option<String>,
    /// Seconds the agent waits before it goes on by itself.
    pub after_s: Option<u64>,
}

impl ScreenAsk {
    /// Split `text` (the question, then the optional marks in the order they are written:
    /// default, then wait) into its parts; text without marks is all question.
    pub fn parse(text: &str) -> Self {
        let (rest, after_s) = match text.rsplit_once(ASK_AFTER_MARK) {
            Some((q, n)) => match n.trim().parse::<u64>() {
                Ok(n) => (q, Some(n)),
                Err(_) => (text, None),
            },
            None => (text, None),
        };
        let (question, default) = match rest.rsplit_once(ASK_DEFAULT_MARK) {
            Some((q, d)) if !d.trim().is_empty() => (q, Some(d.trim().to_string())),
            _ => (rest, None),
        };
        ScreenAsk {
            question: question.trim().to_string(),
            default,
            after_s,
        }
    }

    /// The line an agent prints to ask this question, [`ASK_PREFIX`] included.
    pub fn line(&self) -> String {
        let mut s = format!("{ASK_PREFIX}{}", self.question);
        if let Some(d) = &self.default {
            s.push_str(&format!("{ASK_DEFAULT_MARK}{d}"));
        }
        if let Some(n) = self.after_s {
            s.push_str(&format!("{ASK_AFTER_MARK}{n}"));
        }
        s
    }
}

/// The run-level gate's decision (docs/design.md "Clarification", the OMG seed's intent gate):
/// `confidence` is in `0.0..=1.0`, `missing_slots` names what the problem lacks
/// (e.g. `target`, `verb`, `provider`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ClarificationGate {
    pub requires_clarification: bool,
    pub intent_class: String,
    pub missing_slots: Vec<String>,
    pub prompt: Option<String>,
    pub confidence: f64,
}

/// The clarification part of `state.json`: the run-level question, if pending, and every
/// answer given so far (they join the run context, in order).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ClarificationState {
    pub pending: bool,
    pub prompt: Option<String>,
    pub gate: Option<ClarificationGate>,
    #[serde(default)]
    pub answers: Vec<String>,
    /// The question each answer in `answers` replied to, same order.
    #[serde(default)]
    pub questions: Vec<String>,
    /// Answers given to waiting workers, in order.
    #[serde(default)]
    pub worker_answers: Vec<WorkerAnswer>,
    /// Tool names (an approval's kind, e.g. `Bash`) the person allowed for the rest of the
    /// run (`A` in the dashboard, `crewmux answer --allow-always`): later approvals of that
    /// kind are allowed without asking. Saved, so a lead that takes the run over keeps it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub always_allowed: Vec<String>,
}

/// One answer pasted into a waiting worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct WorkerAnswer {
    pub worker: String,
    pub question: String,
    pub answer: String,
}

/// What crewmux knows of a waiting worker's question besides its text (`WorkerState::question`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct PendingQuestion {
    /// The id of the MCP tool call that asked (`ask`, or `approve` for an approval); `None`:
    /// the question was read from the worker's screen or log, and an answer is pasted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call: Option<String>,
    /// The answers the agent offered (`ask`'s `choices`), in its order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub choices: Vec<String>,
    /// The answer the agent takes when nobody answers before `deadline`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// When the question stops waiting (asked + the worker's `question_timeout_s`); `None`:
    /// it waits until another limit ends the attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<DateTime<Utc>>,
    /// When the agent itself stops waiting and goes on with `default` (or with no answer):
    /// an explicit screen question that said its wait ([`ScreenAsk::after_s`]). The lead
    /// does nothing then; `deadline` still ends a worker that does not go on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_goes_on_at: Option<DateTime<Utc>>,
    /// For an approval: what the agent asks to do (the CLI's tool and its input, in one
    /// line); `y` allows it once, `n` denies it, `A` allows this tool for the rest of the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<Approval>,
    /// The question is the agent's own hook notification (Claude Code or Gemini CLI
    /// `Notification`, `mcp::hooks`): an answer is pasted, the agent's next hook event of
    /// work ends the wait, and a tool call of the same request takes its place.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub from_hooks: bool,
    /// The question is the last paragraph of the result the attempt ended with
    /// (`clarification::in_result`): the attempt is over, an answer continues the
    /// conversation as the worker's next attempt, and with no answer by `deadline` the
    /// result stands as written.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub from_result: bool,
}

impl PendingQuestion {
    /// How long the question still waits as of `now` and what happens then, as the
    /// clarification panel and `crewmux status` say it: `1:01 left · then the default
    /// applies: yes`, `default yes · no time limit`, `no time limit`. The agent's own wait
    /// ([`PendingQuestion::agent_goes_on_at`]), when shorter, is the one counted.
    pub fn wait_line(&self, now: DateTime<Utc>) -> String {
        let agent_first = self
            .agent_goes_on_at
            .filter(|a| self.deadline.is_none_or(|d| *a <= d));
        let left = agent_first.or(self.deadline).map(|d| {
            let s = (d - now).num_seconds().max(0);
            format!("{}:{:02}", s / 60, s % 60)
        });
        let then = match (&self.tool_call, &self.approval, &self.default) {
            _ if self.from_result => "then its result stands as written".to_string(),
            (Some(_), Some(_), _) => "then it is denied".to_string(),
            (Some(_), None, Some(d)) => format!("then the default applies: {d}"),
            (Some(_), None, None) => "then the agent decides alone (no default)".to_string(),
            (None, _, Some(d)) if agent_first.is_some() => {
                format!("then the agent takes its default: {d}")
            }
            (None, _, None) if agent_first.is_some() => {
                "then the agent goes on with no answer".to_string()
            }
            (None, _, _) => "then the attempt ends unanswered".to_string(),
        };
        match (left, &self.default) {
            (Some(left), _) => format!("{left} left · {then}"),
            (None, Some(d)) => format!("default {d} · no time limit"),
            (None, None) => "no time limit".to_string(),
        }
    }
}

/// How the reason of a worker that goes on with the person's answer to its result's
/// question, or with a message sent after it ended, starts (`… answer`, `… message`):
/// the next attempt's prompt says so.
pub const GOES_ON_WITH: &str = "goes on with the person's";

/// An action an agent CLI asks the person to allow (Claude Code's `--permission-prompt-tool`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Approval {
    /// The CLI's tool name, e.g. `Bash`, `Write`, `mcp__github__create_issue`.
    pub tool: String,
    /// The tool's input, as one line of JSON (cut to 400 characters for the screen).
    pub input: String,
    /// The paths the action reads or writes, as the tool's input gives them (absolute, or
    /// relative to the agent's working directory); `None`: its target cannot be told (a
    /// shell command, a tool crewmux does not know). `policy = "auto"` reads them
    /// (`mcp::targets`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub targets: Option<Vec<String>>,
}

/// A worker's approval policy (a team's `[approvals]` table or a worker's `approvals`):
/// what happens to an action its agent CLI asks permission for (docs/mcp.md "Approvals").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalPolicy {
    /// Every request reaches the person (the default).
    #[default]
    Ask,
    /// A request whose every path lies inside the worker's own worktree (the project
    /// directory for a worker that shares it) is allowed; anything outside it, and an
    /// action whose target cannot be told (a shell command), reaches the person.
    Auto,
    /// Every request is denied without asking.
    Deny,
}

impl ApprovalPolicy {
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalPolicy::Ask => "ask",
            ApprovalPolicy::Auto => "auto",
            ApprovalPolicy::Deny => "deny",
        }
    }

    /// Whether this is the default (`ask`), for `skip_serializing_if`.
    pub fn is_ask(&self) -> bool {
        *self == ApprovalPolicy::Ask
    }
}

/// A team's `[approvals]` table, or a worker's `approvals = { policy = "…" }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct ApprovalsSpec {
    /// `ask` (default), `auto` or `deny`.
    #[serde(default)]
    pub policy: Option<ApprovalPolicy>,
}

/// How a worker's MCP `ask` or `approve` call ended (the lead writes it as the call's
/// `reply-<id>.json`, see `mcp::exchange`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum ToolReply {
    /// The person answered; `text` byte for byte as given.
    Answer { text: String },
    /// Nobody answered within `after_s` seconds; the ask's default (if any) applies.
    TimedOut {
        after_s: u64,
        default: Option<String>,
    },
    /// The question is not taken (wrong nonce, the run is cancelled, the worker is being
    /// ended): `why` is said to the agent as a tool error.
    Refused { why: String },
    /// An approval: allowed (once, or for the rest of the run with `always`).
    Allow { always: bool },
    /// An approval: denied, with the person's reason when given.
    Deny { reason: Option<String> },
}

/// Where an approval's targets lie (found by `mcp::targets::reach`; read by the
/// engine's `policy = "auto"`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Reach {
    /// Every path is inside the worker's worktree.
    Inside,
    /// This path (the first found) is outside it.
    Outside(String),
    /// The target cannot be told (no paths known).
    #[default]
    Unknown,
}

#[cfg(test)]
mod tests {
    use super::ScreenAsk;

    #[test]
    fn an_explicit_question_carries_its_own_default_and_wait() {
        let ask = ScreenAsk {
            question: "Show rejected requests to the admin?".into(),
            default: Some("Yes, as a counter".into()),
            after_s: Some(20),
        };
        let line = ask.line();
        assert_eq!(
            line,
            "__CREWMUX_ASK__:Show rejected requests to the admin? __DEFAULT__:Yes, as a counter __AFTER_S__:20"
        );
        assert_eq!(
            ScreenAsk::parse(line.strip_prefix(super::ASK_PREFIX).unwrap()),
            ask
        );
        let plain = ScreenAsk::parse("Which database?");
        assert_eq!(
            (plain.question.as_str(), plain.default, plain.after_s),
            ("Which database?", None, None)
        );
        let wait_only = ScreenAsk::parse("Go on? __AFTER_S__:5");
        assert_eq!(
            (wait_only.question.as_str(), wait_only.after_s),
            ("Go on?", Some(5))
        );
    }
}
