//! The dashboard's app loop (The Elm Architecture): terminal input from crossterm's event
//! stream, the driver's updates, a one-second clock and the signals that end the dashboard
//! arrive in one tokio loop; each is applied to the [`Model`] by its pure `handle`, a burst
//! of messages is drained before one redraw, and nothing renders from a background task.

use std::sync::mpsc as std_mpsc;
use std::time::Duration;

use chrono::Utc;
use crossterm::event::{Event, EventStream};
use futures_util::StreamExt;
use tokio::sync::mpsc;

use super::model::{Model, Msg};
use super::state::View;
use super::terminal::TerminalGuard;
use super::update::UiEffect;
use crate::backend::{Multiplexer, Target};
use crate::domain::{BackendKind, RunState};
use crate::error::{Error, IoContext, Result};
use crate::lead::{Control, Driver};
use crate::store::RunStore;

/// Events of `events.jsonl` replayed into the log panel when the dashboard opens.
pub const LOG_HISTORY_EVENTS: usize = 200;

/// Lines the log panel keeps (tui-logger's buffer; its own default).
pub const LOG_BUFFER_LINES: usize = 10_000;

/// Set by the home screen: Esc on the roster (nothing open) leaves the dashboard as `q`
/// does, back to the home screen.
pub static ESC_LEAVES: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Messages applied before one redraw at most; a burst longer than this still redraws so
/// the screen never freezes behind a flood of driver updates.
pub const MAX_BURST: usize = 256;

/// What the person's config sets for the dashboard: key bindings, theme, and the providers
/// the add-worker form offers.
#[derive(Debug, Clone, Default)]
pub struct Look {
    pub keys: super::keys::Keys,
    pub theme: super::theme::Theme,
    pub providers: Vec<String>,
}

/// Who keeps the run going while the dashboard shows it.
pub enum Source {
    /// This process drives the run.
    Drive(Box<Driver>),
    /// Another process drives it; requests go to its inbox.
    Follow(Box<crate::dashboard::follow::Follower>),
}

/// Builds the [`Source`] and the agent providers the add-worker form offers. It runs on
/// the driver's thread once the first frame is drawn: a driver reads the providers' files
/// and the run's events first, which can take seconds on a busy machine, and the screen is
/// never blank meanwhile.
pub type Start = Box<dyn FnOnce() -> Result<(Source, Vec<String>)> + Send>;

impl Source {
    fn run(
        self,
        control: std_mpsc::Receiver<Control>,
        emit: impl FnMut(crate::lead::Update),
    ) -> Result<RunState> {
        match self {
            Source::Drive(d) => (*d).run(control, emit),
            Source::Follow(f) => Ok(f.run(control, emit)),
        }
    }
}

/// How the dashboard ended.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The last state the dashboard saw.
    pub state: RunState,
    /// The person quit before the run finished (workers keep running).
    pub detached: bool,
    /// The signal that ended the dashboard (`SIGTERM`, `SIGINT`, `SIGHUP`, `SIGQUIT`).
    pub signal: Option<&'static str>,
}

/// Run the dashboard on this terminal, showing `state` (as saved) at once, while the
/// [`Source`] that `start` builds drives (or follows) the run on a thread of its own.
/// `viewer` is a multiplexer of the run's backend used only to attach to panes. Returns
/// when the person quits (`q`) or a signal ends it: the driver stops, workers keep running.
///
/// # Errors
/// The terminal cannot be set up, `start` fails, or the driver fails.
pub fn run(
    store: RunStore,
    state: RunState,
    start: Start,
    viewer: Box<dyn Multiplexer>,
    look: Look,
) -> Result<Outcome> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .on("cannot start the dashboard's runtime")?;
    rt.block_on(run_async(store, state, start, viewer, look))
}

