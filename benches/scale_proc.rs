//! What the scale benchmark reads of processes from `/proc`: CPU time of a process with its
//! children, of the tmux server, over a window against the server alone, and resident
//! memory. Apart from the scenarios, which only open windows and compare the figures.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crewmux::tmux::client_calls;

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
pub fn tree_cpu(pid: u32) -> f64 {
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

pub fn server_pid(socket: &str) -> Option<u32> {
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

pub fn server_cpu(pid: u32) -> f64 {
    proc_cpu(pid).0
}

/// % of one core used by this process and the extra tmux-server time over `window`.
pub struct Window {
    start: Instant,
    own: f64,
    server: f64,
    /// The tmux socket whose client processes are counted.
    socket: String,
    calls: u64,
    pid: u32,
}

impl Window {
    pub fn open(server: u32, socket: &str) -> Self {
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
    pub fn close(self) -> (f64, f64, f64) {
        let secs = self.start.elapsed().as_secs_f64();
        (
            (self_cpu() - self.own) / secs * 100.0,
            (server_cpu(self.pid) - self.server) / secs * 100.0,
            (client_calls(&self.socket) - self.calls) as f64 / secs,
        )
    }
}

pub fn server_only(pid: u32, secs: f64) -> f64 {
    let a = server_cpu(pid);
    let t = Instant::now();
    std::thread::sleep(Duration::from_secs_f64(secs));
    (server_cpu(pid) - a) / t.elapsed().as_secs_f64() * 100.0
}

pub fn rss_kb(pid: u32) -> Option<f64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
}

/// The live children of `pid` (all its threads'), from `/proc/<pid>/task/*/children`.
fn children(pid: u32) -> Vec<u32> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
        .flat_map(|task| {
            std::fs::read_to_string(task.path().join("children"))
                .unwrap_or_default()
                .split_whitespace()
                .filter_map(|c| c.parse::<u32>().ok())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// CPU of `pid` and of every live descendant, each with its reaped children, seconds: a
/// dashboard, the lead it started and the tmux clients they keep.
pub fn proc_tree_cpu(pid: u32) -> f64 {
    let (own, reaped) = proc_cpu(pid);
    own + reaped + children(pid).into_iter().map(proc_tree_cpu).sum::<f64>()
}

/// Whether `pid` is `root` or one of its live descendants.
pub fn in_tree(root: u32, pid: u32) -> bool {
    root == pid || children(root).into_iter().any(|c| in_tree(c, pid))
}
