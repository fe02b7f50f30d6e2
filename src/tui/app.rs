//! The dashboard's app loop (The Elm Architecture): terminal input, driver updates and a
//! one-second clock arrive as messages on one channel; one loop applies them to the model
//! and redraws only when something changed. Nothing renders from a background task.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc as std_mpsc, Arc};
use std::time::Duration;

use chrono::Utc;
use crossterm::event::{self, DisableBracketedPaste, EnableBracketedPaste, Event};
use crossterm::execute;
use ratatui::text::Line;
use ratatui::DefaultTerminal;
use tokio::sync::mpsc;

use super::action::map_key;
use super::panels::output::capture_to_lines;
use super::state::{UiState, View};
use super::update::{paste, reconcile, update, UiEffect};
use crate::backend::Multiplexer;
use crate::domain::{BackendKind, RunState};
use crate::driver::{Control, Driver, DriverOptions, Update};
use crate::error::{Error, Result};
use crate::store::RunStore;

/// Events of `events.jsonl` replayed into the log panel when the dashboard opens.
pub const LOG_HISTORY_EVENTS: usize = 200;

/// One message for the loop.
enum Msg {
    Term(Event),
    Driver(Update),
    Clock,
}

/// How the dashboard ended.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The last state the dashboard saw.
    pub state: RunState,
    /// The person quit before the run finished (workers keep running).
    pub detached: bool,
}

/// Run the dashboard on this terminal while a driver thread drives `state`. Returns when
/// the person quits (`q`): the driver stops, workers keep running.
///
/// Errors: the terminal cannot be set up, or the driver fails to start.
pub fn run(
    store: RunStore,
    state: RunState,
    backend: Box<dyn Multiplexer>,
    opts: DriverOptions,
    creds: Option<crate::creds::Store>,
) -> Result<Outcome> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()?;
    rt.block_on(run_async(store, state, backend, opts, creds))
}

async fn run_async(
    store: RunStore,
    state: RunState,
    backend: Box<dyn Multiplexer>,
    opts: DriverOptions,
    creds: Option<crate::creds::Store>,
) -> Result<Outcome> {
    let (tx, mut rx) = mpsc::unbounded_channel::<Msg>();
    let (ctl_tx, ctl_rx) = std_mpsc::channel::<Control>();
    let driver = Driver::new(store.clone(), state.clone(), backend, opts).with_credentials(creds);
    let dtx = tx.clone();
    let driver_thread = std::thread::Builder::new()
        .name("crewmux-driver".into())
        .spawn(move || {
            driver.run(ctl_rx, move |u| {
                let _ = dtx.send(Msg::Driver(u));
            })
        })?;

    let paused = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    spawn_input_thread(tx.clone(), paused.clone(), stop.clone());
    let ctx = tx.clone();
    tokio::spawn(async move {
        let mut every = tokio::time::interval(Duration::from_secs(1));
        loop {
            every.tick().await;
            if ctx.send(Msg::Clock).is_err() {
                break;
            }
        }
    });

    // The log panel starts with the run's recent history (after `attach` too).
    if let Ok(events) = store.read_events() {
        let skip = events.len().saturating_sub(LOG_HISTORY_EVENTS);
        for e in events.into_iter().skip(skip) {
            tracing::info!(
                target: "crewmux::run",
                "{}{} {}",
                e.worker.as_deref().map(|w| format!("{w}: ")).unwrap_or_default(),
                e.kind,
                e.message
            );
        }
    }
    let mut terminal = enter_terminal()?;
    let mut model = Model {
        run: state,
        ui: UiState::default(),
        output: Vec::new(),
        quitting: false,
        finished: false,
    };
    if let Some(first) = model.run.workers.first() {
        let _ = ctl_tx.send(Control::Focus(Some(first.id.clone())));
    }
    let mut dirty = true;
    let mut events_pending = true;
    let mut driver_error = None;
    loop {
        if dirty {
            draw(&mut terminal, &model)?;
            dirty = false;
        }
        let Some(msg) = rx.recv().await else { break };
        match msg {
            Msg::Clock => {
                // Elapsed times move only while some worker is live; the log panel's events
                // reach tui-logger's buffer on its own thread, so redraw once after them.
                dirty = model.run.workers.iter().any(|w| w.status.is_live()) || events_pending;
                events_pending = false;
            }
            Msg::Driver(Update::Snapshot { state, screen }) => {
                let was_final = model.run.status.is_final();
                model.run = *state;
                if model.run.status.is_final() && !was_final {
                    model.finished = true;
                    model.ui.notice = Some(format!(
                        "run {} (council {}) — q leaves the dashboard",
                        model.run.status.as_str(),
                        model.run.council.status.as_str()
                    ));
                }
                if let Some(s) = screen {
                    model.output = capture_to_lines(s.as_bytes());
                    model.ui.output_len = model.output.len();
                }
                reconcile(&mut model.ui, &model.run);
                dirty = true;
            }
            Msg::Driver(Update::Notice(n)) => {
                tracing::warn!("{n}");
                model.ui.notice = Some(n);
                dirty = true;
            }
            Msg::Driver(Update::Event(_)) => {
                dirty = true;
                events_pending = true;
            }
            Msg::Driver(Update::Stopped { finished }) => {
                model.finished |= finished;
                if !model.quitting {
                    driver_error = Some("the run driver stopped".to_string());
                }
                break;
            }
            Msg::Term(Event::Key(key)) if key.kind == event::KeyEventKind::Press => {
                let Some(action) = map_key(&model.ui, key) else {
                    continue;
                };
                let effects = update(&mut model.ui, &model.run, action);
                dirty = true;
                for effect in effects {
                    match effect {
                        UiEffect::Select { worker_id } => {
                            model.output.clear();
                            model.ui.output_len = 0;
                            let _ = ctl_tx.send(Control::Focus(Some(worker_id)));
                        }
                        UiEffect::Attach { worker_id } => {
                            attach(&mut terminal, &model.run, &worker_id, &paused, &store)?;
                            let _ = ctl_tx.send(Control::Focus(Some(worker_id)));
                        }
                        UiEffect::Answer { worker_id, text } => {
                            let _ = ctl_tx.send(Control::Answer {
                                worker: worker_id,
                                text,
                            });
                        }
                        UiEffect::Cancel { worker_id } => {
                            let _ = ctl_tx.send(Control::Cancel { worker: worker_id });
                        }
                        UiEffect::Quit => {
                            model.quitting = true;
                            let _ = ctl_tx.send(Control::Quit);
                        }
                    }
                }
            }
            Msg::Term(Event::Paste(text)) => {
                paste(&mut model.ui, &text);
                dirty = true;
            }
            Msg::Term(Event::Resize(..)) => dirty = true,
            Msg::Term(_) => {}
        }
    }
    stop.store(true, Ordering::SeqCst);
    leave_terminal();
    let _ = ctl_tx.send(Control::Quit);
    let driven = driver_thread
        .join()
        .map_err(|_| Error::Other("the driver thread panicked".into()))?;
    let state = match driven {
        Ok(s) => s,
        Err(e) => return Err(e),
    };
    if let Some(e) = driver_error {
        tracing::warn!("{e}");
    }
    Ok(Outcome {
        detached: !state.status.is_final(),
        state,
    })
}

