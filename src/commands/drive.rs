//! Driving a run from the command line: build its backend and driver, then either the
//! dashboard or the headless printer.

use std::sync::mpsc;

use crate::backend::Multiplexer;
use crate::domain::{BackendKind, RunState, RunStatus};
use crate::error::{Error, IoContext, Result};
use crate::lead::{Driver, DriverOptions, Update};
use crate::process::ProcessBackend;
use crate::store::RunStore;
use crate::tmux::TmuxBackend;

/// The backend a run was planned with.
///
/// # Errors
/// A tmux run when tmux is no longer on PATH or is older than tmux 3.2.
pub fn backend_for(state: &RunState, store: &RunStore) -> Result<Box<dyn Multiplexer>> {
    let local = local_backend_for(state, store)?;
    with_hosts(local, state, false)
}

/// As [`backend_for`], across only the hosts the run made something on
/// (`crate::hosts::purge::made_on`): what `clean` ends and removes. A host where nothing
/// of the run was started is not asked.
///
/// # Errors
/// As [`backend_for`].
pub fn backend_to_clean(state: &RunState, store: &RunStore) -> Result<Box<dyn Multiplexer>> {
    let local = local_backend_for(state, store)?;
    let made = crate::hosts::purge::made_on(state);
    let mut hosts = crate::hosts::run_hosts(&state.run_dir)?;
    hosts.retain(|name, _| made.contains(name));
    on_hosts(local, state, &hosts, false)
}

/// This machine's tmux backend for run `id`'s session (`crewmux-<id>`, the name every
/// run's session has) on `socket`, for a run whose state cannot be read; `None` without
/// tmux.
pub fn session_backend(socket: &str, id: &str) -> Option<Box<dyn Multiplexer>> {
    crate::tmux::tmux_available()
        .then(|| Box::new(TmuxBackend::new(socket, &format!("crewmux-{id}"), vec![])) as _)
}

/// `local`, or the backend across this machine and the run's SSH hosts when it has any
/// (`control`: one control-mode channel per host, for the driving process).
fn with_hosts(
    local: Box<dyn Multiplexer>,
    state: &RunState,
    control: bool,
) -> Result<Box<dyn Multiplexer>> {
    let hosts = crate::hosts::run_hosts(&state.run_dir)?;
    on_hosts(local, state, &hosts, control)
}

/// `local`, or the backend across this machine and `hosts` when there are any.
fn on_hosts(
    local: Box<dyn Multiplexer>,
    state: &RunState,
    hosts: &std::collections::BTreeMap<String, crate::hosts::HostSpec>,
    control: bool,
) -> Result<Box<dyn Multiplexer>> {
    if hosts.is_empty() {
        return Ok(local);
    }
    let backend =
        crate::hosts::HostsBackend::new(local, hosts, &state.run_id, &state.session, control)?;
    if control {
        silent_at_planning(&backend, state);
    }
    Ok(Box::new(backend))
}

/// Tell `backend` the hosts planning found silent (`helpers.json`'s `awaited`, with when)
/// that no attempt of the run has run on since: their outage counts from then.
fn silent_at_planning(backend: &crate::hosts::HostsBackend, state: &RunState) {
    let states = match crate::hosts::helper::run_states(&state.run_dir) {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!("{e}");
            return;
        }
    };
    for (host, s) in states {
        let crate::hosts::helper::HelperState::Awaited {
            why,
            since: Some(at),
            ..
        } = s
        else {
            continue;
        };
        if state
            .dispatches
            .iter()
            .any(|d| d.host.as_deref() == Some(&host))
        {
            continue;
        }
        tracing::info!("host {host}: did not answer when the run was planned ({why}), at {at}");
        backend.silent_since(&host, at, why);
    }
}

fn local_backend_for(state: &RunState, store: &RunStore) -> Result<Box<dyn Multiplexer>> {
    Ok(match state.backend {
        BackendKind::Tmux => {
            let tmux =
                crate::providers::health::probe_tmux(&crate::providers::EnvSnapshot::current());
            if let Some(problem) = tmux.problem.clone() {
                return Err(Error::Usage(format!(
                    "run {} uses tmux, and {problem}: {} to continue it",
                    state.run_id,
                    super::plan::tmux_fix_text(&tmux)
                )));
            }
            Box::new(TmuxBackend::new(
                &state.tmux_socket,
                &state.session,
                home_argv(store),
            ))
        }
        BackendKind::Process => Box::new(ProcessBackend::new()),
    })
}

/// `CREWMUX_TMUX_CONTROL=off` makes a driving process use one tmux process per call, as
/// offline commands do (docs/tmux.md "Control mode"; the scale benchmark compares both).
pub const CONTROL_ENV: &str = "CREWMUX_TMUX_CONTROL";

/// The backend of the process that drives `state`: as [`backend_for`], with tmux calls
/// over one persistent control-mode client instead of a process each (unless
/// [`CONTROL_ENV`] is `off`).
///
/// # Errors
/// As [`backend_for`].
pub fn driving_backend_for(state: &RunState, store: &RunStore) -> Result<Box<dyn Multiplexer>> {
    let off = std::env::var(CONTROL_ENV).is_ok_and(|v| v == "off");
    if state.backend != BackendKind::Tmux || !crate::tmux::tmux_available() || off {
        let local = local_backend_for(state, store)?;
        return with_hosts(local, state, !off);
    }
    with_hosts(
        Box::new(
            TmuxBackend::new(&state.tmux_socket, &state.session, home_argv(store))
                .with_control_mode(),
        ),
        state,
        true,
    )
}

