//! The run summary of docs/design.md (headless stdout, `status --json`) and the headless exit code.

use serde_json::{json, Value};

use crate::domain::{CouncilStatus, RunState, RunStatus};

/// The summary object: `run_id`, `status`, `stage`, `problem`, `run_dir`, `workers`,
/// `council`, `clarification`, `report` (docs/design.md), plus `reason`, `backend`, `fix_round`,
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
    // Every path absolute: a script may run from anywhere.
    let rel = |p: &std::path::Path| -> String {
        if p.is_absolute() {
            p.display().to_string()
        } else {
            state.project_dir.join(p).display().to_string()
        }
    };
    let outcome = outcome(state);
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
        "outcome": outcome.map(Outcome::as_str),
        "exit_code": exit_code(state),
        "reason": state.reason.clone().or_else(|| blocked_reason(state)),
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
            "host": w.host.as_deref().unwrap_or(crate::domain::LOCAL_HOST),
            "moved_from": w.moved_from,
            "placement": w.placement(),
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

/// How a finished run came out, for scripts; the exit code follows from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Done, council ok: exit 0.
    Passed,
    /// Done, council attention: exit 0.
    Attention,
    /// Done, council blocked: exit 1.
    Blocked,
    /// Failed: exit 1.
    Failed,
    /// Halted at a run-level question: exit 3.
    Halted,
    /// Cancelled by the person: exit 1.
    Cancelled,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Passed => "passed",
            Outcome::Attention => "attention",
            Outcome::Blocked => "blocked",
            Outcome::Failed => "failed",
            Outcome::Halted => "halted",
            Outcome::Cancelled => "cancelled",
        }
    }

    /// The exit code (docs/design.md) of this outcome.
    pub fn exit_code(self) -> i32 {
        match self {
            Outcome::Passed | Outcome::Attention => 0,
            Outcome::Blocked | Outcome::Failed | Outcome::Cancelled => 1,
            Outcome::Halted => 3,
        }
    }
}

/// The outcome of a run; `None` while it runs or is detached (exit 0).
pub fn outcome(state: &RunState) -> Option<Outcome> {
    Some(match state.status {
        RunStatus::Done => match state.council.status {
            CouncilStatus::Blocked => Outcome::Blocked,
            CouncilStatus::Attention => Outcome::Attention,
            _ => Outcome::Passed,
        },
        RunStatus::Failed => Outcome::Failed,
        RunStatus::Cancelled => Outcome::Cancelled,
        RunStatus::Halted => Outcome::Halted,
        RunStatus::Running | RunStatus::Detached => return None,
    })
}

/// Why a run that ended `done` is blocked: the failing critics.
fn blocked_reason(state: &RunState) -> Option<String> {
    (state.status == RunStatus::Done && state.council.status == CouncilStatus::Blocked).then(|| {
        let failing: Vec<&str> = state
            .council
            .verdicts
            .iter()
            .filter(|v| v.verdict == crate::domain::Verdict::Fail)
            .map(|v| v.critic.as_str())
            .collect();
        format!("the council blocked: {} failed", failing.join(", "))
    })
}

/// docs/design.md: 0 for `done` with council `ok`/`attention`, 1 for `blocked` or `failed` (and
/// `cancelled`), 3 when halted at a clarification; a run left running or detached is 0.
/// Follows from [`outcome`], so the summary's `outcome` and the exit code always agree.
pub fn exit_code(state: &RunState) -> i32 {
    outcome(state).map_or(0, Outcome::exit_code)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{CriticVerdict, Verdict};

    #[test]
    fn the_outcome_always_matches_the_exit_code() {
        let mut s = crate::engine::tests::run(1, 1);
        let cases = [
            (RunStatus::Done, CouncilStatus::Ok, Some("passed"), 0),
            (
                RunStatus::Done,
                CouncilStatus::Attention,
                Some("attention"),
                0,
            ),
            (RunStatus::Done, CouncilStatus::Blocked, Some("blocked"), 1),
            (RunStatus::Failed, CouncilStatus::Ok, Some("failed"), 1),
            (
                RunStatus::Cancelled,
                CouncilStatus::Pending,
                Some("cancelled"),
                1,
            ),
            (RunStatus::Halted, CouncilStatus::Pending, Some("halted"), 3),
            (RunStatus::Detached, CouncilStatus::Pending, None, 0),
        ];
        for (status, council, want, code) in cases {
            s.status = status;
            s.council.status = council;
            let v = summary(&s);
            assert_eq!(v["outcome"].as_str(), want, "{status:?} {council:?}");
            assert_eq!(exit_code(&s), code, "{status:?} {council:?}");
            assert_eq!(v["exit_code"], code);
        }
    }

    #[test]
    fn a_blocked_run_says_why_and_every_path_is_absolute() {
        let mut s = crate::engine::tests::run(1, 1);
        s.status = RunStatus::Done;
        s.council.status = CouncilStatus::Blocked;
        s.council.verdicts = vec![CriticVerdict {
            critic: "evidence".into(),
            verdict: Verdict::Fail,
            confidence: 0.9,
            findings: vec!["no file named".into()],
        }];
        s.report = Some("relative/report.md".into());
        s.workers[0].result = Some(s.run_dir.join("workers/w0/attempt-1/result.md"));
        let v = summary(&s);
        assert_eq!(v["reason"], "the council blocked: evidence failed");
        for p in [&v["run_dir"], &v["report"], &v["workers"][0]["result"]] {
            let p = p.as_str().unwrap();
            assert!(std::path::Path::new(p).is_absolute(), "{p}");
        }
        assert_eq!(v["report"], "/p/relative/report.md");
    }
}
