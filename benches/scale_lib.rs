//! Scale scenarios of crewmux against a private tmux server, each figure next to its target
//! and, where it applies, a naive baseline measured in the same run: one `capture-pane`
//! process per worker every 250 ms with a sentinel scan (the OMG seed's tmux session
//! manager). Shared by `cargo bench --bench scale` and the CI smoke test.
//!
//! CPU is % of one core over a measuring window: this process (the driver's threads and the
//! tmux clients it spawned and reaped) plus the extra tmux-server time, i.e. the server's CPU
//! during the window minus its CPU in an equal window with nobody watching.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crewmux::cli::{BackendArg, CommonArgs, RunOptions};
use crewmux::domain::{BackendKind, RunState, WorkerStatus};
use crewmux::driver::{Control, Driver, DriverOptions, Update};
use crewmux::store::RunStore;
use crewmux::team::{resolve, ResolveOptions};
use crewmux::tmux::{client_calls, TmuxBackend, TmuxClient};

// The remote case (workers on the test SSH host against the same workers here).
#[path = "scale_remote.rs"]
mod scale_remote;

// The CPU scenarios' before/after through the binaries (`attach --headless`).
#[path = "scale_attach.rs"]
mod scale_attach;

// Many workers started through the binary (`many`).
#[path = "scale_many.rs"]
mod scale_many;

/// Sizes of one benchmark run.
#[derive(Debug, Clone)]
pub struct Config {
    pub workers: usize,
    /// Measuring window, seconds.
    pub window_s: f64,
    pub exits: usize,
    /// Lines each worker prints in the memory scenario.
    pub lines: usize,
    pub headless_workers: usize,
    pub headless_parallel: usize,
    /// Idle workers started at once in the `many` scenario.
    pub many_workers: usize,
    /// Workers of the remote scenario, run on the test SSH host and then here.
    pub remote_workers: usize,
    /// The crewmux binary (for the subprocess scenarios).
    pub exe: PathBuf,
    /// An earlier crewmux binary run beside `exe` in the subprocess scenarios
    /// (`CREWMUX_BENCH_BEFORE`): a change's before and after in one run.
    pub before: Option<PathBuf>,
    /// How the driver talks to tmux in the subprocess scenarios (`CREWMUX_BENCH_MODES`, a
    /// comma list of `control` and `processes`; unset: both).
    pub modes: Vec<Mode>,
}

impl Config {
    /// The full benchmark (issue targets), overridable by `CREWMUX_BENCH_*` variables.
    pub fn full(exe: PathBuf) -> Self {
        let env = |k: &str, d: usize| {
            std::env::var(k)
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(d)
        };
        Config {
            workers: env("CREWMUX_BENCH_WORKERS", 64),
            window_s: env("CREWMUX_BENCH_WINDOW_S", 10) as f64,
            exits: env("CREWMUX_BENCH_EXITS", 1000),
            lines: env("CREWMUX_BENCH_LINES", 100_000),
            headless_workers: env("CREWMUX_BENCH_HEADLESS", 256),
            headless_parallel: 64,
            many_workers: env("CREWMUX_BENCH_MANY", 256),
            remote_workers: env("CREWMUX_BENCH_REMOTE", 16),
            exe,
            before: std::env::var_os("CREWMUX_BENCH_BEFORE").map(PathBuf::from),
            modes: modes_from_env(),
        }
    }

    /// A few seconds' worth, for CI: proves every scenario still runs.
    pub fn smoke(exe: PathBuf) -> Self {
        Config {
            workers: 4,
            window_s: 1.0,
            exits: 12,
            lines: 2000,
            headless_workers: 6,
            headless_parallel: 3,
            many_workers: 8,
            remote_workers: 2,
            exe,
            before: None,
            modes: vec![Mode::Control, Mode::Processes],
        }
    }

    /// Every (mode, binary) pair the subprocess scenarios run, the earlier binary right
    /// after this one in each mode.
    fn variants(&self) -> Vec<(Mode, Build)> {
        let mut v = vec![];
        for &mode in &self.modes {
            v.push((
                mode,
                Build {
                    exe: self.exe.clone(),
                    tag: "",
                },
            ));
            if let Some(before) = &self.before {
                v.push((
                    mode,
                    Build {
                        exe: before.clone(),
                        tag: "before",
                    },
                ));
            }
        }
        v
    }
}

