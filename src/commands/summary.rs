//! The run summary of SPEC §3 (headless stdout, `status --json`) and the headless exit code.

use serde_json::{json, Value};

use crate::domain::{CouncilStatus, RunState, RunStatus};

/// The summary object: `run_id`, `status`, `stage`, `problem`, `run_dir`, `workers`,
/// `council`, `clarification`, `report` (SPEC §3), plus `reason`, `backend`, `fix_round`,
/// and `usage` (tokens in/out and cost in USD as the CLIs reported them, per worker and for
/// the run; `null` where nothing was reported).
pub fn summary(state: &RunState) -> Value {
    let (usage, total) = crate::providers::output::run_usage(state);
    let status = match state.status {
        RunStatus::Done => "done",
        RunStatus::Failed => "failed",
        RunStatus::Halted => "halted",
        RunStatus::Cancelled => "cancelled",
        RunStatus::Running => "running",
        RunStatus::Detached => "detached",
    };
    let rel = |p: &std::path::Path| -> String {
        p.strip_prefix(&state.project_dir)
            .map(|r| r.display().to_string())
            .unwrap_or_else(|_| p.display().to_string())
    };
    let waiting: Vec<Value> = state
        .workers
        .iter()
        .filter_map(|w| {
            w.question
                .as_ref()
                .map(|q| json!({"worker": w.id, "prompt": q}))
        })
        .collect();
    json!({
        "run_id": state.run_id,
        "status": status,
        "reason": state.reason,
        "stage": state.stage.as_str(),
        "fix_round": state.fix_round,
        "problem": state.problem,
        "team": state.team,
        "backend": state.backend.as_str(),
        "run_dir": rel(&state.run_dir),
        "workers": state.workers.iter().map(|w| json!({
            "id": w.id,
            "role": w.role,
            "provider": w.provider,
            "kind": w.kind,
            "status": w.status.as_str(),
            "reason": w.reason,
            "exit_code": w.exit_code,
            "attempts": w.attempt,
            "result": w.result.as_deref().map(rel),
            "branch": state.workspace.as_ref().and_then(|ws| ws.workers.get(&w.id)).map(|x| &x.branch),
            "diff": state.workspace.as_ref().and_then(|ws| ws.workers.get(&w.id)).and_then(|x| x.diff),
            "usage": usage.get(&w.id),
        })).collect::<Vec<_>>(),
        "usage": total,
        "workspace": state.workspace.as_ref().map(|ws| json!({
            "base": ws.base,
            "integration": ws.integration.as_ref().map(|i| json!({
                "branch": i.branch,
                "merged": i.merged,
                "conflict": i.conflict,
                "diff": i.diff,
            })),
        })),
        "council": {
            "status": state.council.status.as_str(),
            "verdicts": state.council.verdicts,
        },
        "clarification": {
            "pending": state.clarification.pending,
            "prompt": if state.clarification.pending { state.clarification.prompt.clone() } else { None },
            "answers": state.clarification.answers,
            "waiting_workers": waiting,
        },
        "report": state.report.as_deref().map(rel),
    })
}

/// SPEC §3: 0 for `done` with council `ok`/`attention`, 1 for `blocked` or `failed` (and
/// `cancelled`), 3 when halted at a clarification; a run left running or detached is 0.
pub fn exit_code(state: &RunState) -> i32 {
    match state.status {
        RunStatus::Done => match state.council.status {
            CouncilStatus::Blocked => 1,
            _ => 0,
        },
        RunStatus::Failed | RunStatus::Cancelled => 1,
        RunStatus::Halted => 3,
        RunStatus::Running | RunStatus::Detached => 0,
    }
}
