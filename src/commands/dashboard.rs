//! Driving a run with the dashboard on this terminal.

use crate::domain::RunState;
use crate::driver::{Driver, DriverOptions};
use crate::error::Result;
use crate::store::RunStore;
use crate::tui::app::{Source, Start};

/// Drive `state` with the dashboard; on quit, say how to come back. Returns the exit code of
/// exit code of the run as last seen (0 when the person left it running).
///
/// # Errors
/// As [`super::drive::backend_for`] and opening the credential store; the terminal cannot be
/// set up or the driver fails.
pub fn drive_dashboard(store: RunStore, state: RunState, opts: DriverOptions) -> Result<i32> {
    // The dashboard stays (and keeps showing panes) after the run ends, until `q`.
    let config = crate::config::load()?;
    let opts = DriverOptions {
        exit_when_finished: false,
        notify: config.notify,
        ..opts
    };
    crate::logging::init(&state.project_dir, true);
    let run_id = state.run_id.clone();
    // Before the dashboard takes the terminal: the passphrase may be asked there.
    let creds = crate::creds::Store::open_default()?;
    let viewer = super::drive::backend_for(&state, &store)?;
    let (driven_store, driven_state) = (store.clone(), state.clone());
    // Built on the driver's thread once the dashboard has drawn the saved state.
    let start: Start = Box::new(move || {
        let backend = super::drive::driving_backend_for(&driven_state, &driven_store)?;
        let providers = agent_providers(&driven_state.project_dir);
        let driver = Driver::new(driven_store, driven_state, backend, opts).with_credentials(creds);
        Ok((Source::Drive(Box::new(driver)), providers))
    });
    let look = crate::tui::app::Look {
        keys: config.keys,
        theme: config.theme,
        providers: Vec::new(),
    };
    let outcome = crate::tui::app::run(store, state, start, viewer, look)?;
    if outcome.detached {
        let why = outcome.signal.map(|s| format!("{s}: ")).unwrap_or_default();
        crate::errln!(
            "crewmux: {why}left the dashboard; the workers keep running. Come back with: crewmux attach {run_id}"
        );
        return Ok(0);
    }
    super::write_err(&super::status::status_text(&outcome.state, false));
    Ok(super::summary::exit_code(&outcome.state))
}

/// Show `state`, a run another crewmux process drives, with the dashboard: its keys send
/// that process requests through the run's inbox. Returns 0.
///
/// # Errors
/// As [`super::drive::backend_for`] and loading the config; the terminal cannot be set up.
pub fn follow_dashboard(store: RunStore, state: RunState) -> Result<i32> {
    let config = crate::config::load()?;
    crate::logging::init(&state.project_dir, true);
    let run_id = state.run_id.clone();
    let viewer = super::drive::backend_for(&state, &store)?;
    let (followed_store, followed_state) = (store.clone(), state.clone());
    let start: Start = Box::new(move || {
        let capture = super::drive::backend_for(&followed_state, &followed_store)?;
        let providers = agent_providers(&followed_state.project_dir);
        let follower =
            crate::driver::follow::Follower::new(followed_store, followed_state, capture);
        Ok((Source::Follow(Box::new(follower)), providers))
    });
    let look = crate::tui::app::Look {
        keys: config.keys,
        theme: config.theme,
        providers: Vec::new(),
    };
    let outcome = crate::tui::app::run(store, state, start, viewer, look)?;
    if outcome.detached {
        crate::errln!(
            "crewmux: left the dashboard; run {run_id} goes on in the process that drives it"
        );
        return Ok(0);
    }
    super::write_err(&super::status::status_text(&outcome.state, false));
    Ok(0)
}

/// The agent providers the project knows (built-ins and overrides), for the add-worker form;
/// `sim` last.
fn agent_providers(project: &std::path::Path) -> Vec<String> {
    let env = crate::providers::EnvSnapshot::current();
    let registry = crate::providers::Registry::load(Some(project), &env)
        .unwrap_or_else(|_| crate::providers::Registry::builtin());
    let mut names: Vec<String> = registry
        .agents()
        .map(|(n, _)| n.to_string())
        .filter(|n| n != "sim")
        .collect();
    names.push("sim".into());
    names
}
