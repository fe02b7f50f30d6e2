//! Many workers started through the real binary (`run --headless`): the time from the
//! command to every pane running, then crewmux's CPU over the tmux-only floor and its RSS
//! while they idle.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crewmux::domain::WorkerStatus;
use crewmux::store::RunStore;
use crewmux::tmux::TmuxClient;

use super::scale_proc::{rss_kb, server_cpu, server_only, server_pid, tree_cpu};
use super::{Build, Config, Figure, Mode};

/// What one start of many idle workers measured.
pub struct Started {
    /// Seconds from the command to every pane running.
    pub start_s: f64,
    /// Every worker reached `running`.
    pub all: bool,
    /// crewmux's CPU over the tmux-only floor while they idle, % of a core.
    pub idle: f64,
    /// crewmux's RSS while they idle, MB.
    pub rss: f64,
}

/// `n` idle workers through the real binary (`run --headless`, as many in parallel; with
/// `fence`, a `[sandbox]` table such as `mode = "bwrap"`): time from the command to every
/// pane running (read from `state.json`), then crewmux's CPU over the tmux-only floor and
/// its RSS while they idle.
pub fn start_idle(
    cfg: &Config,
    n: usize,
    mode: Mode,
    build: &Build,
    fence: Option<&str>,
) -> Started {
    let socket = format!(
        "crewmux-bench-{}-many-{mode:?}-{}{}",
        std::process::id(),
        build.tag,
        if fence.is_some() { "-fenced" } else { "" }
    );
    let tmp = tempfile::tempdir().unwrap();
    let mut t = format!("name = \"many\"\nparallel = {n}\nmax_fix_rounds = 0\n");
    if let Some(f) = fence {
        t.push_str(&format!("[sandbox]\n{f}\n"));
    }
    for i in 0..n {
        t.push_str(&format!(
            "\n[[worker]]\nid = \"m{i}\"\nrole = \"backend-engineer\"\nprovider = \"command\"\nmax_attempts = 1\ncommand = [\"sleep\", \"100000\"]\n"
        ));
    }
    let team = tmp.path().join("many.toml");
    std::fs::write(&team, t).unwrap();
    let started = Instant::now();
    let mut child = build
        .quiet_run(tmp.path(), &socket, mode, &team, n, "many idle workers")
        .spawn()
        .unwrap();
    let mut state = StateFile::default();
    while state.running(tmp.path()) < n && started.elapsed() < Duration::from_secs(120) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let start_s = started.elapsed().as_secs_f64();
    let all = state.running(tmp.path()) == n;
    std::thread::sleep(Duration::from_secs(2));
    let pid = server_pid(&socket).expect("bench tmux server");
    let (cpu0, srv0, t0) = (tree_cpu(child.id()), server_cpu(pid), Instant::now());
    let mut rss = 0.0f64;
    while t0.elapsed().as_secs_f64() < cfg.window_s {
        if let Some(kb) = rss_kb(child.id()) {
            rss = rss.max(kb / 1024.0);
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    let secs = t0.elapsed().as_secs_f64();
    let own = (tree_cpu(child.id()) - cpu0) / secs * 100.0;
    let server_watched = (server_cpu(pid) - srv0) / secs * 100.0;
    // SIGTERM: the driver detaches and the panes stay for the floor.
    let _ = Command::new("kill").arg(child.id().to_string()).status();
    let _ = child.wait();
    let server_alone = server_only(pid, cfg.window_s);
    let _ = TmuxClient::new(&socket).kill_server();
    Started {
        start_s,
        all,
        idle: own + (server_watched - server_alone).max(0.0),
        rss,
    }
}

/// Many workers through the real binary (`run --headless`, `many` idle panes, as many in
/// parallel): time from the command to every pane running (read from `state.json`), then
/// crewmux's CPU over the tmux-only floor and its RSS while they idle.
pub fn many_scenario(cfg: &Config, figs: &mut Vec<Figure>, mode: Mode, build: &Build) {
    let n = cfg.many_workers;
    let Started {
        start_s,
        all,
        idle,
        rss,
    } = start_idle(cfg, n, mode, build, None);
    let m = build.label(mode);
    figs.push(Figure::new(
        &format!("{n} workers started, command → all running ({m})"),
        "≤ 1.5 s",
        start_s,
        " s",
        all && start_s <= 1.5,
    ));
    figs.push(Figure::new(
        &format!("{n} idle workers, CPU over the tmux-only floor ({m})"),
        "≤ 1 %",
        idle,
        " %",
        idle <= 1.0,
    ));
    figs.push(Figure::new(
        &format!("{n} idle workers, crewmux RSS ({m})"),
        "≤ 60 MB",
        rss,
        " MB",
        rss <= 60.0,
    ));
}

/// Fenced against plain (`sandbox`): `workers` idle command workers started with
/// `[sandbox] mode = "bwrap"` and without, alternating (plain, fenced, …) for
/// `CREWMUX_BENCH_ROUNDS` rounds (default 3), each figure the median of its rounds: start
/// time and idle CPU, and the start-time ratio (README "Sandbox"; target ≤ 1.2×, no idle
/// difference).
pub fn sandbox_scenario(cfg: &Config, figs: &mut Vec<Figure>) {
    let n = cfg.workers;
    let path = std::env::var_os("PATH");
    if let crewmux::sandbox::Readiness::Refused(why) =
        crewmux::sandbox::preflight(crewmux::domain::SandboxMode::Bwrap, path.as_deref())
    {
        eprintln!("SKIP sandbox scenario: {why}");
        return;
    }
    let build = Build {
        exe: cfg.exe.clone(),
        tag: "",
    };
    let (mut plain, mut fenced) = (vec![], vec![]);
    let rounds: usize = std::env::var("CREWMUX_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3)
        .max(1);
    for _ in 0..rounds {
        plain.push(start_idle(cfg, n, Mode::Control, &build, None));
        fenced.push(start_idle(
            cfg,
            n,
            Mode::Control,
            &build,
            Some("mode = \"bwrap\""),
        ));
    }
    let median = |v: &[Started], f: &dyn Fn(&Started) -> f64| {
        let mut x: Vec<f64> = v.iter().map(f).collect();
        x.sort_by(f64::total_cmp);
        let m = x.len() / 2;
        if x.len() % 2 == 0 {
            (x[m - 1] + x[m]) / 2.0
        } else {
            x[m]
        }
    };
    let all = plain.iter().chain(&fenced).all(|s| s.all);
    let (ps, fs) = (
        median(&plain, &|s| s.start_s),
        median(&fenced, &|s| s.start_s),
    );
    let (pi, fi) = (median(&plain, &|s| s.idle), median(&fenced, &|s| s.idle));
    figs.push(Figure::new(
        &format!("{n} workers started, plain (median of {rounds})"),
        "-",
        ps,
        " s",
        all,
    ));
    figs.push(Figure::new(
        &format!("{n} workers started, fenced with bwrap (median of {rounds})"),
        "-",
        fs,
        " s",
        all,
    ));
    let ratio = fs / ps.max(1e-9);
    figs.push(Figure::new(
        &format!("{n} workers, start fenced / plain"),
        "≤ 1.2×",
        ratio,
        "×",
        all && ratio <= 1.2,
    ));
    figs.push(Figure::new(
        &format!("{n} idle workers, CPU fenced − plain (plain {pi:.2} %)"),
        "≤ 0.1 %",
        fi - pi,
        " %",
        fi - pi <= 0.1,
    ));
}

/// The run's `state.json` as the start is watched: read again only when it changed.
#[derive(Default)]
struct StateFile {
    /// Modification time and length at the last read.
    seen: Option<(std::time::SystemTime, u64)>,
    running: usize,
}

impl StateFile {
    /// How many workers of the only run under `project` are running (0 while it has no
    /// readable state). The file is parsed only when it changed since the last look: a
    /// state of 256 workers takes milliseconds to parse, and parsing it every 20 ms took a
    /// share of the two cores the start it measures runs on.
    fn running(&mut self, project: &Path) -> usize {
        let Some(run) = std::fs::read_dir(project.join(".crewmux/runs"))
            .ok()
            .and_then(|mut d| d.next())
            .and_then(|e| e.ok())
        else {
            return 0;
        };
        let stamp = std::fs::metadata(run.path().join("state.json"))
            .ok()
            .and_then(|m| Some((m.modified().ok()?, m.len())));
        if stamp.is_none() || stamp == self.seen {
            return self.running;
        }
        let Ok(state) = RunStore::at(run.path()).load_state() else {
            // Not readable (yet): looked at again next time.
            return self.running;
        };
        self.seen = stamp;
        self.running = state
            .workers
            .iter()
            .filter(|w| w.status == WorkerStatus::Running)
            .count();
        self.running
    }
}
