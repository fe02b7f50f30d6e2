//! Stage transitions: the gate at `team-plan`, launching within `parallel`, verify with the
//! council, fix rounds, report and finalize (docs/design.md "The run").

use std::path::PathBuf;

use super::{all_terminal, live_count, Effect, Effects, RunMemory};
use crate::domain::EventKind;
use crate::domain::{
    ClarificationGate, Council, CouncilStatus, CriticVerdict, RunState, RunStatus, Stage, Verdict,
    WorkerKind, WorkerState, WorkerStatus,
};

/// Start or continue a run from its saved stage.
pub(super) fn start(state: &mut RunState, mem: &mut RunMemory, fx: &mut Effects) {
    if state.status == RunStatus::Detached {
        state.status = RunStatus::Running;
        fx.event(
            EventKind::RunResumed,
            None,
            "user",
            format!("at {}", state.stage),
        );
    }
    if state.stage == Stage::TeamPlan {
        if state.clarification.pending {
            halt(state, fx);
            return;
        }
        if state.clarify && state.clarification.gate.is_none() {
            fx.push(Effect::EvaluateGate);
            return;
        }
        enter(state, Stage::TeamExec, fx);
    }
    advance(state, mem, fx);
}

fn halt(state: &mut RunState, fx: &mut Effects) {
    state.status = RunStatus::Halted;
    let prompt = state.clarification.prompt.clone().unwrap_or_default();
    fx.event(
        EventKind::RunHalted,
        None,
        "engine",
        format!("clarification needed: {prompt}"),
    );
}

/// The gate decided: halt with the question, or go on to `team-exec`.
pub(super) fn on_gate(
    state: &mut RunState,
    mem: &mut RunMemory,
    gate: ClarificationGate,
    fx: &mut Effects,
) {
    if state.stage != Stage::TeamPlan {
        return;
    }
    let requires = gate.requires_clarification;
    state.clarification.prompt = gate.prompt.clone();
    state.clarification.gate = Some(gate);
    if requires {
        state.clarification.pending = true;
        halt(state, fx);
        return;
    }
    state.clarification.pending = false;
    state.status = RunStatus::Running;
    fx.event(
        EventKind::GatePassed,
        None,
        "engine",
        "the problem names enough to act on",
    );
    enter(state, Stage::TeamExec, fx);
    advance(state, mem, fx);
}

/// A run-level answer joins the context and the gate runs again.
pub(super) fn on_run_answer(state: &mut RunState, mem: &RunMemory, text: String, fx: &mut Effects) {
    if !state.clarification.pending {
        return;
    }
    let question = state.clarification.prompt.clone().unwrap_or_default();
    state.clarification.questions.push(question);
    state.clarification.answers.push(text.clone());
    state.clarification.pending = false;
    state.clarification.gate = None;
    fx.event(EventKind::ClarificationAnswered, None, "user", text);
    if mem.offline {
        // The gate runs again when the run is continued (`start` finds no gate).
        state.status = RunStatus::Detached;
        return;
    }
    state.status = RunStatus::Running;
    fx.push(Effect::EvaluateGate);
}

fn enter(state: &mut RunState, stage: Stage, fx: &mut Effects) {
    if state.stage == stage {
        return;
    }
    let from = state.stage;
    state.stage = stage;
    let round = if state.fix_round > 0 {
        format!(" (fix round {})", state.fix_round)
    } else {
        String::new()
    };
    fx.event(
        EventKind::StageChanged,
        None,
        "engine",
        format!("{from} → {stage}{round}"),
    );
}

