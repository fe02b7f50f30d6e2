//! Preparing an attempt: its folder, packaged prompt, launch command and wrapper.
#![allow(
    clippy::expect_used,
    reason = "lookups of ids the surrounding code has just checked"
)]

use std::path::{Path, PathBuf};

use crate::backend::SpawnSpec;
use crate::domain::{RunState, WorkerKind, WorkerState};
use crate::error::{IoContext, Result};
use crate::launch::{new_nonce, write_wrapper, AttemptPaths, WrapperSpec};
use crate::providers::history::PastFailure;
use crate::providers::{LaunchRequest, Registry};

/// A prepared attempt, ready to spawn.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub paths: AttemptPaths,
    pub nonce: String,
    pub spawn: SpawnSpec,
    /// The attempt continues this conversation of the worker's agent CLI
    /// (`super::resume::resume_session`).
    pub resumed: Option<String>,
}

/// The prompt a worker receives: the packaged prompt of its role and task, with its
/// upstreams' results (`after`) and the run's clarification answers as context, and
/// `failures` as the project's recent failures (`None`: read from the project's runs).
pub fn prompt_text(
    state: &RunState,
    w: &WorkerState,
    max_chars: usize,
    failures: Option<Vec<PastFailure>>,
) -> String {
    let mut task = w.task.clone();
    if matches!(w.kind, WorkerKind::Critic | WorkerKind::Fixer) {
        task.push_str(&results_digest(state));
    }
    let upstream = super::upstream::upstream_results(state, w, task.chars().count(), max_chars);
    task.push_str(&upstream);
    if !state.clarification.answers.is_empty() {
        task.push_str("\n\nClarifications from the person running this team:\n");
        for a in &state.clarification.answers {
            task.push_str(&format!("- {a}\n"));
        }
    }
    task.push_str(&own_exchanges(state, w));
    let model = format!(
        "{} / {}",
        w.provider,
        w.model.as_deref().unwrap_or("provider default")
    );
    crate::providers::prompt::package(
        &w.role,
        &task,
        &state.project_dir,
        &crate::providers::prompt::PackageOptions {
            max_chars,
            model: Some(model),
            failures,
            inputs: read_inputs(state, w),
            persona: w.flow.persona.clone(),
        },
    )
}

/// What `w` asked the person in its earlier attempts with the answers (an `ask`, a screen
/// question, the question its result ended with), and the messages the person sent it
/// after an attempt had ended: empty when there are none.
fn own_exchanges(state: &RunState, w: &WorkerState) -> String {
    let mut out = String::new();
    let answers: Vec<_> = state
        .clarification
        .worker_answers
        .iter()
        .filter(|a| a.worker == w.id)
        .collect();
    if !answers.is_empty() {
        out.push_str("\n\nYour earlier questions to the person and the answers, oldest first:\n");
        for a in answers {
            out.push_str(&format!(
                "- You asked: {}\n  Answer: {}\n",
                a.question, a.answer
            ));
        }
    }
    if !w.flow.messages.is_empty() {
        out.push_str(
            "\n\nThe person's messages to you after your earlier attempts, oldest first:\n",
        );
        for m in &w.flow.messages {
            out.push_str(&format!("- {m}\n"));
        }
    }
    out
}

/// The run's inputs for `w`'s prompt, each `--files` file read from the worker's own tree
/// (its worktree, else the project) as it is when the attempt starts; a file that cannot be
/// read is listed as such.
fn read_inputs(state: &RunState, w: &WorkerState) -> crate::providers::prompt::Inputs {
    let i = &state.inputs;
    let tree = state
        .workspace
        .as_ref()
        .and_then(|ws| ws.workers.get(&w.id).map(|x| ws.cwd_in(&x.path)))
        .unwrap_or_else(|| state.project_dir.clone());
    crate::providers::prompt::Inputs {
        context: i.context.clone(),
        files: i
            .files
            .iter()
            .map(|p| (p.clone(), std::fs::read_to_string(tree.join(p)).ok()))
            .collect(),
        expected_outcome: i.expected_outcome.clone(),
    }
}

