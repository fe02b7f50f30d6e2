//! `status`, `answer`, `cancel`, `resume`, `attach` and `clean`: commands on an existing run.
//! When another process drives the run, requests go through its inbox; otherwise they act
//! on the saved state and the tmux server directly.
#![allow(
    clippy::expect_used,
    reason = "lookups of ids the surrounding code has just checked"
)]

use std::time::Duration;

use crate::cli::{AnswerArgs, AttachArgs, CancelArgs, CleanArgs, StatusArgs};
use crate::domain::{BackendKind, RunState, RunStatus, WorkerStatus};
use crate::driver::{Driver, DriverOptions};
use crate::error::{Error, IoContext, Result};
use crate::store::{list_run_ids, InboxCommand, RunStore};

use super::plan::project_dir;

/// Reconcile a run nobody drives with what tmux and the files show: exits that happened
/// while no dashboard was open are collected, a pane gone without evidence is `crashed`.
/// Nothing is launched. Returns the (saved) state.
///
/// # Errors
/// As [`RunStore::load_state`] and [`RunStore::is_driven`]; tmux gone from PATH for a tmux run;
/// the reconciled state cannot be saved.
pub fn reconcile(store: &RunStore) -> Result<RunState> {
    let state = store.load_state()?;
    if store.is_driven()? || state.status.is_final() {
        return Ok(state);
    }
    if !state.workers.iter().any(|w| w.status.is_live()) {
        return Ok(state);
    }
    let backend = super::drive::backend_for(&state, store)?;
    let mut state = state;
    if state.status == RunStatus::Running {
        state.status = RunStatus::Detached;
    }
    let driver = Driver::new(store.clone(), state, backend, DriverOptions::default());
    driver.observe_only(Duration::from_millis(700), &mut |n| {
        crate::errln!("crewmux: {n}");
    })
}

/// `crewmux status [<run>] [--json]`.
///
/// # Errors
/// [`Error::Usage`] for an unknown or ambiguous run; as [`reconcile`] for a run that is not
/// driven.
#[allow(
    clippy::needless_pass_by_value,
    reason = "a command handler owns the flags clap parsed for it"
)]
pub fn status(args: StatusArgs) -> Result<i32> {
    let project = project_dir(args.common.project.as_deref())?;
    let Some(run) = args.run.as_deref() else {
        return list_runs(&project, args.json);
    };
    let store = RunStore::open(&project, Some(run))?;
    let state = reconcile(&store)?;
    if args.json {
        crate::outln!(
            "{}",
            serde_json::to_string_pretty(&super::summary::summary(&state))
                .map_err(|e| Error::Other(e.to_string()))?
        );
        return Ok(0);
    }
    crate::out!("{}", status_text(&state, store.is_driven()?));
    Ok(0)
}

/// One screen of text about a run.
pub fn status_text(state: &RunState, driven: bool) -> String {
    let mut s = format!(
        "run {}  {}  stage {}  council {}{}\nproblem: {}\nteam: {}  backend: {}  dir: {}\n",
        state.run_id,
        state.status.as_str(),
        state.stage,
        state.council.status.as_str(),
        if driven { "  (being driven)" } else { "" },
        state.problem,
        state.team,
        state.backend.as_str(),
        state.run_dir.display()
    );
    if let Some(r) = &state.reason {
        s.push_str(&format!("reason: {r}\n"));
    }
    let (usage, total) = crate::providers::output::run_usage(state);
    if let Some(t) = total {
        s.push_str(&format!("usage: {}\n", t.short()));
    }
    if !driven && matches!(state.status, RunStatus::Detached | RunStatus::Running) {
        s.push_str(&format!(
            "no crewmux process drives this run: continue it with crewmux attach {} (or resume for headless)\n",
            state.run_id
        ));
    }
    if state.clarification.pending {
        s.push_str(&format!(
            "question: {}\n  answer: crewmux answer {} \"<text>\"\n",
            state.clarification.prompt.as_deref().unwrap_or(""),
            state.run_id
        ));
    }
    s.push_str(&format!(
        "\n{:<18} {:<20} {:<9} {:<10} {:>7} {:>5}\n",
        "WORKER", "ROLE", "PROVIDER", "STATUS", "ATTEMPT", "EXIT"
    ));
    for w in &state.workers {
        s.push_str(&format!(
            "{:<18} {:<20} {:<9} {:<10} {:>7} {:>5}\n",
            w.id,
            w.role,
            w.provider,
            w.status.as_str(),
            format!("{}/{}", w.attempt, w.max_attempts),
            w.exit_code
                .map(|c| c.to_string())
                .unwrap_or_else(|| "-".into())
        ));
        if let Some(u) = usage.get(&w.id) {
            s.push_str(&format!("  usage: {}\n", u.short()));
        }
        if let Some(r) = w.reason.as_deref().filter(|_| !w.status.is_live()) {
            s.push_str(&format!("  {r}\n"));
        }
        if let Some(x) = state
            .workspace
            .as_ref()
            .and_then(|ws| ws.workers.get(&w.id))
        {
            s.push_str(&format!(
                "  {} · {}\n",
                x.branch,
                x.diff
                    .map(|d| d.to_string())
                    .unwrap_or_else(|| "no change yet".into())
            ));
        }
        if let Some(q) = &w.question {
            s.push_str(&format!(
                "  asks: {q}\n  answer: crewmux answer {} --worker {} \"<text>\"\n",
                state.run_id, w.id
            ));
        }
    }
    for v in &state.council.verdicts {
        s.push_str(&format!(
            "\ncritic {}: {} ({:.2}) {}",
            v.critic,
            v.verdict.as_str(),
            v.confidence,
            v.findings.first().cloned().unwrap_or_default()
        ));
    }
    if !state.council.verdicts.is_empty() {
        s.push('\n');
    }
    if let Some(r) = &state.report {
        s.push_str(&format!("\nreport: {}\n", r.display()));
    }
    s
}

