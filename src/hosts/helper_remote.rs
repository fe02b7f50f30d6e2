//! The helper's two calls on a host: the probe (`uname -sm` and the copy's `--version`,
//! one `sh -s`) and the copy (this binary on ssh's stdin into a temporary name, checked
//! there with `--version`, renamed over the final name). See the parent module's docs.

use std::io::Read;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use wait_timeout::ChildExt;

use super::{own_binary, HelperState, OwnBinary};
use crate::hosts::config::HostSpec;
use crate::hosts::doctor::{HostCheck, RemoteSh};
use crate::hosts::ssh::{remote_line, SshLink};
use crate::hosts::ssh_said::SshFailed;

/// Limit of the probe (ssh's own `ConnectTimeout` is 10 s).
const PROBE_LIMIT: Duration = Duration::from_secs(12);
/// Exit code of the copy script when the copy does not run there.
const DOES_NOT_RUN: i32 = 3;

/// What a host has of crewmux.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// The copy is there and prints this version.
    Present,
    /// Not there (or there and broken: it is copied again).
    Absent,
    /// Another system: `why`.
    Foreign(String),
}

fn q(word: &str) -> String {
    shlex::try_quote(word).map_or_else(|_| "''".into(), |w| w.into_owned())
}

/// Ask the host through `sh` for its system and whether `path` runs `own` there.
///
/// # Errors
/// The host was not asked, or it did not answer: one phrase saying which (what ssh said,
/// e.g. a refused login; the limit; the check's exit code and output).
pub fn probe(sh: &dyn RemoteSh, own: &OwnBinary, path: &Path) -> Result<Found, String> {
    let script = format!(
        "uname -sm 2>/dev/null || echo unknown\np={}\n\
         if [ -x \"$p\" ]; then if v=$(\"$p\" --version 2>&1 </dev/null); then echo \"runs $v\"; else echo \"fails $v\"; fi\n\
         else echo absent; fi\n",
        q(&path.display().to_string())
    );
    let out = sh.sh(&script, PROBE_LIMIT).map_err(|e| match e {
        // ssh's own words, in one line (a host key banner is 17).
        crate::error::Error::Command { program, message } => {
            format!("{program}: {}", SshFailed::read(&message).said())
        }
        other => other.to_string(),
    })?;
    if out.timed_out {
        return Err(format!(
            "it did not answer within {} s",
            PROBE_LIMIT.as_secs()
        ));
    }
    let mut lines = out.output.lines().map(str::trim);
    let system = lines.next().unwrap_or("").to_string();
    if out.code != Some(0) || system.is_empty() {
        let how = crate::hosts::doctor::how_it_ended(out.code);
        return Err(match out.output.trim() {
            "" => format!("the check {how}"),
            said => format!("the check {how}: {said}"),
        });
    }
    Ok(found(own, &system, lines.next().unwrap_or("")))
}

/// Make sure crewmux runs on `host`: probe, and copy when it is missing (see the module
/// docs). Never fails: what went wrong is in the state.
pub fn ensure(link: &SshLink, host: &HostSpec) -> HelperState {
    let own = match own_binary() {
        Ok(o) => o,
        Err(e) => return HelperState::Unknown { why: e.to_string() },
    };
    let path = own.path_on(host);
    let asked = chrono::Utc::now();
    let found = probe(link, own, &path);
    ensure_found(link, own, path, found, asked)
}

/// [`ensure`] with what the probe found (`Err`: why the host did not answer) when it was
/// `asked`.
pub fn ensure_found(
    link: &SshLink,
    own: &OwnBinary,
    path: std::path::PathBuf,
    found: Result<Found, String>,
    asked: chrono::DateTime<chrono::Utc>,
) -> HelperState {
    match found {
        Err(why) => HelperState::Awaited {
            why,
            path,
            since: Some(asked),
        },
        Ok(Found::Foreign(why)) => HelperState::CannotRun { why },
        Ok(Found::Present) => HelperState::Ready {
            path,
            copied: false,
        },
        Ok(Found::Absent) => copy(link, own, &path),
    }
}

/// What planning's question ([`crate::hosts::preflight`]) says of crewmux there: the
/// copy's answer line (`runs <version>`, `fails …`, `absent`) and the host's system.
pub fn found(own: &OwnBinary, system: &str, copy: &str) -> Found {
    if system != own.system {
        return Found::Foreign(format!(
            "it is `{system}` and this crewmux is built for `{}`",
            own.system
        ));
    }
    match copy.strip_prefix("runs ") {
        Some(v) if v == own.version_line() => Found::Present,
        _ => Found::Absent,
    }
}

/// Longest the copy may take: 30 s, plus 1 s per MB (a link of at least 1 MB/s).
fn copy_limit(bytes: u64) -> Duration {
    Duration::from_secs(30 + bytes / 1_000_000)
}

