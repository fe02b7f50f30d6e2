//! The driver's side of the council: gather the workers' results from disk, run the
//! deterministic critics and the check verdicts (`crate::council`), and write `report.md`.

use std::path::{Path, PathBuf};

use crate::council::critics::{run_critics, CouncilInput, WorkerResult};
use crate::council::report::{merge_report, Clarification, ReportInput, ReportWorker};
use crate::council::verdict::{check_verdict, parse_critic_output};
use crate::domain::{CriticVerdict, RunState, WorkerKind};
use crate::error::Result;
use crate::store::RunStore;

/// The start of a result file, at most [`crate::launch::tail::DOCUMENT_BYTES`].
fn read(path: Option<&Path>) -> Option<String> {
    path.and_then(|p| crate::launch::tail::read_document(p).ok())
}

/// The most of the end of a check's or critic's output read for its verdict, bytes.
pub const VERDICT_LOG_BYTES: usize = 1 << 20;

/// The council of the current round: the three critics over the team's workers and fixers,
/// then one verdict per check of this round (exit 0 → pass, else fail with the log tail).
pub fn run_council(state: &RunState, store: &RunStore) -> Vec<CriticVerdict> {
    let workers: Vec<WorkerResult> = state
        .workers
        .iter()
        .filter(|w| matches!(w.kind, WorkerKind::Worker | WorkerKind::Fixer))
        // A race's candidates that are not its pick are not the team's result.
        .filter(|w| !state.left_out_by_race(&w.id))
        .map(|w| WorkerResult {
            id: w.id.clone(),
            role: w.role.clone(),
            status: w.status,
            exit_code: w.exit_code,
            result_text: read(w.result.as_deref()),
            required_artifacts_missing: w
                .artifacts
                .iter()
                .filter(|a| !store.attempt_dir(&w.id, w.attempt).join(a).exists())
                .cloned()
                .collect(),
            command: w.provider == "command",
            left_out: w.reason.as_deref() == Some(crate::domain::NOT_IN_ONLY),
        })
        .collect();
    let root = crate::workspace::judge::council_root(state);
    let exists = move |p: &Path| root.join(p).exists();
    let mut verdicts = run_critics(&CouncilInput {
        problem: &state.problem,
        workers: &workers,
        path_exists: &exists,
    });
    crate::workspace::judge::amend_verdicts(state, &mut verdicts);
    for w in state.workers.iter().filter(|w| {
        matches!(w.kind, WorkerKind::Check | WorkerKind::Critic) && w.round == state.fix_round
    }) {
        let log = crate::launch::tail::tail_of_file(
            &store.attempt_dir(&w.id, w.attempt).join("output.log"),
            VERDICT_LOG_BYTES,
            64 << 10,
        )
        .map(|t| t.text)
        .unwrap_or_default();
        verdicts.push(match w.kind {
            WorkerKind::Check => check_verdict(&w.id, w.exit_code, &log),
            _ => parse_critic_output(&w.id, &log),
        });
    }
    verdicts
}

/// Write `report.md` (the deterministic merge); returns its path and size in bytes.
///
/// # Errors
/// [`Error::Io`](crate::error::Error::Io) naming `report.md` when it cannot be written, or the
/// run's results cannot be read.
pub fn write_report(state: &RunState, store: &RunStore) -> Result<(PathBuf, u64)> {
    let c = &state.clarification;
    let mut clarifications: Vec<Clarification> = c
        .answers
        .iter()
        .enumerate()
        .map(|(i, a)| Clarification {
            question: c.questions.get(i).cloned().unwrap_or_default(),
            answer: Some(a.clone()),
        })
        .collect();
    for a in &c.worker_answers {
        clarifications.push(Clarification {
            question: format!("{} asked: {}", a.worker, a.question),
            answer: Some(a.answer.clone()),
        });
    }
    if c.pending {
        clarifications.push(Clarification {
            question: c.prompt.clone().unwrap_or_default(),
            answer: None,
        });
    }
    let input = ReportInput {
        run_id: state.run_id.clone(),
        problem: state.problem.clone(),
        team: state.team.clone(),
        clarifications,
        workers: state
            .workers
            .iter()
            .map(|w| ReportWorker {
                id: w.id.clone(),
                role: w.role.clone(),
                provider: w.provider.clone(),
                kind: w.kind,
                round: w.round,
                status: w.status,
                exit_code: w.exit_code,
                attempts: w.attempt,
                reason: w.reason.clone(),
                result_text: read(w.result.as_deref()),
                placement: w.placement(),
            })
            .collect(),
        verify_passes: if state.council_history.is_empty() {
            vec![state.council.clone()]
        } else {
            state.council_history.clone()
        },
        providers_out: state
            .routing
            .failed
            .iter()
            .map(|(p, why)| (p.clone(), why.clone()))
            .collect(),
    };
    let mut md = merge_report(&input)
        + &crate::council::report::race_section(&state.races)
        + &crate::workspace::report::section(state);
    md.push_str(&crate::providers::output::usage_markdown(state));
    let path = store.dir().join("report.md");
    crate::store::write_atomic(&path, md.as_bytes())?;
    Ok((path, md.len() as u64))
}
