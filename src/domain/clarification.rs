//! Clarification: the run-level gate's decision and the pending question saved in the state.

use serde::{Deserialize, Serialize};

/// The line prefix of the explicit question protocol: a line `__CREWMUX_ASK__:<question>`
/// as the last line of a worker's output means it waits for an answer to `<question>`. The
/// sim agent asks this way; any command agent may.
pub const ASK_PREFIX: &str = "__CREWMUX_ASK__:";

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
}

/// One answer pasted into a waiting worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct WorkerAnswer {
    pub worker: String,
    pub question: String,
    pub answer: String,
}
