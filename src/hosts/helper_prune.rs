//! Old copies of crewmux in a host's `<workdir>/bin` go when a run is planned there: every
//! build leaves its own `crewmux-<version>-<hash>` (~20-180 MB), and nothing else removes
//! them. One `sh -s` over the shared connection, after the copy is in place, keeps:
//! - this build's copy (the run's own);
//! - a copy a process on the host runs (its `/proc/<pid>/exe`: a `sim` agent or a
//!   pane-text filter of a live attempt);
//! - a copy named in an attempt's wrapper (`<workdir>/runs/<run>/workers/*/attempt-*/
//!   launch.sh`) of a run whose tmux session (`crewmux-<run>`) is on the host's tmux
//!   server: a live run, or one not cleaned yet, which may start attempts with it again
//!   (a run's session goes with `crewmux clean`).
//!
//! - a copy a run was planned with in the last hour: each plan touches its copy first
//!   (another build's run may be planned and not started there yet).
//!
//! and removes the other copies, and temporary copies (`*.part.<pid>`) older than an hour
//! (a copy is done within 30 s plus 1 s per MB, or killed). What it removes is said in one
//! line when the run is planned; a host that does not answer keeps everything.

use std::path::Path;
use std::time::Duration;

use super::OwnBinary;
use crate::hosts::config::HostSpec;
use crate::hosts::doctor::RemoteSh;

/// Limit of the pruning call.
const PRUNE_LIMIT: Duration = Duration::from_secs(12);

/// Age past which a temporary copy (`*.part.<pid>`) is a leftover, and a copy no run was
/// planned with since may go, minutes.
const STALE_MIN: u32 = 60;

fn q(word: &str) -> String {
    shlex::try_quote(word).map_or_else(|_| "''".into(), |w| w.into_owned())
}

/// The `sh` script that prunes `host`'s `<workdir>/bin`, keeping `keep` (a file name
/// there) and the copies in use (module docs). It prints `removed <name>` and `kept
/// <name> (<why>)`, one line each.
pub fn prune_script(host: &HostSpec, keep: &str) -> String {
    let bin = host.workdir.join("bin");
    let runs = host.workdir.join("runs");
    format!(
        "bin={bin}; keep={keep}; runs={runs}\n\
         cd \"$bin\" 2>/dev/null || exit 0\n\
         touch -c -- \"$keep\"\n\
         live=$({tmux} -L {socket} list-sessions -F '#{{session_name}}' 2>/dev/null | sed -n 's/^crewmux-//p')\n\
         exes=$(ls -l /proc/[0-9]*/exe 2>/dev/null)\n\
         for f in crewmux-*; do\n\
         \x20 [ -f \"$f\" ] || continue\n\
         \x20 case \"$f\" in\n\
         \x20   \"$keep\") continue ;;\n\
         \x20   *.part.*) if [ -n \"$(find \"./$f\" -mmin +{STALE_MIN} 2>/dev/null)\" ]; then rm -f -- \"$f\" && echo \"removed $f\"; fi; continue ;;\n\
         \x20 esac\n\
         \x20 if [ -z \"$(find \"./$f\" -mmin +{STALE_MIN} 2>/dev/null)\" ]; then echo \"kept $f (a run was planned with it within the hour)\"; continue; fi\n\
         \x20 case \"$exes\" in *\"$bin/$f\"*) echo \"kept $f (a process runs it)\"; continue ;; esac\n\
         \x20 used=\n\
         \x20 for r in $live; do\n\
         \x20   for w in \"$runs/$r\"/workers/*/attempt-*/launch.sh; do\n\
         \x20     if [ -f \"$w\" ] && grep -qF \"$bin/$f\" \"$w\"; then used=$r; break 2; fi\n\
         \x20   done\n\
         \x20 done\n\
         \x20 if [ -n \"$used\" ]; then echo \"kept $f (run $used uses it)\"; continue; fi\n\
         \x20 rm -f -- \"$f\" && echo \"removed $f\"\n\
         done\n\
         exit 0\n",
        bin = q(&bin.display().to_string()),
        keep = q(keep),
        runs = q(&runs.display().to_string()),
        tmux = q(&host.tmux),
        socket = q(&host.tmux_socket),
    )
}

/// Prune `host`'s `<workdir>/bin` through `sh`, keeping `own`'s copy (module docs).
/// Returns the names removed.
///
/// # Errors
/// The host did not answer, or the script failed (what it said).
pub fn prune(sh: &dyn RemoteSh, host: &HostSpec, own: &OwnBinary) -> Result<Vec<String>, String> {
    let out = sh
        .sh(&prune_script(host, &own.name()), PRUNE_LIMIT)
        .map_err(|e| e.to_string())?;
    if out.timed_out || out.code != Some(0) {
        return Err(format!(
            "pruning {}: {}",
            crate::hosts::doctor::how_it_ended(out.code),
            out.output.trim()
        ));
    }
    let mut removed = vec![];
    for line in out.output.lines() {
        if let Some(name) = line.strip_prefix("removed ") {
            removed.push(name.to_string());
        } else if let Some(kept) = line.strip_prefix("kept ") {
            tracing::debug!("host {}: {kept}", host.name);
        }
    }
    Ok(removed)
}

/// The line a run says when planning removed `removed` from `host`'s `<workdir>/bin`
/// (`None`: nothing removed).
pub fn pruned_notice(host: &str, bin: &Path, removed: &[String]) -> Option<String> {
    let copies = removed.iter().filter(|n| !n.contains(".part.")).count();
    let parts = removed.len() - copies;
    let what = match (copies, parts) {
        (0, 0) => return None,
        (1, 0) => "1 old copy".to_string(),
        (n, 0) => format!("{n} old copies"),
        (0, p) => format!("{p} unfinished cop{}", if p == 1 { "y" } else { "ies" }),
        (n, p) => format!(
            "{n} old cop{} and {p} unfinished one{}",
            if n == 1 { "y" } else { "ies" },
            if p == 1 { "" } else { "s" }
        ),
    };
    Some(format!(
        "host {host}: removed {what} of crewmux from {} (no process or live run uses them)",
        bin.display()
    ))
}

#[cfg(test)]
#[path = "helper_prune_tests.rs"]
mod tests;
