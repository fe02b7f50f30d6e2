//! Waking the loop when an attempt's `exit.json` appears, so an exit is seen in
//! milliseconds instead of at the next poll.
//!
//! On Linux the watcher asks inotify (inotify(7)) only for what tells that a file landed:
//! a file closed after writing or moved into an attempt directory (the launch wrapper
//! writes `.exit.json.tmp` and renames it; a file brought back from a host is written in
//! place), and a directory created or moved in. It does not ask for writes or opens: every
//! line a worker prints is a write to the `output.log` beside its `exit.json`, and a
//! general recursive watcher (the `notify` crate's, which asks for both) woke up and built
//! an event for each one, 640 a second for 64 workers printing 10 lines a second, most of
//! what a printing run cost this process.
//!
//! Watched: `workers/` (new worker directories), each `workers/<id>/` (new attempt
//! directories) and each `workers/<id>/attempt-<n>/`.
//!
//! The same watcher wakes the loop ([`Wake::Channel`]) for what an agent or another process
//! says between ticks: a question or approval the attempt's MCP server wrote
//! (`attempt-<n>/mcp/ask-*.json`, renamed into place), a line its hooks or `progress`
//! appended (`hooks.jsonl`, `progress.jsonl`, closed after writing) and a request appended to
//! the run's `inbox.jsonl` (`crewmux answer`, `steer`, `cancel`), so a question shows and an
//! answer goes out in milliseconds instead of at the next tick (docs/mcp.md). A directory that appears is watched
//! first and looked into after, so an `exit.json` written before its watch existed still
//! wakes the loop. Elsewhere the `notify` crate's recommended watcher is used, as before.

use std::path::Path;
use std::sync::mpsc::Sender;

use crate::lead::Wake;

/// The file whose arrival wakes the loop.
const EXIT_FILE: &str = "exit.json";

/// Whether a file of an attempt's `mcp/` folder that was written or renamed into place is
/// news for the loop: a question or approval, a hook's or `progress` line.
fn channel_news(name: &str) -> bool {
    (name.starts_with("ask-") && name.ends_with(".json"))
        || name == "hooks.jsonl"
        || name == "progress.jsonl"
}

/// The run's request file, beside `workers/`.
const INBOX_FILE: &str = "inbox.jsonl";

/// The running watcher; dropping it ends it.
pub(in crate::lead) struct ExitFiles {
    #[cfg(target_os = "linux")]
    _inner: linux::Watcher,
    #[cfg(not(target_os = "linux"))]
    _inner: notify::RecommendedWatcher,
}

/// Watch `dir` (a run's `workers/`, created when missing) for `exit.json` files; each one
/// that lands is sent as [`Wake::ExitFile`] with its path. `None` (exits are then seen by
/// polling, said in the log) when the watcher cannot start.
pub(in crate::lead) fn watch(dir: &Path, tx: Sender<Wake>) -> Option<ExitFiles> {
    if let Err(e) = std::fs::create_dir_all(dir) {
        tracing::warn!("cannot create {}: {e}", dir.display());
    }
    #[cfg(target_os = "linux")]
    let inner = linux::Watcher::start(dir, tx);
    #[cfg(not(target_os = "linux"))]
    let inner = portable(dir, tx);
    inner
        .map_err(|e| {
            tracing::warn!(
                "cannot watch {} ({e}); exits are seen by polling",
                dir.display()
            )
        })
        .ok()
        .map(|_inner| ExitFiles { _inner })
}

#[cfg(not(target_os = "linux"))]
fn portable(dir: &Path, tx: Sender<Wake>) -> Result<notify::RecommendedWatcher, notify::Error> {
    use notify::Watcher;
    let mut watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
        let Ok(ev) = res else {
            return;
        };
        // Opens are reported too (the loop's own read of an `exit.json` among them): only a
        // file that appeared or was written counts.
        if matches!(
            ev.kind,
            notify::EventKind::Access(notify::event::AccessKind::Open(_))
        ) {
            return;
        }
        for p in ev.paths {
            if p.file_name().is_some_and(|n| n == EXIT_FILE) {
                // The loop is gone when this fails; its exit is all that matters then.
                let _ = tx.send(Wake::ExitFile(p));
            }
        }
    })?;
    watcher.watch(dir, notify::RecursiveMode::Recursive)?;
    Ok(watcher)
}

