//! Ending a remote attempt. On a host crewmux knows no pid of an attempt (a pid there means
//! nothing here), so every process of it is found on the host as it is locally
//! (`crate::backend::reap`): by the `CREWMUX_ATTEMPT_NONCE=<nonce>` that its wrapper and
//! every descendant inherit (`setsid`, double forks and `nohup` included), read from
//! `/proc/<pid>/environ` there. A zombie is not counted (`/proc/<pid>/stat` state `Z`).
//!
//! Each step is one `sh` script in one ssh call on the host's shared connection: the scan
//! is one `grep -lzxF` over every `environ` (GNU grep and BusyBox both know `-z`), not a
//! process per process. The steps mirror the local ones:
//! - a kill (cancel, wall or idle timeout): SIGTERM now ([`signal`]), SIGKILL once the
//!   grace period is over (the driver's clock, as for a local attempt);
//! - what an attempt that ended left behind, and `clean`: SIGTERM, up to the grace for
//!   them to go, SIGKILL, up to 500 ms to settle, all on the host in one call ([`end`]);
//!   the survivors' pids are printed back.
//!
//! Ends of attempts that ended by themselves run on threads of their own
//! ([`Ending`]), so the loop that drives the run never waits out a grace period on a host.

use std::thread::JoinHandle;
use std::time::Duration;

use super::ssh::{remote_line, SshLink, CALL_LIMIT};
use crate::error::Result;
use crate::launch::ATTEMPT_ENV;

/// Time the host's processes get to settle after SIGKILL, in steps of 100 ms (500 ms, as
/// locally).
const SETTLE_STEPS: u64 = 5;

/// The shell function `live` that prints the pids of the attempt's live processes (one a
/// line), for `nonce`.
fn live_fn(nonce: &str) -> Result<String> {
    let needle = remote_line(&[format!("{ATTEMPT_ENV}={nonce}")])?;
    Ok(format!(
        "n={needle}\n\
         live() {{ for f in $(grep -lzxF -e \"$n\" /proc/[0-9]*/environ 2>/dev/null); do \
         p=${{f#/proc/}}; p=${{p%/environ}}; \
         case $(sed 's/.*) //' \"/proc/$p/stat\" 2>/dev/null) in Z*|'') ;; *) echo \"$p\";; esac; \
         done; }}\n"
    ))
}

/// The script that sends SIGTERM (SIGKILL with `hard`) to every live process of the
/// attempt `nonce` and prints their pids.
///
/// # Errors
/// A nonce with a NUL byte.
pub fn signal_script(nonce: &str, hard: bool) -> Result<String> {
    let sig = if hard { "KILL" } else { "TERM" };
    Ok(format!(
        "{live}p=$(live)\nif [ -n \"$p\" ]; then kill -s {sig} $p 2>/dev/null; echo \"$p\"; fi\nexit 0\n",
        live = live_fn(nonce)?
    ))
}

/// The script that ends the attempt `nonce` on the host: SIGTERM, up to `grace` (in steps
/// of 100 ms) for its processes to go, SIGKILL, up to 500 ms to settle; it prints the
/// pids still alive after that.
///
/// # Errors
/// A nonce with a NUL byte.
pub fn end_script(nonce: &str, grace: Duration) -> Result<String> {
    let steps = grace.as_millis().div_ceil(100);
    Ok(format!(
        "{live}p=$(live)\n[ -z \"$p\" ] && exit 0\nkill -s TERM $p 2>/dev/null\n\
         i=0; while [ $i -lt {steps} ] && [ -n \"$(live)\" ]; do sleep 0.1; i=$((i+1)); done\n\
         p=$(live)\n[ -n \"$p\" ] && kill -s KILL $p 2>/dev/null\n\
         i=0; while [ $i -lt {SETTLE_STEPS} ] && [ -n \"$(live)\" ]; do sleep 0.1; i=$((i+1)); done\n\
         live\nexit 0\n",
        live = live_fn(nonce)?
    ))
}

/// The pids a script printed.
fn pids(out: &[u8]) -> Vec<u32> {
    String::from_utf8_lossy(out)
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect()
}

/// Run `script` with `sh` on the host (the login shell there may not be a POSIX one).
fn run(link: &SshLink, script: &str, limit: Duration) -> Result<Vec<u32>> {
    let line = remote_line(&["sh", "-c", script])?;
    Ok(pids(&link.run(&line, None, limit)?.stdout))
}

/// Send SIGTERM (SIGKILL with `hard`) to every process of the attempt `nonce` on the
/// host; returns the pids signalled there.
///
/// # Errors
/// The host did not answer within [`CALL_LIMIT`] (what ssh said).
pub fn signal(link: &SshLink, nonce: &str, hard: bool) -> Result<Vec<u32>> {
    let pids = run(link, &signal_script(nonce, hard)?, CALL_LIMIT)?;
    let sig = if hard { "SIGKILL" } else { "SIGTERM" };
    tracing::debug!("host {}: {sig} to {pids:?}", link.host);
    Ok(pids)
}

/// The grace of a stale attempt ended by `clean` or a relaunch (as locally).
const STALE_GRACE: Duration = Duration::from_millis(500);

/// End the stale attempt `nonce` on each host of `hosts` that answers (its nonce does not
/// say which it ran on); returns the pids that survived SIGKILL. A host that does not
/// answer is logged and marked down, so the next attempt (`clean` ends one after the
/// other) does not wait for it again.
pub fn end_stale<'a>(
    hosts: impl Iterator<Item = (&'a SshLink, &'a mut super::reach::Reach)>,
    nonce: &str,
) -> Vec<u32> {
    let mut left = vec![];
    for (link, reach) in hosts {
        if *reach != super::reach::Reach::Up {
            continue;
        }
        match end(link, nonce, STALE_GRACE) {
            Ok(pids) => left.extend(pids),
            Err(e) => {
                tracing::warn!("host {}: could not end attempt {nonce}: {e}", link.host);
                reach.failed(std::time::Instant::now(), e.to_string());
            }
        }
    }
    left
}

