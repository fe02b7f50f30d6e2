//! Scale scenarios of crewmux against a private tmux server, each figure next to its target
//! and, where it applies, a naive baseline measured in the same run: one `capture-pane`
//! process per worker every 250 ms with a sentinel scan (the OMG seed's tmux session
//! manager). Shared by `cargo bench --bench scale` and the CI smoke test.
//!
//! CPU is % of one core over a measuring window: this process (the driver's threads and the
//! tmux clients it spawned and reaped) plus the extra tmux-server time, i.e. the server's CPU
//! during the window minus its CPU in an equal window with nobody watching.
//!
//! This file holds the sizes, the figures and their table, the binaries compared and the
//! order the scenarios run in (`CREWMUX_BENCH_ONLY` picks some); the scenarios and what
//! they share are files of their own, named in the `mod` lines below.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

// What is read of processes from /proc (CPU, memory).
#[path = "scale_proc.rs"]
mod scale_proc;

// Team files, planned runs and runs read back, shared by the scenarios.
#[path = "scale_run.rs"]
mod scale_run;

// The CPU scenarios (`idle`, `printing`): a driver in process against the naive watcher.
#[path = "scale_cpu.rs"]
mod scale_cpu;

// Exit detection through the binary (`exits`).
#[path = "scale_exits.rs"]
mod scale_exits;

// The answer paste and the dashboard's frame (`paste`, `render`).
#[path = "scale_ui.rs"]
mod scale_ui;

// The binary's memory and headless wall time (`memory`, `headless`).
#[path = "scale_headless.rs"]
mod scale_headless;

// The remote case (workers on the test SSH host against the same workers here).
#[path = "scale_remote.rs"]
mod scale_remote;

// The CPU scenarios' before/after through the binaries (`attach --headless`).
#[path = "scale_attach.rs"]
mod scale_attach;

// A dashboard following the run's lead against one that drives its run (`lead`).
#[path = "scale_lead.rs"]
mod scale_lead;

// Questions through the MCP `ask` tool against the paste path (`ask`).
#[path = "scale_ask.rs"]
mod scale_ask;

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

/// Whether `CREWMUX_BENCH_ONLY` (a comma list of scenario names; unset: all) asks for it.
fn wanted(name: &str) -> bool {
    std::env::var("CREWMUX_BENCH_ONLY")
        .map(|v| v.split(',').any(|w| w.trim() == name))
        .unwrap_or(true)
}

/// Whether `CREWMUX_BENCH_ONLY` names this scenario (one that runs only when asked for).
fn asked_for(name: &str) -> bool {
    std::env::var("CREWMUX_BENCH_ONLY").is_ok_and(|v| v.split(',').any(|w| w.trim() == name))
}

/// Run every scenario; returns the figures (also printed as a table).
pub fn run_all(cfg: &Config) -> Vec<Figure> {
    let mut figs = vec![];
    let idle = |_: usize| "sleep 100000".to_string();
    if wanted("idle") {
        eprintln!("scenario: idle CPU");
        scale_cpu::cpu_scenario(cfg, "idle", 0.3, &idle, &mut figs, true);
    }
    let printing = |i: usize| {
        format!("i=0; while :; do i=$((i+1)); echo \"worker {i} line $i: compiling module $i\"; sleep 0.1; done")
    };
    if wanted("printing") {
        eprintln!("scenario: printing CPU");
        scale_cpu::cpu_scenario(cfg, "printing 10 lines/s", 1.0, &printing, &mut figs, false);
    }
    if wanted("exits") {
        for (mode, build) in cfg.variants() {
            eprintln!("scenario: exits, {}", build.label(mode));
            scale_exits::exit_scenario(cfg, &mut figs, mode, &build);
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
    // Asked for by name only (it starts 4 × `workers` workers): not in the full run's list.
    if asked_for("sandbox") {
        eprintln!(
            "scenario: {} workers fenced with bwrap and plain",
            cfg.workers
        );
        scale_many::sandbox_scenario(cfg, &mut figs);
    }
    if asked_for("ask") {
        eprintln!(
            "scenario: questions of {} workers, MCP and paste",
            cfg.workers
        );
        scale_ask::ask_scenario(cfg, &mut figs);
    }
    if wanted("remote") {
        eprintln!("scenario: workers on an SSH host");
        scale_remote::remote_scenario(cfg, &mut figs);
    }
    if wanted("lead") {
        eprintln!("scenario: a dashboard following the lead");
        scale_lead::lead_scenario(cfg, &mut figs);
    }
    if wanted("paste") {
        eprintln!("scenario: paste");
        scale_ui::paste_scenario(&mut figs);
    }
    if wanted("render") {
        eprintln!("scenario: render");
        scale_ui::render_scenario(cfg, &mut figs);
    }
    if wanted("memory") {
        eprintln!("scenario: memory");
        scale_headless::rss_scenario(cfg, &mut figs);
    }
    if wanted("headless") {
        eprintln!("scenario: headless");
        scale_headless::headless_scenario(cfg, &mut figs);
    }
    print_table(&figs);
    figs
}