#[cfg(target_os = "linux")]
mod linux {
    use std::collections::HashMap;
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::mpsc::Sender;
    use std::sync::Arc;

    use inotify::{EventMask, Inotify, WatchDescriptor, WatchMask, Watches};

    use super::{channel_news, Wake, EXIT_FILE, INBOX_FILE};

    /// How deep a watched directory is under `workers/`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Level {
        /// `workers/`: its new directories are workers.
        Workers,
        /// `workers/<id>/`: its new directories are attempts.
        Worker,
        /// `workers/<id>/attempt-<n>/`: where `exit.json` lands.
        Attempt,
        /// `workers/<id>/attempt-<n>/mcp/`: the attempt's MCP and hooks files.
        Mcp,
        /// The run directory, above `workers/`: its `inbox.jsonl`.
        Run,
    }

    impl Level {
        fn below(self) -> Option<Level> {
            match self {
                Level::Workers => Some(Level::Worker),
                Level::Worker => Some(Level::Attempt),
                Level::Attempt => Some(Level::Mcp),
                Level::Mcp | Level::Run => None,
            }
        }

        /// Whether a directory `name` below one of this level is watched: every worker
        /// and attempt, and only an attempt's `mcp/`.
        fn takes(self, name: &std::ffi::OsStr) -> bool {
            self != Level::Attempt || name == "mcp"
        }

        fn mask(self) -> WatchMask {
            let dirs = WatchMask::CREATE | WatchMask::MOVED_TO | WatchMask::ONLYDIR;
            match self {
                Level::Attempt => dirs | WatchMask::CLOSE_WRITE,
                Level::Mcp | Level::Run => {
                    WatchMask::CLOSE_WRITE | WatchMask::MOVED_TO | WatchMask::ONLYDIR
                }
                _ => dirs,
            }
        }
    }

    /// The watched directories by watch, and where wake-ups go.
    struct Tree {
        watches: Watches,
        dirs: HashMap<WatchDescriptor, (PathBuf, Level)>,
        tx: Sender<Wake>,
    }

    impl Tree {
        /// Watch `dir` and what is already below it. With `look`, an `exit.json` already
        /// in an attempt directory wakes the loop (it may have landed before the watch);
        /// the first walk leaves existing ones to the driver's own start-up look.
        /// Returns false when the loop is gone.
        fn add(&mut self, dir: &Path, level: Level, look: bool) -> bool {
            match self.watches.add(dir, level.mask()) {
                Ok(wd) => {
                    self.dirs.insert(wd, (dir.to_path_buf(), level));
                }
                // Removed meanwhile (a run cleaned), or out of watches: that attempt's
                // exit is seen by the loop's periodic look.
                Err(e) => {
                    tracing::debug!("cannot watch {}: {e}", dir.display());
                    return true;
                }
            }
            if level == Level::Attempt {
                let exit = dir.join(EXIT_FILE);
                if look && exit.exists() && self.tx.send(Wake::ExitFile(exit)).is_err() {
                    return false;
                }
            }
            match level.below() {
                Some(next) => {
                    let subdirs: Vec<PathBuf> = std::fs::read_dir(dir)
                        .into_iter()
                        .flatten()
                        .flatten()
                        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                        .filter(|e| level.takes(&e.file_name()))
                        .map(|e| e.path())
                        .collect();
                    subdirs.iter().all(|d| self.add(d, next, look))
                }
                // A question written before its folder was watched is read at the tick.
                None => true,
            }
        }
    }

    /// The inotify instance's thread; dropping this ends it.
    pub(in crate::lead) struct Watcher {
        watches: Watches,
        root: WatchDescriptor,
        stop: Arc<AtomicBool>,
    }

    impl Drop for Watcher {
        fn drop(&mut self) {
            self.stop.store(true, Ordering::Relaxed);
            // Removing the root's watch queues IN_IGNORED, which wakes the thread to see
            // `stop`. Err: the root's watch is gone already (its directory was removed),
            // and the thread ended when it was told so.
            if let Err(e) = self.watches.remove(self.root.clone()) {
                tracing::trace!("exit watcher: {e}");
            }
        }
    }

    impl Watcher {
        pub(in crate::lead) fn start(dir: &Path, tx: Sender<Wake>) -> std::io::Result<Watcher> {
            let mut inotify = Inotify::init()?;
            let watches = inotify.watches();
            let mut tree = Tree {
                watches: inotify.watches(),
                dirs: HashMap::new(),
                tx,
            };
            let root = tree.watches.add(dir, Level::Workers.mask())?;
            tree.add(dir, Level::Workers, false);
            if let Some(run) = dir.parent() {
                if let Ok(wd) = tree.watches.add(run, Level::Run.mask()) {
                    tree.dirs.insert(wd, (run.to_path_buf(), Level::Run));
                }
            }
            let stop = Arc::new(AtomicBool::new(false));
            let stopped = stop.clone();
            let (root_wd, mut buf) = (root.clone(), vec![0u8; 16 * 1024]);
            std::thread::Builder::new()
                .name("crewmux-exits".into())
                .spawn(move || loop {
                    let events = match inotify.read_events_blocking(&mut buf) {
                        Ok(events) => events,
                        Err(e) => {
                            tracing::warn!("exit watcher: {e}; exits are seen by polling");
                            return;
                        }
                    };
                    if stopped.load(Ordering::Relaxed) {
                        return;
                    }
                    for ev in events {
                        if ev.mask.contains(EventMask::Q_OVERFLOW) {
                            tracing::debug!(
                                "exit watcher: queue overflowed; the loop looks every 2 s"
                            );
                        }
                        if ev.mask.contains(EventMask::IGNORED) {
                            if ev.wd == root_wd {
                                return;
                            }
                            tree.dirs.remove(&ev.wd);
                            continue;
                        }
                        let (Some(name), Some((dir, level))) = (ev.name, tree.dirs.get(&ev.wd))
                        else {
                            continue;
                        };
                        let (path, level) = (dir.join(name), *level);
                        let alive = if ev.mask.contains(EventMask::ISDIR) {
                            !level.takes(name)
                                || level.below().is_none_or(|next| tree.add(&path, next, true))
                        } else if level == Level::Attempt && name == EXIT_FILE {
                            tree.tx.send(Wake::ExitFile(path)).is_ok()
                        } else if (level == Level::Mcp && name.to_str().is_some_and(channel_news))
                            || (level == Level::Run && name == INBOX_FILE)
                        {
                            tree.tx.send(Wake::Channel).is_ok()
                        } else {
                            true
                        };
                        if !alive {
                            return;
                        }
                    }
                })?;
            Ok(Watcher {
                watches,
                root,
                stop,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
    use std::time::Duration;

    use super::*;

    /// The next wake-up's path, or `None` when none came within `ms`.
    fn next(rx: &Receiver<Wake>, ms: u64) -> Option<std::path::PathBuf> {
        match rx.recv_timeout(Duration::from_millis(ms)) {
            Ok(Wake::ExitFile(p)) => Some(p),
            Ok(_) => panic!("only exit files are sent"),
            Err(_) => None,
        }
    }

    /// As the launch wrapper does: a temporary file renamed to `exit.json`.
    fn write_exit(attempt: &Path) {
        std::fs::write(attempt.join(".exit.json.tmp"), "{}\n").unwrap();
        std::fs::rename(attempt.join(".exit.json.tmp"), attempt.join(EXIT_FILE)).unwrap();
    }

    #[test]
    fn an_exit_file_wakes_the_loop_and_output_lines_do_not() {
        let tmp = tempfile::tempdir().unwrap();
        let workers = tmp.path().join("workers");
        let (tx, rx) = channel();
        let _w = watch(&workers, tx).expect("inotify works here");
        let attempt = workers.join("w1").join("attempt-1");
        std::fs::create_dir_all(&attempt).unwrap();
        let mut log = std::fs::File::create(attempt.join("output.log")).unwrap();
        for i in 0..50 {
            std::io::Write::write_all(&mut log, format!("line {i}\n").as_bytes()).unwrap();
        }
        assert_eq!(next(&rx, 300), None, "output lines wake nothing");
        write_exit(&attempt);
        assert_eq!(next(&rx, 10_000), Some(attempt.join(EXIT_FILE)));
        // A second attempt of the same worker, and a file written in place (from a host).
        let second = workers.join("w1").join("attempt-2");
        std::fs::create_dir(&second).unwrap();
        std::fs::write(second.join(EXIT_FILE), "{}\n").unwrap();
        assert_eq!(next(&rx, 10_000), Some(second.join(EXIT_FILE)));
    }

    #[test]
    fn an_exit_file_already_there_when_its_directory_appears_wakes_the_loop() {
        let tmp = tempfile::tempdir().unwrap();
        let workers = tmp.path().join("workers");
        let (tx, rx) = channel();
        let _w = watch(&workers, tx).expect("inotify works here");
        // The whole worker directory arrives at once, its exit file written before any
        // watch could be on it.
        let elsewhere = tmp.path().join("w2");
        std::fs::create_dir_all(elsewhere.join("attempt-1")).unwrap();
        write_exit(&elsewhere.join("attempt-1"));
        std::fs::rename(&elsewhere, workers.join("w2")).unwrap();
        assert_eq!(
            next(&rx, 10_000),
            Some(workers.join("w2").join("attempt-1").join(EXIT_FILE))
        );
    }

    #[test]
    fn dropping_the_watcher_ends_its_thread() {
        let tmp = tempfile::tempdir().unwrap();
        let (tx, rx) = channel::<Wake>();
        let w = watch(&tmp.path().join("workers"), tx).expect("inotify works here");
        drop(w);
        // The thread held the only sender: it is gone once the thread ended.
        assert!(matches!(
            rx.recv_timeout(Duration::from_secs(10)),
            Err(RecvTimeoutError::Disconnected)
        ));
    }

    /// Whether a channel wake-up came within `ms` (other wake-ups fail the test).
    fn woke(rx: &Receiver<Wake>, ms: u64) -> bool {
        match rx.recv_timeout(Duration::from_millis(ms)) {
            Ok(Wake::Channel) => true,
            Ok(_) => panic!("only channel wake-ups are expected here"),
            Err(_) => false,
        }
    }

    #[test]
    fn a_question_a_hook_line_and_an_inbox_request_wake_the_loop_and_replies_do_not() {
        let tmp = tempfile::tempdir().unwrap();
        let workers = tmp.path().join("workers");
        let (tx, rx) = channel();
        let _w = watch(&workers, tx).expect("inotify works here");
        let mcp = workers.join("w1").join("attempt-1").join("mcp");
        std::fs::create_dir_all(&mcp).unwrap();
        // Let the new folders' watches land (a question before them waits for the tick).
        std::thread::sleep(Duration::from_millis(200));
        // The lead's own files there (replies, the server's record) wake nothing.
        std::fs::write(mcp.join(".reply-1-1.json.tmp"), "{}").unwrap();
        std::fs::rename(mcp.join(".reply-1-1.json.tmp"), mcp.join("reply-1-1.json")).unwrap();
        std::fs::write(mcp.join("server-1.json"), "{}").unwrap();
        assert!(!woke(&rx, 300), "replies wake nothing");
        // A question renamed into place, as the MCP server writes it.
        std::fs::write(mcp.join(".ask-1-1.json.tmp"), "{}").unwrap();
        std::fs::rename(mcp.join(".ask-1-1.json.tmp"), mcp.join("ask-1-1.json")).unwrap();
        assert!(woke(&rx, 10_000), "a question wakes the loop");
        // A hook's line, appended by `crewmux hook-event`.
        std::fs::write(mcp.join("hooks.jsonl"), "{}\n").unwrap();
        assert!(woke(&rx, 10_000), "a hook line wakes the loop");
        // A request another process appended to the run's inbox.
        std::fs::write(tmp.path().join("inbox.jsonl"), "{}\n").unwrap();
        assert!(woke(&rx, 10_000), "an inbox request wakes the loop");
        // Other folders of an attempt are not watched.
        let home = workers.join("w1").join("attempt-1").join("home");
        std::fs::create_dir_all(&home).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        std::fs::write(home.join("hooks.jsonl"), "{}\n").unwrap();
        assert!(!woke(&rx, 300), "only the attempt's mcp folder is watched");
    }
}
