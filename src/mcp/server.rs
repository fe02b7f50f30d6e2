//! The MCP server an attempt's agent starts over stdio (`crewmux mcp-serve`, built on the
//! official SDK, `rmcp`): tools `ask`, `progress` and `approve` (Claude Code's
//! `--permission-prompt-tool`). Each call becomes files in the attempt's `mcp/` folder
//! (`exchange`); the lead, whichever process drives the run, answers there. The server
//! never decides for the person: it only waits, and past the question's deadline (plus a
//! grace for a lead that is slow or gone) it gives the agent what the timeout gives.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::{schemars, tool, tool_handler, tool_router, ServerHandler, ServiceExt};
use serde::Deserialize;

use super::exchange::{self, Ask, Caller, Progress, Reply, ServerFile};
use crate::domain::clarification::Approval;
use crate::error::{Error, Result};

/// How often a waiting `ask` looks for its reply file, ms.
const REPLY_POLL_MS: u64 = 20;
/// How long past the question's own deadline the server waits for the lead before it
/// applies the timeout itself (a lead that is gone or busy), seconds.
const LEAD_GRACE_S: u64 = 15;
/// The longest `progress` line kept, characters.
pub const PROGRESS_MAX_CHARS: usize = 200;

/// What the server serves: the attempt's exchange folder and who it is.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    pub dir: PathBuf,
    pub caller: Caller,
    /// The worker's `question_timeout_s` (`None`: its questions wait with no limit).
    pub question_timeout_s: Option<u64>,
}

/// The tools of one server process.
#[derive(Clone)]
pub struct Tools {
    opts: Arc<ServeOptions>,
    next: Arc<AtomicU32>,
}

/// `ask`'s arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct AskArgs {
    /// The question for the person, in full.
    pub question: String,
    /// Answers to offer, if the question has a few.
    #[serde(default)]
    pub choices: Option<Vec<String>>,
    /// The answer you will take if nobody answers in time.
    #[serde(default)]
    pub default: Option<String>,
}

/// `progress`'s arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ProgressArgs {
    /// One line saying what you are doing now.
    pub text: String,
}

/// `approve`'s arguments: what Claude Code sends its `--permission-prompt-tool`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ApproveArgs {
    /// The tool the agent wants to run (e.g. `Bash`, `Write`).
    pub tool_name: String,
    /// That tool's input.
    #[serde(default)]
    pub input: serde_json::Value,
    #[serde(default)]
    pub tool_use_id: Option<String>,
}

impl Tools {
    pub fn new(opts: ServeOptions) -> Self {
        Self {
            opts: Arc::new(opts),
            next: Arc::new(AtomicU32::new(1)),
        }
    }

    /// Write the ask file and wait for its reply (the lead's, or this server's own at the
    /// deadline plus [`LEAD_GRACE_S`]).
    async fn exchange(
        &self,
        question: String,
        choices: Vec<String>,
        default: Option<String>,
        approval: Option<Approval>,
    ) -> std::result::Result<Reply, String> {
        let id = format!(
            "{}-{}",
            std::process::id(),
            self.next.fetch_add(1, Ordering::Relaxed)
        );
        let ask = Ask {
            id: id.clone(),
            caller: self.opts.caller.clone(),
            question,
            choices,
            default: default.clone(),
            approval,
            asked_at: chrono::Utc::now(),
        };
        let dir = &self.opts.dir;
        exchange::write_json(&exchange::ask_path(dir, &id), &ask)
            .map_err(|e| format!("crewmux could not record the question: {e}"))?;
        let give_up = self
            .opts
            .question_timeout_s
            .map(|s| tokio::time::Instant::now() + Duration::from_secs(s + LEAD_GRACE_S));
        let reply_path = exchange::reply_path(dir, &id);
        loop {
            match exchange::read_json::<Reply>(&reply_path) {
                Ok(Some(r)) => return Ok(r),
                Ok(None) => {}
                Err(e) => return Err(format!("crewmux's reply cannot be read: {e}")),
            }
            if give_up.is_some_and(|t| tokio::time::Instant::now() >= t) {
                let r = Reply::TimedOut {
                    after_s: self.opts.question_timeout_s.unwrap_or(0),
                    default,
                };
                // Recorded so a lead that comes back sees the question as settled.
                let _ = exchange::write_json(&reply_path, &r);
                return Ok(r);
            }
            tokio::time::sleep(Duration::from_millis(REPLY_POLL_MS)).await;
        }
    }
}

/// The text `ask` returns for `reply`, and whether it is a tool error.
pub fn ask_result(reply: &Reply) -> (String, bool) {
    match reply {
        Reply::Answer { text } => (text.clone(), false),
        Reply::TimedOut {
            after_s,
            default: Some(d),
        } => {
            let _ = after_s;
            (d.clone(), false)
        }
        Reply::TimedOut {
            after_s,
            default: None,
        } => (
            format!(
                "No answer came within {after_s} s and the question gave no default: decide \
                 yourself, go on, and say in your result what you assumed."
            ),
            false,
        ),
        Reply::Refused { why } => (why.clone(), true),
        Reply::Allow { .. } => ("allowed".into(), false),
        Reply::Deny { reason } => (reason.clone().unwrap_or_else(|| "denied".into()), false),
    }
}

