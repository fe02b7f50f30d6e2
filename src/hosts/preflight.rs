//! What planning a run asks each of its SSH hosts before anything is made: one `sh -s`
//! per host over the host's shared connection (`super::ssh`: the master it opens is the
//! one the run's later calls ride on), all hosts in parallel, bounded by [`PLAN_LIMIT`].
//! The script prints, one line each, the host's `uname -sm`, what crewmux's copy there
//! answers to `--version` (only when a worker there needs it: `super::helper`), the first
//! line of `<tmux> -V` (the `tmux` of `hosts.toml`) and of `git --version`.
//!
//! A host that can never run the run's workers refuses the run before it starts (exit 2,
//! nothing made; [`refusal`]): ssh's login refused, a host key that does not match
//! `known_hosts` or is not in it, ssh's configuration that cannot be used
//! (`super::ssh_said`), tmux missing there or older than the minimum `run` holds this
//! machine to, git missing there (remote workers get their code by git). A host that only
//! does not answer (no answer within the limit, a refused connection) is not refused: the
//! run waits for it as it waits for a host that goes away later.
//!
//! The answer is kept for the process for [`KEPT_FOR`]: `--hosts` spreading asks the same
//! hosts first (`super::spread`), and planning then asks no host twice.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::config::HostSpec;
use super::doctor::RemoteSh;
use super::ssh_said::SshFailed;

/// Limit of the question when `--hosts` spreads a run or a dispatch (ssh's own
/// `ConnectTimeout` is 10 s).
pub const ASK_LIMIT: Duration = Duration::from_secs(12);
/// Limit of the question when a run is planned: every run with an SSH host waits for it
/// before it starts, so a host that hangs costs the run's start this much at most, then
/// reads as not answering (not refused: the run waits for it, and copies crewmux there
/// once it answers, `super::helper_awaited`). A new login and the script on a loopback
/// host took ~0.3 s on a loaded machine, on a shared connection a few ms.
pub const PLAN_LIMIT: Duration = Duration::from_secs(3);
/// How long an answer is reused by the same process.
const KEPT_FOR: Duration = Duration::from_secs(60);

/// What a host answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// Its `uname -sm` (`unknown` when that failed there).
    pub system: String,
    /// What crewmux's copy there answered: `runs <--version line>`, `fails <its first
    /// line>` or `absent`; `None`: not asked.
    pub crewmux: Option<String>,
    /// The first line of `<tmux> -V`, or (`Err`) of what the shell said when it failed.
    pub tmux: Result<String, String>,
    /// The first line of `git --version`, or (`Err`) of what the shell said.
    pub git: Result<String, String>,
}

/// Why a host gave no [`Answer`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotAsked {
    /// One phrase: what ssh said, the limit, or how the script ended there.
    pub why: String,
    /// What ssh said, read (`None`: ssh ran, the question did not: a timeout, a shell
    /// that failed).
    pub ssh: Option<SshFailed>,
}

impl std::fmt::Display for NotAsked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.why)
    }
}

fn q(word: &str) -> String {
    shlex::try_quote(word).map_or_else(|_| "''".into(), |w| w.into_owned())
}

/// The script: `uname -sm`, then the copy's answer when `crewmux` names it, then `tmux
/// ok|no <line>` (`tmux` run with `-V`) and `git ok|no <line>`, one line each.
pub fn script(crewmux: Option<&Path>, tmux: &str) -> String {
    let mut s = String::from(
        "first() { printf '%s\\n' \"$1\" | head -n 1; }\nuname -sm 2>/dev/null || echo unknown\n",
    );
    if let Some(path) = crewmux {
        s.push_str(&format!(
            "p={}\nif [ -x \"$p\" ]; then if v=$(\"$p\" --version 2>&1 </dev/null); then echo \"runs $(first \"$v\")\"; else echo \"fails $(first \"$v\")\"; fi\nelse echo absent; fi\n",
            q(&path.display().to_string())
        ));
    }
    for (name, cmd) in [
        ("tmux", format!("{} -V", q(tmux))),
        ("git", "git --version".into()),
    ] {
        s.push_str(&format!(
            "if v=$({cmd} 2>&1 </dev/null); then echo \"{name} ok $(first \"$v\")\"; else echo \"{name} no $(first \"$v\")\"; fi\n"
        ));
    }
    s
}