async fn run_async(
    store: RunStore,
    state: RunState,
    start: Start,
    viewer: Box<dyn Multiplexer>,
    look: Look,
) -> Result<Outcome> {
    let (tx, mut rx) = mpsc::unbounded_channel::<Msg>();
    let (ctl_tx, ctl_rx) = std_mpsc::channel::<Control>();
    let dtx = tx.clone();
    let driver_thread = std::thread::Builder::new()
        .name("crewmux-driver".into())
        .spawn(move || {
            let (source, providers) = match start() {
                Ok(built) => built,
                Err(e) => {
                    // Err: the dashboard has left already; nothing is left to tell.
                    let _ = dtx.send(Msg::Driver(crate::lead::Update::Stopped {
                        finished: false,
                    }));
                    return Err(e);
                }
            };
            // Err (here and below): the dashboard has left; the driver is told to stop.
            let _ = dtx.send(Msg::Providers(providers));
            source.run(ctl_rx, move |u| {
                let _ = dtx.send(Msg::Driver(u));
            })
        })
        .on("cannot start the driver thread")?;
    super::terminal::forward_signals(tx.clone())?;
    spawn_clock(tx.clone());
    replay_history(&store);

    let mut model = Model::new(state, store.dir().to_path_buf());
    model.ui.esc_leaves = ESC_LEAVES.load(std::sync::atomic::Ordering::SeqCst);
    model.ui.nested_tmux = std::env::var_os("TMUX").is_some_and(|t| !t.is_empty());
    model.ui.keys = look.keys;
    model.ui.theme = look.theme;
    if !look.providers.is_empty() {
        model.ui.providers = look.providers;
    }
    if let Some(first) = model.run.workers.first() {
        send(&ctl_tx, Control::Focus(Some(first.id.clone())));
    }
    let result = {
        let mut guard = TerminalGuard::enter()?;
        if let Ok(size) = guard.terminal.size() {
            model.size = ratatui::layout::Rect::new(0, 0, size.width, size.height);
        }
        event_loop(&mut guard, &mut model, &mut rx, &ctl_tx, &*viewer, &store).await
    };
    send(&ctl_tx, Control::Quit);
    let driven = driver_thread
        .join()
        .map_err(|_| Error::Other("the driver thread panicked".into()))?;
    result?;
    let state = driven?;
    if let Some(e) = &model.driver_error {
        tracing::warn!("{e}");
    }
    Ok(Outcome {
        detached: !state.status.is_final(),
        state,
        signal: model.signal,
    })
}

