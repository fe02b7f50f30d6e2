//! The lead's side of each attempt's MCP exchange: what the watch found becomes engine
//! inputs (questions, progress, the agent's hook signals) or events (refused writes, a
//! server that died), and the engine's replies are written back for the server to hand to
//! the agent.

use crate::backend::Target;
use crate::domain::clarification::{Approval, ToolReply};
use crate::domain::{EventKind, RunEvent};
use crate::engine::questions::ToolQuestion;
use crate::engine::Input;
use crate::lead::{Driver, Update, Watch};
use crate::mcp::exchange;
use crate::mcp::hooks::HookNews;
use crate::mcp::targets::{self, Reach};
use crate::mcp::watch::{pid_alive, McpNews};

impl Driver {
    /// What the attempt's MCP exchange holds that is new (this machine's attempts only:
    /// a worker on an SSH host gets no server).
    pub(in crate::lead) fn observe_mcp(
        &mut self,
        t: &Target,
        watch: &mut Watch,
        emit: &mut impl FnMut(Update),
    ) -> Vec<Input> {
        let mut inputs = vec![];
        for news in watch.mcp.look(&watch.nonce, pid_alive) {
            match news {
                McpNews::Asked(ask) => {
                    let ask = *ask;
                    let reach = match &ask.approval {
                        Some(a) => self.reach_of(&t.worker, a),
                        None => Reach::Unknown,
                    };
                    inputs.push(Input::ToolAsked {
                        worker: t.worker.clone(),
                        attempt: t.attempt,
                        question: ToolQuestion {
                            call: ask.id,
                            question: ask.question,
                            choices: ask.choices,
                            default: ask.default,
                            approval: ask.approval,
                            reach,
                        },
                    });
                }
                McpNews::Progress(text) => inputs.push(Input::Progress {
                    worker: t.worker.clone(),
                    attempt: t.attempt,
                    text,
                }),
                McpNews::Refused(what) => {
                    self.mcp_event(t, EventKind::McpRefused, what, emit);
                }
                McpNews::ServerDied { pid, open_asks } => {
                    let msg = format!(
                        "its MCP server (pid {pid}) ended without its agent; the agent's crewmux tools fail until the agent starts it again, the worker goes on"
                    );
                    self.mcp_event(t, EventKind::McpServerDied, msg, emit);
                    inputs.extend(open_asks.into_iter().map(|call| Input::ToolCallGone {
                        worker: t.worker.clone(),
                        attempt: t.attempt,
                        call,
                    }));
                }
            }
        }
        inputs
    }

    /// What the attempt's hook events hold that is new: its signals, and the events of
    /// another attempt or session (refused, said in the Log).
    pub(in crate::lead) fn observe_hooks(
        &mut self,
        t: &Target,
        watch: &mut Watch,
        emit: &mut impl FnMut(Update),
    ) -> Vec<Input> {
        let mut inputs = vec![];
        for news in watch.hooks.look(&watch.nonce) {
            match news {
                HookNews::Signal(signal) => inputs.push(Input::Signal {
                    worker: t.worker.clone(),
                    attempt: t.attempt,
                    signal,
                }),
                HookNews::Refused(what) => {
                    self.channel_event(t, EventKind::HookRefused, "hooks", what, emit);
                }
            }
        }
        inputs
    }

    /// Where approval `a` of `worker` acts: against its own worktree (the project directory
    /// for a worker that shares it), a relative path read from its working directory.
    fn reach_of(&self, worker: &str, a: &Approval) -> Reach {
        let state = &self.state;
        let root = state
            .workspace
            .as_ref()
            .and_then(|ws| ws.workers.get(worker))
            .map_or_else(|| state.project_dir.clone(), |w| w.path.clone());
        let cwd = state.worker(worker).map_or_else(
            || root.clone(),
            |w| {
                crate::workspace::cwd_for(state, w)
                    .unwrap_or_else(|| w.cwd.as_ref().map_or(root.clone(), |c| root.join(c)))
            },
        );
        targets::reach(a.targets.as_deref(), &root, &cwd)
    }

    fn mcp_event(
        &mut self,
        t: &Target,
        kind: EventKind,
        message: String,
        emit: &mut impl FnMut(Update),
    ) {
        self.channel_event(t, kind, "mcp", message, emit);
    }

    fn channel_event(
        &mut self,
        t: &Target,
        kind: EventKind,
        source: &str,
        message: String,
        emit: &mut impl FnMut(Update),
    ) {
        let e = RunEvent {
            ts: chrono::Utc::now(),
            kind,
            worker: Some(t.worker.clone()),
            attempt: Some(t.attempt),
            source: source.into(),
            message,
        };
        self.record_event(e, emit);
    }

    /// Write the engine's reply to the tool call `call` of `worker`'s attempt.
    pub(in crate::lead) fn reply_to_call(
        &mut self,
        worker: &str,
        attempt: u32,
        call: &str,
        reply: &ToolReply,
        emit: &mut impl FnMut(Update),
    ) {
        let dir = exchange::dir(&self.store.attempt_dir(worker, attempt));
        if let Err(e) = exchange::write_json(&exchange::reply_path(&dir, call), reply) {
            emit(Update::Notice(format!(
                "could not answer {worker}'s MCP call {call}: {e}"
            )));
        }
    }
}