/// Ask `host` through `sh` within `limit` (see the module docs); `crewmux`: the copy to
/// ask about.
///
/// # Errors
/// The host was not asked or did not answer ([`NotAsked`]).
pub fn ask(
    sh: &dyn RemoteSh,
    host: &HostSpec,
    crewmux: Option<&Path>,
    limit: Duration,
) -> Result<Answer, NotAsked> {
    let out = match sh.sh(&script(crewmux, &host.tmux), limit) {
        Ok(out) => out,
        Err(crate::error::Error::Command { program, message }) => {
            let read = SshFailed::read(&message);
            return Err(NotAsked {
                why: format!("{program}: {}", read.said()),
                ssh: Some(read),
            });
        }
        Err(e) => {
            return Err(NotAsked {
                why: e.to_string(),
                ssh: None,
            })
        }
    };
    if out.timed_out {
        return Err(NotAsked {
            why: format!("it did not answer within {} s", limit.as_secs()),
            ssh: None,
        });
    }
    let mut lines = out.output.lines().map(str::trim);
    let system = lines.next().unwrap_or("").to_string();
    if out.code != Some(0) || system.is_empty() {
        let how = super::doctor::how_it_ended(out.code);
        return Err(NotAsked {
            why: match out.output.trim() {
                "" => format!("the check {how}"),
                said => format!("the check {how}: {}", super::ssh_said::one_line(said)),
            },
            ssh: None,
        });
    }
    let rest: Vec<&str> = lines.collect();
    let tool = |name: &str| {
        let line = rest
            .iter()
            .find_map(|l| l.strip_prefix(&format!("{name} ")));
        match line.map(|l| l.split_at(l.find(' ').unwrap_or(l.len()))) {
            Some(("ok", v)) => Ok(v.trim().to_string()),
            Some((_, said)) => Err(said.trim().to_string()),
            None => Err("no answer".to_string()),
        }
    };
    Ok(Answer {
        system,
        crewmux: crewmux.map(|_| rest.first().copied().unwrap_or("absent").to_string()),
        tmux: tool("tmux"),
        git: tool("git"),
    })
}

/// What this process was told, per host: the host as asked, the copy asked about, when.
type Kept = (HostSpec, Option<PathBuf>, Instant, Result<Answer, NotAsked>);

static KEPT: Mutex<Vec<Kept>> = Mutex::new(Vec::new());

/// [`ask`] through `sh`, unless this process asked the same host (and the same copy, or
/// none is wanted now) within [`KEPT_FOR`]: its answer then.
///
/// # Errors
/// As [`ask`].
pub fn ask_once(
    sh: &dyn RemoteSh,
    host: &HostSpec,
    crewmux: Option<&Path>,
    limit: Duration,
) -> Result<Answer, NotAsked> {
    let fits = |(h, c, at, _): &Kept| {
        h == host && at.elapsed() < KEPT_FOR && (crewmux.is_none() || c.as_deref() == crewmux)
    };
    if let Ok(kept) = KEPT.lock() {
        if let Some((.., answer)) = kept.iter().rev().find(|k| fits(k)) {
            tracing::debug!("host {}: planning's answer reused", host.name);
            return answer.clone();
        }
    }
    let started = Instant::now();
    let answer = ask(sh, host, crewmux, limit);
    tracing::info!(
        "host {}: asked in {} ms: {answer:?}",
        host.name,
        started.elapsed().as_millis()
    );
    if let Ok(mut kept) = KEPT.lock() {
        kept.retain(|(h, ..)| h.name != host.name);
        kept.push((
            host.clone(),
            crewmux.map(Path::to_path_buf),
            Instant::now(),
            answer.clone(),
        ));
    }
    answer
}

/// `doctor --hosts`'s `tmux` detail (and a run's refusal) from what `<tmux> -V` printed
/// there: `Ok("ok (tmux 3.3a)")`, or the problem with its fix.
///
/// # Errors
/// tmux does not run there, names no version, or is older than the minimum.
pub fn tmux_detail(host: &HostSpec, ran: &Result<String, String>) -> Result<String, String> {
    use crate::backend::tmux_version::{tmux_fix, tmux_usable};
    let (problem, fix) = match ran {
        Ok(line) => match tmux_usable(Some(line)) {
            Ok(()) => return Ok(format!("ok ({line})")),
            Err(problem) => (problem, tmux_fix(Some(line))),
        },
        Err(said) => (
            format!("`{}` does not run there ({said})", host.tmux),
            tmux_fix(Some(said)),
        ),
    };
    Err(format!(
        "{problem}; {fix} there, or set `tmux` in {}",
        host.source.display()
    ))
}

/// `doctor --hosts`'s `git` detail (and a run's refusal) from what `git --version`
/// printed there.
///
/// # Errors
/// git does not run there: the phrase with its fix.
pub fn git_detail(ran: &Result<String, String>) -> Result<String, String> {
    match ran {
        Ok(line) => Ok(format!("ok ({line})")),
        Err(said) => Err(format!(
            "git not found there ({said}); install git on the host: remote workers get their code by git"
        )),
    }
}

/// Why a run may not use `host`, from what it answered: one line naming the host, what
/// is wrong and the fix (see the module docs); `None` when it may, also when it did not
/// answer (the run waits for it).
pub fn refusal(host: &HostSpec, answer: &Result<Answer, NotAsked>) -> Option<String> {
    let problem = match answer {
        Err(NotAsked { ssh: Some(f), .. }) if f.permanent() => f.phrase(host),
        Err(_) => return None,
        Ok(a) => tmux_detail(host, &a.tmux)
            .and_then(|_| git_detail(&a.git))
            .err()?,
    };
    Some(format!("host {}: {problem}", host.name))
}

#[cfg(test)]
#[path = "preflight_tests.rs"]
mod tests;
