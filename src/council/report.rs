//! The deterministic merge that writes `report.md` when no synthesis worker is available
//! (docs/design.md "The run"): problem, clarifications, per-worker outcome and result excerpt, the
//! council's verdicts with findings, and the fix rounds. Same input, same bytes: no clock,
//! no paths read.

use std::fmt::{self, Write as _};

use crate::domain::{Council, Verdict, WorkerKind, WorkerStatus};
use crate::text::clean_text;

/// A result excerpt keeps at most this many non-empty lines …
pub const EXCERPT_LINES: usize = 12;
/// … and at most this many characters.
pub const EXCERPT_CHARS: usize = 1200;

/// One answered (or still open) run-level question.
#[derive(Debug, Clone, PartialEq)]
pub struct Clarification {
    pub question: String,
    /// `None` while the question is pending.
    pub answer: Option<String>,
}

/// One worker as the report shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportWorker {
    pub id: String,
    pub role: String,
    pub provider: String,
    pub kind: WorkerKind,
    /// Fix round the worker belongs to (0 for the first pass).
    pub round: u32,
    pub status: WorkerStatus,
    pub exit_code: Option<i32>,
    /// Attempts launched (1-based count; 0 when never launched).
    pub attempts: u32,
    /// Why it ended as it did, when known (e.g. `required artifact result.md missing`).
    pub reason: Option<String>,
    /// The text of its last result file, if any.
    pub result_text: Option<String>,
    /// Where it ran when a host is involved (`on box`, `attempt 2 on local (box lost)`);
    /// `None` for a worker that only ever ran on this machine.
    pub placement: Option<String>,
}

/// Everything the merge needs, in display order.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportInput {
    pub run_id: String,
    pub problem: String,
    /// Team name or mode (`crazy`, `ccg`, `solo`, a team file's name).
    pub team: String,
    pub clarifications: Vec<Clarification>,
    pub workers: Vec<ReportWorker>,
    /// The council of each verify pass, in order: index 0 is the first verify, index n the
    /// verify after fix round n. The last one is the run's council.
    pub verify_passes: Vec<Council>,
    /// Providers taken out of the run, with why (`RunRouting::failed`: a declared exit
    /// code, or the circuit breaker opened it); their workers moved to a fallback.
    pub providers_out: Vec<(String, String)>,
}

/// `## Race: <task>` for each race of the run: its ranking (rank, candidate, why), the
/// pick, and how to take another candidate instead; "" without races. Each section opens
/// with its blank line, as the report's next one does.
pub fn race_section(races: &std::collections::BTreeMap<String, crate::domain::Race>) -> String {
    let mut out = String::new();
    for (task, race) in races {
        let _ = writeln!(out, "\n## Race: {task}\n");
        if !race.ranked() {
            let _ = writeln!(
                out,
                "Not ranked yet: {} candidates ({}).",
                race.candidates.len(),
                race.candidates.join(", ")
            );
            continue;
        }
        out.push_str("| rank | candidate | why |\n| --- | --- | --- |\n");
        for r in &race.ranking {
            let picked = if race.pick.as_deref() == Some(r.id.as_str()) {
                " (picked)"
            } else {
                ""
            };
            let _ = writeln!(out, "| {} | {}{picked} | {} |", r.rank, r.id, cell(&r.why));
        }
        match &race.pick {
            Some(p) => {
                let _ = writeln!(
                    out,
                    "\n{p} is picked: only its work is in the integration branch. Another candidate is taken with `crewmux merge RUN --worker ID`."
                );
            }
            None => out.push_str("\nNo candidate completed: nothing is picked.\n"),
        }
    }
    out
}

/// Merge a run into the Markdown text of `report.md`.
pub fn merge_report(input: &ReportInput) -> String {
    let mut out = String::new();
    // `fmt::Write` into a `String` cannot fail (only a failing `Display` impl could, and
    // none written here does): there is nothing to handle.
    let _ = write_report(&mut out, input);
    while out.ends_with("\n\n") {
        out.pop();
    }
    out
}

/// The sections of the report in order: header, clarifications, workers, council, fix rounds.
fn write_report(out: &mut String, input: &ReportInput) -> fmt::Result {
    let council = input.verify_passes.last();
    let council_status = council.map_or("pending", |c| c.status.as_str());
    writeln!(out, "# Report of run {}\n", input.run_id)?;
    writeln!(out, "## Problem\n\n{}\n", input.problem.trim())?;
    writeln!(
        out,
        "Team: {} · workers: {} · council: {} · fix rounds: {}\n",
        input.team,
        input.workers.len(),
        council_status,
        input.verify_passes.len().saturating_sub(1)
    )?;
    write_clarifications(out, &input.clarifications)?;
    write_workers(out, &input.workers)?;
    if !input.providers_out.is_empty() {
        out.push_str("## Providers taken out of the run\n\n");
        // Each reason starts with its provider's name (`codex: endpoint unreachable …`).
        for (p, why) in &input.providers_out {
            let why = one_line(why);
            if why.starts_with(&format!("{p}:")) {
                writeln!(out, "- {why}")?;
            } else {
                writeln!(out, "- {p}: {why}")?;
            }
        }
        out.push('\n');
    }
    writeln!(out, "## Council: {council_status}\n")?;
    match council {
        None => out.push_str("The council has not sat.\n\n"),
        Some(c) => write_council(out, c)?,
    }
    write_fix_rounds(out, input)
}

