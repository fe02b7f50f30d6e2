//! `crewmux status`: one run's state as text (reconciled first when nobody drives it), or
//! the list of the project's runs, as a table or JSON.

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
    let (state, down) = reconcile(&store)?;
    if args.json {
        let mut summary = super::summary::summary(&state);
        unknown_in_json(&mut summary, &state, &down);
        crate::outln!(
            "{}",
            serde_json::to_string_pretty(&summary).map_err(|e| Error::Other(e.to_string()))?
        );
        return Ok(0);
    }
    crate::out!("{}", status_text_with(&state, store.is_driven()?, &down));
    Ok(0)
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
/// [`unknown_on_host`] says); its `status` stays the one saved.
fn unknown_in_json(summary: &mut serde_json::Value, state: &RunState, down: &BTreeSet<String>) {
    let Some(workers) = summary["workers"].as_array_mut() else {
        return;
    };
    for (j, w) in workers.iter_mut().zip(&state.workers) {
        if let Some(u) = unknown_on_host(w, down) {
            j["unknown"] = serde_json::Value::String(u);
        }
    }
    summary["hosts_not_answering"] = serde_json::json!(down);
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
        let unknown = unknown_on_host(w, down);
        s.push_str(&format!(
            "{:<18} {:<20} {:<9} {:<10} {:>7} {:>5}\n",
            w.id,
            w.role,
            w.provider,
            if unknown.is_some() {
                "unknown"
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

#[cfg(test)]
mod tests {
    /// The line after the row of worker `id` in `text`.
    fn line_after<'a>(text: &'a str, id: &str) -> &'a str {
        let mut lines = text.lines().skip_while(|l| !l.starts_with(id));
        lines.next();
        lines.next().unwrap_or_default()
    }

    #[test]
    fn a_worker_moved_off_a_lost_host_and_one_on_a_host_say_where_they_run() {
        let mut run = crate::tui::fixtures::crazy_run();
        run.workers[0].moved_from = Some("box".into());
        run.workers[0].attempt = 2;
        run.workers[0].status = crate::domain::WorkerStatus::Running;
        run.workers[1].host = Some("box".into());
        let text = super::status_text(&run, true);
        assert_eq!(
            line_after(&text, &run.workers[0].id),
            "  attempt 2 on local (box lost)",
            "{text}"
        );
        assert_eq!(line_after(&text, &run.workers[1].id), "  on box", "{text}");
        assert_eq!(
            text.matches("box").count(),
            2,
            "no other worker names a host: {text}"
        );
    }

    #[test]
    fn a_live_worker_on_a_host_that_does_not_answer_reads_unknown_and_others_do_not() {
        let mut run = crate::tui::fixtures::crazy_run();
        for (i, status) in [
            crate::domain::WorkerStatus::Running,
            crate::domain::WorkerStatus::Completed,
        ]
        .into_iter()
        .enumerate()
        {
            run.workers[i].host = Some("box".into());
            run.workers[i].status = status;
        }
        let down = ["box".to_string()].into();
        let text = super::status_text_with(&run, false, &down);
        let row = text
            .lines()
            .find(|l| l.starts_with(&run.workers[0].id))
            .unwrap();
        assert!(row.contains(" unknown "), "{text}");
        assert_eq!(
            line_after(&text, &run.workers[0].id),
            "  unknown (host box not answering); last seen running",
            "{text}"
        );
        // An ended worker of that host keeps what it ended as.
        assert_eq!(line_after(&text, &run.workers[1].id), "  on box", "{text}");
        let mut json = super::super::summary::summary(&run);
        super::unknown_in_json(&mut json, &run, &down);
        assert_eq!(
            json["workers"][0]["unknown"],
            "unknown (host box not answering)"
        );
        assert!(json["workers"][1].get("unknown").is_none(), "{json}");
        assert_eq!(json["hosts_not_answering"], serde_json::json!(["box"]));
    }
}