/// `CREWMUX_BENCH_MODES` (see [`Config::modes`]).
fn modes_from_env() -> Vec<Mode> {
    let Ok(v) = std::env::var("CREWMUX_BENCH_MODES") else {
        return vec![Mode::Control, Mode::Processes];
    };
    v.split(',')
        .filter_map(|m| match m.trim() {
            "control" => Some(Mode::Control),
            "processes" => Some(Mode::Processes),
            other => {
                eprintln!("CREWMUX_BENCH_MODES: unknown mode {other:?} (control, processes)");
                None
            }
        })
        .collect()
}

/// One printed figure.
#[derive(Debug, Clone)]
pub struct Figure {
    pub name: String,
    pub target: String,
    pub value: f64,
    pub unit: &'static str,
    pub baseline: Option<f64>,
    pub ok: bool,
}

impl Figure {
    fn new(name: &str, target: &str, value: f64, unit: &'static str, ok: bool) -> Self {
        Figure {
            name: name.into(),
            target: target.into(),
            value,
            unit,
            baseline: None,
            ok,
        }
    }
}

/// Print the table: figure, target, crewmux, baseline, ratio, verdict.
pub fn print_table(figs: &[Figure]) {
    println!(
        "{:<58} {:>12} {:>12} {:>12} {:>8}  verdict",
        "figure", "target", "crewmux", "baseline", "ratio"
    );
    for f in figs {
        let base = f
            .baseline
            .map(|b| format!("{b:.2}{}", f.unit))
            .unwrap_or_else(|| "-".into());
        let ratio = f
            .baseline
            .filter(|b| *b > 0.0)
            .map(|b| format!("{:.3}", f.value / b))
            .unwrap_or_else(|| "-".into());
        println!(
            "{:<58} {:>12} {:>12} {:>12} {:>8}  {}",
            f.name,
            f.target,
            format!("{:.2}{}", f.value, f.unit),
            base,
            ratio,
            if f.ok { "meets" } else { "MISSES" }
        );
    }
}

// ---------------------------------------------------------------------------------------
// CPU accounting from /proc.

fn ticks_per_s() -> f64 {
    100.0 // USER_HZ on Linux
}

/// (utime + stime, cutime + cstime) of `pid`, seconds.
fn proc_cpu(pid: u32) -> (f64, f64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<f64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0.0))
        .collect();
    // fields after ')': state(0) ppid(1) ... utime(11) stime(12) cutime(13) cstime(14)
    let g = |i: usize| f.get(i).copied().unwrap_or(0.0) / ticks_per_s();
    (g(11) + g(12), g(13) + g(14))
}

fn self_cpu() -> f64 {
    tree_cpu(std::process::id())
}

/// CPU of `pid`, its reaped children and its live children (the control-mode client lives
/// as long as the driver: its time is not in the reaped children's until it ends), seconds.
fn tree_cpu(pid: u32) -> f64 {
    let (own, reaped) = proc_cpu(pid);
    let mut live = 0.0;
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let children = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
        for child in children
            .split_whitespace()
            .filter_map(|c| c.parse::<u32>().ok())
        {
            let (c_own, c_reaped) = proc_cpu(child);
            live += c_own + c_reaped;
        }
    }
    own + reaped + live
}

fn server_pid(socket: &str) -> Option<u32> {
    let out = Command::new("tmux")
        .args(["-L", socket, "list-sessions", "-F", "#{pid}"])
        .stdin(Stdio::null())
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()?
        .trim()
        .parse()
        .ok()
}

fn server_cpu(pid: u32) -> f64 {
    proc_cpu(pid).0
}

/// % of one core used by this process and the extra tmux-server time over `window`.
struct Window {
    start: Instant,
    own: f64,
    server: f64,
    /// The tmux socket whose client processes are counted.
    socket: String,
    calls: u64,
    pid: u32,
}