/// The JSON Claude Code's permission prompt tool must return for `reply` to a request
/// with `input`: `{"behavior":"allow","updatedInput":…}` or `{"behavior":"deny",
/// "message":…}` (Claude Code 2.1.197, `--permission-prompt-tool`).
pub fn approve_result(reply: &Reply, input: &serde_json::Value) -> serde_json::Value {
    match reply {
        Reply::Allow { .. } => serde_json::json!({"behavior": "allow", "updatedInput": input}),
        Reply::Deny { reason } => serde_json::json!({
            "behavior": "deny",
            "message": reason.clone().unwrap_or_else(|| "The person denied this action.".into()),
        }),
        Reply::TimedOut { after_s, .. } => serde_json::json!({
            "behavior": "deny",
            "message": format!("Nobody answered this approval within {after_s} s; it is denied."),
        }),
        Reply::Refused { why } => serde_json::json!({"behavior": "deny", "message": why}),
        Reply::Answer { text } => serde_json::json!({"behavior": "deny", "message": text}),
    }
}

/// `s` cut to `max` characters (with `…` when cut).
pub fn cut_chars(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// The tool input as one line for the person, cut to 400 characters.
fn one_line(input: &serde_json::Value) -> String {
    let s = input.to_string();
    cut_chars(&s, 400)
}

#[tool_router]
impl Tools {
    /// Ask the person running this team a question and wait for the answer.
    #[tool(
        name = "ask",
        description = "Ask the person who runs this team a question and wait for the answer. Use it only when you cannot go on without them (a decision only they can make, missing access or facts). Give `choices` when there are a few possible answers and a `default` you will take if nobody answers in time; the tool returns the answer text (or the default when nobody answered)."
    )]
    async fn ask(&self, Parameters(args): Parameters<AskArgs>) -> CallToolResult {
        if args.question.trim().is_empty() {
            return CallToolResult::error(vec![ContentBlock::text(
                "`question` is empty: give the question to ask",
            )]);
        }
        let choices = args.choices.unwrap_or_default();
        match self
            .exchange(args.question, choices, args.default, None)
            .await
        {
            Ok(reply) => {
                let (text, error) = ask_result(&reply);
                if error {
                    CallToolResult::error(vec![ContentBlock::text(text)])
                } else {
                    CallToolResult::success(vec![ContentBlock::text(text)])
                }
            }
            Err(e) => CallToolResult::error(vec![ContentBlock::text(e)]),
        }
    }

    /// One line of progress, shown in the team's dashboard.
    #[tool(
        name = "progress",
        description = "Tell the person what you are doing now, in one short line (shown beside your name in the team's dashboard). It does not wait and changes nothing else."
    )]
    async fn progress(&self, Parameters(args): Parameters<ProgressArgs>) -> CallToolResult {
        let line = args.text.lines().next().unwrap_or("").trim();
        if line.is_empty() {
            return CallToolResult::error(vec![ContentBlock::text(
                "`text` is empty: give one line of progress",
            )]);
        }
        let p = Progress {
            nonce: self.opts.caller.nonce.clone(),
            text: cut_chars(line, PROGRESS_MAX_CHARS),
            at: chrono::Utc::now(),
        };
        match exchange::append_progress(&self.opts.dir, &p) {
            Ok(()) => CallToolResult::success(vec![ContentBlock::text("shown")]),
            Err(e) => CallToolResult::error(vec![ContentBlock::text(format!(
                "crewmux could not record the progress: {e}"
            ))]),
        }
    }

    /// Claude Code's permission prompt: ask the person to allow a tool call.
    #[tool(
        name = "approve",
        description = "Permission prompt for crewmux: asks the person running the team whether the agent may run a tool with this input."
    )]
    async fn approve(&self, Parameters(args): Parameters<ApproveArgs>) -> CallToolResult {
        let _ = &args.tool_use_id;
        let approval = Approval {
            tool: args.tool_name.clone(),
            input: one_line(&args.input),
            targets: super::targets::of(&args.tool_name, &args.input),
        };
        let question = super::targets::describe(&args.tool_name, &args.input, 400);
        let reply = match self.exchange(question, vec![], None, Some(approval)).await {
            Ok(r) => r,
            Err(e) => Reply::Refused { why: e },
        };
        let value = approve_result(&reply, &args.input);
        CallToolResult::success(vec![ContentBlock::text(value.to_string())])
    }
}

/// Serve the tools on stdin/stdout until the client closes them (or TERM/INT), keeping
/// `server-<pid>.json` while it runs so the lead can tell a server that died from one
/// that ended.
///
/// # Errors
/// The exchange folder cannot be written, or the MCP session fails to start.
pub fn serve(opts: ServeOptions) -> Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::Other(format!("cannot start the MCP server's runtime: {e}")))?;
    let pid = std::process::id();
    let server_file = exchange::server_path(&opts.dir, pid);
    exchange::write_json(
        &server_file,
        &ServerFile {
            pid,
            caller: opts.caller.clone(),
            started_at: chrono::Utc::now(),
        },
    )?;
    let tools = Tools::new(opts);
    let out = rt.block_on(async move {
        let running = tools
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| Error::Other(format!("the MCP session did not start: {e}")))?;
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .map_err(|e| Error::Other(format!("cannot watch TERM: {e}")))?;
        tokio::select! {
            _ = running.waiting() => {}
            _ = term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
        Ok(())
    });
    // Ended on purpose: not a server that died.
    let _ = std::fs::remove_file(&server_file);
    out
}

#[tool_handler(router = Self::tool_router())]
impl ServerHandler for Tools {
    /// What the server says of itself at `initialize`.
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("crewmux", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Tools of the crewmux team you work in: `ask` the person only when you cannot go on without them; `progress` says what you are doing in one line.",
            )
    }
}