fn write_clarifications(out: &mut String, clarifications: &[Clarification]) -> fmt::Result {
    out.push_str("## Clarifications\n\n");
    if clarifications.is_empty() {
        out.push_str("None were needed.\n\n");
        return Ok(());
    }
    for (i, c) in clarifications.iter().enumerate() {
        let answer = c.answer.as_deref().unwrap_or("(not answered yet)");
        writeln!(
            out,
            "{}. **Q:** {}\n   **A:** {}",
            i + 1,
            one_line(&c.question),
            one_line(answer)
        )?;
    }
    out.push('\n');
    Ok(())
}

/// The workers' table, then each worker's ending and result excerpt.
fn write_workers(out: &mut String, workers: &[ReportWorker]) -> fmt::Result {
    out.push_str("## Workers\n\n");
    if workers.is_empty() {
        out.push_str("No worker ran.\n\n");
        return Ok(());
    }
    out.push_str("| worker | role | provider | kind | round | status | exit | attempts |\n");
    out.push_str("| --- | --- | --- | --- | --- | --- | --- | --- |\n");
    for w in workers {
        writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            cell(&w.id),
            cell(&w.role),
            cell(&w.provider),
            kind_str(w.kind),
            w.round,
            w.status,
            w.exit_code.map_or("-".to_string(), |c| c.to_string()),
            w.attempts
        )?;
    }
    out.push('\n');
    for w in workers {
        writeln!(out, "### {} ({})\n", w.id, w.role)?;
        if let Some(placement) = &w.placement {
            writeln!(out, "Ran {placement}.\n")?;
        }
        if let Some(reason) = &w.reason {
            writeln!(out, "Ended {}: {}\n", w.status, one_line(reason))?;
        }
        match w.result_text.as_deref().map(excerpt) {
            Some(text) if !text.is_empty() => {
                for line in text.lines() {
                    writeln!(out, "> {line}")?;
                }
                out.push('\n');
            }
            _ => out.push_str("_No result._\n\n"),
        }
    }
    Ok(())
}

/// Per fix round: the statuses before and after, the failing findings sent, the fixers.
fn write_fix_rounds(out: &mut String, input: &ReportInput) -> fmt::Result {
    out.push_str("## Fix rounds\n\n");
    if input.verify_passes.len() <= 1 {
        out.push_str("None.\n");
    }
    for (round, pair) in input.verify_passes.windows(2).enumerate() {
        let round = round as u32 + 1;
        writeln!(
            out,
            "### Round {round}: {} → {}\n",
            pair[0].status.as_str(),
            pair[1].status.as_str()
        )?;
        out.push_str("Failing findings sent to the fixers:\n\n");
        for v in pair[0]
            .verdicts
            .iter()
            .filter(|v| v.verdict == Verdict::Fail)
        {
            for finding in &v.findings {
                writeln!(out, "- {}: {}", v.critic, one_line(finding))?;
            }
        }
        out.push('\n');
        let fixers: Vec<String> = input
            .workers
            .iter()
            .filter(|w| w.round == round && w.kind == WorkerKind::Fixer)
            .map(|w| format!("{} ({})", w.id, w.status))
            .collect();
        writeln!(
            out,
            "Fixers: {}\n",
            if fixers.is_empty() {
                "none".to_string()
            } else {
                fixers.join(", ")
            }
        )?;
    }
    Ok(())
}

fn write_council(out: &mut String, council: &Council) -> fmt::Result {
    if council.verdicts.is_empty() {
        out.push_str("No verdicts.\n\n");
        return Ok(());
    }
    out.push_str("| critic | verdict | confidence |\n| --- | --- | --- |\n");
    for v in &council.verdicts {
        writeln!(
            out,
            "| {} | {} | {:.2} |",
            cell(&v.critic),
            v.verdict.as_str(),
            v.confidence
        )?;
    }
    out.push('\n');
    for v in &council.verdicts {
        writeln!(out, "**{}** ({}):\n", v.critic, v.verdict.as_str())?;
        if v.findings.is_empty() {
            out.push_str("- no findings\n");
        }
        for finding in &v.findings {
            writeln!(out, "- {}", one_line(finding))?;
        }
        out.push('\n');
    }
    Ok(())
}

/// The first [`EXCERPT_LINES`] non-empty lines of a result, ANSI stripped, cut at
/// [`EXCERPT_CHARS`] characters; `…` marks a cut.
pub fn excerpt(result: &str) -> String {
    let text = clean_text(result);
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty())
        .collect();
    let mut kept = lines[..lines.len().min(EXCERPT_LINES)].join("\n");
    let mut cut = lines.len() > EXCERPT_LINES;
    if kept.chars().count() > EXCERPT_CHARS {
        kept = kept.chars().take(EXCERPT_CHARS).collect();
        cut = true;
    }
    if cut {
        kept.push_str(" …");
    }
    kept
}

fn kind_str(kind: WorkerKind) -> &'static str {
    match kind {
        WorkerKind::Worker => "worker",
        WorkerKind::Check => "check",
        WorkerKind::Critic => "critic",
        WorkerKind::Fixer => "fixer",
        WorkerKind::Synthesizer => "synthesizer",
    }
}

/// Text on one line (newlines become spaces).
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Text safe in a Markdown table cell.
fn cell(text: &str) -> String {
    one_line(text).replace('|', "\\|")
}

#[cfg(test)]
#[path = "report_tests.rs"]
mod tests;
