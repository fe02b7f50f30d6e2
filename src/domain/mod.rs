//! Pure domain types shared by every layer: stages, workers, attempts, dispatch records,
//! verdicts, council, clarification, team specs and the persisted run state.

pub mod budget;
pub mod clarification;
pub mod council;
pub mod event;
pub mod exit;
pub mod flow;
pub mod inputs;
pub mod race;
pub mod run;
pub mod sandbox;
pub mod signal;
pub mod socket;
pub mod stage;
pub mod team;
pub mod worker;
pub mod workspace;

pub use budget::{Budget, BudgetState, Spend};
pub use clarification::{ClarificationGate, ClarificationState};
pub use council::{council_status, Council, CouncilStatus, CriticVerdict, Verdict};
pub use event::EventKind;
pub use exit::{ExitKind, ExitMeaning, ExitSaid, Fallback, RunRouting, StalledProvider};
pub use flow::{AgentSession, FlowState, Parked, StallWindow, UpstreamPolicy};
pub use inputs::RunInputs;
pub use race::{Candidate, Race, RaceCheck, RaceSpec, Ranked};
pub use run::{BackendKind, RunEvent, RunState, RunStatus, LOCAL_HOST, SCHEMA_VERSION};
pub use sandbox::{Sandbox, SandboxMode, SandboxNetwork, SandboxSpec};
pub use signal::{AgentSignal, SignalState};
pub use stage::Stage;
pub use team::{AgentSpec, CheckSpec, CriticSpec, TeamSpec, WorkerSpec};
pub use worker::{
    pane_label, DispatchRecord, ExitSource, WorkerKind, WorkerState, WorkerStatus, NOT_IN_ONLY,
};
pub use workspace::{
    DiffStat, Integration, MergeConflict, RunWorkspace, UpstreamMerges, WorkerWorkspace,
    WorkspaceMode, WorkspaceSpec,
};
