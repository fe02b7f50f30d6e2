//! crewmux's own binary on an SSH host (the helper), as editors' remote servers do it.
//!
//! Two things a remote pane runs are crewmux itself: the pane-text filter (`crewmux
//! pane-text`, which turns codex/claude/gemini JSON events into readable lines) and the
//! `sim` provider (`crewmux sim-agent`, and any provider whose spec names `{self_exe}`).
//! This machine's path to crewmux means nothing on another machine, so when a run has a
//! remote worker that needs one of them, its host gets a copy:
//! - The host is asked once, in one `sh -s` over the shared connection, for its `uname
//!   -sm` and whether `<workdir>/bin/crewmux-<version>-<hash>` is there and answers
//!   `--version` with this version (`<hash>`: the first 12 hex digits of the BLAKE2b-512
//!   of this binary, so two builds of one version never share a name).
//! - When it is missing and the host is the same system (`uname -sm` equal), this binary
//!   is copied there once: streamed on ssh's stdin into a temporary name in the same
//!   folder, made executable, run with `--version` there, then renamed over the final
//!   name (rename(2) is atomic: a concurrent run sees the old state or the whole file).
//!   Later runs find it and copy nothing. Copies of other builds there that no process
//!   and no live run uses are then removed ([`prune`]).
//! - A host of another system, or one where the copy does not run (`--version` fails:
//!   another libc, a `noexec` mount), cannot run it: its panes show the agent's raw output
//!   (one line says so when the run is planned), and a worker whose provider runs crewmux
//!   itself is refused there when the run is planned, with one line naming the fix.
//! - A host that does not answer when the run is planned is [`HelperState::Awaited`]: a
//!   worker whose provider runs crewmux itself waits for it as every worker does, and
//!   crewmux is put there before it starts (`helper_awaited.rs`), or it runs on `local`
//!   once the host is lost.
//!
//! What the run found is kept in its folder (`helpers.json`, per host), so every attempt's
//! wrapper — also after a reattach — names the copy on its host ([`run_helper`]).
//! `crewmux doctor --hosts` reports the same check without copying ([`doctor_line`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use super::config::HostSpec;
use crate::error::{Error, Result};
use crate::providers::spec::ProviderKind;
use crate::providers::Registry;

#[path = "helper_remote.rs"]
mod remote;
pub use remote::{doctor_line, ensure, ensure_found, found, probe, Found};
#[path = "helper_prune.rs"]
mod prune;
pub use prune::{prune, prune_script};
#[path = "helper_plan.rs"]
mod planning;
pub use planning::plan;

/// The file in a run's folder that keeps what each host has of crewmux.
pub const HELPERS_FILE: &str = "helpers.json";

/// This crewmux binary, as it is copied to hosts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnBinary {
    /// Where it is read from (`/proc/self/exe` on Linux: the running binary even when
    /// its file was replaced or removed since it started).
    pub file: PathBuf,
    /// This machine's `uname -sm`, e.g. `Linux x86_64`.
    pub system: String,
    /// The crate version (`crewmux --version` prints `crewmux <version>`).
    pub version: String,
    /// The first 12 hex digits of the BLAKE2b-512 of the file.
    pub hash: String,
    /// Its size, bytes.
    pub bytes: u64,
}

impl OwnBinary {
    /// The copy's file name on a host: `crewmux-<version>-<hash>`.
    pub fn name(&self) -> String {
        format!("crewmux-{}-{}", self.version, self.hash)
    }

    /// Where the copy lives on `host`: `<workdir>/bin/<name>`.
    pub fn path_on(&self, host: &HostSpec) -> PathBuf {
        host.workdir.join("bin").join(self.name())
    }

    /// What `--version` of this binary prints.
    pub fn version_line(&self) -> String {
        format!("crewmux {}", self.version)
    }
}

/// This crewmux binary, read and hashed once per process (~0.3 s for a 180 MB debug
/// build).
///
/// # Errors
/// The binary cannot be read.
pub fn own_binary() -> Result<&'static OwnBinary> {
    static OWN: OnceLock<std::result::Result<OwnBinary, String>> = OnceLock::new();
    OWN.get_or_init(|| read_own().map_err(|e| e.to_string()))
        .as_ref()
        .map_err(|e| Error::Other(format!("crewmux cannot read its own binary: {e}")))
}

