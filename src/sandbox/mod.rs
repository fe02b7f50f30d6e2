//! The fence a worker's agent runs in, as data: a [`Policy`] (what it may read, write and
//! reach) turned into the `bwrap` argv the launch wrapper puts before the agent's argv
//! (README "Sandbox", docs/design.md "Sandbox"). No namespace code of crewmux's own:
//! bubblewrap does the fencing; [`preflight`] tells whether it can here.
//!
//! The wrapper itself runs outside the fence (it writes `exit.json` and prints the marker);
//! only the agent's argv runs inside. Flags as bubblewrap 0.8.0 (`bwrap --version`,
//! Debian 12) documents them in bwrap(1):
//!
//! | flag | why |
//! | --- | --- |
//! | `--die-with-parent` | the fence ends when the wrapper's `bwrap` does (a SIGKILL after a cancel's grace) |
//! | `--unshare-pid` | the agent sees only its own processes |
//! | `--unshare-ipc` | no System V IPC or POSIX queues shared with the user's programs |
//! | `--unshare-net` | `network = "none"`: a namespace with loopback only |
//! | `--cap-drop ALL` | run by root, bwrap keeps every capability unless told (measured: `CapEff` 000001fffeffffff), enough to remount a read-only bind |
//! | `--ro-bind SRC DEST`, `--ro-bind-try` | system directories, the CLI's config and the programs on `PATH`, read-only (`-try`: skipped when missing) |
//! | `--symlink TARGET DEST` | `/bin`, `/lib`… on a merged-/usr system, as they are |
//! | `--bind SRC DEST` | the worker's directory, its attempt folder and the repository's `.git`, read-write |
//! | `--proc /proc`, `--dev /dev` | a procfs of the PID namespace; a minimal `/dev` (null, zero, random, tty, pts) |
//! | `--tmpfs DEST` | a private empty `/tmp`, and the home the CLI sees (writable, gone when the fence ends: a file the agent puts there, or in a folder made under `/tmp` to hold a bind, never reaches the disk) |
//! | `--unsetenv VAR` | no path back out: the tmux server (`TMUX`), the SSH agent, the store's passphrase |
//! | `--remount-ro /` | the fence's own root read-only, so a write anywhere but the binds, `/tmp` and the home fails |
//! | `--chdir DIR` | the agent starts where it would without the fence |
//!
//! Not used: `--new-session` (setsid). Measured in a tmux pane: it leaves the agent without
//! the pane as its controlling terminal, so Ctrl-C typed into the pane never reaches it and
//! `/dev/tty` cannot be opened ("No such device or address"); and a cancel's SIGTERM to the
//! pane's process group misses it (it is in a session of its own): only `--die-with-parent`'s
//! SIGKILL ends it, without the grace. Without it an agent could push input into its own
//! pane's tty (TIOCSTI, where the kernel allows it), which reaches only processes of the
//! pane: the wrapper, outside the fence, reads nothing from the tty after the agent starts.
//! `--json-status-fd`: its `child-pid` is written before the fence's mounts are made, so it
//! says nothing about whether the agent started; the fence's first command does (below).

mod preflight;

use std::path::{Path, PathBuf};

use crate::domain::{Sandbox, SandboxMode, SandboxNetwork};

pub use preflight::{bwrap_program, preflight, Readiness};

/// File the fence's first command writes one byte to (the wrapper's fd 3) once the
/// sandbox is up, just before it runs the agent; empty after the run: the sandbox never
/// started.
pub const STARTED_FILE: &str = ".fence-started";
/// bwrap's own stderr (the wrapper's fd 2 for it; the agent's stderr is the pane's again,
/// the wrapper's fd 4, inside the fence).
pub const ERR_FILE: &str = ".fence-err";
/// Left by the wrapper in the attempt folder when the sandbox could not start: bwrap's
/// reason, one line.
pub const FAILED_FILE: &str = "sandbox-failed";

