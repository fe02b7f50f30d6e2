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
use crate::error::{Error, Result};

/// Children by (worker, attempt). Attempts started by an earlier crewmux process are not
/// children; they are watched by pid.
#[derive(Default)]
pub struct ProcessBackend {
    children: HashMap<(String, u32), Child>,
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
            .open(&spec.log)?;
        let mut cmd = Command::new("sh");
        cmd.arg(&spec.launch)
            .current_dir(&spec.cwd)
            .stdin(Stdio::piped())
            .stdout(log.try_clone()?)
            .stderr(log)
            .process_group(0);
        for (k, v) in spec.env.iter().chain(spec.secret_env.iter()) {
            cmd.env(k, v);
        }
        let child = cmd
            .spawn()
            .map_err(|e| Error::Other(format!("cannot start {}: {e}", spec.launch.display())))?;
        let pid = child.id();
        self.children
            .insert((spec.worker.clone(), spec.attempt), child);
        Ok(Spawned {
            pane_id: None,
            pid: Some(pid),
        })
    }

    fn poll(&mut self, targets: &[Target], _focus: Option<&Target>) -> Poll {
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
        Poll {
            liveness,
            screen: None,
            tails: vec![],
            server_down: None,
        }
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
        stdin.write_all(text.as_bytes())?;
        stdin.write_all(b"\n")?;
        stdin.flush()?;
        Ok(())
    }

    fn attach_command(&self, _target: &Target) -> Option<Command> {
        None
    }
}
