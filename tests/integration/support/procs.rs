//! This machine's processes as `/proc` shows them, to find and end what a test started
//! once the test is over, also when it failed: the clients and server of a tmux socket
//! (by command line), the test sshd and every connection process under it (by parent),
//! and crewmux drivers and workers left in a test's directory (by working directory).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use nix::sys::signal::kill;
pub use nix::sys::signal::Signal;
use nix::unistd::Pid;

/// How long `kill-server` may take before what names the socket is killed instead.
const KILL_LIMIT: Duration = Duration::from_secs(5);

/// One process: its id, its parent's, its name (`comm`, e.g. `sshd`, `tmux: server`) and
/// its command line with the arguments joined by spaces.
#[derive(Debug, Clone)]
pub struct Proc {
    pub pid: u32,
    pub ppid: u32,
    pub comm: String,
    pub cmdline: String,
}

/// Every process `/proc` lists now (one that ends while it is read is left out).
pub fn all() -> Vec<Proc> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return vec![];
    };
    dir.flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_string_lossy().parse().ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            // `pid (comm) state ppid …`; comm may hold spaces and parentheses.
            let (head, rest) = stat.rsplit_once(") ")?;
            let comm = head.split_once(" (")?.1.to_string();
            let ppid = rest.split_whitespace().nth(1)?.parse().ok()?;
            let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
            let cmdline = String::from_utf8_lossy(&cmdline)
                .trim_end_matches('\0')
                .replace('\0', " ");
            Some(Proc {
                pid,
                ppid,
                comm,
                cmdline,
            })
        })
        .collect()
}

/// `root` and every process below it in `procs` whose name `keep` accepts (`root`
/// itself whatever its name).
pub fn tree(procs: &[Proc], root: u32, keep: impl Fn(&str) -> bool) -> Vec<u32> {
    let mut found = vec![root];
    // A child may be listed before its parent: walk until nothing new turns up.
    loop {
        let before = found.len();
        for p in procs {
            if found.contains(&p.ppid) && !found.contains(&p.pid) && keep(&p.comm) {
                found.push(p.pid);
            }
        }
        if found.len() == before {
            return found;
        }
    }
}

/// Whether the command line names tmux socket `socket` (`-L <socket>` as whole words).
pub fn names_socket(p: &Proc, socket: &str) -> bool {
    let flag = format!("-L {socket}");
    p.cmdline.ends_with(&flag) || p.cmdline.contains(&format!("{flag} "))
}

/// The processes (not this one) whose working directory is `dir` or below it.
pub fn working_in(dir: &Path) -> Vec<u32> {
    let Ok(dir) = dir.canonicalize() else {
        return vec![];
    };
    let me = std::process::id();
    all()
        .into_iter()
        .filter(|p| p.pid != me)
        .filter(|p| {
            std::fs::read_link(format!("/proc/{}/cwd", p.pid))
                .is_ok_and(|cwd| cwd.starts_with(&dir))
        })
        .map(|p| p.pid)
        .collect()
}

/// The processes that have `path` (a terminal, a file) open, by their `/proc/<pid>/fd`.
pub fn holding(path: &Path) -> Vec<u32> {
    all()
        .into_iter()
        .filter(|p| {
            std::fs::read_dir(format!("/proc/{}/fd", p.pid)).is_ok_and(|fds| {
                fds.flatten()
                    .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|l| l == path))
            })
        })
        .map(|p| p.pid)
        .collect()
}

/// Whether process `pid` is alive: some thread of it has not ended. A zombie whose threads
/// have all ended counts as gone. After SIGKILL the thread-group leader turns zombie at
/// once while its other threads may still be exiting and holding the process's files
/// (its run's driver lock among them): proc(5), /proc/PID/task.
pub fn alive(pid: u32) -> bool {
    let not_zombie = |stat: &str| {
        stat.rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z'))
    };
    match std::fs::read_dir(format!("/proc/{pid}/task")) {
        Ok(tasks) => tasks
            .flatten()
            .any(|t| std::fs::read_to_string(t.path().join("stat")).is_ok_and(|s| not_zombie(&s))),
        Err(_) => {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| not_zombie(&s))
        }
    }
}

/// Send `sig` to each of `pids`; the pids it could not be sent to (ended meanwhile).
pub fn signal(pids: &[u32], sig: Signal) -> Vec<u32> {
    pids.iter()
        .copied()
        .filter(|&pid| i32::try_from(pid).map_or(true, |p| kill(Pid::from_raw(p), sig).is_err()))
        .collect()
}

/// SIGKILL each of `pids` (also a stopped one); one that ended meanwhile is skipped.
pub fn kill_all(pids: &[u32]) {
    signal(pids, Signal::SIGKILL);
}

/// The file of tmux socket `socket` (`-L`): `$TMUX_TMPDIR` (else `/tmp`), `tmux-<uid>`.
pub fn socket_path(socket: &str) -> PathBuf {
    let dir = std::env::var_os("TMUX_TMPDIR")
        .filter(|d| !d.is_empty())
        .map_or_else(|| PathBuf::from("/tmp"), PathBuf::from);
    dir.join(format!("tmux-{}", nix::unistd::getuid()))
        .join(socket)
}

/// End the tmux server on `socket` whatever state it is in: `kill-server` within
/// [`KILL_LIMIT`], SIGKILL for every process still naming the socket (the server itself
/// when it is stopped or wedged, control-mode clients), and the socket file removed.
pub fn end_server(socket: &str) {
    let kill = Command::new("tmux")
        .args(["-L", socket, "kill-server"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    if let Ok(child) = kill {
        let _ = super::bounded::output_within(child, KILL_LIMIT);
    }
    let left: Vec<u32> = all()
        .iter()
        .filter(|p| names_socket(p, socket))
        .map(|p| p.pid)
        .collect();
    kill_all(&left);
    let _ = std::fs::remove_file(socket_path(socket));
}