fn read_own() -> Result<OwnBinary> {
    use blake2::Digest;
    let proc_exe = Path::new("/proc/self/exe");
    let file = if proc_exe.exists() {
        proc_exe.to_path_buf()
    } else {
        std::env::current_exe().map_err(|e| Error::io("the crewmux binary", e))?
    };
    let started = std::time::Instant::now();
    let mut f = std::fs::File::open(&file).map_err(|e| Error::io(&file, e))?;
    let mut hasher = blake2::Blake2b512::new();
    let bytes = std::io::copy(&mut f, &mut hasher).map_err(|e| Error::io(&file, e))?;
    let digest = hasher.finalize();
    let hash: String = digest[..6].iter().map(|b| format!("{b:02x}")).collect();
    tracing::debug!(
        "this crewmux: {bytes} bytes, hash {hash}, read in {} ms",
        started.elapsed().as_millis()
    );
    Ok(OwnBinary {
        file,
        system: local_system(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        hash,
        bytes,
    })
}

/// This machine's `uname -sm` (what a host's answer is compared with).
fn local_system() -> String {
    match std::process::Command::new("uname").arg("-sm").output() {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).trim().to_string(),
        other => {
            tracing::debug!("uname -sm here: {other:?}");
            // uname's names for the common cases.
            let os = match std::env::consts::OS {
                "linux" => "Linux",
                "macos" => "Darwin",
                "freebsd" => "FreeBSD",
                other => other,
            };
            format!("{os} {}", std::env::consts::ARCH)
        }
    }
}

/// What one host has of crewmux, as a run found it when it was planned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum HelperState {
    /// `path` on the host runs this crewmux (`copied`: the run put it there).
    Ready { path: PathBuf, copied: bool },
    /// The host cannot run it: `why` (its system, or what `--version` said there).
    CannotRun { why: String },
    /// Not known: the copy failed (`why`).
    Unknown { why: String },
    /// The host did not answer when the run was planned (`why`): crewmux is put at `path`
    /// there (this build's name) once it answers, before the first attempt there that
    /// runs crewmux itself starts (`helper_awaited.rs`). Until then such a worker waits
    /// for the host as every worker does, and runs on `local` once the host is lost.
    Awaited {
        why: String,
        path: PathBuf,
        /// When planning asked the host and got no answer (UTC): its outage counts from
        /// then toward its `lost_after_s`. Absent in files of crewmux before the field.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        since: Option<chrono::DateTime<chrono::Utc>>,
    },
}

/// What a run's workers on one host need of crewmux.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Need {
    /// Workers whose provider runs crewmux itself (`sim`, `{self_exe}`), with it.
    pub runs_crewmux: Vec<(String, String)>,
    /// A worker's CLI (or one it may fall back to) prints JSON events the pane-text
    /// filter renders.
    pub filter: bool,
    /// A worker may fall back to a provider that runs crewmux itself.
    pub fallback_runs: bool,
}

/// A worker as [`needs`] sees it.
#[derive(Debug, Clone, Copy)]
pub struct WorkerNeed<'a> {
    pub id: &'a str,
    pub provider: &'a str,
    /// Providers it moves to when its own fails (`engine::exits`).
    pub fallbacks: &'a [String],
    /// The `command` provider's argv.
    pub command: Option<&'a [String]>,
    /// `None`: this machine.
    pub host: Option<&'a str>,
}

/// True when a provider runs crewmux itself: `sim`, or `{self_exe}` in its spec or (for
/// `command`) in the worker's argv.
pub fn runs_crewmux(spec: &crate::providers::ProviderSpec, command: Option<&[String]>) -> bool {
    let names_self = |s: &str| s.contains("{self_exe}");
    spec.kind == ProviderKind::Sim
        || names_self(&spec.binary)
        || spec.args.iter().any(|a| names_self(a))
        || spec.env.values().any(|v| names_self(v))
        || (spec.kind == ProviderKind::Command
            && command.is_some_and(|c| c.iter().any(|a| names_self(a))))
}

