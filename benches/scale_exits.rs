//! The exit scenario (`exits`): many short workers run through the real binary
//! (`run --headless`), each ending with a known code and writing the time it ended, read
//! back as the latency from a worker's exit to its status event, with the exits missed or
//! mistaken. Apart from the other scenarios: it alone measures how exits are seen.

use std::path::Path;
use std::time::{Duration, Instant};

use crewmux::domain::WorkerStatus;
use crewmux::store::RunStore;
use crewmux::tmux::TmuxClient;

use super::scale_run::{run_dir, team_file};
use super::{Build, Config, Figure, Mode};

/// Exit detection through the real binary (`run --headless`): `cfg.exits` workers end at
/// staggered times with codes 0..3, at most 64 at once; latency is from the agent's last
/// instruction (it writes its clock to a file) to the status event in `events.jsonl`.
pub fn exit_scenario(cfg: &Config, figs: &mut Vec<Figure>, mode: Mode, build: &Build) {
    let socket = format!(
        "crewmux-bench-{}-exits-{mode:?}-{}",
        std::process::id(),
        build.tag
    );
    let tmp = tempfile::tempdir().unwrap();
    let cmd = |i: usize| {
        format!(
            "sleep 0.{}; date +%s%N > \"$(dirname \"$CREWMUX_RESULT_FILE\")/t_exit\"; exit {}",
            1 + (i * 7) % 9,
            i % 4
        )
    };
    let team = team_file(tmp.path(), cfg.exits, &cmd);
    let started = Instant::now();
    let limit = Duration::from_secs(60 + cfg.exits as u64 / 4);
    let ended = headless_run(
        build,
        tmp.path(),
        &socket,
        mode,
        &team,
        cfg.workers.min(64),
        limit,
    );
    let wall = started.elapsed().as_secs_f64();
    // The run ended (or was killed): its panes go; a server already gone is fine.
    let _ = TmuxClient::new(&socket).kill_server();
    let store = RunStore::at(run_dir(tmp.path()).expect("the bench run has a directory"));
    let (mut lat, missed, wrong) = exit_latencies(&store);
    lat.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let pct = |p: f64| {
        lat.get(((lat.len() as f64 * p).ceil() as usize).saturating_sub(1))
            .copied()
            .unwrap_or(f64::NAN)
    };
    let m = build.label(mode);
    figs.push(Figure::new(
        &format!("worker exit → status, p95 ({} exits, {m})", cfg.exits),
        "≤ 20 ms",
        pct(0.95),
        " ms",
        pct(0.95) <= 20.0,
    ));
    figs.push(Figure::new(
        &format!("worker exit → status, max ({m})"),
        "≤ 100 ms",
        pct(1.0),
        " ms",
        pct(1.0) <= 100.0,
    ));
    figs.push(Figure::new(
        &format!("exits missed ({m})"),
        "0",
        missed as f64,
        "",
        missed == 0,
    ));
    figs.push(Figure::new(
        &format!("wrong exit codes ({m})"),
        "0",
        wrong as f64,
        "",
        wrong == 0,
    ));
    figs.push(Figure::new(
        &format!(
            "{} workers of 0.1–0.9 s, 64 at once, wall time ({m})",
            cfg.exits
        ),
        "-",
        wall,
        " s",
        ended,
    ));
}

/// Each finished worker's exit → status latency (ms) from its `t_exit` file and the first
/// status event in `events.jsonl`, and the workers missed or ended with a wrong code (the
/// team's `wN` exits with `N % 4`).
fn exit_latencies(store: &RunStore) -> (Vec<f64>, usize, usize) {
    let state = store.load_state().expect("bench state");
    let mut seen = std::collections::HashMap::new();
    for e in store.read_events().expect("bench events") {
        if matches!(
            e.kind.as_str(),
            "worker-completed" | "worker-failed" | "worker-crashed"
        ) {
            if let Some(w) = e.worker.clone() {
                seen.entry(w).or_insert(e.ts);
            }
        }
    }
    let mut lat = vec![];
    let (mut missed, mut wrong) = (0, 0);
    for (i, w) in state
        .workers
        .iter()
        .enumerate()
        .filter(|(_, w)| w.id.starts_with('w'))
    {
        let done = matches!(w.status, WorkerStatus::Completed | WorkerStatus::Failed);
        if !done || !seen.contains_key(&w.id) {
            missed += 1;
            continue;
        }
        if w.exit_code != Some((i % 4) as i32) {
            wrong += 1;
        }
        let t_exit = std::fs::read_to_string(
            store
                .dir()
                .join(format!("workers/{}/attempt-1/t_exit", w.id)),
        )
        .ok()
        .and_then(|s| s.trim().parse::<i64>().ok());
        if let (Some(t), Some(ts)) = (t_exit, seen.get(&w.id)) {
            let ms = (ts.timestamp_nanos_opt().unwrap_or(0) - t) as f64 / 1e6;
            lat.push(ms.max(0.0));
        }
    }
    (lat, missed, wrong)
}

/// `build`'s `run --headless` of `team` in `project` on `socket`, waited for up to `limit`
/// (then killed); true when it ended by itself.
fn headless_run(
    build: &Build,
    project: &Path,
    socket: &str,
    mode: Mode,
    team: &Path,
    parallel: usize,
    limit: Duration,
) -> bool {
    let mut child = build
        .quiet_run(project, socket, mode, team, parallel, "benchmark the exits")
        .spawn()
        .unwrap();
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if child.try_wait().unwrap().is_some() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    // Past the limit: the run is ended however it can be; the figures say it did not end.
    let _ = child.kill();
    let _ = child.wait();
    false
}
