//! The dashboard on this terminal: a window onto a run its lead drives
//! ([`super::lead`]), which goes on whatever the dashboard does.

use crate::domain::RunState;
use crate::error::Result;
use crate::store::RunStore;
use crate::tui::app::{Source, Start};

/// Show `state` with the dashboard while the run's lead (or any other crewmux process)
/// drives it: its keys send requests through the run's inbox, and a request that finds no
/// process driving the run starts a lead for it. Quitting (`q`, a signal, the terminal
/// closing) leaves the run going. The lead's notifications ring this terminal (the bell
/// and the OSC sequence `[notify]` allows), unless `quiet`. Returns the run's exit code once it has ended
/// (docs/design.md "Exit codes and the summary"), 0 when the person left it running.
///
/// # Errors
/// As [`super::drive::backend_for`] and loading the config; the terminal cannot be set up.
pub fn follow_dashboard(store: RunStore, state: RunState, quiet: bool) -> Result<i32> {
    let config = crate::config::load()?;
    let ways = config.notify.clone();
    crate::logging::init(&state.project_dir, true);
    let run_id = state.run_id.clone();
    let viewer = super::drive::backend_for(&state, &store)?;
    let (followed_store, followed_state) = (store.clone(), state.clone());
    // The dashboard replays these into its Log as it opens; the follower hands on the rest.
    let events_seen = store.read_events().map(|e| e.len()).unwrap_or(0);
    let start: Start = Box::new(move || {
        let capture = super::drive::backend_for(&followed_state, &followed_store)?;
        let providers = agent_providers(&followed_state.project_dir);
        let lead_store = followed_store.clone();
        let follower = crate::dashboard::follow::Follower::new(
            followed_store,
            followed_state,
            capture,
            events_seen,
        )
        .with_lead_starter(Box::new(move |state| {
            let opts = super::lead::LeadOptions::default();
            super::lead::start_asking(&lead_store, state, opts, false).map_err(|e| e.to_string())
        }))
        .with_notifications(Box::new(move |n| {
            if !quiet {
                crate::notify::terminal::ring_stderr(&n.message, &ways);
            }
        }));
        Ok((Source::Follow(Box::new(follower)), providers))
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
            "crewmux: {why}left the dashboard; run {run_id} goes on. Come back with: crewmux attach {run_id}"
        );
        crate::errln!("crewmux: end it with: crewmux cancel {run_id}");
        return Ok(0);
    }
    super::write_err(&super::status::status_text(&outcome.state, false));
    Ok(super::summary::exit_code(&outcome.state))
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