/// The dashboard's model: the run as the driver last reported it, the UI state, and the
/// focused worker's output converted once per capture.
struct Model {
    run: RunState,
    ui: UiState,
    output: Vec<Line<'static>>,
    quitting: bool,
    finished: bool,
}

fn draw(terminal: &mut DefaultTerminal, model: &Model) -> Result<()> {
    let view = View {
        run: &model.run,
        output: &model.output,
        now: Utc::now(),
        ui: &model.ui,
        backend: model.run.backend.as_str(),
        tmux_socket: &model.run.tmux_socket,
        attach_hint: model.run.backend == BackendKind::Tmux,
    };
    terminal.draw(|f| super::draw(f, &view))?;
    Ok(())
}

fn enter_terminal() -> Result<DefaultTerminal> {
    let terminal = ratatui::try_init()?;
    let _ = execute!(std::io::stdout(), EnableBracketedPaste);
    Ok(terminal)
}

fn leave_terminal() {
    let _ = execute!(std::io::stdout(), DisableBracketedPaste);
    ratatui::restore();
}

/// Read terminal events on a thread of their own; while `paused` (a worker's pane owns the
/// terminal) nothing is read, so no keystroke is stolen from tmux.
fn spawn_input_thread(
    tx: mpsc::UnboundedSender<Msg>,
    paused: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
) {
    std::thread::Builder::new()
        .name("crewmux-input".into())
        .spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                if paused.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(50));
                    continue;
                }
                match event::poll(Duration::from_millis(50)) {
                    Ok(true) if !paused.load(Ordering::SeqCst) => match event::read() {
                        Ok(ev) => {
                            if tx.send(Msg::Term(ev)).is_err() {
                                break;
                            }
                        }
                        Err(_) => break,
                    },
                    Ok(_) => {}
                    Err(_) => break,
                }
            }
        })
        .expect("spawn the input thread");
}

/// Hand the terminal to the worker's pane (tmux `attach-session`; on the process backend,
/// `less +F` on its log) and come back when the person detaches.
fn attach(
    terminal: &mut DefaultTerminal,
    run: &RunState,
    worker: &str,
    paused: &AtomicBool,
    store: &RunStore,
) -> Result<()> {
    let Some(w) = run.worker(worker) else {
        return Ok(());
    };
    let mut cmd = match (run.backend, w.pane_id.as_deref()) {
        (BackendKind::Tmux, Some(pane)) => {
            crate::tmux::TmuxClient::new(&run.tmux_socket).attach_command(&run.session, pane)
        }
        _ => {
            let log = store.attempt_dir(&w.id, w.attempt).join("output.log");
            let mut c = std::process::Command::new("less");
            c.arg("-R").arg("+F").arg(log);
            c
        }
    };
    paused.store(true, Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(80));
    leave_terminal();
    println!(
        "crewmux: attached to {worker}; detach with the tmux prefix then d (default C-b d) to come back"
    );
    let _ = std::io::stdout().flush();
    let status = cmd.status();
    *terminal = enter_terminal()?;
    terminal.clear()?;
    paused.store(false, Ordering::SeqCst);
    if let Err(e) = status {
        tracing::warn!("attach to {worker}: {e}");
    }
    Ok(())
}
