//! `crewmux status`: one run's state as text (reconciled first when nobody drives it), or
//! the list of the project's runs, as a table or JSON. The SSH hosts that do not answer
//! are the ones `status` asked itself for a run nobody drives, and the ones the driving
//! process found (`RunState::hosts_not_answering`) for a driven run.

use std::collections::BTreeSet;

use crate::cli::StatusArgs;
use crate::domain::{RunState, RunStatus, WorkerState};
use crate::error::{Error, Result};
use crate::store::{list_run_ids, RunStore};

use super::manage::reconcile;
use super::plan::project_dir;

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
    let (state, found) = reconcile(&store)?;
    let driven = store.is_driven()?;
    let down = hosts_down(&state, driven, found);
    if args.json {
        let mut summary = super::summary::summary(&state);
        unknown_in_json(&mut summary, &state, &down, driven);
        crate::outln!(
            "{}",
            serde_json::to_string_pretty(&summary).map_err(|e| Error::Other(e.to_string()))?
        );
        return Ok(0);
    }
    crate::out!("{}", status_text_with(&state, driven, &down));
    Ok(0)
}

/// The SSH hosts of a run that do not answer: for a `driven` run those its driving process
/// found (it keeps them in the state; a driver from before that kept none), otherwise
/// those `status` found itself (`found`, from [`reconcile`]).
fn hosts_down(state: &RunState, driven: bool, found: BTreeSet<String>) -> BTreeSet<String> {
    if driven {
        state.hosts_not_answering.keys().cloned().collect()
    } else {
        found
    }
}

/// What `status` says about the process driving the run: none drives a run that has not
/// ended (and what continues it), or the hosts the one that drives it finds not answering.
fn driver_lines(state: &RunState, driven: bool) -> String {
    let mut s = String::new();
    if !driven && matches!(state.status, RunStatus::Detached | RunStatus::Running) {
        let who = match super::lead::record(&state.run_dir) {
            Some(l) => format!(
                "its lead (pid {}, started {}) is gone",
                l.pid,
                l.started_at.format("%Y-%m-%d %H:%M:%S UTC")
            ),
            None => "no crewmux process drives this run".into(),
        };
        s.push_str(&format!(
            "{who}: crewmux attach {} starts a new one (or resume --headless drives it here)\n",
            state.run_id
        ));
    }
    if driven {
        for (host, since) in &state.hosts_not_answering {
            s.push_str(&format!(
                "{}; its workers' state is unknown until it answers\n",
                since_line(host, since)
            ));
        }
    }
    s
}

/// `host box not answering since 2026-12-01 10:02:03 UTC`: a host the driving process
/// of the run found not answering.
fn since_line(host: &str, since: &chrono::DateTime<chrono::Utc>) -> String {
    format!(
        "host {host} not answering since {}",
        since.format("%Y-%m-%d %H:%M:%S UTC")
    )
}

/// One screen of text about a run.
pub fn status_text(state: &RunState, driven: bool) -> String {
    status_text_with(state, driven, &BTreeSet::new())
}

/// What a live worker on a host of `down` (SSH hosts that did not answer) reads instead
/// of its saved status: `unknown (host box not answering)`. `None` for every other worker.
pub fn unknown_on_host(w: &WorkerState, down: &BTreeSet<String>) -> Option<String> {
    let host = w.host.as_deref().filter(|h| down.contains(*h))?;
    w.status
        .is_live()
        .then(|| format!("unknown (host {host} not answering)"))
}

/// `status --json`: each worker on a host that did not answer gets `"unknown"` (what
/// [`unknown_on_host`] says); its `status` stays the one saved. `hosts_not_answering`
/// names the hosts; for a `driven` run `hosts_not_answering_since` adds when the driving
/// process found each (RFC 3339, UTC).
fn unknown_in_json(
    summary: &mut serde_json::Value,
    state: &RunState,
    down: &BTreeSet<String>,
    driven: bool,
) {
    let Some(workers) = summary["workers"].as_array_mut() else {
        return;
    };
    for (j, w) in workers.iter_mut().zip(&state.workers) {
        if let Some(u) = unknown_on_host(w, down) {
            j["unknown"] = serde_json::Value::String(u);
        }
    }
    summary["hosts_not_answering"] = serde_json::json!(down);
    if driven {
        summary["hosts_not_answering_since"] = serde_json::json!(state.hosts_not_answering);
    }
}

/// A race candidate's place (`  race fix: #1 picked · checks 1/1 · …` and a newline) once
/// its race is ranked, else which candidate it is; "" for any other worker.
fn race_place(state: &RunState, w: &crate::domain::WorkerState) -> String {
    let Some(c) = &w.flow.candidate else {
        return String::new();
    };
    match state.races.get(&c.task).and_then(|r| r.place(&w.id)) {
        Some((place, why)) => format!("  race {}: {place} · {why}\n", c.task),
        None => format!("  race {}: candidate {} of {}\n", c.task, c.n, c.of),
    }
}

