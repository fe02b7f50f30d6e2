//! Waking a follower ([`super::follow::Follower`]) when the lead saves the run, so a change
//! is on the dashboard's screen in milliseconds instead of at the follower's next tick.
//!
//! On Linux inotify (inotify(7)) is asked, on the run directory only (not recursive), for
//! the two ways the lead's files land: `state.json` renamed into place (the store writes a
//! temporary file and renames it: `IN_MOVED_TO`) and `events.jsonl` closed after an append
//! (one open, `write` and close per event: `IN_CLOSE_WRITE`). Writes to the other files of
//! the directory (`lead.log`, the inbox) wake the thread but are dropped by name before they
//! reach the follower. Elsewhere the `notify` crate's recommended watcher, not recursive.
//! Without a watcher the follower still looks at its tick.

use std::path::Path;
use std::sync::mpsc::Sender;

/// The files whose landing wakes the follower.
const WATCHED: [&str; 2] = ["state.json", "events.jsonl"];

/// The running watcher; dropping it ends it.
pub(super) struct RunFiles {
    #[cfg(target_os = "linux")]
    _inner: linux::Watcher,
    #[cfg(not(target_os = "linux"))]
    _inner: notify::RecommendedWatcher,
}

/// Watch the run directory `dir`; each time `state.json` or `events.jsonl` lands, `wake()`
/// is sent on `tx`. `None` (the follower then looks at its tick only, said in the log)
/// when the watcher cannot start.
pub(super) fn watch<T: Send + 'static>(
    dir: &Path,
    tx: Sender<T>,
    wake: fn() -> T,
) -> Option<RunFiles> {
    #[cfg(target_os = "linux")]
    let inner = linux::Watcher::start(dir, tx, wake);
    #[cfg(not(target_os = "linux"))]
    let inner = portable(dir, tx, wake);
    inner
        .map_err(|e| {
            tracing::warn!(
                "cannot watch {} ({e}); the dashboard looks at the run's files at its tick",
                dir.display()
            )
        })
        .ok()
        .map(|_inner| RunFiles { _inner })
}

/// Whether a file of this name landing is a change the follower shows.
fn watched(name: &std::ffi::OsStr) -> bool {
    WATCHED.iter().any(|w| name == *w)
}

#[cfg(not(target_os = "linux"))]
fn portable<T: Send + 'static>(
    dir: &Path,
    tx: Sender<T>,
    wake: fn() -> T,
) -> Result<notify::RecommendedWatcher, notify::Error> {
    use notify::Watcher;
    let mut watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
        let Ok(ev) = res else {
            return;
        };
        // The follower's own reads are reported too: only a file written or moved counts.
        if matches!(ev.kind, notify::EventKind::Access(_)) {
            return;
        }
        if ev.paths.iter().any(|p| p.file_name().is_some_and(watched)) {
            // The follower is gone when this fails; nothing is left to wake.
            let _ = tx.send(wake());
        }
    })?;
    watcher.watch(dir, notify::RecursiveMode::NonRecursive)?;
    Ok(watcher)
}

#[cfg(target_os = "linux")]
mod linux {
    use std::path::Path;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::mpsc::Sender;
    use std::sync::Arc;

    use inotify::{Inotify, WatchDescriptor, WatchMask, Watches};

    /// The inotify instance's thread; dropping this ends it.
    pub(super) struct Watcher {
        watches: Watches,
        wd: WatchDescriptor,
        stop: Arc<AtomicBool>,
    }

    impl Drop for Watcher {
        fn drop(&mut self) {
            self.stop.store(true, Ordering::Relaxed);
            // Removing the watch queues IN_IGNORED, which wakes the thread to see `stop`.
            // Err: the directory was removed (a run cleaned) and the thread has ended.
            if let Err(e) = self.watches.remove(self.wd.clone()) {
                tracing::trace!("run files watcher: {e}");
            }
        }
    }

    impl Watcher {
        pub(super) fn start<T: Send + 'static>(
            dir: &Path,
            tx: Sender<T>,
            wake: fn() -> T,
        ) -> std::io::Result<Watcher> {
            let mut inotify = Inotify::init()?;
            let mut watches = inotify.watches();
            let wd = watches.add(dir, WatchMask::MOVED_TO | WatchMask::CLOSE_WRITE)?;
            let stop = Arc::new(AtomicBool::new(false));
            let stopped = stop.clone();
            std::thread::Builder::new()
                .name("crewmux-run-files".into())
                .spawn(move || {
                    let mut buf = vec![0u8; 4096];
                    while !stopped.load(Ordering::Relaxed) {
                        let Ok(events) = inotify.read_events_blocking(&mut buf) else {
                            return;
                        };
                        let mut landed = false;
                        for ev in events {
                            if ev.mask.contains(inotify::EventMask::IGNORED) {
                                return;
                            }
                            landed |= ev.name.is_some_and(super::watched);
                        }
                        // One wake for a batch: the follower reads everything that changed.
                        if landed && tx.send(wake()).is_err() {
                            return;
                        }
                    }
                })?;
            Ok(Watcher { watches, wd, stop })
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    #[test]
    fn a_state_saved_by_rename_and_an_appended_event_wake_it_and_other_files_do_not() {
        let dir = tempfile::tempdir().unwrap();
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let _w = super::watch(dir.path(), tx, || ()).expect("the watcher starts");
        // Another file of the run directory (the lead's log): no wake.
        std::fs::write(dir.path().join("lead.log"), "a line\n").unwrap();
        assert!(rx.recv_timeout(Duration::from_millis(300)).is_err());
        // The state, written aside and renamed into place.
        let tmp = dir.path().join(".state.json.tmp");
        std::fs::write(&tmp, "{}").unwrap();
        std::fs::rename(&tmp, dir.path().join("state.json")).unwrap();
        assert!(rx.recv_timeout(Duration::from_secs(5)).is_ok());
        // An event appended.
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.path().join("events.jsonl"))
            .unwrap();
        f.write_all(b"{}\n").unwrap();
        drop(f);
        assert!(rx.recv_timeout(Duration::from_secs(5)).is_ok());
    }
}