/// Apply messages until the person quits, a signal arrives or the driver stops.
async fn event_loop(
    guard: &mut TerminalGuard,
    model: &mut Model,
    rx: &mut mpsc::UnboundedReceiver<Msg>,
    ctl_tx: &std_mpsc::Sender<Control>,
    viewer: &dyn Multiplexer,
    store: &RunStore,
) -> Result<()> {
    let mut input = Some(EventStream::new());
    let mut dirty = true;
    loop {
        if dirty {
            draw(guard, model)?;
            dirty = false;
            panic_when_asked();
        }
        let first = tokio::select! {
            m = rx.recv() => match m {
                Some(m) => m,
                None => return Ok(()),
            },
            ev = next_event(&mut input) => match ev {
                Some(Ok(ev)) => Msg::Term(ev),
                Some(Err(e)) => return Err(Error::system("reading the terminal", e)),
                // The terminal closed its input: leave as after a hang-up.
                None => Msg::Signal("SIGHUP"),
            },
        };
        let mut burst = std::collections::VecDeque::from([first]);
        while burst.len() < MAX_BURST {
            match rx.try_recv() {
                Ok(m) => burst.push_back(m),
                Err(_) => break,
            }
        }
        // How an attach ended, shown once the burst is applied (see below).
        let mut attach_notice = None;
        while let Some(msg) = burst.pop_front() {
            let step = model.handle(msg);
            dirty |= step.dirty;
            for effect in step.effects {
                if let UiEffect::Attach { worker_id } = &effect {
                    // No terminal input is read while the pane owns the terminal.
                    drop(input.take());
                    attach_notice = attach(
                        guard,
                        &model.run,
                        worker_id,
                        viewer,
                        store,
                        model.ui.detach_keys(),
                    )?;
                    // What the driver said while the pane had the terminal is older than
                    // how the attach ended: applied first, so the footer ends on the
                    // attach's own line (a host that does not answer).
                    while let Ok(m) = rx.try_recv() {
                        burst.push_back(m);
                    }
                    input = Some(EventStream::new());
                    dirty = true;
                }
                if let UiEffect::EditRetry { worker_id } = &effect {
                    // The editor owns the terminal until it exits, as an attached pane does.
                    drop(input.take());
                    let edited = super::editor::edit_task(guard, &model.run, worker_id, store);
                    input = Some(EventStream::new());
                    dirty = true;
                    match edited {
                        Ok(task) => {
                            model.ui.notice =
                                Some(format!("retrying {worker_id} with the edited task"));
                            send(
                                ctl_tx,
                                Control::Steer(crate::engine::steer::Steer::Retry {
                                    worker: worker_id.clone(),
                                    task: Some(task),
                                }),
                            );
                        }
                        Err(why) => model.ui.notice = Some(why),
                    }
                    continue;
                }
                if let UiEffect::Shell { worker_id } = &effect {
                    // Outside tmux the shell owns the terminal until it exits.
                    let tmux = std::env::var("TMUX").ok();
                    let user =
                        crate::notify::tmux::user_socket(tmux.as_deref(), &model.run.tmux_socket);
                    if user.is_none() {
                        drop(input.take());
                    }
                    let said = super::shell::open(guard, &model.run, worker_id, user.as_deref());
                    input.get_or_insert_with(EventStream::new);
                    model.ui.notice = Some(said);
                    dirty = true;
                    continue;
                }
                if matches!(effect, UiEffect::OfferMerge | UiEffect::Merge { .. }) {
                    model.carry_out_merge(&effect);
                    dirty = true;
                }
                carry_out(ctl_tx, effect);
            }
            if model.quitting || model.stopped {
                return Ok(());
            }
        }
        if let Some(notice) = attach_notice {
            model.ui.notice = Some(notice);
        }
        dirty |= model.refresh_doc();
    }
}

/// Debug builds only: `CREWMUX_DEBUG_PANIC=dashboard` panics after a frame is drawn, so the
/// tests can prove a panic gives the terminal back. Release builds never read it.
fn panic_when_asked() {
    #[cfg(debug_assertions)]
    if std::env::var("CREWMUX_DEBUG_PANIC").as_deref() == Ok("dashboard") {
        panic!("CREWMUX_DEBUG_PANIC=dashboard asked the dashboard to panic");
    }
}

/// The next terminal event, or never while input is paused.
async fn next_event(input: &mut Option<EventStream>) -> Option<std::io::Result<Event>> {
    match input {
        Some(s) => s.next().await,
        None => std::future::pending().await,
    }
}

/// Tell the driver what an effect asks of it (attaching is done by the loop itself).
fn carry_out(ctl_tx: &std_mpsc::Sender<Control>, effect: UiEffect) {
    match effect {
        UiEffect::Select { worker_id } | UiEffect::Attach { worker_id } => {
            send(ctl_tx, Control::Focus(Some(worker_id)));
        }
        UiEffect::Answer { worker_id, text } => send(
            ctl_tx,
            Control::Answer {
                worker: worker_id,
                text,
            },
        ),
        UiEffect::Cancel { worker_id } => send(ctl_tx, Control::Cancel { worker: worker_id }),
        UiEffect::Steer(s) => send(ctl_tx, Control::Steer(s)),
        // Carried out by the loop itself (it suspends the dashboard).
        UiEffect::EditRetry { .. } | UiEffect::Shell { .. } => {}
        UiEffect::Quit => send(ctl_tx, Control::Quit),
        // Carried out by the model itself (git, not the driver).
        UiEffect::OfferMerge | UiEffect::Merge { .. } => {}
    }
}