/// What `w`'s worktree holds of its upstreams' work (merged before it was launched; see
/// `workspace::upstream`), said in its prompt.
fn upstream_worktree_note(state: &RunState, w: &WorkerState) -> String {
    let notes = crate::workspace::upstream::notes(state, w);
    if notes.is_empty() {
        return String::new();
    }
    format!("\n\n{}\n", notes.join("\n"))
}

/// The tmux window of attempt `attempt` of `worker`: `<worker>-<attempt>`.
pub fn window_name(worker: &str, attempt: u32) -> String {
    format!("{worker}-{attempt}")
}

/// Write the attempt's `prompt.md` and `launch.sh` and describe how to spawn it; the
/// prompt lists `failures` as the project's recent failures (`None`: read from disk).
///
/// # Errors
/// The provider cannot build a launch (unknown, or `command` without argv), or I/O.
pub fn prepare(
    state: &RunState,
    w: &WorkerState,
    attempt_dir: PathBuf,
    self_exe: &Path,
    max_chars: usize,
    failures: Option<Vec<PastFailure>>,
    registry: &Registry,
) -> Result<Prepared> {
    let paths = fresh_attempt(attempt_dir)?;
    let resume = super::resume::resume_session(&state.run_id, w, registry);
    write_prompt(state, w, &paths, (max_chars, failures), resume.is_some())?;
    // A worker on an SSH host: the wrapper names the attempt's files where they will be
    // on the host (the backend ships them there).
    let remote = crate::hosts::place(state, w, &paths.dir)?;
    let there = match &remote {
        Some(r) => AttemptPaths {
            launch: paths.launch.clone(),
            ..AttemptPaths::new(r.attempt_dir.clone())
        },
        None => paths.clone(),
    };
    // On a host, crewmux (the filter, `sim`) is the copy the run put there, if any.
    let helper = match remote.as_ref() {
        // The host did not answer when the run was planned: crewmux is put where the
        // wrapper names it before this attempt starts there (the host's thread).
        Some(r) if r.helper.is_none() => match r.helper_awaited.as_deref() {
            Some(awaited) if runs_crewmux(w, registry) => Some(awaited),
            _ => {
                refuse_without_helper(w, registry)?;
                None
            }
        },
        r => r.and_then(|r| r.helper.as_deref()),
    };
    let self_exe = helper.unwrap_or(self_exe);
    let nonce = new_nonce();
    let mcp = mcp_launch(w, self_exe, &paths.dir, &nonce, remote.is_none())?;
    let launch = registry.build_launch(
        &w.provider,
        &LaunchRequest {
            prompt_file: &there.prompt,
            result_file: &there.result,
            model: w.model.as_deref(),
            command: w.command.as_deref(),
            attempt: w.attempt,
            self_exe,
            mcp: mcp.as_ref(),
            resume: resume.as_deref(),
        },
    )?;
    let (argv, cwd) = argv_and_cwd(state, w, &paths.dir, remote.as_ref(), &launch.argv)?;
    let at = super::fence::At {
        attempt_dir: &there.dir,
        cwd: &cwd,
        program: launch.argv.first().map_or("", String::as_str),
        self_exe,
        remote: remote.is_some(),
    };
    let fence = super::fence::fence_argv(state, w, registry, &at)?;
    let is_tmux = state.backend == crate::domain::BackendKind::Tmux || remote.is_some();
    write_wrapper(
        &there,
        &WrapperSpec {
            worker: &w.id,
            attempt: w.attempt,
            nonce: &nonce,
            argv: &argv,
            cwd: &cwd,
            stdin_file: launch.stdin_file.as_deref(),
            wait_for_log: is_tmux,
            release_fifo: is_tmux && remote.is_none(),
            // A host without crewmux shows the raw output.
            render: launch
                .render
                .as_deref()
                .filter(|_| remote.is_none() || helper.is_some()),
            fence: fence.as_deref(),
        },
    )?;
    if !is_tmux {
        std::fs::write(&paths.output, b"").at(&paths.output)?;
    }
    let mut env = launch.env.clone();
    env.push(("CREWMUX_RUN_ID".into(), state.run_id.clone()));
    env.push(("CREWMUX_WORKER".into(), w.id.clone()));
    // A race's candidate knows which one it is (README "Races").
    if let Some(c) = &w.flow.candidate {
        env.push(("CREWMUX_CANDIDATE".into(), c.n.to_string()));
    }
    env.push((crate::launch::ATTEMPT_ENV.into(), nonce.clone()));
    Ok(Prepared {
        spawn: SpawnSpec {
            worker: w.id.clone(),
            attempt: w.attempt,
            nonce: nonce.clone(),
            window: window_name(&w.id, w.attempt),
            cwd,
            launch: paths.launch.clone(),
            log: paths.output.clone(),
            env,
            secret_env: vec![],
            host: w.host.clone(),
        },
        paths,
        nonce,
        resumed: resume,
    })
}

