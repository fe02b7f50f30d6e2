//! Repeated passes over `/proc` for attempts' nonces, each process's environment read once.
//!
//! Reading `/proc/<pid>/environ` is the cost of a pass (the kernel copies the environment
//! out of the other process's memory, under its memory map lock), and most processes a pass
//! meets were there at the last one: the tmux server, the panes' wrappers and agents, and
//! the `cat` of each pipe-pane, which a dead pane keeps while it remains on exit. A
//! [`ProcScan`] remembers what each process's environment said and reads only the
//! processes it has not met.
//!
//! A process is told apart from a later one with the same pid by the inode number of its
//! `/proc/<pid>` directory, which `getdents` returns with the name: procfs makes a new
//! inode (a new number, from a counter) for a new process, since an entry is tied to the
//! process it was made for, not to the number. An entry made again for the same process
//! (after the kernel dropped it from its cache) only costs a read.
//!
//! What `environ` shows is the environment the process was started (`execve`d) with. A
//! process's answer changes only when it runs `execve` with the nonce added, and the only
//! process that adds the nonce is the attempt's wrapper (it exports it): a child of the
//! wrapper met between its `fork` and its `execve` shows no nonce yet, and the agent is
//! such a child. So a "no nonce" is trusted only once two passes read it; a nonce at once.
//! The agent's own children, and everything they start, carry the nonce from their first
//! moment.

use std::collections::HashMap;

use crate::launch::ATTEMPT_ENV;

/// The environment of one `/proc` entry, as last read: its inode and the attempt nonce it
/// carries (`None`: no nonce, or not readable).
#[derive(Debug, Clone)]
struct Seen {
    ino: u64,
    nonce: Option<String>,
    /// A "no nonce" answer read twice: trusted from then on. One read alone may have met
    /// a child between its `fork` and its `execve` (its environment still its parent's),
    /// so a first "no nonce" is read again at the next pass.
    settled: bool,
}

/// `/proc` passes that read each process's environment once (see the module docs).
#[derive(Debug, Default)]
pub struct ProcScan {
    seen: HashMap<u32, Seen>,
    /// Environments read by the passes so far (tests and logs).
    reads: u64,
}

impl ProcScan {
    pub fn new() -> Self {
        Self::default()
    }

    /// Environments read so far (one per process met for the first time).
    pub fn reads(&self) -> u64 {
        self.reads
    }

    /// The live processes (not zombies) of each attempt in `nonces`, as
    /// [`super::reap::attempts_pids`] finds them, from one pass over `/proc`. Attempts with
    /// no process are absent from the map.
    pub fn attempts_pids(&mut self, nonces: &[&str]) -> HashMap<String, Vec<u32>> {
        let mut found: HashMap<String, Vec<u32>> = HashMap::new();
        if nonces.is_empty() {
            return found;
        }
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return found;
        };
        let me = std::process::id();
        let mut now: HashMap<u32, Seen> = HashMap::with_capacity(self.seen.len());
        for entry in dir.filter_map(|e| e.ok()) {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            if pid == me {
                continue;
            }
            let ino = std::os::unix::fs::DirEntryExt::ino(&entry);
            let seen = match self.seen.remove(&pid) {
                // procfs gives inode 1 when it could not make the entry: never trusted.
                Some(s) if s.ino == ino && ino != 1 && (s.nonce.is_some() || s.settled) => s,
                // Met before with no nonce, once: read again (see `Seen::settled`).
                Some(s) if s.ino == ino && ino != 1 => {
                    self.reads += 1;
                    let nonce = nonce_of(pid);
                    Seen {
                        ino,
                        settled: nonce.is_none(),
                        nonce,
                    }
                }
                _ => {
                    self.reads += 1;
                    Seen {
                        ino,
                        nonce: nonce_of(pid),
                        settled: false,
                    }
                }
            };
            if let Some(n) = seen.nonce.as_deref().filter(|n| nonces.contains(n)) {
                if crate::backend::pid_alive(pid) {
                    found.entry(n.to_string()).or_default().push(pid);
                }
            }
            now.insert(pid, seen);
        }
        // Processes gone since the last pass are forgotten with it.
        self.seen = now;
        found
    }
}