/// What a fenced agent may see (docs/design.md "Sandbox"). Paths are absolute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// Where the agent starts and writes: its worktree, or the shared project directory.
    pub workdir: PathBuf,
    /// Where the agent starts: `workdir` or a folder in it.
    pub chdir: PathBuf,
    /// The attempt's folder (prompt, result, MCP exchange), read-write.
    pub attempt_dir: PathBuf,
    /// The repository's `.git` (objects, refs) a worktree commits into, read-write; its
    /// `config` and `hooks` read-only on top (both can name programs that your own git
    /// commands would run outside the fence).
    pub git_dir: Option<PathBuf>,
    /// The user's home: an empty tmpfs in the fence, holding only `home_entries`.
    pub home: PathBuf,
    /// Paths relative to `home` the agent's CLI needs (the provider's `sandbox_home`).
    pub home_entries: Vec<String>,
    /// The worker's own copy of `home_entries` ([`seed_home`]), bound read-write over
    /// them: a CLI that writes its home (Codex's sessions and app-server state, Gemini's
    /// project registry) runs, and what it wrote is there for the worker's next attempt (a
    /// resumed conversation). `None`: the user's own entries are bound read-only.
    pub home_copy: Option<PathBuf>,
    /// More read-only paths: the agent's program, crewmux itself, the `PATH` directories
    /// outside the system ones.
    pub read_only: Vec<PathBuf>,
    /// Never made visible, nor any folder that holds one of them: `~/.ssh`, `~/.gnupg`, the
    /// credential store's folder, the user's checkout (the project root).
    pub hidden: Vec<PathBuf>,
    pub network: SandboxNetwork,
}

/// The system directories every fence reads, read-only; a symbolic link (merged /usr) is
/// made as the same link.
const SYSTEM: [&str; 9] = [
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt",
];

/// Variables unset inside the fence: each names a way back out of it.
const UNSET: [&str; 4] = [
    "TMUX",
    "TMUX_PANE",
    "SSH_AUTH_SOCK",
    crate::creds::PASSPHRASE_ENV,
];

/// The fence's first command (inside): say it started (fd 3), give the agent the pane's
/// stderr back (fd 4), and run it with SIGINT and SIGTERM back at their defaults (the
/// wrapper's `bwrap` ignores them, so that it outlives the agent and passes on its exit
/// status: a bwrap killed by the cancel's SIGTERM took the agent with it at once).
const INNER: &str =
    "printf x >&3; exec 3>&- 2>&4 4>&-; exec env --default-signal=INT,TERM -- \"$@\"";

/// True when `p` is one of `hidden`, inside one, or holds one.
fn touches_hidden(p: &Path, hidden: &[PathBuf]) -> bool {
    hidden.iter().any(|h| p.starts_with(h) || h.starts_with(p))
}