/// Launch what may be launched and move to the next stage when the current one is done.
pub(super) fn advance(state: &mut RunState, mem: &mut RunMemory, fx: &mut Effects) {
    // A cancelled run ends when its last worker does, driven or not.
    if mem.cancelled {
        if all_terminal(state) && !state.status.is_final() {
            state.status = RunStatus::Cancelled;
            state.reason = Some("cancelled by the user".into());
            fx.event(
                EventKind::RunCancelled,
                None,
                "user",
                "every worker stopped",
            );
            fx.push(Effect::Finished);
        }
        return;
    }
    if state.status != RunStatus::Running || mem.offline {
        return;
    }
    let spent = super::budget::exhausted(state);
    if spent {
        // A retry scheduled since, or a worker added: it will not start.
        super::budget::cancel_pending(state, fx);
    }
    loop {
        match state.stage {
            Stage::TeamPlan | Stage::Done => return,
            Stage::TeamExec | Stage::TeamFix | Stage::TeamVerify => {
                launch_pending(state, mem, fx);
                if !stage_done(state) || !super::race::all_ranked(state, mem, fx) {
                    return;
                }
                match state.stage {
                    Stage::TeamExec | Stage::TeamFix => {
                        if super::integrate::pending(state, mem, fx) {
                            super::integrate::report_when_blocked(state, mem, fx);
                            return;
                        }
                        if spent {
                            // What completed is integrated; no council sits on a spent
                            // budget (its critics would spend more): the report is next.
                            request_report(mem, fx);
                            return;
                        }
                        enter(state, Stage::TeamVerify, fx);
                        add_checks(state);
                        mem.council_requested = false;
                        mem.report_requested = false;
                    }
                    _ if spent => {
                        request_report(mem, fx);
                        return;
                    }
                    _ => {
                        if state.council_round_pending() {
                            if !mem.council_requested {
                                mem.council_requested = true;
                                fx.push(Effect::RunCouncil);
                            }
                        } else if !mem.report_requested {
                            // The council of this round is recorded and sent no fixer
                            // (that would have left verify): the report is next. Asked
                            // here, not only when the verdicts arrive, so a run stopped
                            // between the two still ends when it is continued.
                            mem.report_requested = true;
                            fx.push(Effect::WriteReport);
                        }
                        return;
                    }
                }
            }
        }
    }
}

/// Ask the driver for `report.md`, once.
fn request_report(mem: &mut RunMemory, fx: &mut Effects) {
    if !mem.report_requested {
        mem.report_requested = true;
        fx.push(Effect::WriteReport);
    }
}

impl RunState {
    /// True while the council of the current round has not been recorded.
    fn council_round_pending(&self) -> bool {
        self.council.round != Some(self.fix_round)
    }
}

/// The stage's workers for the current round are all terminal.
fn stage_done(state: &RunState) -> bool {
    state
        .workers
        .iter()
        .filter(|w| w.stage == state.stage && w.round == state.fix_round)
        .all(|w| w.status.is_terminal())
}

/// Start pending workers of the current stage and round whose upstreams ended (see
/// `graph`), in `order`, within `parallel`.
/// A ready worker whose upstreams' branches are not merged into its worktree yet has them
/// merged first (see `upstream_merge`).
fn launch_pending(state: &mut RunState, mem: &mut RunMemory, fx: &mut Effects) {
    if super::budget::exhausted(state) || mem.spend_pending {
        return;
    }
    let mut slots = state.parallel.max(1).saturating_sub(live_count(state));
    let ready = super::graph::launchable(state, fx);
    for i in ready {
        let id = state.workers[i].id.clone();
        // The driver records the merges as it makes them: until their outcome is in, the
        // worker waits even when nothing is left to merge.
        if mem.merging.contains(&id) {
            continue;
        }
        if super::upstream_merge::needed(state, &state.workers[i]) {
            super::upstream_merge::request(state, mem, &id, fx);
            continue;
        }
        if slots == 0 {
            break;
        }
        if super::hosts::host_full(state, &state.workers[i]) {
            continue;
        }
        slots -= 1;
        super::breaker::before_launch(state, &id, fx);
        let w = &mut state.workers[i];
        w.attempt += 1;
        w.status = WorkerStatus::Starting;
        w.exit_code = None;
        w.started_at = None;
        w.ended_at = None;
        w.pane_id = None;
        w.pid = None;
        w.flow.retry_at = None;
        w.flow.rate_limited = None;
        w.flow.parked = None;
        fx.push(Effect::Launch {
            worker: w.id.clone(),
            attempt: w.attempt,
        });
    }
}