impl Window {
    fn open(server: u32, socket: &str) -> Self {
        Window {
            start: Instant::now(),
            own: self_cpu(),
            server: server_cpu(server),
            socket: socket.to_string(),
            calls: client_calls(socket),
            pid: server,
        }
    }

    /// (own %, server %, tmux calls per second).
    fn close(self) -> (f64, f64, f64) {
        let secs = self.start.elapsed().as_secs_f64();
        (
            (self_cpu() - self.own) / secs * 100.0,
            (server_cpu(self.pid) - self.server) / secs * 100.0,
            (client_calls(&self.socket) - self.calls) as f64 / secs,
        )
    }
}

fn server_only(pid: u32, secs: f64) -> f64 {
    let a = server_cpu(pid);
    let t = Instant::now();
    std::thread::sleep(Duration::from_secs_f64(secs));
    (server_cpu(pid) - a) / t.elapsed().as_secs_f64() * 100.0
}

// ---------------------------------------------------------------------------------------
// Runs driven in-process.

fn team_file(dir: &Path, workers: usize, command: &dyn Fn(usize) -> String) -> PathBuf {
    let mut t = format!(
        "name = \"bench\"\nparallel = {}\nmax_fix_rounds = 0\n",
        workers.clamp(1, 64)
    );
    for i in 0..workers {
        t.push_str(&format!(
            "\n[[worker]]\nid = \"w{i}\"\nrole = \"backend-engineer\"\nprovider = \"command\"\nmax_attempts = 1\ncommand = [\"sh\", \"-c\", {}]\n",
            toml_string(&command(i))
        ));
    }
    let p = dir.join("bench-team.toml");
    std::fs::write(&p, t).unwrap();
    p
}

fn toml_string(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

fn plan(project: &Path, socket: &str, team: &Path, parallel: usize) -> (RunStore, RunState) {
    let mut opts = ResolveOptions::new("benchmark the watcher", project);
    opts.team_file = Some(team.to_path_buf());
    opts.parallel = Some(parallel);
    let resolved = resolve(&opts).expect("bench team resolves");
    let run_opts = RunOptions {
        common: CommonArgs {
            tmux_socket: socket.to_string(),
            project: Some(project.to_path_buf()),
        },
        backend: Some(BackendArg::Tmux),
        parallel: Some(parallel),
        headless: true,
        max_fix_rounds: Some(0),
        max_attempts: Some(1),
        quiet: true,
        limits: Default::default(),
    };
    crewmux::commands::plan::create_run(
        project,
        &run_opts,
        BackendKind::Tmux,
        "benchmark the watcher",
        &resolved,
        false,
    )
    .expect("bench run is created")
}

/// A driver on its own thread; updates arrive on `updates`.
struct Running {
    control: mpsc::Sender<Control>,
    updates: mpsc::Receiver<Update>,
    thread: std::thread::JoinHandle<crewmux::error::Result<RunState>>,
}

/// How the driver talks to tmux.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// One persistent control-mode client.
    Control,
    /// One tmux process per call (the polling of earlier versions).
    Processes,
}

impl Mode {
    fn label(self) -> &'static str {
        match self {
            Mode::Control => "control mode",
            Mode::Processes => "process polling",
        }
    }
}

/// A crewmux binary the subprocess scenarios run: this build, or an earlier one
/// (`CREWMUX_BENCH_BEFORE`) measured side by side with it in the same run.
#[derive(Debug, Clone)]
pub struct Build {
    pub exe: PathBuf,
    /// "" for this build, "before" for the earlier one.
    pub tag: &'static str,
}

impl Build {
    fn label(&self, mode: Mode) -> String {
        match self.tag {
            "" => mode.label().to_string(),
            tag => format!("{}, {tag}", mode.label()),
        }
    }

    /// `exe` in `project` on `socket`, talking to tmux as `mode` says, with its own state
    /// directory (the person's project index is left alone).
    fn command(&self, project: &Path, socket: &str, mode: Mode) -> Command {
        let mut c = Command::new(&self.exe);
        c.current_dir(project)
            .env("CREWMUX_TMUX_SOCKET", socket)
            .env("XDG_STATE_HOME", project.join(".bench-state"))
            .env(
                "CREWMUX_TMUX_CONTROL",
                if mode == Mode::Control { "on" } else { "off" },
            );
        c
    }