impl Policy {
    /// The `bwrap` argv for this policy, ending with `--` and the fence's first command;
    /// the agent's argv goes after it. `bwrap` is the program (`bwrap_program`).
    pub fn bwrap_argv(&self, bwrap: &Path) -> Vec<String> {
        let mut a: Vec<String> = vec![bwrap.display().to_string()];
        let mut push = |xs: &[&str]| a.extend(xs.iter().map(|s| (*s).to_string()));
        push(&["--die-with-parent", "--unshare-pid", "--unshare-ipc"]);
        if self.network == SandboxNetwork::None {
            push(&["--unshare-net"]);
        }
        push(&["--cap-drop", "ALL"]);
        for dir in SYSTEM {
            match std::fs::read_link(dir) {
                Ok(target) => push(&["--symlink", &target.display().to_string(), dir]),
                Err(_) => push(&["--ro-bind-try", dir, dir]),
            }
        }
        // A resolv.conf that links into /run (systemd-resolved) needs its target.
        if let Ok(target) = std::fs::canonicalize("/etc/resolv.conf") {
            if !target.starts_with("/etc") && !target.starts_with("/usr") {
                let t = target.display().to_string();
                push(&["--ro-bind-try", &t, &t]);
            }
        }
        push(&["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]);
        let home = self.home.display().to_string();
        push(&["--tmpfs", &home]);
        for e in &self.home_entries {
            let p = self.home.join(e);
            if e.is_empty() || Path::new(e).is_absolute() || touches_hidden(&p, &self.hidden) {
                continue;
            }
            let dest = p.display().to_string();
            match &self.home_copy {
                Some(copy) => {
                    let src = copy.join(e).display().to_string();
                    push(&["--bind-try", &src, &dest]);
                }
                None => push(&["--ro-bind-try", &dest, &dest]),
            }
        }
        for p in &self.read_only {
            if touches_hidden(p, &self.hidden) || self.home.starts_with(p) {
                continue;
            }
            let p = p.display().to_string();
            push(&["--ro-bind-try", &p, &p]);
        }
        if let Some(git) = &self.git_dir {
            let g = git.display().to_string();
            push(&["--bind", &g, &g]);
            for sub in ["config", "hooks"] {
                let s = git.join(sub).display().to_string();
                push(&["--ro-bind-try", &s, &s]);
            }
        }
        let work = self.workdir.display().to_string();
        let attempt = self.attempt_dir.display().to_string();
        push(&["--bind", &work, &work, "--bind", &attempt, &attempt]);
        // Nothing new at the top: a write outside the binds, /tmp and the home fails.
        push(&["--remount-ro", "/"]);
        for v in UNSET {
            push(&["--unsetenv", v]);
        }
        let chdir = self.chdir.display().to_string();
        push(&[
            "--chdir",
            &chdir,
            "--",
            "/bin/sh",
            "-c",
            INNER,
            "crewmux-fence",
        ]);
        a
    }
}

/// The folder of run `run_id`'s workers' home copies ([`seed_home`]):
/// `<state dir>/crewmux/fence-homes/<run>` (`$XDG_STATE_HOME`, else `~/.local/state`), outside
/// the project because a copy may hold a CLI's login. `None` without a state dir.
pub fn homes_of(run_id: &str) -> Option<PathBuf> {
    dirs::state_dir().map(|d| d.join("crewmux").join("fence-homes").join(run_id))
}

/// Remove run `run_id`'s home copies (`clean --purge`): the line to say, `None` when there
/// were none. A copy that cannot be removed is said so and left.
pub fn remove_homes(run_id: &str) -> Option<String> {
    let dir = homes_of(run_id).filter(|d| d.exists())?;
    Some(match std::fs::remove_dir_all(&dir) {
        Ok(()) => format!("removed {}", dir.display()),
        Err(e) => format!("could not remove {}: {e}", dir.display()),
    })
}

/// Most bytes [`seed_home`] copies of one entry; a larger one is bound read-only instead
/// (a CLI's years of session history are not copied for each worker).
pub const SEED_MAX_BYTES: u64 = 64 << 20;

/// Make `copy` (a folder of the worker's own, mode 0700) hold `entries` of `home`, each
/// copied once — an entry already in `copy` is the worker's, kept as its CLI left it. An
/// entry missing from `home` is skipped; one over [`SEED_MAX_BYTES`] is left out of `copy`
/// (the fence then binds it read-only from `home`), and its name is returned.
///
/// # Errors
/// `copy` cannot be made, or a file cannot be copied (I/O, with its path).
pub fn seed_home(
    home: &Path,
    entries: &[String],
    copy: &Path,
) -> crate::error::Result<Vec<String>> {
    use crate::error::IoContext;
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(copy)
        .at(copy)?;
    let mut too_big = Vec::new();
    for e in entries {
        let (from, to) = (home.join(e), copy.join(e));
        if e.is_empty() || Path::new(e).is_absolute() || to.exists() || !from.exists() {
            continue;
        }
        if size_of(&from) > SEED_MAX_BYTES {
            too_big.push(e.clone());
            continue;
        }
        copy_entry(&from, &to).at(&from)?;
    }
    Ok(too_big)
}

/// Bytes under `p` (links not followed).
fn size_of(p: &Path) -> u64 {
    let Ok(meta) = std::fs::symlink_metadata(p) else {
        return 0;
    };
    if !meta.is_dir() {
        return meta.len();
    }
    std::fs::read_dir(p)
        .map(|d| d.filter_map(|e| e.ok()).map(|e| size_of(&e.path())).sum())
        .unwrap_or(0)
}

/// Copy a file, link or folder (recursively), keeping permissions. Not the workspace's
/// `copy` seeding (`workspace::create::copy_tree`), which follows links: a CLI's home may
/// hold links that dangle or loop (sessions, caches), copied here as links, never walked.
fn copy_entry(from: &Path, to: &Path) -> std::io::Result<()> {
    let meta = std::fs::symlink_metadata(from)?;
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent)?;
    }
    if meta.file_type().is_symlink() {
        return std::os::unix::fs::symlink(std::fs::read_link(from)?, to);
    }
    if !meta.is_dir() {
        std::fs::copy(from, to)?;
        return Ok(());
    }
    std::fs::create_dir_all(to)?;
    std::fs::set_permissions(to, meta.permissions())?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        copy_entry(&e.path(), &to.join(e.file_name()))?;
    }
    Ok(())
}

