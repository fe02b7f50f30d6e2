//! `cargo bench --bench worktrees`: creating 16 workers' worktrees on a repository of 5,000
//! files (`CREWMUX_BENCH_FILES`, `CREWMUX_BENCH_WORKTREES` override), crewmux's
//! `workspace::plan` + `workspace::create::create` against plain `git worktree add -b` of
//! the same 16 in the same run. Each side runs 3 times, alternating, on fresh branches;
//! the medians are compared (target: ratio ≤ 1.2). Needs git.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic is how a benchmark reports a broken expectation"
)]

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use crewmux::domain::{WorkspaceMode, WorkspaceSpec};
use crewmux::workspace::{create, plan, WorkspaceOptions};

fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .unwrap()
        .status
        .success();
    assert!(ok, "git {args:?}");
}

fn env(k: &str, d: usize) -> usize {
    std::env::var(k)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(d)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn main() {
    let files = env("CREWMUX_BENCH_FILES", 5000);
    let n = env("CREWMUX_BENCH_WORKTREES", 16);
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["config", "user.email", "bench@example.com"]);
    git(&repo, &["config", "user.name", "bench"]);
    for i in 0..files {
        let dir = repo.join(format!("src/m{}", i / 100));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join(format!("f{i}.rs")),
            format!("pub fn f{i}() -> usize {{\n    {i}\n}}\n"),
        )
        .unwrap();
    }
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "start"]);
    eprintln!("repository of {files} files; {n} worktrees per side, 3 rounds");
    let workers: Vec<(String, Option<WorkspaceMode>)> =
        (0..n).map(|i| (format!("w{i}"), None)).collect();
    let (mut ours, mut plain) = (vec![], vec![]);
    for round in 0..3 {
        let base = tmp.path().join(format!("plain-{round}"));
        let t = Instant::now();
        for i in 0..n {
            git(
                &repo,
                &[
                    "worktree",
                    "add",
                    "--quiet",
                    "-b",
                    &format!("plain/{round}/w{i}"),
                    &base.join(format!("w{i}")).to_string_lossy(),
                    "HEAD",
                ],
            );
        }
        plain.push(t.elapsed().as_secs_f64());

        let t = Instant::now();
        let planned = plan(
            &repo,
            &WorkspaceSpec::default(),
            &workers,
            &WorkspaceOptions::default(),
        )
        .unwrap();
        let ws = create::create(
            planned.plan.as_ref().unwrap(),
            &repo,
            &format!("bench-{round}"),
        )
        .unwrap();
        ours.push(t.elapsed().as_secs_f64());
        assert_eq!(ws.workers.len(), n);
        assert!(ws
            .workers
            .values()
            .all(|w| w.path.join("src/m0/f0.rs").exists()));
    }
    let (o, p) = (median(ours.clone()), median(plain.clone()));
    println!("worktrees: {n} on a repository of {files} files (3 rounds, medians)");
    println!("  crewmux plan + create : {o:.3} s   (rounds: {ours:.3?})");
    println!("  plain git worktree add: {p:.3} s   (rounds: {plain:.3?})");
    println!(
        "  ratio {:.3} (target ≤ 1.2): {}",
        o / p,
        if o / p <= 1.2 { "met" } else { "missed" }
    );
}
