//! `[notify] command`: the person's own program, run once per notification to forward it
//! (ntfy, a chat hook, a phone). It is an argv (no shell), started with the notification
//! as one line of JSON on its standard input ([`super::Notification`]), `CREWMUX_EVENT`
//! (its kind) and `CREWMUX_RUN` (the run's id) in its environment, its standard output
//! thrown away. It runs on a thread of its own, one notification after the other, in a
//! process group of its own; one that runs longer than the timeout is killed with its
//! group (SIGKILL). A command that cannot be started, exits non-zero or is killed is one
//! line for the run's log, never an error of the run.

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::time::Duration;

use wait_timeout::ChildExt;

use super::Notification;

/// The environment variable with the notification's kind.
pub const EVENT_ENV: &str = "CREWMUX_EVENT";
/// The environment variable with the run's id.
pub const RUN_ENV: &str = "CREWMUX_RUN";

/// Most of a failed command's standard error quoted in its log line, bytes (its end).
const STDERR_QUOTED: usize = 300;

/// The command's queue and the thread that runs it.
pub struct Commands {
    queue: Option<Sender<Notification>>,
    failed: Receiver<String>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Commands {
    /// A queue for `argv` (`None`: no command, nothing is ever run) bounded by `timeout`.
    pub fn new(argv: Option<Vec<String>>, timeout: Duration) -> Commands {
        let (fail_tx, failed) = channel();
        let Some(argv) = argv.filter(|a| !a.is_empty()) else {
            return Commands {
                queue: None,
                failed,
                thread: None,
            };
        };
        let (queue, jobs) = channel::<Notification>();
        let thread = std::thread::Builder::new()
            .name("crewmux-notify-command".into())
            .spawn(move || {
                for n in jobs {
                    if let Err(why) = run(&argv, &n, timeout) {
                        // Err: the driver is gone; the line is in crewmux.log below.
                        let _ = fail_tx.send(why.clone());
                        tracing::warn!("{why}");
                    }
                }
            });
        match thread {
            Ok(t) => Commands {
                queue: Some(queue),
                failed,
                thread: Some(t),
            },
            Err(e) => {
                tracing::warn!("the notify command cannot run: {e}");
                Commands {
                    queue: None,
                    failed,
                    thread: None,
                }
            }
        }
    }

    /// Run the command for `n` once the ones before it are done.
    pub fn send(&self, n: &Notification) {
        if let Some(q) = &self.queue {
            // Err: the thread is gone (it panicked); said when it was started.
            let _ = q.send(n.clone());
        }
    }

    /// The failures since the last call, one line each.
    pub fn failures(&mut self) -> Vec<String> {
        self.failed.try_iter().collect()
    }

    /// Run what is queued (each bounded by the timeout), then return the failures.
    pub fn finish(&mut self) -> Vec<String> {
        self.queue = None;
        if let Some(t) = self.thread.take() {
            if t.join().is_err() {
                tracing::warn!("the notify command's thread panicked");
            }
        }
        self.failures()
    }
}

/// Run `argv` once for `n`; `Err` is the log line of what went wrong.
///
/// # Errors
/// The program cannot be started (not found, not executable), exits non-zero or by a
/// signal, or runs past `timeout` (then it is killed with its process group).
pub fn run(argv: &[String], n: &Notification, timeout: Duration) -> Result<(), String> {
    let name = argv.first().map_or("", String::as_str);
    let mut child = Command::new(name)
        .args(&argv[1..])
        .env(EVENT_ENV, n.kind)
        .env(RUN_ENV, &n.run)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("the notify command `{name}` cannot be started: {e}"))?;
    // Off this thread: a command that never reads its input cannot hold it past the timeout.
    let stdin = child.stdin.take();
    let line = format!("{}\n", n.json());
    let writer = std::thread::spawn(move || {
        if let Some(mut s) = stdin {
            // Err: the command closed its input without reading it, which it may.
            let _ = s.write_all(line.as_bytes());
        }
    });
    let mut stderr = child.stderr.take();
    let reader = std::thread::spawn(move || {
        let mut text = Vec::new();
        if let Some(s) = stderr.as_mut() {
            // Err: a pipe that broke; what was read is kept.
            let _ = s.read_to_end(&mut text);
        }
        text
    });
    let status = match child.wait_timeout(timeout) {
        Ok(Some(status)) => status,
        Ok(None) | Err(_) => {
            let pgid = nix::unistd::Pid::from_raw(-(child.id() as i32));
            // Err: the group ended by itself just now, which is what we want.
            let _ = nix::sys::signal::kill(pgid, nix::sys::signal::Signal::SIGKILL);
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "the notify command `{name}` ran longer than {} s (command-timeout-s) and was killed",
                timeout.as_secs_f64()
            ));
        }
    };
    // Err: a thread that panicked on a pipe; nothing more to say than the status.
    let _ = writer.join();
    let said = reader.join().unwrap_or_default();
    if status.success() {
        return Ok(());
    }
    let said = String::from_utf8_lossy(&said[said.len().saturating_sub(STDERR_QUOTED)..])
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    Err(format!(
        "the notify command `{name}` failed ({status}){}",
        if said.is_empty() {
            String::new()
        } else {
            format!(": {said}")
        }
    ))
}

impl Drop for Commands {
    /// A process that ends runs what is queued first (each bounded by the timeout).
    fn drop(&mut self) {
        // Each failure was logged by the thread that ran it.
        let _ = self.finish();
    }
}
