//! The integration step between a stage's work and its verification: in a run with
//! worktrees, the completed workers' branches are merged into the integration branch
//! before checks and critics run (they judge what the user would get). A conflict brings
//! in a merge-fixer (role `fixer`) in the integration worktree; with no agent that can fix,
//! the council is `blocked` with `merge conflict in <files> between <a> and <b>`.

use super::{Effect, Effects, RunMemory};
use crate::domain::EventKind;
use crate::domain::{
    Council, CouncilStatus, CriticVerdict, MergeConflict, RunState, Verdict, WorkerKind,
    WorkerStatus,
};

/// What the driver's integration pass found (after `Effect::Integrate`).
#[derive(Debug, Clone, PartialEq)]
pub enum IntegrationOutcome {
    /// Every completed branch is merged.
    Clean,
    /// A merge stopped on conflicts; `task` is the merge-fixer's task (files and hunks).
    Conflict {
        conflict: MergeConflict,
        task: String,
    },
    /// git failed otherwise.
    Failed(String),
}

/// Name of the council's integration verdict.
pub const INTEGRATION_CRITIC: &str = "integration";

/// True while the current round still needs (or waits for) its integration pass; asks for
/// it once.
pub(super) fn pending(state: &RunState, mem: &mut RunMemory, fx: &mut Effects) -> bool {
    let Some(ws) = state.workspace.as_ref() else {
        return false;
    };
    if ws.integrated_round == Some(state.fix_round) {
        return false;
    }
    if !mem.integrate_requested {
        mem.integrate_requested = true;
        fx.push(Effect::Integrate);
    }
    true
}

/// The agent a merge-fixer runs on: the `[fixer]` table, else the first team worker's
/// provider when it is an agent (a `command` worker's argv cannot resolve anything).
#[must_use]
pub fn fixer_agent(state: &RunState) -> Option<(String, Option<Vec<String>>)> {
    let spec = state.fixer.clone().unwrap_or_default();
    let first = state.workers.iter().find(|w| w.kind == WorkerKind::Worker);
    match (&spec.provider, first) {
        (Some(p), _) => Some((p.clone(), spec.command.clone())),
        (None, Some(f)) if f.provider != "command" => Some((f.provider.clone(), None)),
        _ => None,
    }
}

/// A pending merge-fixer `id` (role `fixer`, one attempt) with `task`, on the agent of
/// [`fixer_agent`]; `None` when no agent can fix.
pub(super) fn new_fixer(
    state: &RunState,
    id: String,
    task: String,
    stage: crate::domain::Stage,
    round: u32,
) -> Option<crate::domain::WorkerState> {
    let (provider, command) = fixer_agent(state)?;
    let spec = state.fixer.clone().unwrap_or_default();
    let mut w = super::stages::blank_worker(
        id,
        "fixer".into(),
        provider,
        WorkerKind::Fixer,
        stage,
        round,
    );
    w.command = command;
    w.model = spec.model.clone();
    w.timeout_s = spec.timeout_s;
    w.flow.approvals = spec.approvals.and_then(|a| a.policy).unwrap_or_default();
    w.max_attempts = 1;
    w.task = task;
    Some(w)
}

/// The council's finding for conflicts the pass aborted and left out (the other branches
/// are merged): `merge conflict in a.rs between one and two (…); two left out`.
fn left_out_finding(state: &RunState, left_out: &[MergeConflict]) -> String {
    let mut parts = Vec::new();
    for c in left_out {
        let mut finding = conflict_text(c);
        if state.worker(&format!("merge-fixer-{}", c.theirs)).is_some() {
            finding.push_str(" (the merge-fixer left it unresolved)");
        } else {
            finding.push_str(" (no agent to fix it: add a [fixer] table)");
        }
        parts.push(format!("{finding}; {} left out", c.theirs));
    }
    parts.join("; ")
}

fn conflict_text(c: &MergeConflict) -> String {
    format!(
        "merge conflict in {} between {} and {}",
        c.files.join(", "),
        c.ours,
        c.theirs
    )
}

/// The integration verdict of the current round's council: a fail naming each conflict
/// the pass left out (that worker's work is not in the tree the checks and critics
/// judged), `None` when every completed branch is in.
#[must_use]
pub fn left_out_verdict(state: &RunState) -> Option<CriticVerdict> {
    let left_out = &state.workspace.as_ref()?.integration.as_ref()?.left_out;
    (!left_out.is_empty()).then(|| CriticVerdict {
        critic: INTEGRATION_CRITIC.into(),
        verdict: Verdict::Fail,
        confidence: 1.0,
        findings: vec![left_out_finding(state, left_out)],
    })
}

