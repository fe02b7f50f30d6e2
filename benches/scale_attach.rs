//! The CPU scenarios' before/after: each crewmux binary of the run (this build, and the
//! earlier one of `CREWMUX_BENCH_BEFORE`) attached headless (`attach --headless`) in turn
//! to the same run and the same panes the in-process drivers watched, so a change to the
//! watcher is measured against the code before it in one run, over one floor.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::scale_proc::{server_cpu, tree_cpu};
use super::Config;

/// One attached binary's window: its label, its own CPU (the process and the tmux clients
/// it started) and the tmux server's, both % of one core.
pub struct Attached {
    pub label: String,
    pub own: f64,
    pub server: f64,
}

/// Attach every (mode, binary) pair of `cfg` to the run of `project` (its only one; tmux
/// socket `socket`, server `pid`) for one window each, after a warm-up; each ends with
/// SIGTERM, which detaches it and leaves the panes running. Nothing without an earlier
/// binary to compare with.
pub fn attached_costs(cfg: &Config, project: &Path, socket: &str, pid: u32) -> Vec<Attached> {
    let mut out = vec![];
    if cfg.before.is_none() {
        return out;
    }
    for (mode, build) in cfg.variants() {
        let mut child = build
            .command(project, socket, mode)
            .args(["attach", "--headless"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("crewmux attach starts");
        // Its start (the logs' tails read again, providers loaded) stays out of the window.
        std::thread::sleep(Duration::from_secs(4));
        let (cpu0, srv0, t0) = (tree_cpu(child.id()), server_cpu(pid), Instant::now());
        std::thread::sleep(Duration::from_secs_f64(cfg.window_s));
        let secs = t0.elapsed().as_secs_f64();
        let own = (tree_cpu(child.id()) - cpu0) / secs * 100.0;
        let server = (server_cpu(pid) - srv0) / secs * 100.0;
        // The driver detaches on SIGTERM; a failed kill shows as a wait that never ends.
        let _ = Command::new("kill").arg(child.id().to_string()).status();
        let _ = child.wait();
        out.push(Attached {
            label: format!("attached headless, {}", build.label(mode)),
            own,
            server,
        });
    }
    out
}
