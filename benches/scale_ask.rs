//! The question scenario (`ask`, run only when asked for): askers among idle workers, each
//! asking several questions in turn, answered with `crewmux answer --worker` as soon as
//! they show; once through the MCP `ask` tool (tests/fixtures/mcp_client.py, an MCP
//! client as an agent CLI is one) and once through today's paste path (a `(y/n)` question
//! on the screen, the answer typed into the pane), in the same run.
//!
//! Two latencies per question: the agent's call (its clock just before it asks) to the
//! question in the run's state (the `worker-waiting` event the dashboard shows it by), and
//! the answer (the bench's clock just before it starts `crewmux answer`) to the agent
//! holding the reply (its clock just after). Target p95 ≤ 100 ms each (docs/mcp.md). With
//! `CREWMUX_BENCH_BEFORE` an earlier binary's MCP path runs too, as the baseline of two more.

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use crewmux::store::RunStore;
use crewmux::tmux::TmuxClient;

use super::scale_run::{run_dir, team_file};
use super::{Build, Config, Figure, Mode};

/// Questions each asker asks in turn.
const QUESTIONS: usize = 5;

thread_local! {
    /// The parts of the last MCP path's ask latencies (ms): the agent's call to the
    /// server's ask file, and that file to the state.
    static LAST_PARTS: std::cell::RefCell<Vec<(f64, f64)>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// How a worker asks.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Asking {
    Mcp,
    Screen,
}

impl Asking {
    fn label(self) -> &'static str {
        match self {
            Asking::Mcp => "MCP ask",
            Asking::Screen => "paste path",
        }
    }
}

/// Both paths on `cfg.workers` workers (a quarter of them ask), figures side by side: the
/// MCP figure with the paste path's as its baseline.
pub fn ask_scenario(cfg: &Config, figs: &mut Vec<Figure>) {
    if std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("the ask scenario needs python3 (the MCP client); skipped");
        return;
    }
    let askers = (cfg.workers / 4).max(1);
    let now = Build {
        exe: cfg.exe.clone(),
        tag: "",
    };
    let (mcp_asked, mcp_answered, mcp_n) = one_path(cfg, &now, askers, Asking::Mcp);
    let (scr_asked, scr_answered, scr_n) = one_path(cfg, &now, askers, Asking::Screen);
    say_parts("this build");
    let p95 = |v: &[f64]| pct(v, 0.95);
    let mut add = |name: &str, mcp: &[f64], screen: &[f64]| {
        let mut f = Figure::new(
            &format!("{name}, p95 ({askers} askers of {}, MCP)", cfg.workers),
            "≤ 100 ms",
            p95(mcp),
            " ms",
            p95(mcp) <= 100.0,
        );
        f.baseline = Some(p95(screen));
        figs.push(f);
    };
    add("ask → question in the state", &mcp_asked, &scr_asked);
    add("answer → reply in the agent", &mcp_answered, &scr_answered);
    // An earlier binary's MCP path beside this one's (`CREWMUX_BENCH_BEFORE`).
    if let Some(before) = &cfg.before {
        let then = Build {
            exe: before.clone(),
            tag: "before",
        };
        let (asked, answered, _) = one_path(cfg, &then, askers, Asking::Mcp);
        say_parts("before");
        for (name, now, then) in [
            ("ask → question in the state", &mcp_asked, &asked),
            ("answer → reply in the agent", &mcp_answered, &answered),
        ] {
            let mut f = Figure::new(
                &format!("{name}, p95 (MCP, this build vs before)"),
                "≤ 100 ms",
                p95(now),
                " ms",
                p95(now) <= 100.0,
            );
            f.baseline = Some(p95(then));
            figs.push(f);
        }
    }
    let want = askers * QUESTIONS;
    for (p, n) in [(Asking::Mcp, mcp_n), (Asking::Screen, scr_n)] {
        figs.push(Figure::new(
            &format!("questions answered ({})", p.label()),
            &want.to_string(),
            n as f64,
            "",
            n == want,
        ));
    }
}

/// Where the last MCP path's ask time went, from the clock each ask file holds
/// (`asked_at`, the server's, just before it writes the file), on stderr.
fn say_parts(build: &str) {
    let parts = LAST_PARTS.with(std::cell::RefCell::take);
    if parts.is_empty() {
        return;
    }
    let (to_server, to_state): (Vec<f64>, Vec<f64>) = parts.into_iter().unzip();
    eprintln!(
        "ask → question in the state ({build}), p95 of its parts: the agent's call → the server's clock {:.1} ms, the server's clock → the state {:.1} ms",
        pct(&to_server, 0.95),
        pct(&to_state, 0.95)
    );
}

/// The `p` percentile of `v` (NaN when empty).
fn pct(v: &[f64], p: f64) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v.get(((v.len() as f64 * p).ceil() as usize).saturating_sub(1))
        .copied()
        .unwrap_or(f64::NAN)
}