    /// A quiet `crewmux run --headless` of `team` in tmux, `parallel` workers at once, its
    /// output dropped; not started, so a case can add its own environment.
    fn quiet_run(
        &self,
        project: &Path,
        socket: &str,
        mode: Mode,
        team: &Path,
        parallel: usize,
        problem: &str,
    ) -> Command {
        let mut c = self.command(project, socket, mode);
        c.args(["run", "--team"])
            .arg(team)
            .args(["--no-clarify", "--headless", "--backend", "tmux", "--quiet"])
            .args(["--parallel", &parallel.to_string(), problem])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        c
    }
}

fn start_driver(store: RunStore, state: RunState, exe: &Path, mode: Mode) -> Running {
    let home = vec!["sleep".to_string(), "100000".to_string()];
    let backend = TmuxBackend::new(&state.tmux_socket, &state.session, home);
    let backend = Box::new(match mode {
        Mode::Control => backend.with_control_mode(),
        Mode::Processes => backend,
    });
    let opts = DriverOptions {
        quiet: true,
        self_exe: exe.to_path_buf(),
        exit_when_finished: false,
        ..DriverOptions::default()
    };
    let driver = Driver::new(store, state, backend, opts);
    let (ctl_tx, ctl_rx) = mpsc::channel();
    let (up_tx, up_rx) = mpsc::channel();
    let thread = std::thread::spawn(move || {
        driver.run(ctl_rx, move |u| {
            let _ = up_tx.send(u);
        })
    });
    Running {
        control: ctl_tx,
        updates: up_rx,
        thread,
    }
}

impl Running {
    /// Wait until `n` events of `kind` arrived (or `limit`); returns the last state seen.
    fn wait_events(&self, kinds: &[&str], n: usize, limit: Duration) -> (usize, Option<RunState>) {
        let end = Instant::now() + limit;
        let (mut seen, mut last) = (0, None);
        while seen < n && Instant::now() < end {
            match self.updates.recv_timeout(Duration::from_millis(100)) {
                Ok(Update::Event(e)) if kinds.contains(&e.kind.as_str()) => seen += 1,
                Ok(Update::Event(e)) if std::env::var("CREWMUX_BENCH_DEBUG").is_ok() => {
                    eprintln!("{} {:?} {}", e.kind, e.worker, e.message)
                }
                Ok(Update::Notice(n)) => eprintln!("notice: {n}"),
                Ok(Update::Snapshot { state, .. }) => {
                    last = Some(std::sync::Arc::unwrap_or_clone(state))
                }
                _ => {}
            }
        }
        (seen, last)
    }

    fn drain(&self) {
        while self.updates.try_recv().is_ok() {}
    }

    fn stop(self) -> RunState {
        let _ = self.control.send(Control::Quit);
        while self.updates.recv_timeout(Duration::from_secs(5)).is_ok() {}
        self.thread
            .join()
            .expect("driver thread")
            .expect("driver ends")
    }
}

/// The naive watcher: every 250 ms, one `tmux capture-pane` process per pane and a
/// sentinel scan of its text. Runs until `stop` is set.
fn naive_watch(socket: &str, panes: &[String], stop: &std::sync::atomic::AtomicBool) -> u64 {
    let mut spawned = 0;
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        let t = Instant::now();
        for p in panes {
            let out = Command::new("tmux")
                .args(["-L", socket, "capture-pane", "-p", "-t", p])
                .stdin(Stdio::null())
                .output();
            spawned += 1;
            if let Ok(o) = out {
                let _found = String::from_utf8_lossy(&o.stdout).contains("__OMG_TMUX_EXIT_CODE__");
            }
        }
        std::thread::sleep(Duration::from_millis(250).saturating_sub(t.elapsed()));
    }
    spawned
}

