//! The real binary's `run --headless` left to itself (`memory`, `headless`): its resident
//! memory while workers print a lot, and the wall time of many short sim workers. Apart
//! from the scenarios that watch or attach: these only start the binary and read what it
//! used and what it printed.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crewmux::tmux::TmuxClient;

use super::scale_proc::rss_kb;
use super::scale_run::team_file;
use super::{Build, Config, Figure, Mode};

/// Memory: the real binary driving `workers` workers that each print `lines` lines, RSS
/// sampled every 250 ms while they print and after.
pub fn rss_scenario(cfg: &Config, figs: &mut Vec<Figure>) {
    let socket = format!("crewmux-bench-{}-rss", std::process::id());
    let tmp = tempfile::tempdir().unwrap();
    let lines = cfg.lines;
    let team = team_file(tmp.path(), cfg.workers, &|_| {
        format!("seq 1 {lines} | sed 's/^/output line /'; sleep 4")
    });
    let mut child = Command::new(&cfg.exe)
        .current_dir(tmp.path())
        .env("CREWMUX_TMUX_SOCKET", &socket)
        .args([
            "run",
            "--team",
            team.to_str().unwrap(),
            "--no-clarify",
            "--headless",
            "--backend",
            "tmux",
            "--quiet",
            "print a lot",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let (mut samples, start) = (vec![], Instant::now());
    while child.try_wait().unwrap().is_none() && start.elapsed() < Duration::from_secs(240) {
        if let Some(kb) = rss_kb(pid) {
            samples.push(kb / 1024.0);
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    let _ = child.kill();
    let _ = child.wait();
    let _ = TmuxClient::new(&socket).kill_server();
    let max = samples.iter().cloned().fold(0.0, f64::max);
    let half = samples.len() / 2;
    let early = samples
        .get(..half.max(1))
        .map(|s| s.iter().cloned().fold(0.0, f64::max))
        .unwrap_or(0.0);
    figs.push(Figure::new(
        &format!(
            "RSS, {} workers × {} lines each (max; first-half max {early:.1} MB)",
            cfg.workers, cfg.lines
        ),
        "≤ 60 MB",
        max,
        " MB",
        max <= 60.0,
    ));
}

/// The headless engine: `headless_workers` sim workers of about 1 s each.
pub fn headless_scenario(cfg: &Config, figs: &mut Vec<Figure>) {
    let socket = format!("crewmux-bench-{}-headless", std::process::id());
    let tmp = tempfile::tempdir().unwrap();
    let mut t = "name = \"many\"\nmax_fix_rounds = 0\n".to_string();
    for i in 0..cfg.headless_workers {
        t.push_str(&format!(
            "\n[[worker]]\nid = \"s{i}\"\nrole = \"backend-engineer\"\nprovider = \"sim\"\nmax_attempts = 1\nprompt = \"{{problem}}\\nsim: lines=4\\nsim: delay-ms=250\"\n"
        ));
    }
    let team = tmp.path().join("many.toml");
    std::fs::write(&team, t).unwrap();
    let s = Instant::now();
    let this = Build {
        exe: cfg.exe.clone(),
        tag: "",
    };
    let out = this
        .quiet_run(
            tmp.path(),
            &socket,
            Mode::Control,
            &team,
            cfg.headless_parallel,
            "many short workers",
        )
        .stdout(Stdio::piped())
        .output()
        .unwrap();
    let wall = s.elapsed().as_secs_f64();
    let _ = TmuxClient::new(&socket).kill_server();
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    let done = summary["workers"]
        .as_array()
        .map(|a| a.iter().filter(|w| w["status"] == "completed").count())
        .unwrap_or(0);
    figs.push(Figure::new(
        &format!(
            "headless: {} sim workers of 1 s, --parallel {} ({done} completed)",
            cfg.headless_workers, cfg.headless_parallel
        ),
        "≤ 6 s",
        wall,
        " s",
        wall <= 6.0 && done == cfg.headless_workers,
    ));
}