/// The council's verdicts with the integration verdict first when the pass left a
/// conflict out ([`left_out_verdict`]); true when it did.
pub(super) fn with_left_out(
    state: &RunState,
    mut verdicts: Vec<CriticVerdict>,
) -> (Vec<CriticVerdict>, bool) {
    let Some(v) = left_out_verdict(state) else {
        return (verdicts, false);
    };
    verdicts.insert(0, v);
    (verdicts, true)
}

/// A council blocked with a conflict left out gets no fix round: a fixer in the
/// integration worktree cannot bring a left-out branch in (the next pass leaves it out
/// again), a retry of the worker can.
pub(super) fn no_fix_round(fx: &mut Effects) {
    fx.event(
        EventKind::FixSkipped,
        None,
        "engine",
        "the council blocked on a merge conflict left out of integration: no fix round can merge it; resolve it and retry the worker",
    );
}

/// While the round is blocked by its integration (git failed, or a conflict no merge-fixer
/// can take) and before its report: the round's checks and critics that have not started
/// are skipped with the finding as their reason, and once no attempt of the run is live
/// (a judge stopped to judge again ends first) the report is asked for, once. Every judge
/// that started so ends with its own status before the run does.
pub(super) fn report_when_blocked(state: &mut RunState, mem: &mut RunMemory, fx: &mut Effects) {
    let round = state.fix_round;
    let finding = match state.council.verdicts.first() {
        Some(v) if state.council.round == Some(round) && v.critic == INTEGRATION_CRITIC => {
            v.findings.join("; ")
        }
        _ => return,
    };
    for w in state.workers.iter_mut() {
        let judge = matches!(w.kind, WorkerKind::Check | WorkerKind::Critic);
        if judge && w.round == round && w.status == WorkerStatus::Pending {
            w.status = WorkerStatus::Skipped;
            w.reason = Some(format!("integration blocked: {finding}"));
            fx.event(
                EventKind::WorkerSkipped,
                Some((&w.id, w.attempt)),
                "engine",
                format!("integration blocked: {finding}"),
            );
        }
    }
    if super::live_count(state) == 0 && !mem.report_requested {
        mem.report_requested = true;
        fx.push(Effect::WriteReport);
    }
}

/// Apply the integration pass's outcome. Returns true when the stage may go on to verify.
pub(super) fn on_outcome(
    state: &mut RunState,
    mem: &mut RunMemory,
    outcome: IntegrationOutcome,
    fx: &mut Effects,
) -> bool {
    mem.integrate_requested = false;
    let finding = match outcome {
        IntegrationOutcome::Clean => {
            let (merged, left_out) = state
                .workspace
                .as_ref()
                .and_then(|w| w.integration.as_ref())
                .map(|i| (i.merged.join(", "), i.left_out.clone()))
                .unwrap_or_default();
            if let Some(ws) = state.workspace.as_mut() {
                ws.integrated_round = Some(state.fix_round);
            }
            fx.event(
                EventKind::Integrated,
                None,
                "engine",
                if merged.is_empty() {
                    "no branch to merge".to_string()
                } else {
                    format!("merged {merged}")
                },
            );
            // A conflict left out keeps one worker's work away, not the others': the
            // checks and critics judge what was merged, and the council's integration
            // verdict names what is missing (`left_out_verdict`). One whose merge-fixer ran
            // was said when it stopped; one nobody could fix is said here.
            for c in &left_out {
                if state.worker(&format!("merge-fixer-{}", c.theirs)).is_none() {
                    fx.event(EventKind::MergeConflict, None, "engine", conflict_text(c));
                }
            }
            return true;
        }
        IntegrationOutcome::Failed(msg) => {
            fx.event(EventKind::IntegrationFailed, None, "engine", msg.clone());
            format!("integration failed: {msg}")
        }
        IntegrationOutcome::Conflict { conflict, task } => {
            let finding = conflict_text(&conflict);
            fx.event(EventKind::MergeConflict, None, "engine", finding.clone());
            let id = format!("merge-fixer-{}", conflict.theirs);
            let tried = state.worker(&id).is_some();
            match new_fixer(state, id, task, state.stage, state.fix_round) {
                Some(w) if !tried => {
                    state.workers.push(w);
                    return false;
                }
                Some(_) => format!("{finding} (the merge-fixer left it unresolved)"),
                None => finding,
            }
        }
    };
    // Blocked for good: do not ask for the pass again; the report follows once the
    // round's judges are settled (`report_when_blocked`, from `stages::advance`).
    mem.integrate_requested = true;
    let council = Council {
        status: CouncilStatus::Blocked,
        verdicts: vec![CriticVerdict {
            critic: INTEGRATION_CRITIC.into(),
            verdict: Verdict::Fail,
            confidence: 1.0,
            findings: vec![finding.clone()],
        }],
        round: Some(state.fix_round),
    };
    fx.event(EventKind::Council, None, "engine", council.status.as_str());
    state.council_history.push(council.clone());
    state.council = council;
    false
}