/// One run of `build` with `askers` askers asking through `how` among idle workers: the ask and answer
/// latencies (ms) and how many questions got their reply.
fn one_path(
    cfg: &Config,
    build: &Build,
    askers: usize,
    how: Asking,
) -> (Vec<f64>, Vec<f64>, usize) {
    let socket = format!(
        "crewmux-bench-{}-ask-{}{}",
        std::process::id(),
        if how == Asking::Mcp { "mcp" } else { "screen" },
        build.tag
    );
    let tmp = tempfile::tempdir().unwrap();
    let cmd = |i: usize| asker_command(how, askers, i);
    let team = team_file(tmp.path(), cfg.workers, &cmd);
    let mut child = build
        .quiet_run(
            tmp.path(),
            &socket,
            Mode::Control,
            &team,
            cfg.workers.min(64),
            "benchmark the questions",
        )
        .spawn()
        .unwrap();
    let limit = Instant::now() + Duration::from_secs(120 + (askers * QUESTIONS) as u64);
    let mut answered: HashMap<String, Vec<i64>> = HashMap::new();
    let mut asked_at: HashMap<String, Vec<i64>> = HashMap::new();
    let mut store = None;
    while Instant::now() < limit {
        std::thread::sleep(Duration::from_millis(10));
        if store.is_none() {
            store = run_dir(tmp.path()).map(RunStore::at);
        }
        let Some(s) = store.as_ref() else { continue };
        let Ok(events) = s.read_events() else {
            continue;
        };
        asked_at.clear();
        for e in events
            .iter()
            .filter(|e| e.kind.as_str() == "worker-waiting")
        {
            if let Some(w) = e.worker.clone() {
                asked_at
                    .entry(w)
                    .or_default()
                    .push(e.ts.timestamp_nanos_opt().unwrap_or(0));
            }
        }
        for (w, asks) in &asked_at {
            let given = answered.entry(w.clone()).or_default();
            if asks.len() > given.len() {
                let run = s.dir().file_name().unwrap().to_string_lossy().to_string();
                let t = now_ns();
                let out = build
                    .command(tmp.path(), &socket, Mode::Control)
                    .args(["answer", &run, "--worker", w, "y"])
                    .output()
                    .unwrap();
                if out.status.success() {
                    given.push(t);
                }
            }
        }
        let done = answered.values().map(Vec::len).sum::<usize>() >= askers * QUESTIONS;
        if done {
            // The last reply has a moment to reach its agent.
            std::thread::sleep(Duration::from_millis(500));
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let _ = TmuxClient::new(&socket).kill_server();
    let Some(s) = store else {
        return (vec![], vec![], 0);
    };
    latencies(&s, askers, &asked_at, &answered)
}

/// The ask and answer latencies (ms) of the first `askers` workers from the clocks they
/// wrote, the `worker-waiting` times (`asked_at`) and the bench's answer times, with how many
/// questions got their reply.
fn latencies(
    s: &RunStore,
    askers: usize,
    asked_at: &HashMap<String, Vec<i64>>,
    answered: &HashMap<String, Vec<i64>>,
) -> (Vec<f64>, Vec<f64>, usize) {
    let (mut to_state, mut to_reply, mut replied) = (vec![], vec![], 0);
    for i in 0..askers {
        let w = format!("w{i}");
        let dir = s.dir().join(format!("workers/{w}/attempt-1"));
        for n in 1..=QUESTIONS {
            let call = stamp(&dir, &format!("t_call_{n}"));
            let reply = stamp(&dir, &format!("t_reply_{n}"));
            if let (Some(c), Some(&at)) = (call, asked_at.get(&w).and_then(|a| a.get(n - 1))) {
                to_state.push(((at - c) as f64 / 1e6).max(0.0));
                if let Some(file) = ask_file_clock(&dir, n) {
                    let part = (
                        ((file - c) as f64 / 1e6).max(0.0),
                        ((at - file) as f64 / 1e6).max(0.0),
                    );
                    LAST_PARTS.with(|p| p.borrow_mut().push(part));
                }
            }
            if let (Some(r), Some(&t)) = (reply, answered.get(&w).and_then(|a| a.get(n - 1))) {
                to_reply.push(((r - t) as f64 / 1e6).max(0.0));
                replied += 1;
            }
        }
    }
    (to_state, to_reply, replied)
}

/// The shell line of worker `i`: an asker through `how` for the first `askers`, else idle.
fn asker_command(how: Asking, askers: usize, i: usize) -> String {
    let client = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/mcp_client.py");
    if i >= askers {
        return "sleep 100000".to_string();
    }
    match how {
        Asking::Mcp => {
            let calls: Vec<String> = (1..=QUESTIONS)
                .map(|n| format!("ask '{{\"question\": \"Question {n} of w{i}?\"}}'"))
                .collect();
            format!(
                "MCP_CLIENT_CLOCK=1 exec python3 {client} {}; ",
                calls.join(" ")
            )
        }
        Asking::Screen => format!(
            "d=$(dirname \"$CREWMUX_RESULT_FILE\"); for n in $(seq 1 {QUESTIONS}); do \
             date +%s%N > \"$d/t_call_$n\"; printf 'Do you trust the files in this folder? (y/n) '; \
             read r; date +%s%N > \"$d/t_reply_$n\"; echo \"ok $r\"; sleep 0.3; done"
        ),
    }
}

/// The `asked_at` (ns since the epoch) of the attempt's `n`-th ask file (`ask-<pid>-<n>.json`).
fn ask_file_clock(attempt: &Path, n: usize) -> Option<i64> {
    let suffix = format!("-{n}.json");
    let file = std::fs::read_dir(attempt.join("mcp"))
        .ok()?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .find(|f| f.starts_with("ask-") && f.ends_with(&suffix))?;
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(attempt.join("mcp").join(file)).ok()?)
            .ok()?;
    chrono::DateTime::parse_from_rfc3339(v["asked_at"].as_str()?)
        .ok()?
        .timestamp_nanos_opt()
}

/// A clock a worker wrote (ns since the epoch).
fn stamp(dir: &Path, name: &str) -> Option<i64> {
    std::fs::read_to_string(dir.join(name))
        .ok()?
        .trim()
        .parse()
        .ok()
}

fn now_ns() -> i64 {
    chrono::Utc::now().timestamp_nanos_opt().unwrap_or(0)
}
