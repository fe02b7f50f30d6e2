//! The roster's order: as the team is, or by attention (`o`): waiting workers first, then
//! failed ones, running, pending, completed, and the rest (cancelled, skipped), each group
//! in team order. The selection stays on its worker whatever the order.

use super::state::UiState;
use crate::domain::{RunState, WorkerStatus};

/// Rank of a status in the attention order (lower comes first).
pub fn rank(status: WorkerStatus) -> u8 {
    match status {
        WorkerStatus::Waiting => 0,
        WorkerStatus::Failed | WorkerStatus::Timeout | WorkerStatus::Crashed => 1,
        WorkerStatus::Running | WorkerStatus::Starting => 2,
        WorkerStatus::Pending => 3,
        WorkerStatus::Completed => 4,
        WorkerStatus::Cancelled | WorkerStatus::Skipped | WorkerStatus::NotRun => 5,
    }
}

/// Indices into `run.workers` in the order the roster shows them.
pub fn order(ui: &UiState, run: &RunState) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..run.workers.len()).collect();
    if ui.attention {
        // A stable sort keeps team order within each group.
        idx.sort_by_key(|&i| rank(run.workers[i].status));
    }
    idx
}

/// `o`: switch between the team's order and the attention order.
pub fn toggle(ui: &mut UiState) {
    ui.attention = !ui.attention;
    ui.notice = Some(if ui.attention {
        "workers ordered by attention: waiting, failed, running, done (o: team order)".into()
    } else {
        "workers in team order (o: by attention)".into()
    });
}