fn send(ctl_tx: &std_mpsc::Sender<Control>, c: Control) {
    if ctl_tx.send(c).is_err() {
        // The driver has stopped; its Stopped update ends the loop.
        tracing::debug!("the driver is gone; a control message was dropped");
    }
}

fn spawn_clock(tx: mpsc::UnboundedSender<Msg>) {
    tokio::spawn(async move {
        let mut every = tokio::time::interval(Duration::from_secs(1));
        loop {
            every.tick().await;
            if tx.send(Msg::Clock).is_err() {
                break;
            }
        }
    });
}

/// The log panel starts with this run's recent history (after `attach` too), each event at
/// its own time; lines of a dashboard opened before in this process (another run, from the
/// home screen) are dropped first.
fn replay_history(store: &RunStore) {
    tui_logger::move_events();
    tui_logger::set_buffer_depth(LOG_BUFFER_LINES);
    if let Ok(events) = store.read_events() {
        let skip = events.len().saturating_sub(LOG_HISTORY_EVENTS);
        for e in events.into_iter().skip(skip) {
            tracing::info!(
                target: super::panels::log::HISTORY_TARGET,
                "{}",
                super::panels::log::history_line(&e)
            );
        }
    }
}

fn draw(guard: &mut TerminalGuard, model: &Model) -> Result<()> {
    let view = View {
        run: &model.run,
        output: &model.output,
        now: Utc::now(),
        ui: &model.ui,
        backend: model.run.backend.as_str(),
        tmux_socket: &model.run.tmux_socket,
        attach_hint: model.run.backend == BackendKind::Tmux,
        doc: model.doc.as_ref(),
    };
    // The lines logged since the last frame, into the Log panel's buffer (no thread of
    // tui-logger's does it: `crate::logging::init`).
    tui_logger::move_events();
    guard
        .terminal
        .draw(|f| super::draw(f, &view))
        .on("drawing the dashboard")?;
    Ok(())
}

/// Hand the terminal to the worker's pane (the backend's attach command; on the process
/// backend, `less +F` on its log) and come back when the person detaches. Returns a notice
/// instead when the pane is gone.
fn attach(
    guard: &mut TerminalGuard,
    run: &RunState,
    worker: &str,
    viewer: &dyn Multiplexer,
    store: &RunStore,
    detach: &str,
) -> Result<Option<String>> {
    let Some(w) = run.worker(worker) else {
        return Ok(None);
    };
    let target = Target {
        worker: w.id.clone(),
        attempt: w.attempt,
        pane_id: w.pane_id.clone(),
        pid: w.pid,
        log: store.attempt_dir(&w.id, w.attempt).join("output.log"),
        watch_screen: false,
    };
    // A pane on an SSH host that hangs would hold the terminal until ssh gives up.
    if let Err(e) = viewer.reachable(&target) {
        return Ok(Some(e.to_string()));
    }
    let mut back = format!("detach with the tmux {detach} to come back");
    let mut cmd = match viewer.attach_command(&target) {
        Some(cmd) => cmd,
        // On tmux, no command means the pane is gone (the next poll drops it from the run).
        None if run.backend == BackendKind::Tmux => {
            return Ok(Some(format!(
                "{worker}'s pane is gone: its output is kept in the Output tab and output.log"
            )));
        }
        None => {
            "Ctrl-C, then q, leaves less to come back".clone_into(&mut back);
            let mut c = std::process::Command::new("less");
            c.arg("-R").arg("+F").arg(&target.log);
            c
        }
    };
    let status = guard.suspend(|| {
        println!("crewmux: attached to {worker}; {back}");
        cmd.status()
    })?;
    match status {
        Ok(status) => {
            let said = viewer.attach_ended(&target, status);
            if let Some(line) = &said {
                tracing::warn!("attach to {worker}: {line}");
            }
            Ok(said)
        }
        Err(e) => {
            tracing::warn!("attach to {worker}: {e}");
            Ok(None)
        }
    }
}
