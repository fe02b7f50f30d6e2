//! A run's folder exists from the moment its input is checked.
//!
//! Routing a team probes the agent CLIs it may use (their auth commands take seconds, more
//! on a loaded machine), and worktrees and the first state follow. `run` therefore checks
//! the input first (bad input is one line and creates nothing), then makes the run's folder
//! with `planning.json` in it and prints the run id, and only then routes. Once the first
//! `state.json` is written `planning.json` goes. A planning step that fails removes the
//! folder again; a `run` killed meanwhile leaves the folder, and `status`, `attach` and
//! `clean` explain it from `planning.json` (see [`crate::store::planning`]).

use std::path::{Path, PathBuf};

use crate::error::{IoContext, Result};
use crate::store::planning::{PlanningRecord, PLANNING_FILE};
use crate::store::RunStore;

/// A run folder made before the run is planned; removed on drop unless [`Planning::done`].
#[derive(Debug)]
pub struct Planning {
    run_id: String,
    dir: PathBuf,
    done: bool,
}

impl Planning {
    /// Make the folder of a new run in `project` with `planning.json`, and say on stderr
    /// which run this is and where.
    ///
    /// # Errors
    /// The folder or the file cannot be written ([`crate::error::Error::Io`] with the path).
    pub fn begin(project: &Path) -> Result<Self> {
        let run_id = super::plan::new_run_id();
        let store = RunStore::create(project, &run_id)?;
        let planning = Planning {
            run_id: run_id.clone(),
            dir: store.dir().to_path_buf(),
            done: false,
        };
        crate::errln!(
            "crewmux: run {run_id} in {}: planning (checking the agent CLIs)",
            planning.dir.display()
        );
        // After the line: a run folder with planning.json has said its id.
        crate::store::write_json_atomic(
            &planning.dir.join(PLANNING_FILE),
            &PlanningRecord {
                run_id: run_id.clone(),
                pid: std::process::id(),
                started_at: chrono::Utc::now(),
            },
        )?;
        Ok(planning)
    }

    /// The run's id.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The run's store (its folder exists).
    pub fn store(&self) -> RunStore {
        RunStore::at(self.dir.clone())
    }

    /// The first `state.json` is written: `planning.json` goes and the folder stays.
    ///
    /// # Errors
    /// `planning.json` cannot be removed.
    pub fn done(mut self) -> Result<()> {
        self.done = true;
        let file = self.dir.join(PLANNING_FILE);
        std::fs::remove_file(&file).at(&file)
    }
}

impl Drop for Planning {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        // Planning failed (its error is what the person reads): nothing of the run stays.
        if let Err(e) = std::fs::remove_dir_all(&self.dir) {
            tracing::warn!("could not remove {}: {e}", self.dir.display());
        }
    }
}

/// After a run was created, its driving could not begin (`error`: the dashboard could not
/// take the terminal, the driver thread did not start). A run of which nothing started yet
/// (stage `team-plan`, no attempt dispatched, `running` or `detached`) is left `failed`
/// with the reason `could not start: <error>`, and a `run-failed` event says so, instead
/// of reading `running` with nobody driving it. A run that got further is left as it is:
/// `resume` and `clean` know what to do with its workers.
pub fn not_started(store: &RunStore, error: &crate::error::Error) {
    use crate::domain::{RunStatus, Stage};
    let Ok(mut state) = store.load_state() else {
        return;
    };
    let untouched = state.stage == Stage::TeamPlan
        && state.dispatches.is_empty()
        && matches!(state.status, RunStatus::Running | RunStatus::Detached);
    if !untouched {
        return;
    }
    let reason = format!("could not start: {error}");
    state.status = RunStatus::Failed;
    state.reason = Some(reason.clone());
    state.updated_at = chrono::Utc::now();
    let event = crate::domain::RunEvent {
        ts: state.updated_at,
        kind: crate::domain::EventKind::RunFailed,
        worker: None,
        attempt: None,
        source: "run".into(),
        message: reason,
    };
    if let Err(e) = store
        .save_state(&state)
        .and_then(|()| store.append_event(&event))
    {
        tracing::warn!("run {}: could not record that it failed: {e}", state.run_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::planning::interrupted;

    #[test]
    fn a_run_that_could_not_start_is_failed_with_the_reason_and_a_started_one_is_left() {
        let project = tempfile::tempdir().unwrap();
        let store = RunStore::create(project.path(), "r1").unwrap();
        let mut state = crate::engine::tests::run(1, 1);
        state.run_dir = store.dir().to_path_buf();
        store.save_state(&state).unwrap();
        let error = crate::error::Error::Other("the terminal cannot be set up".into());
        not_started(&store, &error);
        let after = store.load_state().unwrap();
        assert_eq!(after.status, crate::domain::RunStatus::Failed);
        assert_eq!(
            after.reason.as_deref(),
            Some("could not start: the terminal cannot be set up")
        );

        // Past the plan: its workers may run, and resume or clean see to them.
        state.stage = crate::domain::Stage::TeamExec;
        store.save_state(&state).unwrap();
        not_started(&store, &error);
        assert_eq!(
            store.load_state().unwrap().status,
            crate::domain::RunStatus::Running
        );
    }

    #[test]
    fn a_failed_planning_leaves_nothing_and_a_finished_one_only_its_folder() {
        let project = tempfile::tempdir().unwrap();
        let p = Planning::begin(project.path()).unwrap();
        let dir = p.store().dir().to_path_buf();
        assert!(dir.join(PLANNING_FILE).is_file());
        drop(p);
        assert!(!dir.exists(), "a planning that failed leaves no folder");

        let p = Planning::begin(project.path()).unwrap();
        let dir = p.store().dir().to_path_buf();
        p.done().unwrap();
        assert!(dir.is_dir() && !dir.join(PLANNING_FILE).exists());
        assert_eq!(interrupted(&dir), None);
    }

    #[test]
    fn a_run_being_planned_is_explained_and_not_abandoned() {
        let project = tempfile::tempdir().unwrap();
        let p = Planning::begin(project.path()).unwrap();
        let dir = p.store().dir().to_path_buf();
        let id = p.run_id().to_string();
        // A `run` killed while planning: nothing removes the folder.
        std::mem::forget(p);
        let line = interrupted(&dir).unwrap();
        assert!(
            line.contains(&format!(
                "run {id} is being planned by crewmux pid {}",
                std::process::id()
            )),
            "this process is planning it: {line}"
        );
        assert!(!crate::store::planning::abandoned(&dir));
        let err = RunStore::at(dir.clone()).load_state().unwrap_err();
        assert_eq!(
            err.to_string(),
            line,
            "status and attach read the same line"
        );
    }
}
