//! `answer`, `cancel`, `resume`, `attach` and `clean`: commands that act on an existing run
//! (`status`, which only reads one, is in [`super::status`]).
//! When another process drives the run, requests go through its inbox; otherwise they act
//! on the saved state and the tmux server directly.
#![allow(
    clippy::expect_used,
    reason = "lookups of ids the surrounding code has just checked"
)]

use std::time::Duration;

use crate::cli::{AnswerArgs, AttachArgs, CancelArgs, CleanArgs};
use crate::domain::{BackendKind, RunState, RunStatus, WorkerStatus};
use crate::error::{Error, IoContext, Result};
use crate::lead::{Driver, DriverOptions};
use crate::store::{list_run_ids, InboxCommand, RunStore};

use super::plan::project_dir;

/// Reconcile a run nobody drives with what tmux and the files show: exits that happened
/// while no dashboard was open are collected, a pane gone without evidence is `crashed`.
/// Nothing is launched. Returns the (saved) state and the SSH hosts that did not answer
/// (their workers' state is unknown; a few seconds at most are spent on them).
///
/// # Errors
/// As [`RunStore::load_state`] and [`RunStore::is_driven`]; tmux gone from PATH for a tmux run;
/// the reconciled state cannot be saved.
pub fn reconcile(store: &RunStore) -> Result<(RunState, std::collections::BTreeSet<String>)> {
    let state = store.load_state()?;
    if store.is_driven()? || state.status.is_final() {
        return Ok((state, Default::default()));
    }
    if !state.workers.iter().any(|w| w.status.is_live()) {
        return Ok((state, Default::default()));
    }
    let backend = super::drive::backend_for(&state, store)?;
    let mut state = state;
    if state.status == RunStatus::Running {
        state.status = RunStatus::Detached;
    }
    let driver = Driver::new(
        store.clone(),
        state,
        backend,
        super::drive::offline_options(),
    );
    driver.observe_only(Duration::from_millis(700), &mut |n| {
        crate::errln!("crewmux: {n}");
    })
}