/// The argv the wrapper runs (the agent's, behind the `[workspace] setup` when there is
/// one) and where it starts: on an SSH host, as its paths are there.
///
/// # Errors
/// The setup script cannot be written.
fn argv_and_cwd(
    state: &RunState,
    w: &WorkerState,
    attempt_dir: &Path,
    remote: Option<&crate::hosts::RemotePlace>,
    agent: &[String],
) -> Result<(Vec<String>, PathBuf)> {
    Ok(match remote {
        Some(r) => (
            crate::workspace::setup::wrap_argv_at(
                state,
                w,
                attempt_dir,
                &r.attempt_dir,
                agent.to_vec(),
            )?,
            r.cwd.clone(),
        ),
        None => (
            crate::workspace::setup::wrap_argv(state, w, attempt_dir, agent.to_vec())?,
            local_cwd(state, w),
        ),
    })
}

/// The attempt's folder, made, without the files an earlier launch of the same attempt
/// number left that would read as this one's end (`exit.json`, `output.log`, the
/// `cwd-failed` and `sandbox-failed` notes).
///
/// # Errors
/// The folder cannot be made.
fn fresh_attempt(attempt_dir: PathBuf) -> Result<AttemptPaths> {
    std::fs::create_dir_all(&attempt_dir).at(&attempt_dir)?;
    let paths = AttemptPaths::new(attempt_dir);
    let sandbox_failed = paths.dir.join(crate::sandbox::FAILED_FILE);
    for stale in [
        &paths.exit,
        &paths.output,
        &paths.cwd_failed,
        &sandbox_failed,
    ] {
        // Err: most often there is no such file (a first attempt); a file that stays is
        // told apart by the attempt's nonce.
        let _ = std::fs::remove_file(stale);
    }
    Ok(paths)
}

/// Write the attempt's `prompt.md`: the packaged prompt, the note on upstream worktrees,
/// and first, for an attempt that continues its conversation, its continuation note
/// (`super::resume::continuation_note`).
fn write_prompt(
    state: &RunState,
    w: &WorkerState,
    paths: &AttemptPaths,
    (max_chars, failures): (usize, Option<Vec<PastFailure>>),
    resumed: bool,
) -> Result<()> {
    let mut prompt = prompt_text(state, w, max_chars, failures);
    prompt.push_str(&upstream_worktree_note(state, w));
    if resumed {
        prompt = format!("{}{prompt}", super::resume::continuation_note(w));
    }
    crate::store::write_replace(&paths.prompt, prompt.as_bytes())
}

/// The attempt's MCP server launch, its files written into a fresh `<attempt>/mcp/`; only
/// this machine's attempts (`local`) get one: the lead reads the exchange here.
///
/// # Errors
/// I/O.
fn mcp_launch(
    w: &WorkerState,
    self_exe: &Path,
    attempt_dir: &Path,
    nonce: &str,
    local: bool,
) -> Result<Option<crate::mcp::config::McpLaunch>> {
    if !local {
        return Ok(None);
    }
    let caller = crate::mcp::exchange::Caller {
        worker: w.id.clone(),
        attempt: w.attempt,
        nonce: nonce.to_string(),
    };
    let m = crate::mcp::config::McpLaunch::new(
        self_exe,
        attempt_dir,
        &caller,
        w.flow.question_timeout_s,
    );
    // A folder left by an earlier launch of this attempt number holds its calls.
    let _ = std::fs::remove_dir_all(&m.dir);
    m.write_files()?;
    Ok(Some(m))
}

