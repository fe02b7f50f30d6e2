//! `cargo bench --bench big_output`: crewmux's memory when a worker prints one huge line.
//! The real binary runs a one-worker team twice in the same run, on the process backend
//! (`CREWMUX_BENCH_BACKEND=tmux` for tmux): once a worker printing a short line, once a
//! worker printing `CREWMUX_BENCH_BYTES` (default 1 GiB) on one line and then a last
//! line. Each run's peak RSS is the kernel's (`getrusage(RUSAGE_CHILDREN)` after the run,
//! the largest of crewmux and the worker's own small programs); target: ≤ 60 MB with the
//! huge line. It also checks the run ended `done` and that `result.md` stayed small.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic is how a benchmark reports a broken expectation"
)]

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use nix::sys::resource::{getrusage, UsageWho};

/// Target peak RSS of crewmux with the huge line, MB.
const TARGET_MB: f64 = 60.0;

fn team(dir: &Path, name: &str, shell: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    let body = format!(
        "[[worker]]\nid = \"w\"\nrole = \"backend-engineer\"\nprovider = \"command\"\nmax_attempts = 1\ncommand = [\"sh\", \"-c\", {}]\n",
        toml_string(shell)
    );
    std::fs::write(&path, body).unwrap();
    path
}

fn toml_string(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// One run of `team` in a fresh project: (seconds, peak RSS MB so far among waited
/// children, result.md bytes, summary JSON).
fn run(
    team_body: &dyn Fn(&Path) -> std::path::PathBuf,
    backend: &str,
) -> (f64, f64, u64, serde_json::Value) {
    let tmp = tempfile::tempdir().unwrap();
    let t = team_body(tmp.path());
    let socket = format!("crewmux-bench-big-{}", std::process::id());
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_crewmux"))
        .current_dir(tmp.path())
        .env("CREWMUX_TMUX_SOCKET", &socket)
        .env("XDG_STATE_HOME", tmp.path().join("state"))
        .args([
            "run",
            "--team",
            t.to_str().unwrap(),
            "--no-clarify",
            "--headless",
        ])
        // No agent CLI is probed (`--version`) with one provider that is not an agent:
        // their memory would count among the children.
        .args(["--backend", backend, "--provider", "command", "print"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let secs = started.elapsed().as_secs_f64();
    if backend == "tmux" {
        let killed = Command::new("tmux")
            .args(["-L", &socket, "kill-server"])
            .status();
        if let Err(e) = killed {
            eprintln!("tmux kill-server: {e}");
        }
    }
    // ru_maxrss is in KiB on Linux.
    let peak_mb = getrusage(UsageWho::RUSAGE_CHILDREN).unwrap().max_rss() as f64 / 1024.0;
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("summary ({e}): {}", String::from_utf8_lossy(&out.stderr)));
    let result = summary["workers"][0]["result"]
        .as_str()
        .map_or(0, |p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0));
    (secs, peak_mb, result, summary)
}

fn main() {
    let bytes: u64 = std::env::var("CREWMUX_BENCH_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1 << 30);
    let backend = std::env::var("CREWMUX_BENCH_BACKEND").unwrap_or_else(|_| "process".into());
    eprintln!("crewmux big-output benchmark: {bytes} bytes on one line, {backend} backend");
    // The short run first: the kernel's figure is a maximum over every child so far.
    let (s_secs, s_mb, s_result, s) =
        run(&|d| team(d, "short.toml", "echo a short answer"), &backend);
    let huge = format!("head -c {bytes} /dev/zero | tr '\\0' x; printf '\\nthe last line\\n'");
    let (h_secs, h_mb, h_result, h) = run(&|d| team(d, "huge.toml", &huge), &backend);
    for (name, summary) in [("short", &s), ("huge", &h)] {
        assert_eq!(
            summary["workers"][0]["status"], "completed",
            "{name}: {summary}"
        );
        assert_eq!(summary["workers"][0]["exit_code"], 0, "{name}: {summary}");
    }
    println!("| worker prints | run | peak RSS | result.md |");
    println!("| --- | --- | --- | --- |");
    println!("| a short line | {s_secs:.1} s | {s_mb:.1} MB | {s_result} bytes |");
    println!("| {bytes} bytes on one line | {h_secs:.1} s | {h_mb:.1} MB | {h_result} bytes |");
    let ok = h_mb <= TARGET_MB;
    println!(
        "peak RSS with the huge line: {h_mb:.1} MB (target ≤ {TARGET_MB} MB): {}",
        if ok { "met" } else { "MISSED" }
    );
    if !ok {
        std::process::exit(1);
    }
}