/// Per host, what `workers` need there (their providers and fallbacks); hosts whose
/// workers need nothing are left out.
pub fn needs(workers: &[WorkerNeed<'_>], registry: &Registry) -> BTreeMap<String, Need> {
    let renders = |p: &str| {
        registry
            .get(p)
            .is_some_and(|s| s.output != crate::providers::output::OutputFormat::Text)
    };
    let runs = |p: &str, command| registry.get(p).is_some_and(|s| runs_crewmux(s, command));
    let mut out: BTreeMap<String, Need> = BTreeMap::new();
    for w in workers {
        let Some(host) = w.host else { continue };
        let own = runs(w.provider, w.command);
        let fallback_runs = w.fallbacks.iter().any(|f| runs(f, None));
        let filter = renders(w.provider) || w.fallbacks.iter().any(|f| renders(f.as_str()));
        if !own && !fallback_runs && !filter {
            continue;
        }
        let need = out.entry(host.to_string()).or_default();
        if own {
            need.runs_crewmux
                .push((w.id.to_string(), w.provider.to_string()));
        }
        need.filter |= filter;
        need.fallback_runs |= fallback_runs;
    }
    out
}

/// What planning a run found: per host its state, and the lines to say (one per host
/// that copied, or that cannot run crewmux).
#[derive(Debug, Default)]
pub struct Planned {
    pub states: BTreeMap<String, HelperState>,
    pub notices: Vec<String>,
}

/// Decide, from each host's state, what a run may do: the notices to print, or the
/// refusal of the first worker that runs crewmux itself on a host that cannot run it.
///
/// # Errors
/// [`Error::Usage`]: such a worker (one line naming it, the host and the fix).
pub fn judge(
    need: &BTreeMap<String, Need>,
    states: BTreeMap<String, HelperState>,
) -> Result<Planned> {
    let mut notices = vec![];
    for (host, state) in &states {
        let empty = Need::default();
        let need = need.get(host).unwrap_or(&empty);
        let why = match state {
            HelperState::Ready { path, copied } => {
                if *copied {
                    notices.push(format!("host {host}: copied crewmux to {}", path.display()));
                }
                continue;
            }
            HelperState::CannotRun { why } => {
                format!("host {host} cannot run this crewmux ({why})")
            }
            HelperState::Unknown { why } => {
                format!("crewmux could not be put on host {host} ({why})")
            }
            HelperState::Awaited { why, .. } => {
                if let Some((worker, provider)) = need.runs_crewmux.first() {
                    notices.push(format!(
                        "host {host} does not answer ({why}): worker `{worker}` (provider `{provider}`) waits for it as the run's other workers do; crewmux is copied there when it answers, or the worker runs on local once the host is lost"
                    ));
                    continue;
                }
                format!("host {host} does not answer ({why}), so crewmux is not there yet")
            }
        };
        if let Some((worker, provider)) = need.runs_crewmux.first() {
            let fix = match state {
                HelperState::Unknown { .. } => {
                    "check the host with `crewmux doctor --hosts`, or run it on `local` (host = \"local\")"
                }
                _ => "run it on `local` (host = \"local\") or on a host of this machine's system",
            };
            return Err(Error::Usage(format!(
                "worker `{worker}` uses provider `{provider}`, which runs crewmux itself, and {why}: {fix}"
            )));
        }
        notices.push(if need.filter {
            format!("{why}: its agents' panes show their raw JSON output")
        } else {
            format!("{why}: a worker that falls back to `sim` there cannot run")
        });
    }
    Ok(Planned { states, notices })
}

/// Save what planning found into the run's folder (nothing when no host needs crewmux).
///
/// # Errors
/// I/O.
pub fn save(run_dir: &Path, states: &BTreeMap<String, HelperState>) -> Result<()> {
    if states.is_empty() {
        return Ok(());
    }
    let json = serde_json::to_vec_pretty(states)
        .map_err(|e| Error::Other(format!("{HELPERS_FILE}: {e}")))?;
    crate::store::write_replace(&run_dir.join(HELPERS_FILE), &json)
}

/// The path of crewmux on `host` for the run in `run_dir`: `None` when the run found none
/// that runs there (or has no `helpers.json`: a run planned before crewmux copied itself).
///
/// # Errors
/// [`Error::CorruptState`]: a `helpers.json` that is not what crewmux wrote.
pub fn run_helper(run_dir: &Path, host: &str) -> Result<Option<PathBuf>> {
    let states = run_states(run_dir)?;
    Ok(match states.get(host) {
        Some(HelperState::Ready { path, .. }) => Some(path.clone()),
        _ => None,
    })
}

/// The path crewmux is to have on `host` for the run in `run_dir` when the host did not
/// answer when the run was planned ([`HelperState::Awaited`]); `None` otherwise.
///
/// # Errors
/// As [`run_helper`].
pub fn awaited_helper(run_dir: &Path, host: &str) -> Result<Option<PathBuf>> {
    Ok(match run_states(run_dir)?.get(host) {
        Some(HelperState::Awaited { path, .. }) => Some(path.clone()),
        _ => None,
    })
}

/// What the run in `run_dir` has of crewmux on each host (none without `helpers.json`).
///
/// # Errors
/// As [`run_helper`].
pub fn run_states(run_dir: &Path) -> Result<BTreeMap<String, HelperState>> {
    let path = run_dir.join(HELPERS_FILE);
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(e) => return Err(Error::io(&path, e)),
    };
    serde_json::from_slice(&bytes).map_err(|e| Error::CorruptState {
        path: path.clone(),
        reason: format!("not what crewmux saved of its helpers on hosts ({e})"),
    })
}

#[cfg(test)]
#[path = "helper_tests.rs"]
mod tests;
