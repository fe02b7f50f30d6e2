//! A scripted multiplexer for driver tests: attempts are steps (print, ask, exit) that
//! advance one per poll and leave the same files a real attempt leaves (`output.log`,
//! `exit.json`). The world outlives any one driver, as a tmux server outlives a crashed
//! crewmux, so a test can stop a driver and attach a new one to the same attempts.

use std::collections::{HashMap, VecDeque};
use std::io::Write;
use std::sync::{Arc, Mutex};

use crate::backend::{Liveness, Multiplexer, Poll, SpawnSpec, Spawned, Target};
use crate::domain::BackendKind;
use crate::error::{Error, Result};

/// One step of a scripted attempt.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Print a line.
    Print(String),
    /// Ask a question (the sim agent's protocol line) and wait for an answer.
    Ask(String),
    /// Write `exit.json` and the marker, then be dead with this status.
    Exit(i32),
}

/// A panic payload: a poll past the bound the test allowed.
#[derive(Debug)]
pub struct Stuck;

struct Attempt {
    pane: String,
    nonce: String,
    log: std::path::PathBuf,
    dir: std::path::PathBuf,
    steps: VecDeque<Step>,
    waiting: bool,
    exited: Option<i32>,
}

#[derive(Default)]
struct World {
    /// Steps by (worker, attempt); an attempt not scripted prints a line and exits 0.
    script: HashMap<(String, u32), Vec<Step>>,
    attempts: Vec<Attempt>,
    next_pane: u32,
    /// Polls since the bound was last reset, and the bound (`None`: unbounded).
    polls: u32,
    bound: Option<u32>,
    /// Every answer pasted, by worker.
    pub answers: Vec<(String, String)>,
}

/// Shared handle on the fake world; each driver gets its own [`FakeMux`] on it.
#[derive(Clone, Default)]
pub struct FakeWorld(Arc<Mutex<World>>);

impl FakeWorld {
    pub fn script(&self, worker: &str, attempt: u32, steps: Vec<Step>) {
        self.0
            .lock()
            .unwrap()
            .script
            .insert((worker.to_string(), attempt), steps);
    }

    /// A multiplexer for one driver.
    pub fn mux(&self) -> Box<dyn Multiplexer> {
        Box::new(FakeMux(self.clone()))
    }

    /// Polls since the bound was last reset (every poll when it never was).
    pub fn polls(&self) -> u32 {
        self.0.lock().unwrap().polls
    }

    /// Allow `n` more polls, then panic with [`Stuck`].
    pub fn bound(&self, n: Option<u32>) {
        let mut w = self.0.lock().unwrap();
        w.polls = 0;
        w.bound = n;
    }

    /// Each attempt's pane, whether it waits for an answer, its exit, and the answers.
    pub fn describe(&self) -> String {
        let w = self.0.lock().unwrap();
        let rows: Vec<String> = w
            .attempts
            .iter()
            .map(|a| {
                format!(
                    "{} {} waiting={} exited={:?} left={}",
                    a.pane,
                    a.dir.display(),
                    a.waiting,
                    a.exited,
                    a.steps.len()
                )
            })
            .collect();
        format!("{}\nanswers: {:?}", rows.join("\n"), w.answers)
    }
}

pub struct FakeMux(FakeWorld);

fn append(path: &std::path::Path, text: &str) {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

impl Attempt {
    /// Take one step unless waiting for an answer or exited.
    fn advance(&mut self) {
        if self.waiting || self.exited.is_some() {
            return;
        }
        match self.steps.pop_front().unwrap_or(Step::Exit(0)) {
            Step::Print(line) => append(&self.log, &format!("{line}\n")),
            Step::Ask(q) => {
                append(
                    &self.log,
                    &format!("{}{q}\n", crate::domain::clarification::ASK_PREFIX),
                );
                self.waiting = true;
            }
            Step::Exit(code) => {
                let rec = format!(
                    "{{\"schema_version\":1,\"code\":{code},\"nonce\":\"{}\"}}\n",
                    self.nonce
                );
                std::fs::write(self.dir.join("exit.json"), rec).unwrap();
                append(
                    &self.log,
                    &format!("\n__CREWMUX_EXIT_{}__:{code}\n", self.nonce),
                );
                self.exited = Some(code);
            }
        }
    }
}

impl Multiplexer for FakeMux {
    fn kind(&self) -> BackendKind {
        BackendKind::Tmux
    }

    fn spawn(&mut self, spec: &SpawnSpec) -> Result<Spawned> {
        let mut w = self.0 .0.lock().unwrap();
        w.next_pane += 1;
        let pane = format!("%{}", w.next_pane);
        let steps = w
            .script
            .get(&(spec.worker.clone(), spec.attempt))
            .cloned()
            .unwrap_or_else(|| vec![Step::Print(format!("{} works", spec.worker)), Step::Exit(0)]);
        let dir = spec.log.parent().unwrap().to_path_buf();
        w.attempts.push(Attempt {
            pane: pane.clone(),
            nonce: spec.nonce.clone(),
            log: spec.log.clone(),
            dir,
            steps: steps.into(),
            waiting: false,
            exited: None,
        });
        Ok(Spawned {
            pane_id: Some(pane),
            pid: None,
        })
    }

    fn poll(&mut self, targets: &[Target], _focus: Option<&Target>) -> Poll {
        let mut w = self.0 .0.lock().unwrap();
        w.polls += 1;
        if w.bound.is_some_and(|b| w.polls > b) {
            drop(w);
            std::panic::panic_any(Stuck);
        }
        // Every attempt moves on, watched or not (an orphan of a crashed driver too).
        for a in w.attempts.iter_mut() {
            a.advance();
        }
        let liveness = targets
            .iter()
            .map(|t| {
                match w
                    .attempts
                    .iter()
                    .find(|a| Some(&a.pane) == t.pane_id.as_ref())
                {
                    Some(a) => match a.exited {
                        Some(code) => Liveness::Dead { status: Some(code) },
                        None => Liveness::Alive,
                    },
                    None => Liveness::Gone,
                }
            })
            .collect();
        Poll {
            liveness,
            ..Poll::default()
        }
    }

    fn send_text(&mut self, target: &Target, text: &str) -> Result<()> {
        let mut w = self.0 .0.lock().unwrap();
        w.answers.push((target.worker.clone(), text.to_string()));
        let a = w
            .attempts
            .iter_mut()
            .find(|a| Some(&a.pane) == target.pane_id.as_ref() && a.exited.is_none())
            .ok_or_else(|| Error::Other(format!("no live pane for {}", target.worker)))?;
        if a.waiting {
            a.waiting = false;
            append(&a.log, &format!("got the answer: {text}\n"));
        }
        Ok(())
    }

    fn end_stale_attempt(&mut self, nonce: &str) -> Vec<u32> {
        let mut w = self.0 .0.lock().unwrap();
        for a in w.attempts.iter_mut().filter(|a| a.nonce == nonce) {
            a.exited.get_or_insert(137);
            a.waiting = false;
        }
        vec![]
    }

    fn attach_command(&self, _target: &Target) -> Option<std::process::Command> {
        None
    }
}
