//! Finding and ending every process of an attempt, wherever it went: each inherits
//! `CREWMUX_ATTEMPT_NONCE=<nonce>` from the launch wrapper, so a scan of `/proc/<pid>/environ`
//! finds children that left the process group (`setsid`, a daemon's double fork, `nohup`).
//! Linux only; elsewhere the scan finds nothing and only process groups are signalled.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use crate::launch::ATTEMPT_ENV;

/// Pids of live processes (not zombies) whose environment carries `nonce` as their attempt.
/// Processes whose environment cannot be read (another user's) are not seen.
pub fn attempt_pids(nonce: &str) -> Vec<u32> {
    let needle = format!("{ATTEMPT_ENV}={nonce}");
    let me = std::process::id();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return vec![];
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != me && crate::backend::pid_alive(pid))
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .map(|env| env.split(|&b| b == 0).any(|kv| kv == needle.as_bytes()))
                .unwrap_or(false)
        })
        .collect()
}

/// The live processes (not zombies) of each attempt in `nonces`, from one pass over `/proc`
/// (as [`attempt_pids`] for many attempts at once: the pass reads every process's
/// environment, which is the cost, whatever the number of attempts). Attempts with no
/// process are absent from the map.
pub fn attempts_pids(nonces: &[&str]) -> HashMap<String, Vec<u32>> {
    let mut found: HashMap<String, Vec<u32>> = HashMap::new();
    if nonces.is_empty() {
        return found;
    }
    let prefix = format!("{ATTEMPT_ENV}=");
    let me = std::process::id();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return found;
    };
    for pid in dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok()) {
        if pid == me {
            continue;
        }
        let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else {
            continue;
        };
        let nonce = env
            .split(|&b| b == 0)
            .find_map(|kv| kv.strip_prefix(prefix.as_bytes()))
            .and_then(|v| std::str::from_utf8(v).ok());
        if let Some(n) = nonce.filter(|n| nonces.contains(n)) {
            if crate::backend::pid_alive(pid) {
                found.entry(n.to_string()).or_default().push(pid);
            }
        }
    }
    found
}

/// Send `sig` to every process of the attempt; returns the pids signalled.
pub fn signal_attempt(nonce: &str, sig: Signal) -> Vec<u32> {
    signal_attempt_but(nonce, sig, None)
}

/// Whether `pid` is `keep` (an attempt's wrapper) or one of its own children (its closing
/// `sleep`, the agent's subshell on its way out): those end with the wrapper by themselves.
/// The parent comes from `/proc/<pid>/stat` (the field after the parenthesised name).
pub fn spared(pid: u32, keep: Option<u32>) -> bool {
    let Some(keep) = keep else {
        return false;
    };
    pid == keep || parent_of(pid) == Some(keep)
}

fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// [`signal_attempt`] sparing `keep` (the attempt's wrapper, which is finishing by itself
/// and whose own exit status tmux reports as the pane's) and its own children ([`spared`]).
pub fn signal_attempt_but(nonce: &str, sig: Signal, keep: Option<u32>) -> Vec<u32> {
    let mut pids = attempt_pids(nonce);
    pids.retain(|&p| !spared(p, keep));
    for &pid in &pids {
        if let Ok(p) = i32::try_from(pid) {
            // Gone in between is fine: that is what we want.
            if let Err(e) = kill(Pid::from_raw(p), sig) {
                tracing::debug!("{sig} to {pid}: {e}");
            }
        }
    }
    pids
}

/// End every process of the attempt: SIGTERM, up to `grace` for them to go, then SIGKILL;
/// returns the pids still alive after the SIGKILL settles (up to 500 ms), for the event log.
pub fn end_attempt(nonce: &str, grace: Duration) -> Vec<u32> {
    if signal_attempt(nonce, Signal::SIGTERM).is_empty() {
        return vec![];
    }
    if !wait_gone(nonce, grace) {
        signal_attempt(nonce, Signal::SIGKILL);
        wait_gone(nonce, Duration::from_millis(500));
    }
    attempt_pids(nonce)
}

/// Wait up to `span` for the attempt to have no process left; true when none is left.
fn wait_gone(nonce: &str, span: Duration) -> bool {
    let end = Instant::now() + span;
    loop {
        if attempt_pids(nonce).is_empty() {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wrappers_own_child_is_spared_and_a_stranger_is_not() {
        let me = std::process::id();
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        assert!(spared(child.id(), Some(me)), "a child of keep is spared");
        assert!(spared(me, Some(me)), "keep itself is spared");
        assert!(!spared(child.id(), None), "nothing is spared without keep");
        assert!(
            !spared(child.id(), Some(1)),
            "a child of another process is not spared"
        );
        child.kill().unwrap();
        child.wait().unwrap();
    }

    #[test]
    fn a_process_that_left_the_group_is_found_and_ended() {
        let nonce = crate::launch::new_nonce();
        // A double fork into a new session: not in the group of the shell that started it.
        let status = std::process::Command::new("sh")
            .arg("-c")
            .arg("setsid sh -c 'sleep 300 & sleep 300' >/dev/null 2>&1 &")
            .env(ATTEMPT_ENV, &nonce)
            .status()
            .unwrap();
        assert!(status.success());
        let end = Instant::now() + Duration::from_secs(5);
        while attempt_pids(&nonce).len() < 2 && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(
            attempt_pids(&nonce).len() >= 2,
            "the detached sleeps are found"
        );
        let both = attempts_pids(&[&nonce, "0000000000000000"]);
        assert_eq!(
            both.get(&nonce).map(Vec::len),
            Some(attempt_pids(&nonce).len()),
            "one pass finds what the one-attempt scan finds"
        );
        assert!(!both.contains_key("0000000000000000"), "{both:?}");
        let left = end_attempt(&nonce, Duration::from_millis(500));
        assert!(left.is_empty(), "survivors: {left:?}");
        assert!(attempt_pids(&nonce).is_empty());
    }
}