/// The naive watcher on `panes` for `secs`: (% over the floor, tmux processes a second).
fn naive_cost(socket: &str, pid: u32, panes: Vec<String>, secs: f64, floor: f64) -> (f64, f64) {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let w = Window::open(pid, socket);
    let (sock2, stop2) = (socket.to_string(), stop.clone());
    let naive = std::thread::spawn(move || naive_watch(&sock2, &panes, &stop2));
    std::thread::sleep(Duration::from_secs_f64(secs));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let spawned = naive.join().unwrap();
    let (own, server, _) = w.close();
    (own + (server - floor).max(0.0), spawned as f64 / secs)
}

/// The driver watching the run of `run_dir` in process, in control mode (`running`, the
/// driver that started it) and then with process polling (a new driver attached to the same
/// panes), the dashboard open and one worker focused: each mode's (own %, server %, tmux
/// calls a second) over one window.
fn watch_in_process(
    cfg: &Config,
    running: Running,
    run_dir: &Path,
    pid: u32,
    socket: &str,
) -> Vec<(Mode, (f64, f64, f64))> {
    let mut watched = vec![];
    let mut running = Some(running);
    for mode in [Mode::Control, Mode::Processes] {
        let r = match running.take() {
            Some(r) => r,
            None => {
                let store = RunStore::at(run_dir.to_path_buf());
                let state = store.load_state().expect("bench state");
                start_driver(store, state, &cfg.exe, mode)
            }
        };
        let _ = r.control.send(Control::Focus(Some("w0".into())));
        std::thread::sleep(Duration::from_millis(1500));
        r.drain();
        let w = Window::open(pid, socket);
        let mut slept = 0.0;
        while slept < cfg.window_s {
            std::thread::sleep(Duration::from_millis(200));
            slept += 0.2;
            r.drain();
        }
        watched.push((mode, w.close()));
        r.stop();
    }
    watched
}

/// CPU scenario: `workers` panes running `command`, watched in turn by the driver in
/// control mode and with process polling (the dashboard open, one worker focused), then by
/// the naive watcher, and left alone (the floor every figure is measured over).
fn cpu_scenario(
    cfg: &Config,
    label: &str,
    target_pct: f64,
    command: &dyn Fn(usize) -> String,
    figs: &mut Vec<Figure>,
    with_start: bool,
) {
    let slug: String = label
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let socket = format!("crewmux-bench-{}-{slug}", std::process::id());
    let tmp = tempfile::tempdir().unwrap();
    let team = team_file(tmp.path(), cfg.workers, command);
    let (store, state) = plan(tmp.path(), &socket, &team, cfg.workers.min(64));
    let run_dir = store.dir().to_path_buf();
    let t0 = Instant::now();
    let running = start_driver(store, state, &cfg.exe, Mode::Control);
    let (started, _) =
        running.wait_events(&["worker-started"], cfg.workers, Duration::from_secs(60));
    let start_ms = t0.elapsed().as_secs_f64() * 1000.0;
    if with_start {
        figs.push(Figure::new(
            &format!(
                "start {} workers (first tmux call → all panes running)",
                cfg.workers
            ),
            "≤ 400 ms",
            start_ms,
            " ms",
            start_ms <= 400.0 && started == cfg.workers,
        ));
    }
    let pid = server_pid(&socket).expect("bench tmux server");
    let watched = watch_in_process(cfg, running, &run_dir, pid, &socket);
    // The binaries, attached headless in turn (only when an earlier one is given).
    let attached = scale_attach::attached_costs(cfg, tmp.path(), &socket, pid);
    // Nobody watching now: the server's own load with the same panes.
    let server_alone = server_only(pid, cfg.window_s);
    let state = RunStore::at(run_dir).load_state().expect("bench state");
    let panes: Vec<String> = state
        .workers
        .iter()
        .filter_map(|w| w.pane_id.clone())
        .collect();
    let (naive_pct, naive_calls) = naive_cost(&socket, pid, panes, cfg.window_s, server_alone);
    let _ = TmuxClient::new(&socket).kill_server();
    for (mode, (own, server_watched, calls_per_s)) in watched {
        let pct = own + (server_watched - server_alone).max(0.0);
        let mut f = Figure::new(
            &format!(
                "CPU over the tmux-only floor, {} workers {label}, {}",
                cfg.workers,
                mode.label()
            ),
            &format!("≤ {target_pct} %"),
            pct,
            " %",
            pct <= target_pct,
        );
        f.baseline = Some(naive_pct);
        figs.push(f);
        let target = if mode == Mode::Control { 0.5 } else { 5.0 };
        let mut f = Figure::new(
            &format!(
                "tmux processes spawned per second ({label}, {})",
                mode.label()
            ),
            &format!("≤ {target} /s"),
            calls_per_s,
            " /s",
            calls_per_s <= target,
        );
        f.baseline = Some(naive_calls);
        figs.push(f);
    }
    for a in attached {
        let pct = a.own + (a.server - server_alone).max(0.0);
        figs.push(Figure::new(
            &format!(
                "CPU over the tmux-only floor, {} workers {label}, {}",
                cfg.workers, a.label
            ),
            &format!("≤ {target_pct} %"),
            pct,
            " %",
            pct <= target_pct,
        ));
    }
    figs.push(Figure::new(
        &format!(
            "tmux server alone, {} workers {label} (the floor)",
            cfg.workers
        ),
        "-",
        server_alone,
        " %",
        true,
    ));
}

