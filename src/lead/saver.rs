//! Saving the run state off the loop: the loop hands a copy of the state (shared with the
//! snapshot it shows, never copied again here) to a thread of its own that writes
//! `state.json` (serialising, fsync and rename cost milliseconds on a
//! large run; an exit must not wait for them). Saves that pile up while one is written
//! are folded into the newest. Offline commands save in place.

use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::domain::RunState;
use crate::error::{IoContext, Result};
use crate::store::{Aside, RunStore, StateWriter};

enum Job {
    Save(Arc<RunState>),
    /// Answered once every save sent before it is written.
    Flush(Sender<()>),
}

/// What saving has to tell the driver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Said {
    /// A save failed: the line for the person.
    Failed(String),
    /// `state.json` cannot be read and is kept: saves go aside from now on (told once).
    Aside(Aside),
}

impl Said {
    fn of(saved: Result<Option<Aside>>) -> Option<Said> {
        match saved {
            Ok(aside) => aside.map(Said::Aside),
            Err(e) => Some(Said::Failed(format!("could not save the run state: {e}"))),
        }
    }
}

const STOPPED: &str = "the state saver stopped; the run state is not saved";

/// Where the driver's saves go.
pub(super) enum Saves {
    /// In place, on the caller's thread.
    Here(StateWriter),
    /// On the saver thread.
    Thread(Saver),
}

impl Saves {
    pub(super) fn here(store: RunStore) -> Self {
        Saves::Here(StateWriter::new(store))
    }

    /// True when saves go to the saver thread.
    pub(super) fn on_thread(&self) -> bool {
        matches!(self, Saves::Thread(_))
    }

    /// Save `state` (on the thread: later, from `shared` when the caller has that copy of
    /// it already). Returns what saves finished since the last call have to tell.
    pub(super) fn save(&mut self, state: &RunState, shared: Option<&Arc<RunState>>) -> Vec<Said> {
        match self {
            Saves::Here(w) => Said::of(w.save(state)).into_iter().collect(),
            Saves::Thread(s) => {
                let copy = shared.map_or_else(|| Arc::new(state.clone()), Arc::clone);
                if s.jobs.send(Job::Save(copy)).is_err() {
                    return vec![Said::Failed(STOPPED.into())];
                }
                s.said.try_iter().collect()
            }
        }
    }

    /// What saves finished since the last call have to tell, without saving (the loop
    /// asks each turn: a run that saves no more still hears of its last save).
    pub(super) fn told(&mut self) -> Vec<Said> {
        match self {
            Saves::Here(_) => vec![],
            Saves::Thread(s) => s.said.try_iter().collect(),
        }
    }

    /// Wait until every save asked for is on disk; returns what was not told yet.
    pub(super) fn flush(&mut self) -> Vec<Said> {
        match self {
            Saves::Here(_) => vec![],
            Saves::Thread(s) => {
                let (tx, rx) = mpsc::channel();
                if s.jobs.send(Job::Flush(tx)).is_err() || rx.recv().is_err() {
                    return vec![Said::Failed(STOPPED.into())];
                }
                s.said.try_iter().collect()
            }
        }
    }

    /// Move saves to a thread of their own (for the loop).
    ///
    /// # Errors
    /// The thread cannot start.
    pub(super) fn start_thread(&mut self, store: &RunStore) -> Result<()> {
        if let Saves::Here(_) = self {
            let writer = match std::mem::replace(self, Saves::here(store.clone())) {
                Saves::Here(w) => w,
                Saves::Thread(_) => StateWriter::new(store.clone()),
            };
            *self = Saves::Thread(Saver::start(writer)?);
        }
        Ok(())
    }
}

/// The saver thread and its queues. Dropping it writes what is queued and joins it.
pub(super) struct Saver {
    jobs: Sender<Job>,
    said: Receiver<Said>,
    thread: Option<JoinHandle<()>>,
}

impl Saver {
    fn start(mut writer: StateWriter) -> Result<Self> {
        let (jobs, rx) = mpsc::channel::<Job>();
        let (said_tx, said) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("crewmux-saver".into())
            .spawn(move || {
                let mut next = rx.recv().ok();
                while let Some(job) = next.take() {
                    match job {
                        Job::Save(mut state) => {
                            // Only the newest of the saves waiting matters.
                            loop {
                                match rx.try_recv() {
                                    Ok(Job::Save(newer)) => state = newer,
                                    Ok(flush) => {
                                        next = Some(flush);
                                        break;
                                    }
                                    Err(_) => break,
                                }
                            }
                            if let Some(s) = Said::of(writer.save(&state)) {
                                // The loop is gone when this fails; nobody is left to tell.
                                let _ = said_tx.send(s);
                            }
                        }
                        Job::Flush(done) => {
                            // A flusher that stopped waiting needs no answer.
                            let _ = done.send(());
                        }
                    }
                    if next.is_none() {
                        next = rx.recv().ok();
                    }
                }
            })
            .on("cannot start the state saver thread")?;
        Ok(Saver {
            jobs,
            said,
            thread: Some(thread),
        })
    }
}

impl Drop for Saver {
    fn drop(&mut self) {
        // Closing the queue ends the thread once it has written what is queued: a saver of
        // an earlier driver must never write after the next one took the run.
        let (tx, _) = mpsc::channel();
        drop(std::mem::replace(&mut self.jobs, tx));
        if let Some(t) = self.thread.take() {
            if t.join().is_err() {
                tracing::warn!("the state saver thread panicked");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saves_going_aside_are_told_once_without_another_save() {
        let tmp = tempfile::tempdir().unwrap();
        let store = RunStore::create(tmp.path(), "r").unwrap();
        let mut saves = Saves::here(store.clone());
        saves.start_thread(&store).unwrap();
        let state = crate::engine::tests::run(1, 1);
        assert_eq!(saves.save(&state, None), vec![]);
        assert_eq!(saves.flush(), vec![]);
        std::fs::write(store.state_path(), b"{broken").unwrap();
        assert_eq!(saves.save(&state, None), vec![]);
        // The run may save no more (it ended): the loop hears of it all the same.
        let mut told = vec![];
        for _ in 0..100 {
            told.extend(saves.told());
            if !told.is_empty() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert!(matches!(told.as_slice(), [Said::Aside(a)] if a.side == store.aside_path()));
        saves.save(&state, None);
        assert_eq!(saves.flush(), vec![]);
        assert_eq!(std::fs::read(store.state_path()).unwrap(), b"{broken");
    }
}
