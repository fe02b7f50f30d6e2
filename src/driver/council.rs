//! The driver's side of the council: gather the workers' results, run the critics and the
//! check verdicts, and write `report.md`.

use std::path::PathBuf;

use crate::domain::{CriticVerdict, RunState, Verdict, WorkerKind, WorkerStatus};
use crate::error::Result;
use crate::store::RunStore;

/// A check worker's verdict: exit 0 → pass, else fail with the log tail as finding.
pub fn check_verdict(state: &RunState, store: &RunStore, worker: &str) -> Option<CriticVerdict> {
    let w = state.worker(worker)?;
    let log = std::fs::read_to_string(store.attempt_dir(&w.id, w.attempt).join("output.log"))
        .unwrap_or_default();
    let tail: Vec<String> = crate::launch::strip_ansi(&log)
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with("__CREWMUX_EXIT_"))
        .map(str::to_string)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .take(10)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    let pass = w.status == WorkerStatus::Completed && w.exit_code == Some(0);
    Some(CriticVerdict {
        critic: w.id.clone(),
        verdict: if pass { Verdict::Pass } else { Verdict::Fail },
        confidence: 1.0,
        findings: if pass {
            vec![format!("{} passed", w.task)]
        } else {
            let mut f = vec![format!(
                "{} failed ({})",
                w.task,
                w.exit_code
                    .map(|c| format!("exit {c}"))
                    .unwrap_or_else(|| w.status.to_string())
            )];
            f.extend(tail);
            f
        },
    })
}

/// The council of the current round: check verdicts of this round's checks.
pub fn run_council(state: &RunState, store: &RunStore) -> Vec<CriticVerdict> {
    state
        .workers
        .iter()
        .filter(|w| w.kind == WorkerKind::Check && w.round == state.fix_round)
        .filter_map(|w| check_verdict(state, store, &w.id))
        .collect()
}

/// Write `report.md`; returns its path and size in bytes.
pub fn write_report(state: &RunState, store: &RunStore) -> Result<(PathBuf, u64)> {
    let mut md = format!("# crewmux report\n\nProblem: {}\n\n", state.problem);
    for w in &state.workers {
        md.push_str(&format!("## {} ({}) — {}\n\n", w.id, w.role, w.status));
        if let Some(r) = &w.result {
            md.push_str(&std::fs::read_to_string(r).unwrap_or_default());
            md.push('\n');
        }
    }
    let path = store.dir().join("report.md");
    crate::store::write_atomic(&path, md.as_bytes())?;
    Ok((path, md.len() as u64))
}