/// Exit detection through the real binary (`run --headless`): `cfg.exits` workers end at
/// staggered times with codes 0..3, at most 64 at once; latency is from the agent's last
/// instruction (it writes its clock to a file) to the status event in `events.jsonl`.
fn exit_scenario(cfg: &Config, figs: &mut Vec<Figure>, mode: Mode, build: &Build) {
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

/// The run directory of the only run under `project`.
fn run_dir(project: &Path) -> Option<PathBuf> {
    std::fs::read_dir(project.join(".crewmux/runs"))
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| p.is_dir())
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

/// Keypress → answer pasted: `load-buffer` + `paste-buffer` into a live pane (the Enter that
/// follows 50 ms later is not counted: the answer is in the pane by then).
fn paste_scenario(figs: &mut Vec<Figure>) {
    let socket = format!("crewmux-bench-{}-paste", std::process::id());
    let c = TmuxClient::new(&socket);
    let _ = Command::new("tmux")
        .args([
            "-L",
            &socket,
            "new-session",
            "-d",
            "-s",
            "p",
            "cat > /dev/null",
        ])
        .stdin(Stdio::null())
        .status();
    let pane = String::from_utf8_lossy(
        &Command::new("tmux")
            .args([
                "-L",
                &socket,
                "display-message",
                "-p",
                "-t",
                "p",
                "#{pane_id}",
            ])
            .output()
            .unwrap()
            .stdout,
    )
    .trim()
    .to_string();
    let mut t = vec![];
    for i in 0..20 {
        let s = Instant::now();
        c.paste_text(&pane, &format!("answer {i}: PostgreSQL, with the count"))
            .unwrap();
        t.push(s.elapsed().as_secs_f64() * 1000.0);
    }
    let _ = c.kill_server();
    t.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let med = t[t.len() / 2];
    figs.push(Figure::new(
        "keypress → answer pasted into a pane (median of 20)",
        "≤ 10 ms",
        med,
        " ms",
        med <= 10.0,
    ));
}

/// Frame render of the dashboard at 200×60 with `workers` rows and 200 output lines.
fn render_scenario(cfg: &Config, figs: &mut Vec<Figure>) {
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;
    let tmp = tempfile::tempdir().unwrap();
    let team = team_file(tmp.path(), cfg.workers.max(64), &|_| "true".into());
    let (_store, state) = plan(tmp.path(), "crewmux-bench-render", &team, 64);
    let output: Vec<ratatui::text::Line<'static>> = (0..200)
        .map(|i| {
            ratatui::text::Line::from(format!(
                "[{i:>3}] compiling crate {i} with \x1b[32mgreen\x1b[0m text"
            ))
        })
        .collect();
    let ui = crewmux::tui::state::UiState::default();
    let mut term = Terminal::new(TestBackend::new(200, 60)).unwrap();
    let mut t = vec![];
    for _ in 0..300 {
        let view = crewmux::tui::state::View {
            run: &state,
            output: &output,
            now: chrono::Utc::now(),
            ui: &ui,
            backend: "tmux",
            tmux_socket: "crewmux",
            attach_hint: true,
            doc: None,
        };
        let s = Instant::now();
        term.draw(|f| crewmux::tui::draw(f, &view)).unwrap();
        t.push(s.elapsed().as_secs_f64() * 1000.0);
    }
    t.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let p99 = t[(t.len() * 99) / 100];
    figs.push(Figure::new(
        &format!(
            "frame render p99, {}-row roster + 200 output lines, 200×60",
            cfg.workers.max(64)
        ),
        "≤ 3 ms",
        p99,
        " ms",
        p99 <= 3.0,
    ));
}

fn rss_kb(pid: u32) -> Option<f64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
}

