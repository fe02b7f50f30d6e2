//! `crewmux steer <run> add|retry|send …`: steer a run from the command line. A run another
//! crewmux process drives (its dashboard, a headless run) gets the request through its
//! inbox, checked first against the saved state with the engine's own rules so a refusal is
//! said here; a run nobody drives is changed on the spot (an added or retried worker waits
//! for `attach`/`resume`, text is typed into the pane).

use std::path::Path;

use crate::cli::{SteerArgs, SteerCommand};
use crate::domain::{RunState, WorkerKind};
use crate::engine::steer::{check, next_added_id, Steer};
use crate::error::{Error, Result};
use crate::store::{InboxCommand, RunStore};

use super::plan::project_dir;

/// `crewmux steer <run> add|retry|send …`.
///
/// # Errors
/// [`Error::Usage`] (exit 2) for an unknown run, role or provider, an unreadable task file,
/// or a request the engine refuses (a live worker retried, text for a worker that is not
/// running…), each as one line; as [`RunStore::send_command`] or saving the state.
#[allow(
    clippy::needless_pass_by_value,
    reason = "a command handler owns the flags clap parsed for it"
)]
pub fn run(args: SteerArgs) -> Result<i32> {
    let project = project_dir(args.common.project.as_deref())?;
    let store = RunStore::open(&project, Some(&args.run))?;
    let state = store.load_state()?;
    let mut steer = request(&state, &project, &args.what)?;
    check(&state, &steer).map_err(Error::Usage)?;
    let driven = store.is_driven()?;
    if let Steer::AddWorker { id, .. } = &mut steer {
        // Changed here and now when no process drives the run: its id is known.
        if id.is_empty() && !driven {
            *id = next_added_id(&state);
        }
    }
    let what = steer.describe();
    if driven {
        store.send_command(&InboxCommand::Steer(steer))?;
        crate::errln!(
            "crewmux: {what}: sent to the process driving run {}",
            state.run_id
        );
        return Ok(0);
    }
    let run_id = state.run_id.clone();
    let ended = |w: &str| state.worker(w).is_some_and(|w| w.status.is_terminal());
    let typed = match &steer {
        // Text for a worker that has ended starts its next attempt: saved, like a retry.
        Steer::SendText { worker, text } if !ended(worker) => {
            Some(format!("typed {} bytes into {worker}'s pane", text.len()))
        }
        _ => None,
    };
    let backend = super::drive::backend_for(&state, &store)?;
    let driver = crate::lead::Driver::new(
        store.clone(),
        state,
        backend,
        super::drive::offline_options(),
    );
    driver.steer_now(steer)?;
    if let Some(typed) = typed {
        crate::errln!("crewmux: {typed}");
    } else {
        crate::errln!(
            "crewmux: {what}: saved; no crewmux process drives run {run_id}, continue it with crewmux attach {run_id} (or resume for headless)"
        );
    }
    Ok(0)
}

/// The engine request `what` asks for, with the defaults filled in from `state`.
fn request(state: &RunState, project: &Path, what: &SteerCommand) -> Result<Steer> {
    Ok(match what {
        SteerCommand::Add {
            task,
            id,
            role,
            provider,
            command,
        } => {
            let first = state.workers.iter().find(|w| w.kind == WorkerKind::Worker);
            let role = role
                .clone()
                .or_else(|| first.map(|w| w.role.clone()))
                .unwrap_or_else(|| "backend-engineer".into());
            known_role(&role, project)?;
            let command = command
                .as_deref()
                .map(|c| {
                    crate::team::programs::argv_of(c, project)
                        .map_err(|e| Error::Usage(format!("--command: {e}")))
                })
                .transpose()?;
            let provider = match (provider, &command) {
                (Some(p), Some(_)) if p != "command" => {
                    return Err(Error::Usage(format!(
                        "--provider {p} with --command: a command worker's provider is `command`; drop one of them"
                    )))
                }
                (Some(p), None) if p == "command" => {
                    return Err(Error::Usage(
                        "--provider command: give its program with --command 'PROGRAM ARGS…'"
                            .into(),
                    ))
                }
                (_, Some(_)) => "command".to_string(),
                (Some(p), None) => p.clone(),
                (None, None) => crate::engine::steer::default_added_provider(state),
            };
            if command.is_none() {
                known_provider(&provider, project)?;
            }
            Steer::AddWorker {
                // No id: the first free `added-N` when the run adds it (two adds sent at
                // once are two workers).
                id: id.clone().unwrap_or_default(),
                role,
                provider,
                task: task.clone().unwrap_or_default(),
                command,
            }
        }
        SteerCommand::Retry {
            worker,
            task,
            task_file,
        } => Steer::Retry {
            worker: worker.clone(),
            task: match (task, task_file) {
                (Some(t), _) => Some(t.clone()),
                (None, Some(path)) => Some(read_task_file(path)?),
                (None, None) => None,
            },
        },
        SteerCommand::Send { worker, text } => Steer::SendText {
            worker: worker.clone(),
            text: text.clone(),
        },
    })
}

