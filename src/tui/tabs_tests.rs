use std::path::{Path, PathBuf};

use ratatui::style::Modifier;

use super::*;
use crate::tui::fixtures;

#[test]
fn tabs_are_numbered_in_order_and_cycle_both_ways() {
    assert_eq!(Tab::nth(1), Some(Tab::Output));
    assert_eq!(Tab::nth(6), Some(Tab::Council));
    assert_eq!(Tab::nth(0), None);
    assert_eq!(Tab::nth(7), None);
    assert_eq!(Tab::Council.cycle(true), Tab::Output);
    assert_eq!(Tab::Output.cycle(false), Tab::Council);
    assert_eq!(Tab::Result.number(), 2);
}

#[test]
fn markdown_is_rendered_not_shown_raw() {
    let lines = markdown_lines("# Plan\n\nUse **one** bucket.\n\n- first\n- second\n");
    let text: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    assert!(text.iter().any(|l| l.contains("Plan")), "{text:?}");
    let bold = lines
        .iter()
        .flat_map(|l| l.spans.iter())
        .find(|s| s.content == "one")
        .expect("the emphasised word is its own span");
    assert!(bold.style.add_modifier.contains(Modifier::BOLD));
    assert!(!text.iter().any(|l| l.contains("**")), "{text:?}");
    assert!(text.iter().any(|l| l.contains("first")));
}

#[test]
fn each_tab_wants_its_file() {
    let run = fixtures::crazy_run();
    let w = &run.workers[1];
    let dir = Path::new("/p/.crewmux/runs/r");
    let attempt = dir.join(format!("workers/{}/attempt-{}", w.id, w.attempt));
    let result = wanted_doc(Tab::Result, None, Some(w), dir);
    assert_eq!(
        result,
        Some(w.result.clone().unwrap_or(attempt.join("result.md")))
    );
    assert_eq!(
        wanted_doc(Tab::Prompt, None, Some(w), dir),
        Some(attempt.join("prompt.md"))
    );
    assert_eq!(
        wanted_doc(Tab::Report, None, None, dir),
        Some(dir.join("report.md"))
    );
    assert_eq!(wanted_doc(Tab::Output, None, Some(w), dir), None);
    assert_eq!(wanted_doc(Tab::Council, None, Some(w), dir), None);
    let f = PathBuf::from("/p/src/lib.rs");
    assert_eq!(wanted_doc(Tab::Council, Some(&f), Some(w), dir), Some(f));
}

#[test]
fn a_missing_file_says_so_and_a_long_one_is_cut() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = load(&tmp.path().join("result.md"));
    assert_eq!(missing.stamp, None);
    assert!(missing.lines[0].to_string().contains("does not exist yet"));

    let big = tmp.path().join("big.txt");
    std::fs::write(&big, "x\n".repeat(MAX_DOC_BYTES as usize)).unwrap();
    let doc = load(&big);
    assert!(doc.lines.len() <= MAX_DOC_BYTES as usize / 2 + 1);
    assert!(doc
        .lines
        .last()
        .unwrap()
        .to_string()
        .contains("cut at 1024 KiB"));
}

#[test]
fn findings_name_workers_and_existing_files() {
    let mut run = fixtures::crazy_run();
    run.project_dir = PathBuf::from("/p");
    run.council.verdicts[0].findings = vec![
        "backend cites `RateLimiter::acquire_many`, which no file defines".into(),
        "src/limit.rs: the bucket never refills".into(),
        "docs/missing.md is cited but absent".into(),
        "nothing to point at".into(),
    ];
    let exists = |p: &Path| p == Path::new("/p/src/limit.rs");
    let f = findings(&run, Path::new("/p/.crewmux/runs/r"), &exists);
    let first: Vec<&Finding> = f.iter().filter(|f| f.verdict == 0).collect();
    assert_eq!(first[0].worker.as_deref(), Some("backend"));
    assert_eq!(first[1].file.as_deref(), Some(Path::new("/p/src/limit.rs")));
    assert_eq!(
        first[2].file, None,
        "a file that does not exist is not a target"
    );
    assert_eq!(
        (first[3].worker.as_deref(), first[3].file.as_deref()),
        (None, None)
    );
    let all: usize = run.council.verdicts.iter().map(|v| v.findings.len()).sum();
    assert_eq!(f.len(), all, "every finding of every critic");
}

#[test]
fn the_prompt_tab_keeps_the_simulated_agents_directives_out_of_sight() {
    let dir = tempfile::tempdir().unwrap();
    let prompt = dir.path().join("prompt.md");
    std::fs::write(
        &prompt,
        "# Task\n\nBuild the checkout page.\nsim: ask=Which colour scheme?\nsim: ask-default=dark\nsim: lines=20\n\nKeep it small.\n",
    )
    .unwrap();
    let text: Vec<String> = load(&prompt)
        .lines
        .iter()
        .map(ToString::to_string)
        .collect();
    let all = text.join("\n");
    assert!(all.contains("Build the checkout page."), "{all}");
    assert!(all.contains("Keep it small."), "{all}");
    assert!(!all.contains("sim:"), "{all}");
    assert!(!all.contains("Which colour scheme"), "{all}");
    // Another file keeps every line it has.
    let notes = dir.path().join("notes.md");
    std::fs::write(&notes, "sim: a line of a user's own file\n").unwrap();
    let notes_text: Vec<String> = load(&notes).lines.iter().map(ToString::to_string).collect();
    assert!(notes_text.join("\n").contains("sim:"), "{notes_text:?}");
}