/// A remote worker whose provider runs crewmux itself (a fallback to `sim`, a run planned
/// before crewmux copied itself to hosts) on a host where the run has no crewmux: this
/// machine's path would not run there.
///
/// # Errors
/// [`crate::error::Error::Usage`] naming the provider, the host and the fix.
fn refuse_without_helper(w: &WorkerState, registry: &Registry) -> Result<()> {
    if !runs_crewmux(w, registry) {
        return Ok(());
    }
    Err(crate::error::Error::Usage(format!(
        "provider `{}` runs crewmux itself, and this run has no crewmux on host {} (`crewmux doctor --hosts` checks it): run `{}` on `local` or with an agent CLI",
        w.provider,
        w.host.as_deref().unwrap_or("?"),
        w.id
    )))
}

/// True when `w`'s provider runs crewmux itself (`sim`, `{self_exe}`).
fn runs_crewmux(w: &WorkerState, registry: &Registry) -> bool {
    registry
        .get(&w.provider)
        .is_some_and(|s| crate::hosts::helper::runs_crewmux(s, w.command.as_deref()))
}

/// A local worker's working directory: its worktree, its `cwd`, or the project.
fn local_cwd(state: &RunState, w: &WorkerState) -> PathBuf {
    match &w.cwd {
        _ if crate::workspace::cwd_for(state, w).is_some() => {
            crate::workspace::cwd_for(state, w).expect("checked")
        }
        Some(c) if c.is_absolute() => c.clone(),
        Some(c) => state.project_dir.join(c),
        None => state.project_dir.clone(),
    }
}

/// Characters of each worker's result quoted into a critic's or fixer's task.
pub const RESULT_EXCERPT_CHARS: usize = 1500;

/// The team's results so far, for critics and fixers: per worker its status, exit code and
/// the start of its result file (at most [`RESULT_EXCERPT_CHARS`] characters each).
fn results_digest(state: &RunState) -> String {
    let mut out = String::from("\n\nThe team's results:\n");
    for w in state
        .workers
        .iter()
        .filter(|w| matches!(w.kind, WorkerKind::Worker | WorkerKind::Fixer))
        .filter(|w| w.status.is_terminal())
        // A race's candidates that are not its pick are not the team's result.
        .filter(|w| !state.left_out_by_race(&w.id))
    {
        out.push_str(&format!(
            "\n### {} ({}) — {}{}\n",
            w.id,
            w.role,
            w.status,
            w.exit_code
                .map(|c| format!(", exit {c}"))
                .unwrap_or_default()
        ));
        match w
            .result
            .as_deref()
            .and_then(|p| crate::launch::tail::read_document(p).ok())
        {
            Some(text) => {
                let cut: String = text.chars().take(RESULT_EXCERPT_CHARS).collect();
                out.push_str(&cut);
                if cut.len() < text.len() {
                    out.push_str("\n[…]");
                }
                out.push('\n');
            }
            None => out.push_str("(no result file)\n"),
        }
    }
    out
}

#[cfg(test)]
mod helper_tests {
    use super::*;
    use crate::domain::Stage;

    #[test]
    fn a_remote_worker_that_runs_crewmux_without_a_copy_there_is_refused_naming_the_fix() {
        let registry = Registry::builtin();
        let mut w = crate::engine::stages_public::blank_worker(
            "w".into(),
            "backend-engineer".into(),
            "sim".into(),
            WorkerKind::Worker,
            Stage::TeamExec,
            0,
        );
        w.host = Some("box".into());
        let e = refuse_without_helper(&w, &registry)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "provider `sim` runs crewmux itself, and this run has no crewmux on host box (`crewmux doctor --hosts` checks it): run `w` on `local` or with an agent CLI"
        );
        w.provider = "codex".into();
        assert!(refuse_without_helper(&w, &registry).is_ok());
    }
}