fn list_runs(project: &std::path::Path, json: bool) -> Result<i32> {
    let mut ids = list_run_ids(project)?;
    ids.sort();
    let mut rows: Vec<std::result::Result<RunState, (String, String)>> = vec![];
    for id in ids.iter().rev() {
        let store = RunStore::at(crate::store::runs_root(project).join(id));
        match store.load_state() {
            Ok(s) => rows.push(Ok(s)),
            Err(e) => rows.push(Err((id.clone(), e.to_string()))),
        }
    }
    if json {
        let list: Vec<serde_json::Value> = rows
            .iter()
            .map(|r| match r {
                Ok(s) => super::summary::summary(s),
                Err((id, e)) => serde_json::json!({"run_id": id, "error": e}),
            })
            .collect();
        crate::outln!(
            "{}",
            serde_json::to_string_pretty(&list).unwrap_or_default()
        );
        return Ok(0);
    }
    if rows.is_empty() {
        crate::outln!(
            "no runs under {}",
            crate::store::runs_root(project).display()
        );
        return Ok(0);
    }
    crate::outln!(
        "{:<22} {:<10} {:<12} {:<10} PROBLEM",
        "RUN",
        "STATUS",
        "STAGE",
        "COUNCIL"
    );
    for r in rows {
        match r {
            Ok(mut s) => {
                let driven = RunStore::at(s.run_dir.clone()).is_driven().unwrap_or(false);
                if s.status == RunStatus::Running && !driven {
                    s.status = RunStatus::Detached;
                }
                let problem: String = s.problem.chars().take(60).collect();
                crate::outln!(
                    "{:<22} {:<10} {:<12} {:<10} {}",
                    s.run_id,
                    s.status.as_str(),
                    s.stage.as_str(),
                    s.council.status.as_str(),
                    problem
                );
            }
            Err((id, e)) => crate::outln!("{id:<22} unreadable: {e}"),
        }
    }
    Ok(0)
}

/// `crewmux answer <run> [--worker ID] "<text>"`.
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
    if args.text.trim().is_empty() {
        return Err(Error::Usage(
            "the answer is empty: give the text to send".into(),
        ));
    }
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
                None => InboxCommand::AnswerRun {
                    text: args.text.clone(),
                },
                Some(w) => InboxCommand::AnswerWorker {
                    worker: w.clone(),
                    text: args.text.clone(),
                },
            })?;
            crate::errln!(
                "crewmux: answer sent to the process driving run {}",
                state.run_id
            );
            Ok(0)
        }
        None => {
            offline_driver(&store, state)?.answer_now(None, args.text.clone())?;
            crate::errln!(
                "crewmux: answer saved; continue with: crewmux resume {run}",
                run = args.run
            );
            Ok(0)
        }
        Some(w) => {
            let ws = state.worker(w).map(|x| (x.pane_id.is_some(), x.status));
            if state.backend != BackendKind::Tmux || ws.is_none_or(|(pane, _)| !pane) {
                return Err(Error::Usage(format!(
                    "worker `{w}` runs as a child of a crewmux process that is gone; its stdin cannot be reached"
                )));
            }
            offline_driver(&store, state)?.answer_now(Some(w.clone()), args.text.clone())?;
            crate::errln!("crewmux: answer pasted into {w}'s pane");
            Ok(0)
        }
    }
}

