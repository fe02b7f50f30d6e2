//! The team's checks on a race's candidates (`Effect::RaceChecks`, `engine::race`): each
//! check runs in each completed candidate's own worktree, [`AT_ONCE`] at a time on a
//! thread of their own so the loop goes on meanwhile, each in a private process group
//! killed whole at the check's timeout. Each run's output is kept in
//! `<run>/race/<task>/<candidate>-<check>.log`; the results come back as
//! `Input::RaceChecked` at the loop's next turn after they are all in. Every check process
//! carries the race's own `CREWMUX_ATTEMPT_NONCE` ([`nonce`]), so the checks a driver left
//! running (it was killed, or the loop ended) are found and ended by the next one before it
//! runs them again, and by the loop's end.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::domain::RaceCheck;
use crate::engine::Input;
use crate::lead::Driver;

/// Check runs going at once: a check is often a build, and two cores are common.
pub const AT_ONCE: usize = 2;

/// The nonce every check process of race `task` of run `run_id` carries.
pub fn nonce(run_id: &str, task: &str) -> String {
    format!("race-{run_id}-{task}")
}

/// One check to run on one candidate.
#[derive(Debug, Clone)]
struct Job {
    nonce: String,
    candidate: String,
    check: String,
    argv: Vec<String>,
    cwd: PathBuf,
    timeout: Duration,
    log: PathBuf,
}

/// Each candidate's check results, by candidate id.
type Results = BTreeMap<String, Vec<RaceCheck>>;

/// Race checks running on their thread, by task.
#[derive(Default)]
pub(in crate::lead) struct RaceChecks {
    running: Vec<(String, JoinHandle<Results>)>,
}

impl Driver {
    /// Start the team's checks on `candidates` of race `task`.
    pub(in crate::lead) fn start_race_checks(&mut self, task: String, candidates: Vec<String>) {
        let logs = self.store.dir().join("race").join(&task);
        let nonce = nonce(&self.state.run_id, &task);
        // What an earlier driver of the run left running of them.
        crate::backend::reap::signal_attempt(&nonce, nix::sys::signal::Signal::SIGKILL);
        let mut jobs = Vec::new();
        for c in &candidates {
            let Some(w) = self.state.worker(c) else {
                continue;
            };
            // The candidate's own tree (a check's `cwd` stays relative to it).
            let top = self
                .state
                .workspace
                .as_ref()
                .and_then(|ws| ws.workers.get(&w.id).map(|x| ws.cwd_in(&x.path)))
                .unwrap_or_else(|| self.state.project_dir.clone());
            for check in &self.state.checks {
                jobs.push(Job {
                    nonce: nonce.clone(),
                    candidate: c.clone(),
                    check: check.id.clone(),
                    argv: check.command.clone(),
                    cwd: check
                        .cwd
                        .as_ref()
                        .map_or_else(|| top.clone(), |d| top.join(d)),
                    timeout: Duration::from_secs(
                        check
                            .timeout_s
                            .filter(|s| *s > 0)
                            .unwrap_or(crate::team::limits::DEFAULT_CHECK_TIMEOUT_S),
                    ),
                    log: logs.join(format!("{c}-{}.log", check.id)),
                });
            }
        }
        let _ = std::fs::create_dir_all(&logs);
        let handle = std::thread::spawn(move || run_all(&jobs, &candidates));
        self.race_checks.running.push((task, handle));
    }

    /// End every race check still running (the loop is over: nobody takes their results).
    pub(in crate::lead) fn end_race_checks(&mut self) {
        for (task, _) in std::mem::take(&mut self.race_checks.running) {
            let nonce = nonce(&self.state.run_id, &task);
            crate::backend::reap::signal_attempt(&nonce, nix::sys::signal::Signal::SIGKILL);
        }
    }

    /// The results of the races whose checks have all ended, as inputs.
    pub(in crate::lead) fn race_check_results(&mut self) -> Vec<Input> {
        let (done, running): (Vec<_>, Vec<_>) = std::mem::take(&mut self.race_checks.running)
            .into_iter()
            .partition(|(_, h)| h.is_finished());
        self.race_checks.running = running;
        done.into_iter()
            .map(|(task, h)| Input::RaceChecked {
                task,
                // A thread that panicked ran no check to the end: every candidate has none.
                results: h.join().unwrap_or_default(),
            })
            .collect()
    }
}

/// Run `jobs`, [`AT_ONCE`] at a time; every candidate of `candidates` gets an entry (empty
/// when the team's checks gave it none).
fn run_all(jobs: &[Job], candidates: &[String]) -> Results {
    let mut results: Results = candidates.iter().map(|c| (c.clone(), Vec::new())).collect();
    for chunk in jobs.chunks(AT_ONCE) {
        let done: Vec<(String, RaceCheck)> = std::thread::scope(|s| {
            let handles: Vec<_> = chunk.iter().map(|j| s.spawn(|| run_one(j))).collect();
            handles
                .into_iter()
                .zip(chunk)
                .map(|(h, j)| {
                    let r = h.join().unwrap_or_else(|_| RaceCheck {
                        check: j.check.clone(),
                        passed: false,
                        code: None,
                        note: "the check's runner failed".into(),
                    });
                    (j.candidate.clone(), r)
                })
                .collect()
        });
        for (c, r) in done {
            results.entry(c).or_default().push(r);
        }
    }
    results
}

/// One check in its own process group, its output into its log; killed at its timeout.
fn run_one(j: &Job) -> RaceCheck {
    use std::os::unix::process::CommandExt;
    let fail = |note: String| RaceCheck {
        check: j.check.clone(),
        passed: false,
        code: None,
        note,
    };
    let Some((program, args)) = j.argv.split_first() else {
        return fail("the check has no command".into());
    };
    let log = match std::fs::File::create(&j.log) {
        Ok(f) => f,
        Err(e) => return fail(format!("cannot write {}: {e}", j.log.display())),
    };
    let err = match log.try_clone() {
        Ok(f) => f,
        Err(e) => return fail(format!("cannot write {}: {e}", j.log.display())),
    };
    let spawned = Command::new(program)
        .args(args)
        .current_dir(&j.cwd)
        .env(crate::launch::ATTEMPT_ENV, &j.nonce)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(err)
        .process_group(0)
        .spawn();
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => return fail(format!("`{program}` did not start: {e}")),
    };
    let deadline = Instant::now() + j.timeout;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                return RaceCheck {
                    check: j.check.clone(),
                    passed: status.success(),
                    code: status.code(),
                    note: String::new(),
                }
            }
            Ok(None) if Instant::now() >= deadline => {
                // Err: the group is gone already; the wait below reaps the child anyway.
                let _ = crate::backend::signal_group(child.id(), true);
                let _ = child.kill();
                let _ = child.wait();
                return fail(format!("timed out after {}s", j.timeout.as_secs()));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => return fail(format!("cannot wait for it: {e}")),
        }
    }
}