/// Copy `own` to `path` on the host through `link` (see the module docs).
fn copy(link: &SshLink, own: &OwnBinary, path: &Path) -> HelperState {
    let started = Instant::now();
    let remote = match remote_line(&["sh", "-c", &copy_script(path)]) {
        Ok(r) => r,
        Err(e) => return HelperState::Unknown { why: e.to_string() },
    };
    let state = match stream_file(link.command(&remote), &own.file, copy_limit(own.bytes)) {
        Ok(out) => copied(own, path, &out),
        Err(why) => HelperState::Unknown { why },
    };
    if let HelperState::Ready { .. } = state {
        tracing::info!(
            "host {}: copied crewmux ({} bytes) to {} in {} ms",
            link.host,
            own.bytes,
            path.display(),
            started.elapsed().as_millis()
        );
    }
    state
}

/// The `sh` script that writes its stdin to `path`: a temporary name in the same folder,
/// executable, `--version` run there, then renamed over `path` (atomic). It prints what
/// `--version` printed; exit [`DOES_NOT_RUN`] when the copy does not run, 4 when it
/// cannot be written.
fn copy_script(path: &Path) -> String {
    let dir = path.parent().unwrap_or(Path::new("/"));
    format!(
        "d={d}; f={f}; t=\"$f.part.$$\"\n\
         trap 'rm -f -- \"$t\"' HUP INT TERM\n\
         mkdir -p -- \"$d\" && cat > \"$t\" && chmod 755 -- \"$t\" || {{ rm -f -- \"$t\"; exit 4; }}\n\
         if ! v=$(\"$t\" --version 2>&1 </dev/null); then rm -f -- \"$t\"; printf '%s\\n' \"$v\"; exit {DOES_NOT_RUN}; fi\n\
         mv -f -- \"$t\" \"$f\" || {{ rm -f -- \"$t\"; exit 4; }}\n\
         printf '%s\\n' \"$v\"\n",
        d = q(&dir.display().to_string()),
        f = q(&path.display().to_string()),
    )
}

/// What the copy script's exit code, stdout and stderr mean.
fn copied(own: &OwnBinary, path: &Path, (code, stdout, stderr): &Ran) -> HelperState {
    let first = stdout.lines().map(str::trim).find(|l| !l.is_empty());
    match code {
        Some(0) if first == Some(own.version_line().as_str()) => HelperState::Ready {
            path: path.to_path_buf(),
            copied: true,
        },
        Some(0 | DOES_NOT_RUN) => HelperState::CannotRun {
            why: format!(
                "the copy does not run there: {}",
                first.unwrap_or("no output from --version")
            ),
        },
        _ => HelperState::Unknown {
            why: format!(
                "copying to {} failed ({}): {}",
                path.display(),
                crate::hosts::doctor::how_it_ended(*code),
                stderr.trim()
            ),
        },
    }
}

/// A finished call: its exit code, stdout and stderr.
type Ran = (Option<i32>, String, String);

/// Run `cmd` with `file` on its stdin within `limit`: its exit code, stdout and stderr.
fn stream_file(
    mut cmd: std::process::Command,
    file: &Path,
    limit: Duration,
) -> Result<Ran, String> {
    let input = std::fs::File::open(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let mut child = cmd
        .stdin(Stdio::from(input))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("ssh: {e}"))?;
    let reader = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = Vec::new();
            if let Some(mut p) = pipe {
                // A read error ends the text early; the exit code still says what happened.
                if let Err(e) = p.read_to_end(&mut text) {
                    tracing::debug!("ssh output: {e}");
                }
            }
            String::from_utf8_lossy(&text).into_owned()
        })
    };
    let out = reader(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let err = reader(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let waited = child.wait_timeout(limit);
    let status = match waited {
        Ok(Some(s)) => s,
        Ok(None) | Err(_) => {
            if let Err(e) = child.kill() {
                tracing::debug!("kill ssh: {e}");
            }
            if let Err(e) = child.wait() {
                tracing::debug!("reap ssh: {e}");
            }
            return Err(match waited {
                Err(e) => format!("waiting for ssh: {e}"),
                _ => format!("not done within {} s", limit.as_secs()),
            });
        }
    };
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    Ok((status.code(), stdout, stderr))
}

/// `doctor --hosts`'s `helper` line for `host`: the probe only, nothing is copied.
pub fn doctor_line(host: &HostSpec, sh: &dyn RemoteSh) -> HostCheck {
    let line = |ok: bool, detail: String| HostCheck {
        check: "helper".into(),
        ok,
        detail,
    };
    let own = match own_binary() {
        Ok(o) => o,
        Err(e) => return line(false, e.to_string()),
    };
    let path = own.path_on(host);
    match probe(sh, own, &path) {
        Ok(Found::Present) => line(true, format!("ok (crewmux there: {})", path.display())),
        Ok(Found::Absent) => line(
            true,
            format!(
                "ok (not there yet: copied to {} on the first run that needs it, {} MB)",
                path.display(),
                own.bytes.div_ceil(1_000_000)
            ),
        ),
        Ok(Found::Foreign(why)) => line(
            false,
            format!(
                "cannot run crewmux there ({why}): agents' JSON output shows raw in their panes, and `sim` workers are refused there; run them on `local`"
            ),
        ),
        Err(why) => line(false, format!("could not check ({why})")),
    }
}

#[cfg(test)]
#[path = "helper_remote_tests.rs"]
mod tests;
