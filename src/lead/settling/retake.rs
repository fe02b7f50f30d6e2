//! Taking a result again. A result taken from `output.log` before the attempt's marker
//! was in it may lack the agent's last lines (see [`Retake`]); it is taken again once the
//! marker is there. Until then the council waits ([`RETAKE_WITHIN`] at most), and so do
//! the launches of workers whose prompt quotes that result (critics, fixers and the
//! synthesizer quote every result, a worker with `after` its upstreams'), so nobody judges
//! or builds on the partial result; the retake is kept in the attempt's folder
//! ([`RETAKE_FILE`]), so a driver killed in that window leaves it to the next one (a
//! reattach, or `status` on a run nobody drives) instead of losing it.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::result::{take_output, RESULT_MAX_BYTES};
use crate::domain::{RunState, WorkerKind, WorkerStatus};
use crate::engine::Input;
use crate::store::RunStore;

/// The file in an attempt's folder that keeps a pending retake (removed once it is done).
pub const RETAKE_FILE: &str = "result-retake.json";

/// What [`RETAKE_FILE`] holds: a [`Retake`] without its deadline.
#[derive(Debug, Serialize, Deserialize)]
struct Saved {
    worker: String,
    attempt: u32,
    late: bool,
    nonce: String,
    provider: Option<String>,
    taken_len: u64,
}

/// The retakes a driver waits for, and what waits for them.
#[derive(Debug, Default)]
pub(in crate::lead) struct Retakes {
    pending: Vec<Retake>,
    /// `RunCouncil` came while a retake was pending: it sits once none is.
    council_waits: bool,
    /// Launches of workers whose prompt quotes a result still to be taken again, in the
    /// order the engine asked for them.
    held: Vec<(String, u32)>,
}

impl Retakes {
    /// Hold the launch of `worker`'s `attempt` when its prompt quotes a result still to be
    /// taken again: a critic's, fixer's or synthesizer's (every result), another worker's
    /// when one of its `after` upstreams has a retake pending. True when held: it goes out
    /// once those retakes are done (`Driver::council_after_retakes`).
    pub fn hold(&mut self, state: &RunState, worker: &str, attempt: u32) -> bool {
        let Some(w) = state.worker(worker).filter(|_| !self.pending.is_empty()) else {
            return false;
        };
        let reads_all = matches!(
            w.kind,
            WorkerKind::Critic | WorkerKind::Fixer | WorkerKind::Synthesizer
        );
        if !reads_all
            && !self
                .pending
                .iter()
                .any(|r| w.flow.after.contains(&r.worker))
        {
            return false;
        }
        // The common case (the exit was settled before the log's last lines were read): not
        // for the Log.
        tracing::debug!(
            "{worker}#{attempt}: starts once the last output lines of the workers it quotes are in"
        );
        self.held.push((worker.to_string(), attempt));
        true
    }

    /// Wait for `r` (kept in its attempt folder meanwhile).
    pub fn push(&mut self, r: Retake) {
        r.keep();
        self.pending.push(r);
    }

    /// The retakes a driver before this one left pending in the current attempts' folders
    /// of `state` (it was killed before their marker came); each is due at once when its
    /// marker is in `output.log` by now, else within [`RETAKE_WITHIN`]. A file that does
    /// not read is logged and removed (the result stays as first taken).
    pub fn load(store: &RunStore, state: &RunState) -> Self {
        let now = Instant::now();
        let mut pending = vec![];
        for w in state.workers.iter().filter(|w| w.attempt > 0) {
            let dir = store.attempt_dir(&w.id, w.attempt);
            let path = dir.join(RETAKE_FILE);
            let Ok(bytes) = std::fs::read(&path) else {
                continue;
            };
            match serde_json::from_slice::<Saved>(&bytes) {
                Ok(s) if s.worker == w.id && s.attempt == w.attempt => {
                    tracing::info!("{}#{}: its result is taken again", s.worker, s.attempt);
                    pending.push(Retake {
                        worker: s.worker,
                        attempt: s.attempt,
                        late: s.late,
                        dir,
                        nonce: s.nonce,
                        provider: s.provider,
                        taken_len: s.taken_len,
                        until: now + RETAKE_WITHIN,
                    });
                }
                other => {
                    tracing::warn!(
                        "{}: not a retake of this attempt ({other:?})",
                        path.display()
                    );
                    if let Err(e) = std::fs::remove_file(&path) {
                        tracing::warn!("{}: {e}", path.display());
                    }
                }
            }
        }
        Retakes {
            pending,
            council_waits: false,
            held: vec![],
        }
    }
}

/// Longest wait for an attempt's marker in `output.log` after its result was taken without
/// it; the result is then taken again with what is there.
pub const RETAKE_WITHIN: Duration = Duration::from_secs(30);