/// `crewmux answer <run> [--worker ID] "<text>"`, or for a worker's approval request
/// `--allow`, `--allow-always` or `--deny [REASON]` instead of the text.
///
/// # Errors
/// [`Error::Usage`]: an unknown run, nothing waiting for an answer, an unknown or not waiting
/// worker; as [`RunStore::send_command`] or saving the state.
#[allow(
    clippy::needless_pass_by_value,
    reason = "a command handler owns the flags clap parsed for it"
)]
pub fn answer(args: AnswerArgs) -> Result<i32> {
    let project = project_dir(args.common.project.as_deref())?;
    let store = RunStore::open(&project, Some(&args.run))?;
    let state = store.load_state()?;
    let text = answer_text(&args, &state)?;
    match &args.worker {
        None if !state.clarification.pending => Err(Error::Usage(format!(
            "run {} has no pending question; to answer a worker add --worker ID",
            state.run_id
        ))),
        Some(w) if state.worker(w).is_none() => Err(Error::Usage(format!(
            "run {} has no worker `{w}`; workers: {}",
            state.run_id,
            state
                .workers
                .iter()
                .map(|w| w.id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
        Some(w) if state.worker(w).map(|x| x.status) != Some(WorkerStatus::Waiting) => {
            Err(Error::Usage(format!(
                "worker `{w}` is not waiting for an answer (it is {})",
                state.worker(w).map(|x| x.status.as_str()).unwrap_or("?")
            )))
        }
        _ if store.is_driven()? => {
            store.send_command(&match &args.worker {
                None => InboxCommand::AnswerRun { text: text.clone() },
                Some(w) => InboxCommand::AnswerWorker {
                    worker: w.clone(),
                    text: text.clone(),
                },
            })?;
            crate::errln!(
                "crewmux: answer sent to the process driving run {}",
                state.run_id
            );
            Ok(0)
        }
        None => {
            let state_id = state.run_id.clone();
            offline_driver(&store, state)?.answer_now(None, text.clone())?;
            crate::errln!("crewmux: answer saved; {}", go_on(&state_id));
            Ok(0)
        }
        Some(w) => {
            let ws = state.worker(w).map(|x| (x.pane_id.is_some(), x.status));
            // A question asked through the worker's MCP server is answered by a file its
            // server reads, whoever drives the run (or nobody).
            let by_tool = state
                .worker(w)
                .and_then(|x| x.pending.as_ref())
                .is_some_and(|p| p.tool_call.is_some());
            let run = state.run_id.clone();
            let in_result = state.worker(w).is_some_and(|x| x.waits_on_its_result());
            if in_result {
                // Its attempt is over: the answer is kept and starts the next one.
                offline_driver(&store, state)?.answer_now(Some(w.clone()), text.clone())?;
                crate::errln!(
                    "crewmux: answer saved for {w}'s next attempt, which starts when the run is continued: crewmux attach {run} (or crewmux resume {run} --headless)"
                );
                return Ok(0);
            }
            if by_tool {
                offline_driver(&store, state)?.answer_now(Some(w.clone()), text.clone())?;
                crate::errln!("crewmux: answer sent to {w}'s ask; {}", go_on(&run));
                return Ok(0);
            }
            if state.backend != BackendKind::Tmux || ws.is_none_or(|(pane, _)| !pane) {
                return Err(Error::Usage(format!(
                    "worker `{w}` runs as a child of a crewmux process that is gone; its stdin cannot be reached"
                )));
            }
            offline_driver(&store, state)?.answer_now(Some(w.clone()), text.clone())?;
            crate::errln!("crewmux: answer pasted into {w}'s pane; {}", go_on(&run));
            Ok(0)
        }
    }
}

/// The next command after an answer to run `id` that nobody drives: the worker goes on in
/// its pane, but the run's stages move only while a lead drives it.
fn go_on(id: &str) -> String {
    format!("nobody drives run {id}: continue it with crewmux resume {id} (--headless in a script)")
}

/// The text an answer sends: `--allow` is `y`, `--allow-always` `A`, `--deny [REASON]` `n`
/// and the reason (the engine reads them, `engine::approvals::reply_to`), else the text as
/// given.
///
/// # Errors
/// [`Error::Usage`]: an empty text; an approval flag for a worker that is not waiting on
/// an approval.
fn answer_text(args: &AnswerArgs, state: &RunState) -> Result<String> {
    let flag = if args.allow {
        Some(("--allow", "y".to_string()))
    } else if args.allow_always {
        Some(("--allow-always", "A".to_string()))
    } else {
        args.deny.as_deref().map(|r| match r.trim() {
            "" => ("--deny", "n".to_string()),
            r => ("--deny", format!("n {r}")),
        })
    };
    let Some((flag, text)) = flag else {
        let text = args.text.clone().unwrap_or_default();
        if text.trim().is_empty() {
            return Err(Error::Usage(
                "the answer is empty: give the text to send".into(),
            ));
        }
        return Ok(text);
    };
    let id = args.worker.as_deref().unwrap_or_default();
    let approval = state
        .worker(id)
        .filter(|w| w.status == WorkerStatus::Waiting)
        .and_then(|w| w.pending.as_ref())
        .and_then(|p| p.approval.as_ref());
    if state.worker(id).is_some() && approval.is_none() {
        return Err(Error::Usage(format!(
            "worker `{id}` is not waiting on an approval: {flag} answers one; give the answer as text instead"
        )));
    }
    Ok(text)
}

/// A driver for an offline command on a run no process drives (nothing is launched).
fn offline_driver(store: &RunStore, state: RunState) -> Result<Driver> {
    let backend = super::drive::backend_for(&state, store)?;
    Ok(Driver::new(
        store.clone(),
        state,
        backend,
        super::drive::offline_options(),
    ))
}

/// `crewmux cancel <run> [--worker ID]`.
///
/// # Errors
/// [`Error::Usage`]: an unknown run, a finished run or worker; as [`RunStore::send_command`] or
/// saving the state.
#[allow(
    clippy::needless_pass_by_value,
    reason = "a command handler owns the flags clap parsed for it"
)]
pub fn cancel(args: CancelArgs) -> Result<i32> {
    let project = project_dir(args.common.project.as_deref())?;
    let store = RunStore::open(&project, Some(&args.run))?;
    let state = store.load_state()?;
    if state.status.is_final() {
        return Err(Error::Usage(format!(
            "run {} is already {}; nothing to cancel",
            state.run_id,
            state.status.as_str()
        )));
    }
    if let Some(w) = &args.worker {
        if state.worker(w).is_none() {
            return Err(Error::Usage(format!(
                "run {} has no worker `{w}`",
                state.run_id
            )));
        }
    }
    let mut state = state;
    if store.is_driven()? {
        store.send_command(&InboxCommand::Cancel {
            worker: args.worker.clone(),
            grace_s: Some(args.grace),
        })?;
        let sent_to = store.inbox_len();
        match taken_or_orphaned(&store, sent_to) {
            None => {
                crate::errln!(
                    "crewmux: cancel sent to the process driving run {}",
                    state.run_id
                );
                return Ok(0);
            }
            // The lead stopped without reading it (it was being killed): carried out here,
            // and marked read so the next lead does not refuse it as stale.
            Some(now) => {
                crate::errln!(
                    "crewmux: the lead of run {} stopped before it took the cancel; cancelling here",
                    now.run_id
                );
                state = now;
                state.inbox_read = Some(sent_to);
            }
        }
    }
    let backend = super::drive::backend_for(&state, &store)?;
    let opts = DriverOptions {
        grace: Duration::from_secs(args.grace),
        ..super::drive::offline_options()
    };
    let driver = Driver::new(store.clone(), state, backend, opts);
    let end = driver.cancel_now(args.worker.clone(), &mut |n| crate::errln!("crewmux: {n}"))?;
    crate::errln!(
        "crewmux: run {} {}",
        end.run_id,
        if args.worker.is_some() {
            "worker cancelled"
        } else {
            end.status.as_str()
        }
    );
    Ok(0)
}

/// How long `cancel` watches a request it sent to a lead: long enough for a lead that is
/// being killed to let go of the run (its threads end after its main thread, holding the
/// driver lock: proc(5)), short next to a lead's turn (200 ms to 2 s).
const TAKEN_WAIT: Duration = Duration::from_secs(5);

/// Wait until the lead has read the inbox up to `sent_to` (`None`: it took the request), or
/// until no process drives the run any more with the request unread: the run as saved then.
/// A lead still driving after [`TAKEN_WAIT`] has it (`None`).
fn taken_or_orphaned(store: &RunStore, sent_to: u64) -> Option<RunState> {
    let until = std::time::Instant::now() + TAKEN_WAIT;
    loop {
        let taken = |s: &RunState| s.inbox_read.is_some_and(|r| r >= sent_to);
        if !store.is_driven().unwrap_or(true) {
            // Read after the lock came free: what the lead saved last.
            return store.load_state().ok().filter(|s| !taken(s));
        }
        if store.load_state().is_ok_and(|s| taken(&s)) || std::time::Instant::now() >= until {
            return None;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `crewmux attach [<run>]` and `crewmux resume [<run>]`: continue a run. On a terminal
/// a run nobody drives gets a new lead ([`super::lead`]), which reconciles the saved state
/// with what the workers did meanwhile, and the dashboard follows it; a run a lead drives
/// already is only followed (`attach`: a second dashboard is a viewer). Headless (or with
/// no terminal) this process drives the run to its end.
///
/// # Errors
/// [`Error::Usage`]: an unknown run, one another process drives (headless, or `resume`), or
/// (for `resume`) one that cannot continue; the errors of starting its lead or of driving
/// the run.
#[allow(
    clippy::needless_pass_by_value,
    reason = "a command handler owns the flags clap parsed for it"
)]
pub fn attach(args: AttachArgs, resume: bool) -> Result<i32> {
    use std::io::IsTerminal;
    let project = project_dir(args.common.project.as_deref())?;
    let store = RunStore::open(&project, args.run.as_deref())?;
    let state = store.load_state()?;
    let on_terminal = !args.headless && std::io::stdout().is_terminal();
    if store.is_driven()? {
        if on_terminal && !resume {
            return super::dashboard::follow_dashboard(store, state, false);
        }
        return Err(Error::Usage(format!(
            "run {} is already being driven by another crewmux process; `crewmux status {}` shows it, `crewmux attach {}` follows it, `crewmux steer` and `crewmux answer` send it requests",
            state.run_id, state.run_id, state.run_id
        )));
    }
    if resume && state.clarification.pending {
        return Err(Error::Usage(format!(
            "run {} is halted at a question: answer it first with crewmux answer {} \"<text>\"",
            state.run_id, state.run_id
        )));
    }
    if state.status.is_final() && (resume || !on_terminal) {
        crate::errln!(
            "crewmux: run {} is already {}; nothing to continue",
            state.run_id,
            state.status.as_str()
        );
        // The same summary JSON a headless driver ends with, so a script reads one shape
        // whether its `attach --headless` drove the run's end or found it ended.
        crate::outln!(
            "{}",
            serde_json::to_string_pretty(&super::summary::summary(&state))
                .map_err(|e| Error::Other(e.to_string()))?
        );
        return Ok(super::summary::exit_code(&state));
    }
    if !on_terminal {
        return super::drive::drive_headless(store, state, DriverOptions::default());
    }
    // A finished run is only shown: a retry or an added worker from the dashboard gets
    // it a lead then (see `follow_dashboard`).
    if !state.status.is_final() {
        super::lead::start(&store, &state, super::lead::LeadOptions::default())?;
    }
    super::dashboard::follow_dashboard(store, state, false)
}

/// Why `clean` keeps a run that has not ended, and what ends it: a run some crewmux process
/// drives (its dashboard, or a headless run) is that process's to finish; one nobody drives
/// is detached and `attach` or `cancel` ends it.
fn why_not_ended(id: &str, driven: bool, live: bool) -> String {
    if driven {
        format!("its lead still drives it; clean it once it ends (`crewmux status {id}` says when), or `crewmux cancel {id}` ends it now")
    } else if live {
        format!("it is detached with live workers; `crewmux attach {id}` finishes it, `crewmux cancel {id}` ends it")
    } else {
        format!("it is detached and not finished; `crewmux attach {id}` finishes it")
    }
}

/// `crewmux clean [--run ID] [--purge]`: remove finished runs' tmux sessions (and with
/// `--purge` their run directories). Runs that are driven or still have live workers are
/// left alone and listed.
///
/// # Errors
/// [`Error::Usage`] for an unknown run; a run directory, session or worktree that cannot be
/// removed (what was removed before stays removed and is reported).
#[allow(
    clippy::needless_pass_by_value,
    reason = "a command handler owns the flags clap parsed for it"
)]
pub fn clean(args: CleanArgs) -> Result<i32> {
    let project = project_dir(args.common.project.as_deref())?;
    let ids = match &args.run {
        Some(r) => vec![RunStore::open(&project, Some(r))?
            .dir()
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()],
        None => list_run_ids(&project)?,
    };
    let mut kept = 0;
    // Lines printed: none says `nothing to remove`.
    let mut said = 0;
    // Runs kept because something of theirs cannot be read or reached: always exit 1.
    let mut failed = 0;
    for id in ids {
        let store = RunStore::at(crate::store::runs_root(&project).join(&id));
        let state = match store.load_state() {
            Ok(s) => s,
            Err(_) if args.purge && crate::store::planning::abandoned(store.dir()) => {
                // Stopped while it was planned: no worker, worktree or session to keep.
                std::fs::remove_dir_all(store.dir()).at(store.dir())?;
                crate::errln!("crewmux: removed {}", store.dir().display());
                said += 1;
                continue;
            }
            Err(e) => {
                let c = super::clean::clean_broken(&store, &id, &e, &args)?;
                said += c.said;
                kept += usize::from(c.kept);
                failed += usize::from(c.failed);
                continue;
            }
        };
        let live = state.workers.iter().any(|w| w.status.is_live());
        let driven = store.is_driven()?;
        if driven || live || !state.status.is_final() {
            crate::errln!("crewmux: kept {id}: {}", why_not_ended(&id, driven, live));
            said += 1;
            kept += 1;
            continue;
        }
        // Without its hosts.json nothing of the run on its hosts can be found: keep all.
        if let Err(e) = crate::hosts::run_hosts(store.dir()) {
            crate::errln!(
                "crewmux: kept {id}: {e}; restore that file, or delete it to clean this \
                 machine's side only (the run's worktrees and files on its hosts then stay)"
            );
            said += 1;
            failed += 1;
            continue;
        }
        said += super::clean::end_session(&state, &store, &id)?;
        let (trees_kept, lines, left) = super::workspace::clean_worktrees(&state, args.force)?;
        said += lines;
        if !args.purge || trees_kept > 0 {
            // The run stays: a later `clean` asks those hosts again.
            for l in crate::hosts::purge::left_lines(&id, &left, false, false) {
                crate::errln!("crewmux: {l}");
                said += 1;
            }
        }
        if trees_kept > 0 {
            kept += 1;
            continue;
        }
        if args.purge {
            let (lines, all) = crate::hosts::purge::purge_run_remote(&state, left, args.force)?;
            for l in &lines {
                crate::errln!("crewmux: {l}");
            }
            said += lines.len();
            if !all {
                failed += 1;
                continue;
            }
            std::fs::remove_dir_all(store.dir()).at(store.dir())?;
            crate::errln!("crewmux: removed {}", store.dir().display());
            said += 1;
            if let Some(line) = crate::sandbox::remove_homes(&id) {
                crate::errln!("crewmux: {line}");
                said += 1;
            }
        }
    }
    if said == 0 {
        crate::errln!("crewmux: nothing to remove");
    }
    Ok(if failed > 0 || (kept > 0 && args.run.is_some()) {
        1
    } else {
        0
    })
}

#[cfg(test)]
mod tests {
    use super::why_not_ended;

    #[test]
    fn a_kept_run_says_who_holds_it_and_the_command_that_ends_it() {
        let driven = why_not_ended("r1", true, true);
        assert!(
            driven.contains("its lead still drives it") && driven.contains("crewmux cancel r1")
        );
        let detached = why_not_ended("r1", false, true);
        assert!(detached.contains("detached with live workers"));
        assert!(detached.contains("crewmux attach r1") && detached.contains("crewmux cancel r1"));
        assert!(!why_not_ended("r1", false, false).contains("live workers"));
    }
}