/// What the run session's first window shows: the log of the run's lead (everything it
/// did and said, docs/design.md "The lead and its dashboards") for a run that has one,
/// else the run's events as they come.
fn home_argv(store: &RunStore) -> Vec<String> {
    let lead_log = store.dir().join(super::lead::LOG_FILE);
    let shown = if lead_log.exists() {
        lead_log
    } else {
        store.events_path()
    };
    vec![
        "tail".to_string(),
        "-n".into(),
        "+1".into(),
        "-F".into(),
        shown.display().to_string(),
    ]
}

/// The options of a driver a command makes for a run no process drives (`status`,
/// `answer`, `cancel`, `steer`): the defaults with the config's `[notify]`, so what it
/// records (a question seen, the run cancelled) notifies as the lead's would; the default
/// ways when config.toml cannot be read (the command goes on, as the run would).
pub fn offline_options() -> DriverOptions {
    let notify = match crate::config::load() {
        Ok(c) => c.notify,
        Err(e) => {
            tracing::warn!("{e}; notifying in the default ways");
            crate::lead::NotifyWays::default()
        }
    };
    DriverOptions {
        notify,
        ..DriverOptions::default()
    }
}

fn hhmmss() -> String {
    chrono::Local::now().format("%H:%M:%S").to_string()
}

/// Drive `state` without a dashboard: one line per event on stderr, the summary JSON on stdout at
/// the end; returns the exit code of docs/design.md "Exit codes and the summary" (3 when halted at
/// a question).
///
/// # Errors
/// As [`backend_for`]; the credential store cannot be opened (a wrong passphrase, a file with
/// loose permissions); the driver thread cannot start or the run's state cannot be saved.
pub fn drive_headless(store: RunStore, state: RunState, opts: DriverOptions) -> Result<i32> {
    drive_printing(store, state, opts, true)
}

/// As [`drive_headless`]; `quit_at_halt` false keeps driving a run halted at a question
/// (the run's lead: an answer from a dashboard continues it), true stops there (exit 3).
///
/// # Errors
/// As [`drive_headless`].
pub fn drive_printing(
    store: RunStore,
    state: RunState,
    opts: DriverOptions,
    quit_at_halt: bool,
) -> Result<i32> {
    crate::logging::init(&state.project_dir, false);
    let opts = DriverOptions {
        notify: crate::config::load()?.notify,
        ..opts
    };
    let backend = driving_backend_for(&state, &store)?;
    let run_id = state.run_id.clone();
    let (ctl_tx, ctl_rx) = mpsc::channel();
    let (up_tx, up_rx) = mpsc::channel();
    // Before any thread starts: the passphrase may be asked at the terminal.
    let creds = crate::creds::Store::open_default()?;
    let driver = Driver::new(store, state, backend, opts).with_credentials(creds);
    let handle = std::thread::Builder::new()
        .name("crewmux-driver".into())
        .spawn(move || {
            driver.run(ctl_rx, move |u| {
                // Err: the printing loop has ended (it saw `Stopped`); nothing is left to print.
                let _ = up_tx.send(u);
            })
        })
        .on("cannot start the driver thread")?;
    let mut halted_reported = false;
    for update in up_rx {
        match update {
            Update::Event(e) => {
                let who = e
                    .worker
                    .as_deref()
                    .map(|w| format!("{w}#{} ", e.attempt.unwrap_or(0)))
                    .unwrap_or_default();
                crate::errln!("[{}] {who}{}: {}", hhmmss(), e.kind, e.message);
                if e.kind == crate::domain::EventKind::WorkerWaiting {
                    if let Some(w) = &e.worker {
                        crate::errln!(
                            "[{}] answer with: crewmux answer {run_id} --worker {w} \"<text>\"",
                            hhmmss()
                        );
                    }
                }
            }
            Update::Notice(n) | Update::Info(n) => {
                crate::errln!("[{}] crewmux: {n}", hhmmss());
            }
            Update::Snapshot { state, .. } => {
                if quit_at_halt && state.status == RunStatus::Halted && !halted_reported {
                    halted_reported = true;
                    crate::errln!(
                        "[{}] answer with: crewmux answer {run_id} \"<text>\", then crewmux resume {run_id}",
                        hhmmss()
                    );
                    // Err: the driver has stopped already, which is what Quit asks for.
                    let _ = ctl_tx.send(crate::lead::Control::Quit);
                }
            }
            Update::Stopped { .. } => break,
            // Headless: each outage and return is printed from its notice already.
            Update::HostsDown(_) => {}
        }
    }
    let final_state = handle
        .join()
        .map_err(|_| Error::Other("the driver thread panicked".into()))??;
    crate::outln!(
        "{}",
        serde_json::to_string_pretty(&super::summary::summary(&final_state))
            .map_err(|e| Error::Other(e.to_string()))?
    );
    Ok(super::summary::exit_code(&final_state))
}