/// End every process of the attempt `nonce` on the host (see [`end_script`]); returns
/// the pids that survived SIGKILL there.
///
/// # Errors
/// The host did not answer within the grace plus [`CALL_LIMIT`] (what ssh said).
pub fn end(link: &SshLink, nonce: &str, grace: Duration) -> Result<Vec<u32>> {
    run(link, &end_script(nonce, grace)?, grace + CALL_LIMIT)
}

/// Ends of remote attempts under way on threads of their own. Dropping it waits for them
/// until each is due (its grace plus [`END_ROUND_TRIP`] after it began), so a run that
/// finishes leaves nothing of its attempts on hosts that answer; one still waiting on a
/// host that hangs then is left to its call's limit (grace plus [`CALL_LIMIT`]).
#[derive(Default)]
pub struct Ending {
    threads: Vec<(JoinHandle<()>, std::time::Instant)>,
}

/// What an end on a host that answers takes besides its grace: two round trips and the
/// 500 ms it leaves its processes to go after SIGKILL, with room for a loaded machine.
pub const END_ROUND_TRIP: Duration = Duration::from_secs(3);

impl Ending {
    /// End the attempt `nonce` (worker `label`) on `link`'s host on a thread; survivors
    /// and an unreachable host are logged.
    pub fn begin(&mut self, link: SshLink, nonce: String, grace: Duration, label: &str) {
        self.threads.retain(|(t, _)| !t.is_finished());
        let due = std::time::Instant::now() + grace + END_ROUND_TRIP;
        let who = label.to_string();
        let spawned = std::thread::Builder::new()
            .name("crewmux-host-reap".into())
            .spawn(move || report(&link, &who, end(&link, &nonce, grace)));
        match spawned {
            Ok(t) => self.threads.push((t, due)),
            Err(e) => tracing::warn!("{label}: cannot start a thread to end it on its host: {e}"),
        }
    }
}

/// Log what an end on a host left.
fn report(link: &SshLink, label: &str, r: Result<Vec<u32>>) {
    match r {
        Ok(left) if left.is_empty() => {}
        Ok(left) => tracing::warn!(
            "{label}: processes on host {} still alive after SIGKILL: {left:?}",
            link.host
        ),
        Err(e) => tracing::warn!("{label}: could not end it on host {}: {e}", link.host),
    }
}

impl Drop for Ending {
    fn drop(&mut self) {
        for (t, due) in self.threads.drain(..) {
            while !t.is_finished() && std::time::Instant::now() < due {
                std::thread::sleep(Duration::from_millis(20));
            }
            if !t.is_finished() {
                tracing::warn!(
                    "an end of an attempt on a host is still waiting on ssh; leaving it"
                );
            } else if t.join().is_err() {
                tracing::warn!("a thread ending an attempt on a host panicked");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;
    use std::time::Instant;

    /// Run a script here with `sh`, as the host would.
    fn sh(script: &str) -> Vec<u32> {
        let out = Command::new("sh").arg("-c").arg(script).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        pids(&out.stdout)
    }

    fn start_escapers(nonce: &str) {
        // A double fork into a new session, and one that ignores SIGTERM.
        let st = Command::new("sh")
            .arg("-c")
            .arg("setsid sh -c 'sleep 300 & sleep 301' >/dev/null 2>&1 & (trap '' TERM; exec sleep 302) >/dev/null 2>&1 &")
            .env(ATTEMPT_ENV, nonce)
            .status()
            .unwrap();
        assert!(st.success());
        let end = Instant::now() + Duration::from_secs(5);
        while crate::backend::reap::attempt_pids(nonce).len() < 3 && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn the_end_script_finds_every_process_by_its_nonce_and_kills_what_ignores_sigterm() {
        let nonce = crate::launch::new_nonce();
        start_escapers(&nonce);
        let before = crate::backend::reap::attempt_pids(&nonce);
        assert!(before.len() >= 3, "{before:?}");
        let left = sh(&end_script(&nonce, Duration::from_millis(300)).unwrap());
        assert!(left.is_empty(), "survivors: {left:?}");
        assert!(crate::backend::reap::attempt_pids(&nonce).is_empty());
        // Nothing left: the script says so at once.
        assert!(sh(&end_script(&nonce, Duration::from_secs(5)).unwrap()).is_empty());
    }

    #[test]
    fn the_signal_script_names_what_it_signalled_and_spares_other_attempts() {
        let nonce = crate::launch::new_nonce();
        let other = crate::launch::new_nonce();
        start_escapers(&nonce);
        start_escapers(&other);
        let mut found = crate::backend::reap::attempt_pids(&nonce);
        let mut told = sh(&signal_script(&nonce, true).unwrap());
        found.sort_unstable();
        told.sort_unstable();
        assert_eq!(told, found);
        let end = Instant::now() + Duration::from_secs(5);
        while !crate::backend::reap::attempt_pids(&nonce).is_empty() && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(crate::backend::reap::attempt_pids(&nonce).is_empty());
        assert!(
            crate::backend::reap::attempt_pids(&other).len() >= 3,
            "another attempt's processes are left alone"
        );
        assert!(sh(&end_script(&other, Duration::from_millis(100)).unwrap()).is_empty());
    }
}