/// The attempt nonce in `pid`'s environment, if it has one and it can be read.
fn nonce_of(pid: u32) -> Option<String> {
    let env = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    let prefix = format!("{ATTEMPT_ENV}=");
    env.split(|&b| b == 0)
        .find_map(|kv| kv.strip_prefix(prefix.as_bytes()))
        .and_then(|v| std::str::from_utf8(v).ok())
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A child carrying `nonce`, returned once it has run `execve` (`spawn` may return
    /// before: its environment is its parent's until then).
    pub(super) fn child_with(nonce: &str) -> std::process::Child {
        let child = std::process::Command::new("sleep")
            .arg("30")
            .env(ATTEMPT_ENV, nonce)
            .spawn()
            .unwrap();
        let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while nonce_of(child.id()).as_deref() != Some(nonce) {
            assert!(
                std::time::Instant::now() < until,
                "the child never ran execve"
            );
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        child
    }

    #[test]
    fn a_second_pass_finds_the_same_processes_reading_only_new_ones() {
        let mut a = child_with("feedc0de00000001");
        let mut scan = ProcScan::new();
        let first = scan.attempts_pids(&["feedc0de00000001", "feedc0de00000002"]);
        assert_eq!(first.get("feedc0de00000001"), Some(&vec![a.id()]));
        assert!(!first.contains_key("feedc0de00000002"));
        let read_once = scan.reads();
        assert!(read_once > 0);
        // A second pass confirms what had no nonce; only then are answers kept.
        scan.attempts_pids(&["feedc0de00000001", "feedc0de00000002"]);
        let read_once = scan.reads();

        // A process started after the first pass is read and found; the others are not
        // read again (other processes of the machine may start meanwhile: a few reads).
        let mut b = child_with("feedc0de00000002");
        let second = scan.attempts_pids(&["feedc0de00000001", "feedc0de00000002"]);
        assert_eq!(second.get("feedc0de00000001"), Some(&vec![a.id()]));
        assert_eq!(second.get("feedc0de00000002"), Some(&vec![b.id()]));
        assert!(
            scan.reads() - read_once < read_once / 2,
            "a second pass reads only processes it has not met ({} then {})",
            read_once,
            scan.reads() - read_once
        );

        // Ended processes are not found (zombies included, then gone).
        a.kill().unwrap();
        a.wait().unwrap();
        let third = scan.attempts_pids(&["feedc0de00000001", "feedc0de00000002"]);
        assert!(!third.contains_key("feedc0de00000001"));
        assert_eq!(third.get("feedc0de00000002"), Some(&vec![b.id()]));
        b.kill().unwrap();
        b.wait().unwrap();
    }

    #[test]
    fn a_pass_finds_what_the_uncached_scan_finds() {
        let mut c = child_with("feedc0de00000003");
        let mut scan = ProcScan::new();
        for _ in 0..2 {
            assert_eq!(
                scan.attempts_pids(&["feedc0de00000003"]),
                crate::backend::reap::attempts_pids(&["feedc0de00000003"])
            );
        }
        c.kill().unwrap();
        c.wait().unwrap();
    }
}

#[cfg(test)]
mod fork_tests {
    use super::*;

    #[test]
    fn an_agent_met_before_its_execve_is_found_at_the_next_pass() {
        let mut child = super::tests::child_with("feedc0de00000009");
        let pid = child.id();
        let ino = std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .find(|e| e.file_name().to_str() == Some(&pid.to_string()))
            .map(|e| std::os::unix::fs::DirEntryExt::ino(&e))
            .unwrap();
        // What a pass between the child's fork and its execve remembered: no nonce.
        let mut scan = ProcScan::new();
        scan.seen.insert(
            pid,
            Seen {
                ino,
                nonce: None,
                settled: false,
            },
        );
        let found = scan.attempts_pids(&["feedc0de00000009"]);
        assert_eq!(found.get("feedc0de00000009"), Some(&vec![pid]));
        child.kill().unwrap();
        child.wait().unwrap();
    }
}