/// The text of `--task-file <path>`.
///
/// # Errors
/// [`Error::Usage`] (exit 2) naming the flag and the file when it cannot be read.
fn read_task_file(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|e| {
        Error::Usage(format!(
            "--task-file {}: cannot read it ({e}): give a readable file",
            path.display()
        ))
    })
}

/// A role the project knows: built in, or defined in an `agents.toml` beside its
/// providers.toml files.
fn known_role(role: &str, project: &Path) -> Result<()> {
    let env = crate::providers::EnvSnapshot::current();
    let registry = crate::providers::Registry::load(Some(project), &env)?;
    if registry.roles().get(role).is_some() {
        return Ok(());
    }
    let why = registry.unknown_role(role);
    Err(Error::Usage(format!(
        "--role {role}: no such role; {}",
        why.split_once(": ").map_or(why.as_str(), |(_, rest)| rest)
    )))
}

/// An agent provider the project knows (a built-in or one of its overrides) or `sim`, as
/// the dashboard's `+` form offers; `command` runs a team file's argv and cannot be added
/// this way.
fn known_provider(provider: &str, project: &Path) -> Result<()> {
    let env = crate::providers::EnvSnapshot::current();
    let registry = crate::providers::Registry::load(Some(project), &env)?;
    let agents: Vec<&str> = registry
        .agents()
        .map(|(n, _)| n)
        .chain(std::iter::once("sim"))
        .collect();
    if agents.contains(&provider) {
        return Ok(());
    }
    Err(Error::Usage(format!(
        "--provider {provider}: not an agent provider here; use one of {}",
        agents.join(", ")
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn add(provider: Option<&str>) -> SteerCommand {
        SteerCommand::Add {
            task: Some("task".into()),
            id: None,
            role: Some("backend-engineer".into()),
            provider: provider.map(str::to_string),
            command: None,
        }
    }

    fn add_command(line: &str, provider: Option<&str>) -> SteerCommand {
        SteerCommand::Add {
            task: None,
            id: Some("tests".into()),
            role: Some("testing-engineer".into()),
            provider: provider.map(str::to_string),
            command: Some(line.into()),
        }
    }

    #[test]
    fn adding_to_a_team_of_command_workers_defaults_to_sim_and_accepts_it() {
        let project = tempfile::tempdir().unwrap();
        let mut run = crate::tui::fixtures::crazy_run();
        for w in &mut run.workers {
            w.provider = "command".into();
        }
        for asked in [None, Some("sim")] {
            let Steer::AddWorker { provider, .. } = request(&run, project.path(), &add(asked))
                .unwrap_or_else(|e| panic!("{asked:?}: {e}"))
            else {
                panic!("not an add")
            };
            assert_eq!(provider, "sim", "{asked:?}");
        }
        let err = request(&run, project.path(), &add(Some("command"))).unwrap_err();
        assert!(err.to_string().contains("--command 'PROGRAM ARGS"), "{err}");
    }

    #[test]
    fn a_command_worker_is_added_with_its_argv_split_as_a_shell_would() {
        let project = tempfile::tempdir().unwrap();
        let mut run = crate::tui::fixtures::crazy_run();
        for w in &mut run.workers {
            w.provider = "command".into();
        }
        let asked = add_command("sh -c 'echo one two'", None);
        let Steer::AddWorker {
            provider, command, ..
        } = request(&run, project.path(), &asked).unwrap()
        else {
            panic!("not an add")
        };
        assert_eq!(provider, "command");
        assert_eq!(
            command.unwrap(),
            ["sh".to_string(), "-c".into(), "echo one two".into()]
        );
        for (line, provider, said) in [
            (
                "nosuch-program-xyz -q",
                None,
                "`nosuch-program-xyz` not found on PATH",
            ),
            ("sh -c 'open", None, "a quote is left open"),
            ("sh", Some("codex"), "--provider codex with --command"),
        ] {
            let err = request(&run, project.path(), &add_command(line, provider)).unwrap_err();
            assert!(err.to_string().contains(said), "{line}: {err}");
        }
    }
}