/// An ended worker's reason (`  <reason>` and a newline), or where a live worker's status
/// comes from when its agent's hooks spoke (`  hooks: <state> · <event> <N>s ago`, docs/mcp.md
/// "Status from the agents' hooks"), else "".
fn reason_or_signal(w: &crate::domain::WorkerState) -> String {
    if let Some(r) = w.reason.as_deref().filter(|_| !w.status.is_live()) {
        return format!("  {r}\n");
    }
    match w.signal.as_ref().filter(|_| w.status.is_live()) {
        Some(sig) => {
            let ago = (chrono::Utc::now() - sig.at).num_seconds().max(0);
            format!("  {} · {} {ago}s ago\n", sig.line(), sig.event)
        }
        None => String::new(),
    }
}

/// `usage: …` (what the CLIs reported) and `budget: …` (the run's budget, as summed for
/// it), each only when there is one.
fn spend_lines(state: &RunState, total: Option<crate::providers::output::Usage>) -> String {
    let usage = total.map(|t| format!("usage: {}\n", t.short()));
    let budget = state
        .budget
        .as_ref()
        .map(|b| format!("budget: {}\n", b.line()));
    [usage, budget].into_iter().flatten().collect()
}

/// [`status_text`] with the SSH hosts that did not answer (`down`): their live workers
/// read `unknown (host box not answering)`, not the status last saved.
pub fn status_text_with(state: &RunState, driven: bool, down: &BTreeSet<String>) -> String {
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
    s.push_str(&spend_lines(state, total));
    s.push_str(&driver_lines(state, driven));
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
        let unknown = unknown_on_host(w, down);
        s.push_str(&format!(
            "{:<18} {:<20} {:<9} {:<10} {:>7} {:>5}\n",
            w.id,
            w.role,
            w.provider,
            if unknown.is_some() {
                "unknown"
            } else if w.status == crate::domain::WorkerStatus::Pending && w.flow.parked.is_some() {
                // Waiting for its provider's usage limit to reset (its reason says until when).
                "parked"
            } else {
                w.status.as_str()
            },
            format!("{}/{}", w.attempt, w.max_attempts),
            w.exit_code
                .map(|c| c.to_string())
                .unwrap_or_else(|| "-".into())
        ));
        match (&unknown, w.placement()) {
            (Some(u), _) => s.push_str(&format!("  {u}; last seen {}\n", w.status)),
            (None, Some(p)) => s.push_str(&format!("  {p}\n")),
            (None, None) => {}
        }
        if let Some(u) = usage.get(&w.id) {
            s.push_str(&format!("  usage: {}\n", u.short()));
        }
        s.push_str(&reason_or_signal(w));
        s.push_str(&race_place(state, w));
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
            // The time it still waits and what happens then, as the dashboard says it.
            let wait = w
                .pending
                .as_ref()
                .map(|p| format!("  {}\n", p.wait_line(chrono::Utc::now())))
                .unwrap_or_default();
            s.push_str(&format!(
                "  asks: {q}\n{wait}  answer: crewmux answer {} --worker {} \"<text>\"\n",
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
                Ok(s) => list_summary(s),
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
    let runs = crate::store::runs_root(project);
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
                if driven {
                    for line in hosts_down_lines(&s) {
                        crate::outln!("  {line}");
                    }
                }
            }
            // A run being planned, or stopped while it was, says so itself.
            Err((id, e)) if crate::store::planning::interrupted(&runs.join(&id)).is_some() => {
                crate::outln!("{id:<22} {e}");
            }
            Err((id, e)) => crate::outln!("{id:<22} unreadable: {e}"),
        }
    }
    Ok(0)
}

/// A run's summary in the list of runs: for a driven run with hosts its driving process
/// finds not answering, their workers' `unknown` as `status <run> --json` has them.
fn list_summary(state: &RunState) -> serde_json::Value {
    let mut summary = super::summary::summary(state);
    if RunStore::at(state.run_dir.clone())
        .is_driven()
        .unwrap_or(false)
    {
        let down = hosts_down(state, true, BTreeSet::new());
        unknown_in_json(&mut summary, state, &down, true);
    }
    summary
}

/// The lines under a driven run's row in the list of runs: each host its driving process
/// finds not answering, and how many live workers it holds whose state is unknown.
fn hosts_down_lines(state: &RunState) -> Vec<String> {
    let down = hosts_down(state, true, BTreeSet::new());
    state
        .hosts_not_answering
        .iter()
        .map(|(host, since)| {
            let unknown = state
                .workers
                .iter()
                .filter(|w| w.host.as_deref() == Some(host) && unknown_on_host(w, &down).is_some())
                .count();
            format!("{}: {unknown} worker(s) unknown", since_line(host, since))
        })
        .collect()
}

#[cfg(test)]
#[path = "status_tests.rs"]
mod tests;
