//! Taking the terminal and always giving it back: raw mode, the alternate screen, bracketed
//! paste and mouse reporting on the way in; the reverse on every way out — a normal quit, an
//! error (the [`TerminalGuard`] drops), a panic (a hook that restores before color-eyre's
//! report is printed) and a signal (`SIGTERM`, `SIGINT`, `SIGHUP`, `SIGQUIT`, handled by the
//! app loop as a quit). A dashboard left any of these ways leaves the run detached and
//! resumable with `crewmux attach`.

use std::io::Stdout;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Once;

use crossterm::cursor::Show;
use crossterm::event::{
    DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture,
};
use crossterm::execute;
use crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, Clear, ClearType, EnterAlternateScreen, LeaveAlternateScreen,
};
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;

use crate::error::{IoContext, Result};

/// The dashboard's terminal type.
pub type Term = Terminal<CrosstermBackend<Stdout>>;

/// Set while the dashboard holds the terminal, so the panic hook restores only then.
static ACTIVE: AtomicBool = AtomicBool::new(false);
static HOOKS: Once = Once::new();

/// Install, once per process, color-eyre's panic and error report hooks (unless the binary
/// already installed them) and, in front of the panic hook, one that gives the terminal
/// back first, so the report is printed on the normal screen and the shell is usable after.
pub fn install_hooks() {
    HOOKS.call_once(|| {
        // Err: the binary installed color-eyre already; its panic hook stays and is chained.
        let _ = color_eyre::install();
        let report = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            report(info);
        }));
    });
}

/// Holds the terminal for the dashboard; dropping it gives the terminal back (also when an
/// error unwinds through the app loop).
pub struct TerminalGuard {
    pub terminal: Term,
}

impl TerminalGuard {
    /// Raw mode, alternate screen, bracketed paste and mouse reporting.
    ///
    /// # Errors
    /// The terminal cannot be put in raw mode or written to.
    pub fn enter() -> Result<TerminalGuard> {
        install_hooks();
        ACTIVE.store(true, Ordering::SeqCst);
        Ok(TerminalGuard { terminal: take()? })
    }

    /// Give the terminal back for a while (attach to a pane, `$EDITOR`), then take it again
    /// and repaint.
    ///
    /// # Errors
    /// The terminal cannot be taken back.
    pub fn suspend<T>(&mut self, f: impl FnOnce() -> T) -> Result<T> {
        restore();
        let out = f();
        ACTIVE.store(true, Ordering::SeqCst);
        self.terminal = take()?;
        Ok(out)
    }
}

/// Raw mode and the alternate screen, cleared, with a new [`Term`] whose first draw paints
/// every cell. (ratatui's `Terminal::clear` asks the terminal for the cursor position, which
/// must not happen while crossterm's event stream may still own the input.)
fn take() -> Result<Term> {
    enable_raw_mode().on("cannot put the terminal in raw mode")?;
    execute!(
        std::io::stdout(),
        EnterAlternateScreen,
        Clear(ClearType::All),
        EnableBracketedPaste,
        EnableMouseCapture
    )
    .on("cannot set up the terminal")?;
    Terminal::new(CrosstermBackend::new(std::io::stdout())).on("cannot set up the terminal")
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore();
    }
}

/// Leave the alternate screen, show the cursor, stop mouse and paste reporting and leave raw
/// mode (echo and line editing come back). Idempotent; errors are ignored because this runs
/// on the way out, when the terminal may already be gone (`SIGHUP`).
pub fn restore() {
    if !ACTIVE.swap(false, Ordering::SeqCst) {
        return;
    }
    // Best effort while leaving or panicking: there is no screen left to report on.
    let _ = execute!(
        std::io::stdout(),
        DisableMouseCapture,
        DisableBracketedPaste,
        LeaveAlternateScreen,
        Show
    );
    // As above: nothing to report to if the terminal cannot be taken back.
    let _ = disable_raw_mode();
}

/// The signals that end the dashboard, by name, as a stream of [`super::model::Msg::Signal`]
/// sent on `tx`. Registering replaces the default action (terminate, or core dump for
/// `SIGQUIT`) for the rest of the process, so none of them can leave the terminal raw.
///
/// # Errors
/// A signal handler cannot be registered.
#[allow(
    clippy::needless_pass_by_value,
    reason = "the sender is cloned into one task per signal"
)]
pub fn forward_signals(tx: tokio::sync::mpsc::UnboundedSender<super::model::Msg>) -> Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let kinds = [
        ("SIGTERM", SignalKind::terminate()),
        ("SIGINT", SignalKind::interrupt()),
        ("SIGHUP", SignalKind::hangup()),
        ("SIGQUIT", SignalKind::quit()),
    ];
    for (name, kind) in kinds {
        let mut s = signal(kind).on(&format!("cannot handle {name}"))?;
        let tx = tx.clone();
        tokio::spawn(async move {
            while s.recv().await.is_some() {
                if tx.send(super::model::Msg::Signal(name)).is_err() {
                    break;
                }
            }
        });
    }
    Ok(())
}
