//! The dashboard that follows a lead against the dashboard that drove its run in process
//! (`lead`): the same run of `workers` idle workers started with `crewmux run` in a tmux
//! pane of 200×60 (a terminal of its own), once with this build (`run` starts the run's
//! lead and opens a dashboard that follows it) and once with the earlier binary of
//! `CREWMUX_BENCH_BEFORE` (for the figure of the issue: a build from before the lead, whose
//! dashboard drove the run itself). Three figures each, read off the terminal with
//! `capture-pane` over one control-mode client:
//! - idle CPU of every crewmux process of the run (the dashboard, the lead, the tmux
//!   clients they started), % of one core over the window;
//! - event → redrawn screen: a worker's exit (its FIFO written) until the roster's header
//!   counts it done, p50 and p95 of `samples`;
//! - keypress → redraw: `j`/`k` typed into the dashboard's pane until the Output panel's
//!   title names the worker now selected, p50 and p95.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crewmux::tmux::TmuxClient;
use tmux_interface::{CapturePane, SendKeys, Tmux};

use super::scale_proc::proc_tree_cpu;
use super::{Build, Config, Figure};

/// What one dashboard's run measured.
struct Followed {
    idle_cpu: f64,
    event_ms: (f64, f64),
    key_ms: (f64, f64),
}

/// Exits and keypresses timed per build (fewer when the run has fewer workers).
const SAMPLES: usize = 20;

/// The scenario: this build, and the earlier one beside it when given.
pub fn lead_scenario(cfg: &Config, figs: &mut Vec<Figure>) {
    let now = Build {
        exe: cfg.exe.clone(),
        tag: "",
    };
    let Some(this) = followed(cfg, &now) else {
        eprintln!("lead: the dashboard of this build never showed its workers running");
        return;
    };
    let before = cfg.before.as_ref().and_then(|exe| {
        followed(
            cfg,
            &Build {
                exe: exe.clone(),
                tag: "before",
            },
        )
    });
    let n = cfg.workers;
    let mut fig = |name: String, target: &str, v: f64, b: Option<f64>, ok: bool, unit| {
        let mut f = Figure::new(&name, target, v, unit, ok);
        f.baseline = b;
        figs.push(f);
    };
    fig(
        format!("idle CPU, lead + dashboard, {n} workers"),
        "≤ 0.3 %",
        this.idle_cpu,
        before.as_ref().map(|b| b.idle_cpu),
        this.idle_cpu <= 0.3,
        " %",
    );
    let (p50, p95) = this.event_ms;
    fig(
        format!("exit → redrawn roster p50, {n} workers"),
        "-",
        p50,
        before.as_ref().map(|b| b.event_ms.0),
        true,
        " ms",
    );
    fig(
        format!("exit → redrawn roster p95, {n} workers"),
        "≤ 50 ms",
        p95,
        before.as_ref().map(|b| b.event_ms.1),
        p95 <= 50.0,
        " ms",
    );
    let (p50, p95) = this.key_ms;
    fig(
        "j/k → redrawn selection p50".into(),
        "-",
        p50,
        before.as_ref().map(|b| b.key_ms.0),
        true,
        " ms",
    );
    fig(
        "j/k → redrawn selection p95".into(),
        "≤ 10 ms",
        p95,
        before.as_ref().map(|b| b.key_ms.1),
        p95 <= 10.0,
        " ms",
    );
}

/// One build's dashboard on a run of `cfg.workers` workers that each wait on a FIFO of
/// their own; `None` when its screen never showed them all running (2 min).
fn followed(cfg: &Config, build: &Build) -> Option<Followed> {
    // The smoke run's 4 workers give 3 samples; the full run's 64 give 20.
    let samples = SAMPLES.min(cfg.workers.saturating_sub(1)).max(1);
    let n = cfg.workers.max(samples + 1);
    let tmp = tempfile::tempdir().unwrap();
    let fifo = |i: usize| tmp.path().join(format!("exit-{i}"));
    for i in 0..n {
        let made = Command::new("mkfifo").arg(fifo(i)).status();
        assert!(made.is_ok_and(|s| s.success()), "mkfifo");
    }
    let team = super::scale_run::team_file(tmp.path(), n, &|i| {
        format!("read line < {}; exit 0", fifo(i).display())
    });
    let id = format!("{}-lead-{}", std::process::id(), build.tag);
    let (workers, view) = (
        format!("crewmux-bench-{id}"),
        format!("crewmux-bench-{id}-view"),
    );
    let run = format!(
        "cd {dir} && CREWMUX_TMUX_SOCKET={workers} XDG_STATE_HOME={dir}/.bench-state TERM=xterm-256color \
         exec {exe} run --team {team} --no-clarify --backend tmux --quiet --parallel {n} 'a bench run'",
        dir = tmp.path().display(),
        exe = build.exe.display(),
        team = team.display(),
    );
    let made = Command::new("tmux")
        .args([
            "-L",
            &view,
            "new-session",
            "-d",
            "-s",
            "view",
            "-x",
            "200",
            "-y",
            "60",
        ])
        .arg(&run)
        .stdin(Stdio::null())
        .status();
    assert!(made.is_ok_and(|s| s.success()), "the viewer's tmux server");
    let client = TmuxClient::new(&view).with_control("view");
    let screen = || capture(&client);
    let shown = wait(Duration::from_secs(120), || {
        header(&screen()).contains(&format!("· {n} running"))
    });
    let out = shown.then(|| measure(cfg, &client, &view, tmp.path(), samples));
    // The run's workers and leads go with their servers; a lead left without its panes
    // ends at its next look.
    for socket in [&view, &workers] {
        let _ = Command::new("tmux")
            .args(["-L", socket, "kill-server"])
            .stderr(Stdio::null())
            .status();
    }
    out
}