/// How much of the end of `output.log` is read to find the marker, bytes (the wrapper
/// prints it last).
const MARKER_TAIL_BYTES: usize = 4096;

/// A result taken from `output.log` before the attempt's marker was in it. The wrapper
/// writes `exit.json` and then prints the marker, and `output.log` is what tmux's
/// `pipe-pane` has passed on so far: an exit is settled from `exit.json` at once, when
/// the last lines the agent printed may still be on their way (a busy tmux server, or
/// one stopped). Once the marker is in `output.log` (or after [`RETAKE_WITHIN`]) the
/// result is taken again when anything besides the marker came after the first take.
#[derive(Debug, Clone)]
pub(in crate::lead) struct Retake {
    pub worker: String,
    pub attempt: u32,
    /// The first take found no text (the engine has no result for the attempt yet).
    pub late: bool,
    pub dir: PathBuf,
    pub nonce: String,
    /// The worker's provider (its output format and noise patterns).
    pub provider: Option<String>,
    /// Length of `output.log` when the result was taken, bytes.
    pub taken_len: u64,
    pub until: Instant,
}

/// The attempt a [`Retake`] is for: its worker, attempt number, directory and nonce.
#[derive(Debug, Clone, Copy)]
pub(in crate::lead) struct Of<'a> {
    pub worker: &'a str,
    pub attempt: u32,
    pub dir: &'a Path,
    pub nonce: &'a str,
}

impl Retake {
    /// A retake of the result just taken (`late`: no text found) from `output.log`.
    pub fn new(of: Of<'_>, late: bool, provider: Option<String>, now: Instant) -> Self {
        let Of {
            worker,
            attempt,
            dir,
            nonce,
        } = of;
        let taken_len = std::fs::metadata(dir.join("output.log")).map_or(0, |m| m.len());
        Retake {
            worker: worker.to_string(),
            attempt,
            late,
            dir: dir.to_path_buf(),
            nonce: nonce.to_string(),
            provider,
            taken_len,
            until: now + RETAKE_WITHIN,
        }
    }

    /// The marker is in `output.log`, or the wait is over (`force`: now, whatever is
    /// there; the driver is leaving).
    pub fn due(&self, now: Instant, force: bool) -> bool {
        force || now >= self.until || marker_in(&self.dir.join("output.log"), &self.nonce)
    }

    /// Keep this retake in its attempt folder ([`RETAKE_FILE`]), so a driver that starts on
    /// the run after this one was killed redoes it (a failure is logged: the retake then
    /// lives as long as this driver).
    fn keep(&self) {
        let saved = Saved {
            worker: self.worker.clone(),
            attempt: self.attempt,
            late: self.late,
            nonce: self.nonce.clone(),
            provider: self.provider.clone(),
            taken_len: self.taken_len,
        };
        let path = self.dir.join(RETAKE_FILE);
        let kept = serde_json::to_vec(&saved)
            .map_err(|e| e.to_string())
            .and_then(|b| crate::store::write_atomic(&path, &b).map_err(|e| e.to_string()));
        if let Err(e) = kept {
            tracing::warn!("{}: {e}", path.display());
        }
    }

    /// The retake is done: its file goes.
    fn forget(&self) {
        let path = self.dir.join(RETAKE_FILE);
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => tracing::warn!("{}: {e}", path.display()),
        }
    }

    /// Take the result again when more than the marker came after the first take.
    /// Returns the input that gives the engine the result when the first take had none
    /// and this one has.
    pub fn take_again(&self, registry: &crate::providers::Registry) -> Option<Input> {
        let log = self.dir.join("output.log");
        if !grew_besides_marker(&log, self.taken_len, &self.nonce) {
            return None;
        }
        let spec = self.provider.as_deref().and_then(|p| registry.get(p));
        take_output(&self.dir, spec, true);
        tracing::debug!(
            "{}: result taken again with the end of output.log",
            self.dir.display()
        );
        let result = self.dir.join("result.md");
        (self.late && result.exists()).then(|| Input::ResultTaken {
            worker: self.worker.clone(),
            attempt: self.attempt,
            result,
        })
    }
}

