//! crewmux put on a host that did not answer when the run was planned. Such a run records
//! the host as [`HelperState::Awaited`] (the path this build's copy has there), and a
//! worker whose provider runs crewmux itself (`sim`, `{self_exe}`) waits for the host as
//! every worker does, its wrapper naming that path. When a batch is about to start there
//! (on the host's own thread), crewmux is put there first ([`super::helper::ensure`]) and
//! what came of it is kept in the run's `helpers.json`, so later batches find it; an
//! attempt whose wrapper names a copy that could not be put there fails with one line
//! naming the host and the fix. A host that does not answer again is left `Awaited`.

use std::path::{Path, PathBuf};

use super::backend::Place;
use super::helper::{HelperState, HELPERS_FILE};
use crate::backend::SpawnSpec;

/// The run folder of an attempt whose `output.log` is `log`
/// (`<run>/workers/<worker>/attempt-<n>/output.log`).
fn run_dir_of(log: &Path) -> Option<&Path> {
    let workers = log.parent()?.parent()?.parent()?;
    (workers.file_name()? == "workers").then(|| workers.parent())?
}

/// True when `spec`'s wrapper (its local `launch.sh`) names `path`.
fn names(spec: &SpawnSpec, path: &Path) -> bool {
    std::fs::read_to_string(&spec.launch)
        .is_ok_and(|text| text.contains(&path.display().to_string()))
}

/// Before `specs` start on the host of `place`: crewmux put there when the run awaited
/// it and a spec's wrapper names it (see the module docs). Returns the specs to start,
/// and those that cannot with why.
pub(super) fn before_launch(
    place: &Place,
    specs: Vec<SpawnSpec>,
) -> (Vec<SpawnSpec>, Vec<(SpawnSpec, String)>) {
    let host = &place.spec.name;
    let Some(run_dir) = specs
        .first()
        .and_then(|s| run_dir_of(&s.log))
        .map(Path::to_path_buf)
    else {
        return (specs, vec![]);
    };
    let mut states = match super::helper::run_states(&run_dir) {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!("host {host}: {e}");
            return (specs, vec![]);
        }
    };
    let Some(HelperState::Awaited { path: awaited, .. }) = states.get(host).cloned() else {
        return (specs, vec![]);
    };
    let (need, rest): (Vec<SpawnSpec>, Vec<SpawnSpec>) =
        specs.into_iter().partition(|s| names(s, &awaited));
    if need.is_empty() {
        return (rest, vec![]);
    }
    let state = super::helper::ensure(&place.link, &place.spec);
    tracing::info!("host {host}: crewmux awaited since the run was planned: {state:?}");
    if !matches!(state, HelperState::Awaited { .. }) {
        states.insert(host.clone(), state.clone());
        keep(&run_dir, &states);
    }
    let why = match state {
        HelperState::Ready { path, .. } if path == awaited => {
            let mut go = rest;
            go.extend(need);
            return (go, vec![]);
        }
        HelperState::Ready { path, .. } => format!(
            "crewmux is at {} there, not at {} as the wrapper names it",
            path.display(),
            awaited.display()
        ),
        HelperState::CannotRun { why } => format!("host {host} cannot run this crewmux ({why})"),
        HelperState::Unknown { why } => format!("crewmux could not be put on host {host} ({why})"),
        HelperState::Awaited { why, .. } => format!("host {host} does not answer ({why})"),
    };
    let failed = need
        .into_iter()
        .map(|s| {
            let line = format!(
                "{why}: run `{}` on `local` (host = \"local\"); `crewmux doctor --hosts` checks the host",
                s.worker
            );
            (s, line)
        })
        .collect();
    (rest, failed)
}

/// Save `states` as the run's `helpers.json` (a failure is logged: a later batch then
/// asks the host again).
fn keep(run_dir: &Path, states: &std::collections::BTreeMap<String, HelperState>) {
    if let Err(e) = super::helper::save(run_dir, states) {
        let path: PathBuf = run_dir.join(HELPERS_FILE);
        tracing::warn!("{}: {e}", path.display());
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    #[test]
    fn an_attempts_run_folder_is_found_from_its_log() {
        assert_eq!(
            super::run_dir_of(Path::new(
                "/p/.crewmux/runs/r1/workers/w/attempt-2/output.log"
            )),
            Some(Path::new("/p/.crewmux/runs/r1"))
        );
        assert_eq!(super::run_dir_of(Path::new("/tmp/x/output.log")), None);
    }
}