/// Add the verify stage's workers for the current round: one per team-file check (a
/// command in its own pane) and one per critic worker (an agent reviewing the results).
fn add_checks(state: &mut RunState) {
    let round = state.fix_round;
    let suffix = if round == 0 {
        String::new()
    } else {
        format!("-r{round}")
    };
    let mut new: Vec<WorkerState> = state
        .checks
        .iter()
        .map(|c| {
            let mut w = blank_worker(
                format!("check-{}{suffix}", c.id),
                "check".into(),
                "command".into(),
                WorkerKind::Check,
                Stage::TeamVerify,
                round,
            );
            w.command = Some(c.command.clone());
            w.cwd = c.cwd.clone();
            w.timeout_s = c.timeout_s;
            w.max_attempts = 1;
            w.task = format!("check `{}`", c.command.join(" "));
            w
        })
        .collect();
    let default_provider = first_provider(state);
    for c in &state.critics {
        let mut w = blank_worker(
            format!("critic-{}{suffix}", c.id),
            c.role.clone().unwrap_or_else(|| "reviewer".into()),
            c.provider
                .clone()
                .unwrap_or_else(|| default_provider.clone()),
            WorkerKind::Critic,
            Stage::TeamVerify,
            round,
        );
        w.command = c.command.clone();
        w.model = c.model.clone();
        w.timeout_s = c.timeout_s;
        w.idle_timeout_s = c.idle_timeout_s;
        w.flow.stall_after_s = c.stall_after_s;
        w.max_attempts = 1;
        w.flow.after = super::graph::critic_after(state, &c.after, &suffix);
        w.flow.on_upstream_failure = c.on_upstream_failure.unwrap_or_default();
        w.flow.approvals = c.approvals.and_then(|a| a.policy).unwrap_or_default();
        w.task = format!(
            "Review the team's results for: {}\n\n{}\n\nJudge whether the results solve the problem, are correct and cite evidence. End your answer with a fenced json block: {{\"verdict\": \"pass|warn|fail\", \"confidence\": 0.0-1.0, \"findings\": [\"...\"]}}",
            state.problem,
            c.prompt.clone().unwrap_or_default()
        );
        new.push(w);
    }
    new.retain(|w| state.worker(&w.id).is_none());
    state.workers.extend(new);
}

fn first_provider(state: &RunState) -> String {
    state
        .workers
        .iter()
        .find(|w| w.kind == WorkerKind::Worker)
        .map(|w| w.provider.clone())
        .unwrap_or_else(|| "sim".into())
}

/// A new pending worker.
pub fn blank_worker(
    id: String,
    role: String,
    provider: String,
    kind: WorkerKind,
    stage: Stage,
    round: u32,
) -> WorkerState {
    WorkerState {
        id,
        role,
        provider,
        model: None,
        kind,
        stage,
        round,
        status: WorkerStatus::Pending,
        reason: None,
        attempt: 0,
        max_attempts: 2,
        exit_code: None,
        started_at: None,
        ended_at: None,
        pane_id: None,
        pid: None,
        result: None,
        question: None,
        pending: None,
        progress: None,
        signal: None,
        timeout_s: None,
        idle_timeout_s: None,
        artifacts: vec![],
        task: String::new(),
        command: None,
        cwd: None,
        order: 100,
        host: None,
        moved_from: None,
        flow: Default::default(),
    }
}

/// One `critic-verdict` event per verdict: `critic: verdict (confidence) — first finding`.
fn say_verdicts(council: &Council, fx: &mut Effects) {
    for v in &council.verdicts {
        fx.event(
            EventKind::CriticVerdict,
            None,
            "engine",
            format!(
                "{}: {} ({:.2}){}",
                v.critic,
                v.verdict.as_str(),
                v.confidence,
                v.findings
                    .first()
                    .map(|f| format!(" — {f}"))
                    .unwrap_or_default()
            ),
        );
    }
}