impl crate::lead::Driver {
    /// Take again the results whose [`Retake`] is due (`force`: all of them, now); returns
    /// the inputs of results the engine did not have. A retake forced before its marker
    /// came (the driver leaves) keeps its file: the next driver takes the result again.
    pub(in crate::lead) fn retake_results(&mut self, force: bool) -> Vec<Input> {
        if self.retakes.pending.is_empty() {
            return vec![];
        }
        let now = Instant::now();
        let registry = &self.registry;
        let mut inputs = vec![];
        self.retakes.pending.retain(|r| {
            if !r.due(now, force) {
                return true;
            }
            let marked = marker_in(&r.dir.join("output.log"), &r.nonce);
            if !marked && now >= r.until {
                tracing::info!(
                    "{}'s last output lines did not come within {} s: its result is what came",
                    r.worker,
                    RETAKE_WITHIN.as_secs()
                );
            }
            inputs.extend(r.take_again(registry));
            if marked || now >= r.until {
                r.forget();
            }
            false
        });
        inputs
    }

    /// `RunCouncil`: the council's verdicts now, or `None` while a result is still to be
    /// taken again (the critics would judge the partial one); it then sits once none is
    /// ([`council_after_retakes`](Self::council_after_retakes)), [`RETAKE_WITHIN`] at most.
    pub(in crate::lead) fn council_or_wait(&mut self) -> Option<Input> {
        if self.retakes.pending.is_empty() {
            return Some(Input::CouncilReady(crate::lead::run_council(
                &self.state,
                &self.store,
            )));
        }
        // The common case, for a moment (the exit was settled from `exit.json` before the
        // log's last lines were read): not for the Log. A wait that runs out is said.
        tracing::debug!(
            "the council waits for {}",
            last_lines_of(&self.retakes.pending)
        );
        self.retakes.council_waits = true;
        None
    }

    /// What waited for results to be taken again, once none of theirs is pending (after
    /// the retakes' inputs were applied): held launches go to be started (those the run
    /// still wants), and the council sits; returns true when it did.
    pub(in crate::lead) fn council_after_retakes(
        &mut self,
        emit: &mut impl FnMut(crate::lead::Update),
    ) -> bool {
        let held = std::mem::take(&mut self.retakes.held);
        for (worker, attempt) in held {
            let wanted = self
                .state
                .worker(&worker)
                .is_some_and(|w| w.attempt == attempt && w.status == WorkerStatus::Starting);
            if !wanted {
                continue;
            }
            if !self.retakes.hold(&self.state, &worker, attempt) {
                self.pending_launches.push_back((worker, attempt));
            }
        }
        if !self.retakes.council_waits || !self.retakes.pending.is_empty() {
            return false;
        }
        self.retakes.council_waits = false;
        let verdicts = crate::lead::run_council(&self.state, &self.store);
        self.apply(vec![Input::CouncilReady(verdicts)], emit) > 0
    }
}

/// `a's last output lines`, `the last output lines of a and b`: what the retakes wait for.
fn last_lines_of(pending: &[Retake]) -> String {
    let names: Vec<&str> = pending.iter().map(|r| r.worker.as_str()).collect();
    match names.as_slice() {
        [one] => format!("{one}'s last output lines"),
        [init @ .., last] => format!("the last output lines of {} and {last}", init.join(", ")),
        [] => "no output".to_string(),
    }
}

/// True when the last [`MARKER_TAIL_BYTES`] of `log` hold the marker of `nonce` (read
/// from there: a log may be gigabytes).
fn marker_in(log: &Path, nonce: &str) -> bool {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut f) = std::fs::File::open(log) else {
        return false;
    };
    let len = f.metadata().map_or(0, |m| m.len());
    let from = len.saturating_sub(MARKER_TAIL_BYTES as u64);
    let mut end = Vec::with_capacity(MARKER_TAIL_BYTES);
    if let Err(e) = f
        .seek(SeekFrom::Start(from))
        .and_then(|_| f.read_to_end(&mut end))
    {
        tracing::debug!("{}: {e}", log.display());
        return false;
    }
    crate::launch::find_marker(&String::from_utf8_lossy(&end), nonce).is_some()
}

/// True when `log` has, past its first `from` bytes, a line with text other than the
/// marker of `nonce` (more than a result's worth added counts without reading it).
fn grew_besides_marker(log: &Path, from: u64, nonce: &str) -> bool {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut f) = std::fs::File::open(log) else {
        return false;
    };
    let len = f.metadata().map_or(0, |m| m.len());
    if len <= from {
        return false;
    }
    if len - from > RESULT_MAX_BYTES as u64 {
        return true;
    }
    let mut added = Vec::new();
    if let Err(e) = f
        .seek(SeekFrom::Start(from))
        .and_then(|_| f.read_to_end(&mut added))
    {
        tracing::debug!("{}: {e}", log.display());
        return true;
    }
    let text = crate::launch::strip_ansi(&String::from_utf8_lossy(&added));
    text.lines()
        .map(str::trim)
        .any(|l| !l.is_empty() && crate::launch::find_marker(l, nonce).is_none())
}

#[cfg(test)]
#[path = "retake_tests.rs"]
mod tests;
