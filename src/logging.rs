//! Logging: `tracing` events go to `<project>/.crewmux/crewmux.log` and, while the dashboard
//! owns the screen, to its log panel (tui-logger); never to stdout. `CREWMUX_LOG` sets the
//! filter (default `info`).

use std::path::Path;
use std::sync::Mutex;

use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

/// The target of run events the dashboard replays into its log panel when it opens: their
/// message starts with the event's own local time (`HH:MM:SS `), which the panel shows.
pub const HISTORY_TARGET: &str = "crewmux::history";

/// The message of a run event replayed into the log panel under [`HISTORY_TARGET`]: its
/// local time, then `worker: kind message` as the driver logs a live one.
pub fn history_line(e: &crate::domain::RunEvent) -> String {
    format!(
        "{} {}{} {}",
        e.ts.with_timezone(&chrono::Local).format("%H:%M:%S"),
        e.worker
            .as_deref()
            .map(|w| format!("{w}: "))
            .unwrap_or_default(),
        e.kind,
        e.message
    )
}

/// The directive that keeps the log panel's replayed events out of the log file.
#[allow(
    clippy::expect_used,
    reason = "a constant target and `off` always parse"
)]
fn history_off() -> tracing_subscriber::filter::Directive {
    format!("{HISTORY_TARGET}=off")
        .parse()
        .expect("a valid directive")
}

/// Log lines the dashboard's panel holds between two frames before the oldest are dropped
/// (said in the panel as an overrun): a frame is drawn at least once a second.
const HOT_LINES: usize = 10_000;

/// Install the subscriber once per process; later calls do nothing. A log file that cannot
/// be opened is skipped (logging never stops a run).
pub fn init(project: &Path, dashboard: bool) {
    let filter =
        || EnvFilter::try_from_env("CREWMUX_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    let dir = project.join(".crewmux");
    let file = std::fs::create_dir_all(&dir).ok().and_then(|_| {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("crewmux.log"))
            .ok()
    });
    let file_layer = file.map(|f| {
        tracing_subscriber::fmt::layer()
            .with_ansi(false)
            .with_writer(Mutex::new(f))
            // Events the dashboard replays into its log panel are in the file already.
            .with_filter(filter().add_directive(history_off()))
    });
    let tui_layer = dashboard.then(|| tui_logger::TuiTracingSubscriberLayer.with_filter(filter()));
    if dashboard {
        // Not `tui_logger::init_logger`: with the `tracing-support` feature it only sets
        // this level and starts a thread that wakes every 10 ms to move new lines into the
        // panel's buffer (tui-logger 0.18.3, src/logger/api.rs), 0.3 % of a core on an
        // idle dashboard. The dashboard moves them itself before each frame
        // (`crate::tui::app`), so a line logged since the last frame is in the next one.
        tui_logger::set_default_level(tui_logger::LevelFilter::Info);
        tui_logger::set_hot_buffer_depth(HOT_LINES);
    }
    // Err: a subscriber is installed already; "later calls do nothing" (above).
    let _ = tracing_subscriber::registry()
        .with(file_layer)
        .with(tui_layer)
        .try_init();
}

/// A process-wide default subscriber for tests that wants nothing itself but answers every
/// callsite "sometimes", so a callsite first reached by a test thread with no subscriber of
/// its own is not cached as "never" process-wide (tracing-core 0.1's callsite interest
/// cache, computed once from the registering thread's dispatcher), which would hide its
/// lines from [`info_lines`] on another thread. Each event still asks the current
/// thread's subscriber.
#[cfg(test)]
fn keep_callsites_open() {
    struct Keeper;
    impl tracing::Subscriber for Keeper {
        fn register_callsite(
            &self,
            _: &'static tracing::Metadata<'static>,
        ) -> tracing::subscriber::Interest {
            tracing::subscriber::Interest::sometimes()
        }
        fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
            false
        }
        fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
            tracing::span::Id::from_u64(1)
        }
        fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
        fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
        fn event(&self, _: &tracing::Event<'_>) {}
        fn enter(&self, _: &tracing::span::Id) {}
        fn exit(&self, _: &tracing::span::Id) {}
    }
    static ONCE: std::sync::Once = std::sync::Once::new();
    // Another global default already set (a test of `init`) is fine: it answers too.
    ONCE.call_once(|| {
        let _ = tracing::subscriber::set_global_default(Keeper);
    });
}

/// What `f` logs on this thread at info level and above (one line each, with its level:
/// ` INFO `, ` WARN `), with what it returns: for tests of what reaches the Log panel.
#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    reason = "a test helper; a poisoned buffer is a failed test"
)]
pub(crate) fn info_lines<T>(f: impl FnOnce() -> T) -> (T, String) {
    use std::sync::Arc;
    #[derive(Clone, Default)]
    struct Buf(Arc<Mutex<Vec<u8>>>);
    impl std::io::Write for Buf {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    keep_callsites_open();
    let buf = Buf::default();
    let writer = buf.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::INFO)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    let out = tracing::subscriber::with_default(subscriber, || {
        // A callsite first reached on another test's thread, while no subscriber there
        // wanted it, keeps that cached "never" and would skip this subscriber too: the
        // interest is asked again now that this one is the thread's default.
        tracing::callsite::rebuild_interest_cache();
        f()
    });
    let text = String::from_utf8_lossy(&buf.0.lock().unwrap()).into_owned();
    (out, text)
}
