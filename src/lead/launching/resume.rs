//! Conversations that continue (docs/design.md): whether an attempt continues its worker's
//! earlier conversation with the agent CLI's resume (`resume_args` in providers.toml), and
//! the note its prompt starts with when it does.

use crate::domain::WorkerState;
use crate::providers::Registry;

/// The first lines of a resumed attempt's prompt: this continues the conversation, and how
/// the earlier attempt ended (the worker's reason, as the roster showed it).
///
/// An attempt that goes on with the person's answer to the question its last result
/// ended with, or with a message sent after it ended, says so instead: the answer or
/// message is at the end of the task.
pub(super) fn continuation_note(w: &WorkerState) -> String {
    let ended = match w.reason.as_deref() {
        Some(r) if r.starts_with(crate::domain::clarification::GOES_ON_WITH) => format!(
            " You ended it, and the person {}: see the end of the task below.",
            if r.contains("answer") {
                "answered your question"
            } else {
                "sent you a message"
            }
        ),
        Some(r) => format!(" It ended: {r}."),
        None => String::new(),
    };
    format!(
        "[crewmux: this continues your conversation of attempt {} (attempt {} now).{ended} Your task follows again, with anything that changed; carry on from where you were, keeping what you already did.]\n\n",
        w.attempt.saturating_sub(1),
        w.attempt
    )
}

/// The conversation attempt `w.attempt` continues, when it can: the worker's last attempt
/// named one ([`crate::domain::FlowState::session`]) with the same provider on the same
/// machine, `resume = false` is not set, and the provider has `resume_args`. A provider
/// without them says once per run (`run_id`) that its attempts start fresh.
pub fn resume_session(run_id: &str, w: &WorkerState, registry: &Registry) -> Option<String> {
    let s = w.flow.session.as_ref()?;
    if w.flow.no_resume || s.provider != w.provider || s.host != w.host || s.attempt >= w.attempt {
        return None;
    }
    if registry.get(&w.provider)?.resume_args.is_empty() {
        static SAID: std::sync::Mutex<Vec<(String, String)>> = std::sync::Mutex::new(Vec::new());
        let key = (run_id.to_string(), w.provider.clone());
        if let Ok(mut said) = SAID.lock() {
            if !said.contains(&key) {
                tracing::info!(
                    "{}: {} cannot continue a conversation by its id (no resume_args in providers.toml): its retries start a new one",
                    w.id,
                    w.provider
                );
                said.push(key);
            }
        }
        return None;
    }
    Some(s.id.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{AgentSession, Stage, WorkerKind};

    fn worker(provider: &str) -> WorkerState {
        let mut w = crate::engine::stages_public::blank_worker(
            "w".into(),
            "backend-engineer".into(),
            provider.into(),
            WorkerKind::Worker,
            Stage::TeamExec,
            0,
        );
        w.attempt = 2;
        w.flow.session = Some(AgentSession {
            provider: provider.into(),
            id: "s-1".into(),
            host: None,
            attempt: 1,
        });
        w
    }

    #[test]
    fn an_attempt_continues_only_the_same_clis_conversation_on_the_same_machine() {
        let registry = Registry::builtin();
        let w = worker("claude");
        assert_eq!(resume_session("r1", &w, &registry).as_deref(), Some("s-1"));
        // Moved to another provider (a fallback), or to a host: a new conversation.
        let mut moved = w.clone();
        moved.provider = "codex".into();
        assert_eq!(resume_session("r1", &moved, &registry), None);
        let mut remote = w.clone();
        remote.host = Some("box".into());
        assert_eq!(resume_session("r1", &remote, &registry), None);
        // `resume = false`, a CLI without resume_args, or the same attempt again.
        let mut off = w.clone();
        off.flow.no_resume = true;
        assert_eq!(resume_session("r1", &off, &registry), None);
        assert_eq!(resume_session("r1", &worker("gemini"), &registry), None);
        let mut first = w;
        first.attempt = 1;
        assert_eq!(resume_session("r1", &first, &registry), None);
    }
}
