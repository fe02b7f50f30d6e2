//! The process backend: each attempt is a child of crewmux in its own process group, with
//! stdout and stderr appended to `output.log` and stdin a pipe for answers. Used when tmux
//! is missing or `--backend process` is given.

use std::collections::HashMap;
use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};

use crate::backend::{pid_alive, Liveness, Multiplexer, Poll, SpawnSpec, Spawned, Target};
use crate::domain::BackendKind;
use crate::error::{Error, IoContext, Result};

/// Children by (worker, attempt). Attempts started by an earlier crewmux process are not
/// children; they are watched by pid.
#[derive(Default)]
pub struct ProcessBackend {
    children: HashMap<(String, u32), Child>,
    /// The focused screen handed over last (a poll hands it again only when it changed).
    last_screen: Option<String>,
    /// The tail handed over last, by worker.
    last_tails: HashMap<String, String>,
}

/// Lines of the focused attempt's log handed over as its screen.
const SCREEN_LINES: usize = 400;

/// Bytes at the end of `output.log` a screen or a tail is cut from.
const SCREEN_BYTES: u64 = 64 * 1024;

/// The last `lines` lines of the file at `log` (the unfinished last line included), read
/// from its last [`SCREEN_BYTES`]; empty when it cannot be read.
fn log_tail(log: &std::path::Path, lines: usize) -> String {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut f) = std::fs::File::open(log) else {
        return String::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let from = len.saturating_sub(SCREEN_BYTES);
    let mut buf = Vec::new();
    if f.seek(SeekFrom::Start(from)).is_err() || f.read_to_end(&mut buf).is_err() {
        return String::new();
    }
    let text = String::from_utf8_lossy(&buf);
    let all: Vec<&str> = text.split('\n').collect();
    // A cut first line is partial: drop it unless it is all there is.
    let all = if from > 0 && all.len() > 1 {
        &all[1..]
    } else {
        &all[..]
    };
    let all = match all.last() {
        Some(l) if l.is_empty() && all.len() > 1 => &all[..all.len() - 1],
        _ => all,
    };
    all[all.len().saturating_sub(lines)..].join("\n")
}

impl ProcessBackend {
    pub fn new() -> Self {
        Self::default()
    }
}

impl Multiplexer for ProcessBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Process
    }

    fn spawn(&mut self, spec: &SpawnSpec) -> Result<Spawned> {
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&spec.log)
            .at(&spec.log)?;
        // A working directory that is gone is the wrapper's to report (its `cd` fails and
        // ends the attempt with that reason); the shell starts in the attempt folder then.
        let start_in = match spec.launch.parent() {
            Some(attempt) if !spec.cwd.is_dir() => attempt,
            _ => spec.cwd.as_path(),
        };
        let mut cmd = Command::new("sh");
        cmd.arg(&spec.launch)
            .current_dir(start_in)
            .stdin(Stdio::piped())
            .stdout(log.try_clone().at(&spec.log)?)
            .stderr(log)
            .process_group(0);
        for (k, v) in spec.env.iter().chain(spec.secret_env.iter()) {
            cmd.env(k, v);
        }
        let child = cmd
            .spawn()
            .map_err(|e| Error::system(format!("cannot start {}", spec.launch.display()), e))?;
        let pid = child.id();
        self.children
            .insert((spec.worker.clone(), spec.attempt), child);
        Ok(Spawned {
            pane_id: None,
            pid: Some(pid),
        })
    }

    fn poll(&mut self, targets: &[Target], focus: Option<&Target>) -> Poll {
        let liveness = targets
            .iter()
            .map(
                |t| match self.children.get_mut(&(t.worker.clone(), t.attempt)) {
                    Some(child) => match child.try_wait() {
                        Ok(None) => Liveness::Alive,
                        Ok(Some(status)) => Liveness::Dead {
                            status: status.code().or_else(|| {
                                use std::os::unix::process::ExitStatusExt;
                                status.signal().map(|s| 128 + s)
                            }),
                        },
                        Err(_) => Liveness::Gone,
                    },
                    None => match t.pid {
                        Some(pid) if pid_alive(pid) => Liveness::Alive,
                        _ => Liveness::Gone,
                    },
                },
            )
            .collect();
        // The same screens tmux gives, from the log: the focused attempt's output (ANSI
        // kept) and each watched attempt's last lines (plain), when they changed.
        let screen = focus.and_then(|f| {
            let screen = log_tail(&f.log, SCREEN_LINES);
            (self.last_screen.as_ref() != Some(&screen)).then(|| {
                self.last_screen = Some(screen.clone());
                screen
            })
        });
        let tails = targets
            .iter()
            .map(|t| {
                if !t.watch_screen {
                    return None;
                }
                let tail = crate::launch::strip_ansi(&log_tail(
                    &t.log,
                    crate::backend::TAIL_LINES as usize,
                ));
                if self.last_tails.get(&t.worker) == Some(&tail) {
                    return None;
                }
                self.last_tails.insert(t.worker.clone(), tail.clone());
                Some(tail)
            })
            .collect();
        Poll {
            liveness,
            screen,
            tails,
            server_down: None,
            unanswered: false,
            hosts_down: Default::default(),
        }
    }

    fn forget_screen(&mut self) {
        self.last_screen = None;
    }

    fn send_text(&mut self, target: &Target, text: &str) -> Result<()> {
        let child = self
            .children
            .get_mut(&(target.worker.clone(), target.attempt))
            .ok_or_else(|| {
                Error::Other(format!(
                    "{} was started by another crewmux process: its stdin is not reachable",
                    target.worker
                ))
            })?;
        let stdin = child
            .stdin
            .as_mut()
            .ok_or_else(|| Error::Other(format!("{}: stdin is closed", target.worker)))?;
        let what = format!("the stdin of {}", target.worker);
        stdin.write_all(text.as_bytes()).on(&what)?;
        stdin.write_all(b"\n").on(&what)?;
        stdin.flush().on(&what)?;
        Ok(())
    }

    fn attach_command(&self, _target: &Target) -> Option<Command> {
        None
    }
}