/// Idle CPU over the window, then `samples` exits (the FIFOs `exit-<i>` of `project`) and
/// `samples` keypresses, each timed until the dashboard's screen in `view` shows it.
fn measure(
    cfg: &Config,
    client: &TmuxClient,
    view: &str,
    project: &Path,
    samples: usize,
) -> Followed {
    let fifo = |i: usize| project.join(format!("exit-{i}"));
    let screen = || capture(client);
    // Its start (the lead's launches, the state saved per worker) stays out of the window.
    std::thread::sleep(Duration::from_secs(3));
    let pids = crewmux_pids(view, project);
    let cpu0: f64 = pids.iter().map(|p| proc_tree_cpu(*p)).sum();
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_secs_f64(cfg.window_s));
    let cpu1: f64 = pids.iter().map(|p| proc_tree_cpu(*p)).sum();
    let idle_cpu = (cpu1 - cpu0) / t0.elapsed().as_secs_f64() * 100.0;
    let mut events = vec![];
    for i in 0..samples {
        let done = format!("· {} done", i + 1);
        let t = Instant::now();
        std::fs::write(fifo(i), "\n").unwrap();
        if wait(Duration::from_secs(30), || {
            header(&screen()).contains(&done)
        }) {
            events.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    let mut keys = vec![];
    for i in 0..samples {
        // The Output panel's title names the worker selected: w0, then w1, w0, …
        let (key, now) = if i % 2 == 0 { ("j", "w1") } else { ("k", "w0") };
        let title = format!("Output · {now} ");
        let t = Instant::now();
        let sent = client.run(Tmux::with_command(
            SendKeys::new().target_pane("view").key(key).build(),
        ));
        if sent.is_ok() && wait(Duration::from_secs(10), || screen().contains(&title)) {
            keys.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Followed {
        idle_cpu,
        event_ms: percentiles(&mut events),
        key_ms: percentiles(&mut keys),
    }
}

/// The viewer's screen, as plain text (empty when the capture fails).
fn capture(client: &TmuxClient) -> String {
    client
        .run(Tmux::with_command(
            CapturePane::new().stdout().target_pane("view").build(),
        ))
        .unwrap_or_default()
}

/// The roster's header line of `screen` (`Workers 64 · 63 running · 1 done`).
fn header(screen: &str) -> String {
    screen
        .lines()
        .find(|l| l.contains("Workers "))
        .unwrap_or("")
        .to_string()
}

/// Every crewmux process of the run in `project`: the dashboard (the viewer's pane) and,
/// when the build has one, the run's lead (`lead.json` in the run directory).
fn crewmux_pids(view: &str, project: &Path) -> Vec<u32> {
    let pane = Command::new("tmux")
        .args([
            "-L",
            view,
            "display-message",
            "-p",
            "-t",
            "view",
            "#{pane_pid}",
        ])
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok());
    let lead = super::scale_run::run_dir(project)
        .and_then(|d| std::fs::read_to_string(d.join("lead.json")).ok())
        .and_then(|s| serde_json::from_str::<serde_json::Value>(&s).ok())
        .and_then(|v| v["pid"].as_u64())
        .map(|p| p as u32);
    let mut pids: Vec<u32> = pane.into_iter().collect();
    // The lead is started by the dashboard, so it is in its tree unless it was reparented.
    if let Some(l) = lead.filter(|l| !pids.iter().any(|p| super::scale_proc::in_tree(*p, *l))) {
        pids.push(l);
    }
    pids
}

fn wait(limit: Duration, mut ok: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if ok() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    false
}

/// (p50, p95) of `v`, in its unit; NaN for no samples.
fn percentiles(v: &mut [f64]) -> (f64, f64) {
    if v.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let at = |q: f64| v[((v.len() as f64 * q).ceil() as usize).clamp(1, v.len()) - 1];
    (at(0.5), at(0.95))
}