/// The repository `.git` folder a worktree at `worktree` commits into, read from its
/// `.git` file (`gitdir: …/.git/worktrees/<name>`) and that folder's `commondir`; a
/// worktree whose `.git` is a folder is its own. No git process is started.
pub fn git_common_dir(worktree: &Path) -> Option<PathBuf> {
    let dot = worktree.join(".git");
    if dot.is_dir() {
        return Some(dot);
    }
    let text = std::fs::read_to_string(&dot).ok()?;
    let gitdir = PathBuf::from(text.trim().strip_prefix("gitdir:")?.trim());
    let gitdir = if gitdir.is_absolute() {
        gitdir
    } else {
        worktree.join(gitdir)
    };
    let common = std::fs::read_to_string(gitdir.join("commondir")).ok();
    let dir = match common {
        Some(c) if Path::new(c.trim()).is_absolute() => PathBuf::from(c.trim()),
        Some(c) => gitdir.join(c.trim()),
        None => gitdir,
    };
    std::fs::canonicalize(dir).ok()
}

/// The read-only paths a fence adds for `program` and `PATH`: the directories of `PATH`
/// outside the system ones (your tools, as the agent would find them), the program's own
/// file, and for an npm-installed CLI (a link into `…/node_modules/<package>/…`) the
/// `node_modules` folder it runs from.
pub fn program_paths(program: &str, path_var: Option<&std::ffi::OsStr>) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    let system = |p: &Path| SYSTEM.iter().any(|s| p.starts_with(s));
    let dirs: Vec<PathBuf> = path_var
        .map(|v| std::env::split_paths(v).collect())
        .unwrap_or_default();
    for d in &dirs {
        if d.is_absolute() && d.is_dir() && !system(d) && !out.contains(d) {
            out.push(d.clone());
        }
    }
    let found = if program.contains('/') {
        Some(PathBuf::from(program))
    } else {
        dirs.iter().map(|d| d.join(program)).find(|p| p.is_file())
    };
    if let Some(real) = found.and_then(|p| std::fs::canonicalize(p).ok()) {
        let s = real.display().to_string();
        let root = s
            .find("/node_modules/")
            .map(|i| PathBuf::from(&s[..i + "/node_modules".len()]));
        for p in [root, Some(real)].into_iter().flatten() {
            if !system(&p) && !out.contains(&p) {
                out.push(p);
            }
        }
    }
    out
}

/// The sandbox mode words `doctor` and `dispatch` print for `s`, with whether it can start
/// here (`readiness` of its mode).
pub fn describe(s: &Sandbox, readiness: &Readiness) -> String {
    match (s.mode, readiness) {
        (SandboxMode::None, _) => "none".into(),
        (_, Readiness::Ready(v)) => format!("{} ({v})", s.label()),
        (_, Readiness::Refused(why)) => format!("{}: cannot start here: {why}", s.label()),
    }
}

#[cfg(test)]
mod tests;