/// A driver for an offline command on a run no process drives (nothing is launched).
fn offline_driver(store: &RunStore, state: RunState) -> Result<Driver> {
    let backend = super::drive::backend_for(&state, store)?;
    Ok(Driver::new(
        store.clone(),
        state,
        backend,
        DriverOptions::default(),
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
    if store.is_driven()? {
        store.send_command(&InboxCommand::Cancel {
            worker: args.worker.clone(),
        })?;
        crate::errln!(
            "crewmux: cancel sent to the process driving run {}",
            state.run_id
        );
        return Ok(0);
    }
    let backend = super::drive::backend_for(&state, &store)?;
    let opts = DriverOptions {
        grace: Duration::from_secs(args.grace),
        ..DriverOptions::default()
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

/// `crewmux attach [<run>]` and `crewmux resume [<run>]`: continue driving a run, with the
/// dashboard on a terminal, headless otherwise.
///
/// # Errors
/// [`Error::Usage`]: an unknown run, one another process drives, or (for `resume`) one that
/// cannot continue; the errors of driving the run.
#[allow(
    clippy::needless_pass_by_value,
    reason = "a command handler owns the flags clap parsed for it"
)]
pub fn attach(args: AttachArgs, resume: bool) -> Result<i32> {
    use std::io::IsTerminal;
    let project = project_dir(args.common.project.as_deref())?;
    let store = RunStore::open(&project, args.run.as_deref())?;
    let state = store.load_state()?;
    if store.is_driven()? {
        return Err(Error::Usage(format!(
            "run {} is already being driven by another crewmux process; `crewmux status {}` shows it",
            state.run_id, state.run_id
        )));
    }
    if resume && state.clarification.pending {
        return Err(Error::Usage(format!(
            "run {} is halted at a question: answer it first with crewmux answer {} \"<text>\"",
            state.run_id, state.run_id
        )));
    }
    let opts = DriverOptions {
        exit_when_finished: args.headless || resume || !std::io::stdout().is_terminal(),
        ..DriverOptions::default()
    };
    if state.status.is_final() && (resume || args.headless || !std::io::stdout().is_terminal()) {
        crate::errln!(
            "crewmux: run {} is already {}; nothing to continue",
            state.run_id,
            state.status.as_str()
        );
        crate::out!("{}", status_text(&state, false));
        return Ok(super::summary::exit_code(&state));
    }
    if args.headless || !std::io::stdout().is_terminal() {
        super::drive::drive_headless(store, state, opts)
    } else {
        super::dashboard::drive_dashboard(store, state, opts)
    }
}

/// Why `clean` keeps a run that has not ended, and what ends it: a run some crewmux process
/// drives (its dashboard, or a headless run) is that process's to finish; one nobody drives
/// is detached and `attach` or `cancel` ends it.
fn why_not_ended(id: &str, driven: bool, live: bool) -> String {
    if driven {
        format!("a crewmux process drives it; quit its dashboard once it ends, or `crewmux cancel {id}`")
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
    for id in ids {
        let store = RunStore::at(crate::store::runs_root(&project).join(&id));
        let state = match store.load_state() {
            Ok(s) => s,
            Err(e) => {
                crate::errln!("crewmux: kept {id}: {e}");
                kept += 1;
                continue;
            }
        };
        let live = state.workers.iter().any(|w| w.status.is_live());
        let driven = store.is_driven()?;
        if driven || live || !state.status.is_final() {
            crate::errln!("crewmux: kept {id}: {}", why_not_ended(&id, driven, live));
            kept += 1;
            continue;
        }
        // A tmux run whose tmux is no longer installed has no session left to remove.
        if let Ok(mut backend) = super::drive::backend_for(&state, &store) {
            // Anything an attempt left behind (a daemon, a `nohup … &`) goes with the run.
            for r in &state.dispatches {
                let left = backend.end_stale_attempt(&r.nonce);
                if !left.is_empty() {
                    crate::errln!(
                        "crewmux: {id}: processes of {}#{} survive SIGKILL: {left:?}",
                        r.worker_id,
                        r.attempt
                    );
                }
            }
            if let Some(what) = backend.remove_run()? {
                crate::errln!("crewmux: removed {what}");
            }
        }
        if super::workspace::clean_worktrees(&state, args.force)? > 0 {
            kept += 1;
            continue;
        }
        if args.purge {
            std::fs::remove_dir_all(store.dir()).at(store.dir())?;
            crate::errln!("crewmux: removed {}", store.dir().display());
        }
    }
    Ok(if kept > 0 && args.run.is_some() { 1 } else { 0 })
}

#[cfg(test)]
mod tests {
    use super::why_not_ended;

    #[test]
    fn a_kept_run_says_who_holds_it_and_the_command_that_ends_it() {
        let driven = why_not_ended("r1", true, true);
        assert!(
            driven.contains("a crewmux process drives it") && driven.contains("crewmux cancel r1")
        );
        let detached = why_not_ended("r1", false, true);
        assert!(detached.contains("detached with live workers"));
        assert!(detached.contains("crewmux attach r1") && detached.contains("crewmux cancel r1"));
        assert!(!why_not_ended("r1", false, false).contains("live workers"));
    }
}
