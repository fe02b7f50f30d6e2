//! The CPU scenarios (`idle`, `printing`): a driver in process watching panes that idle or
//! print, in control mode and with process polling, against the naive watcher (one
//! `capture-pane` process per pane every 250 ms) and the tmux server left alone, the floor
//! every figure is measured over. Apart from the scenarios run through the binary: only
//! these drive a `Driver` on a thread of the benchmark's own.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crewmux::domain::RunState;
use crewmux::lead::{Control, Driver, DriverOptions, Update};
use crewmux::store::RunStore;
use crewmux::tmux::{TmuxBackend, TmuxClient};

use super::scale_attach;
use super::scale_proc::{server_only, server_pid, Window};
use super::scale_run::{plan, team_file};
use super::{Config, Figure, Mode};

/// A driver on its own thread; updates arrive on `updates`.
struct Running {
    control: mpsc::Sender<Control>,
    updates: mpsc::Receiver<Update>,
    thread: std::thread::JoinHandle<crewmux::error::Result<RunState>>,
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
pub fn cpu_scenario(
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