/// Memory: the real binary driving `workers` workers that each print `lines` lines, RSS
/// sampled every 250 ms while they print and after.
fn rss_scenario(cfg: &Config, figs: &mut Vec<Figure>) {
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
fn headless_scenario(cfg: &Config, figs: &mut Vec<Figure>) {
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
    let out = Command::new(&cfg.exe)
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
            "--parallel",
            &cfg.headless_parallel.to_string(),
            "many short workers",
        ])
        .stdin(Stdio::null())
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

/// How many workers of the only run under `project` are running (0 while it has no
/// readable state).
fn running(project: &Path) -> usize {
    let Some(run) = std::fs::read_dir(project.join(".crewmux/runs"))
        .ok()
        .and_then(|mut d| d.next())
        .and_then(|e| e.ok())
    else {
        return 0;
    };
    RunStore::at(run.path())
        .load_state()
        .map(|s| {
            s.workers
                .iter()
                .filter(|w| w.status == WorkerStatus::Running)
                .count()
        })
        .unwrap_or(0)
}

/// Whether `CREWMUX_BENCH_ONLY` (a comma list of scenario names; unset: all) asks for it.
fn wanted(name: &str) -> bool {
    std::env::var("CREWMUX_BENCH_ONLY")
        .map(|v| v.split(',').any(|w| w.trim() == name))
        .unwrap_or(true)
}

/// Run every scenario; returns the figures (also printed as a table).
pub fn run_all(cfg: &Config) -> Vec<Figure> {
    let mut figs = vec![];
    let idle = |_: usize| "sleep 100000".to_string();
    if wanted("idle") {
        eprintln!("scenario: idle CPU");
        cpu_scenario(cfg, "idle", 0.3, &idle, &mut figs, true);
    }
    let printing = |i: usize| {
        format!("i=0; while :; do i=$((i+1)); echo \"worker {i} line $i: compiling module $i\"; sleep 0.1; done")
    };
    if wanted("printing") {
        eprintln!("scenario: printing CPU");
        cpu_scenario(cfg, "printing 10 lines/s", 1.0, &printing, &mut figs, false);
    }
    if wanted("exits") {
        for (mode, build) in cfg.variants() {
            eprintln!("scenario: exits, {}", build.label(mode));
            exit_scenario(cfg, &mut figs, mode, &build);
        }
    }
    if wanted("many") {
        for (mode, build) in cfg.variants() {
            eprintln!(
                "scenario: {} workers, {}",
                cfg.many_workers,
                build.label(mode)
            );
            scale_many::many_scenario(cfg, &mut figs, mode, &build);
        }
    }
    if wanted("remote") {
        eprintln!("scenario: workers on an SSH host");
        scale_remote::remote_scenario(cfg, &mut figs);
    }
    if wanted("paste") {
        eprintln!("scenario: paste");
        paste_scenario(&mut figs);
    }
    if wanted("render") {
        eprintln!("scenario: render");
        render_scenario(cfg, &mut figs);
    }
    if wanted("memory") {
        eprintln!("scenario: memory");
        rss_scenario(cfg, &mut figs);
    }
    if wanted("headless") {
        eprintln!("scenario: headless");
        headless_scenario(cfg, &mut figs);
    }
    print_table(&figs);
    figs
}