/// The council judged: fix when blocked and rounds remain, else write the report.
pub(super) fn on_council(
    state: &mut RunState,
    mem: &mut RunMemory,
    verdicts: Vec<CriticVerdict>,
    fx: &mut Effects,
) {
    if state.stage != Stage::TeamVerify || !state.council_round_pending() {
        return;
    }
    let (verdicts, left_out) = super::integrate::with_left_out(state, verdicts);
    let mut council = Council::from_verdicts(verdicts);
    council.round = Some(state.fix_round);
    let status = council.status;
    say_verdicts(&council, fx);
    fx.event(EventKind::Council, None, "engine", status.as_str());
    let failing: Vec<String> = council
        .verdicts
        .iter()
        .filter(|v| v.verdict == Verdict::Fail)
        .flat_map(|v| {
            v.findings
                .iter()
                .map(move |f| format!("[{}] {f}", v.critic))
        })
        .collect();
    state.council_history.push(council.clone());
    state.council = council;
    let fix = status == CouncilStatus::Blocked && state.fix_round < state.max_fix_rounds;
    if fix && left_out {
        super::integrate::no_fix_round(fx);
    } else if fix {
        let spec = state.fixer.clone().unwrap_or_default();
        let first = state
            .workers
            .iter()
            .find(|w| w.kind == WorkerKind::Worker)
            .cloned();
        let (provider, command) = match (&spec.provider, &first) {
            (Some(p), _) => (p.clone(), spec.command.clone()),
            // A `command` worker is not an agent: its argv cannot fix anything.
            (None, Some(f)) if f.provider != "command" => (f.provider.clone(), None),
            _ => {
                fx.event(
                    EventKind::FixSkipped,
                    None,
                    "engine",
                    "the council blocked but no agent can fix: add a [fixer] table to the team file",
                );
                advance(state, mem, fx);
                return;
            }
        };
        // A provider that failed with a declared exit code (e.g. auth) is not asked again.
        let moved = match super::exits::fixer_route(state, &provider) {
            super::exits::FixerRoute::Keep => None,
            super::exits::FixerRoute::Move(f) => Some(f),
            super::exits::FixerRoute::Nowhere(why) => {
                let msg = format!("the council blocked but no usable provider can fix: {why}");
                fx.event(EventKind::FixSkipped, None, "engine", msg);
                fx.push(Effect::WriteReport);
                return;
            }
        };
        let provider = moved.as_ref().map_or(provider, |f| f.provider.clone());
        state.fix_round += 1;
        let mut fixer = blank_worker(
            format!("fixer-r{}", state.fix_round),
            spec.role.clone().unwrap_or_else(|| "fixer".into()),
            provider,
            WorkerKind::Fixer,
            Stage::TeamFix,
            state.fix_round,
        );
        fixer.command = command;
        fixer.model = match moved {
            Some(f) => f.model,
            None => spec.model.clone(),
        };
        fixer.timeout_s = spec.timeout_s;
        fixer.idle_timeout_s = spec.idle_timeout_s;
        fixer.flow.stall_after_s = spec.stall_after_s;
        fixer.flow.approvals = spec.approvals.and_then(|a| a.policy).unwrap_or_default();
        fixer.task = format!(
            "Fix what the council blocked for: {}\n\nFailing findings:\n{}",
            state.problem,
            failing
                .iter()
                .map(|f| format!("- {f}"))
                .collect::<Vec<_>>()
                .join("\n")
        );
        state.workers.push(fixer);
        enter(state, Stage::TeamFix, fx);
        advance(state, mem, fx);
        return;
    }
    advance(state, mem, fx);
}

/// `report.md` exists: finalize (docs/design.md "The run").
pub(super) fn on_report(state: &mut RunState, path: PathBuf, bytes: u64, fx: &mut Effects) {
    state.report = Some(path);
    let not_terminal: Vec<&str> = state
        .workers
        .iter()
        .filter(|w| !w.status.is_terminal())
        .map(|w| w.id.as_str())
        .collect();
    let (status, reason) = if !not_terminal.is_empty() {
        (
            RunStatus::Failed,
            Some(format!("workers not finished: {}", not_terminal.join(", "))),
        )
    } else if bytes == 0 {
        (RunStatus::Failed, Some("report.md is empty".to_string()))
    } else if let Some(why) = state.budget.as_ref().and_then(|b| b.exhausted.clone()) {
        (RunStatus::Failed, Some(why))
    } else {
        (RunStatus::Done, None)
    };
    state.status = status;
    state.reason = reason.clone();
    state.stage = Stage::Done;
    fx.event(
        EventKind::run_ended(status),
        None,
        "engine",
        format!(
            "council {}{}",
            state.council.status.as_str(),
            reason.map(|r| format!("; {r}")).unwrap_or_default()
        ),
    );
    fx.push(Effect::Finished);
}
