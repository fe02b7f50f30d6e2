//! The `Multiplexer` adapter: where workers run (a tmux pane, or a child process), how they
//! are watched and how text reaches them. Calls block; the driver runs them on a dedicated
//! thread (each tmux_interface call is a blocking `std::process::Command`).

pub mod proc_scan;
pub mod reap;
pub mod tmux_version;

use std::path::PathBuf;
use std::time::Duration;

use crate::domain::BackendKind;
use crate::error::Result;

/// What to start: the wrapper `launch` (run as `sh <launch>`) in `cwd`. Its `Debug` shows
/// the names of `secret_env`, never the values.
#[derive(Clone)]
pub struct SpawnSpec {
    pub worker: String,
    pub attempt: u32,
    /// The attempt's nonce: its exit evidence carries it, and its processes inherit it as
    /// `CREWMUX_ATTEMPT_NONCE`.
    pub nonce: String,
    /// tmux window name (`<worker>-<attempt>`).
    pub window: String,
    pub cwd: PathBuf,
    pub launch: PathBuf,
    /// `output.log` of the attempt: tmux `pipe-pane` appends to it; the process backend
    /// redirects stdout and stderr into it.
    pub log: PathBuf,
    /// Extra environment (not secret).
    pub env: Vec<(String, String)>,
    /// Secret environment (API keys): never on a command line, a file or a log line.
    pub secret_env: Vec<(String, String)>,
    /// The SSH host (a `hosts.toml` name) it starts on; `None`: this machine.
    pub host: Option<String>,
}

/// Attempts to start on one SSH host, on that host's own thread (see
/// [`Multiplexer::launch_on_host`]).
pub struct HostLaunch {
    pub specs: Vec<SpawnSpec>,
    /// The worktrees on the host to make or bring up to date first (their branches
    /// pushed there); `None` for a run without worktrees.
    pub git: Option<GitSend>,
}

/// What bringing the worktrees of `workers` up to date on a host needs.
pub struct GitSend {
    pub workspace: crate::domain::RunWorkspace,
    pub project: PathBuf,
    pub run_id: String,
    /// The workers of the batch that have a worktree.
    pub workers: Vec<String>,
}

/// What came of a [`HostLaunch`].
pub struct HostLaunched {
    pub host: String,
    /// One result per spec: `(worker, attempt, started)`; a pane reference carries its
    /// host.
    pub started: Vec<(String, u32, Result<Spawned>)>,
    /// The workers whose worktree on the host was made or brought up to date.
    pub sent: Vec<String>,
}

/// An ended attempt on an SSH host whose work is to be brought back (committed there, its
/// branch fetched into its worktree here) on that host's own thread (see
/// [`Multiplexer::bring_back_on_host`]).
pub struct WorkBack {
    /// The run as the driver holds it now (its worktrees and hosts).
    pub state: Box<crate::domain::RunState>,
    pub worker: String,
    pub attempt: u32,
    /// The attempt's local folder (where the brought-back mark is written).
    pub dir: PathBuf,
}

/// An attempt left running on an SSH host that was lost, to be ended there by its nonce
/// the first time the host answers again (see [`Multiplexer::end_on_host_when_back`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftOnHost {
    pub nonce: String,
    /// Its local attempt folder, where its files on the host (`output.log`, `exit.json`,
    /// the result) come back once it is ended; `None` when not known (a stale attempt of
    /// an earlier run), and nothing comes back.
    pub dir: Option<PathBuf>,
}

/// An attempt [`LeftOnHost`] that was ended on its host, with what came back of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndedOnHost {
    pub nonce: String,
    /// Its files came back into its local folder: the lines of its `output.log`, and the
    /// code of its `exit.json` when it ended there by itself. `None`: nothing was to come
    /// back (no folder known).
    pub came_back: Option<CameBack>,
}

/// What came back of an attempt ended on its host (see [`EndedOnHost`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CameBack {
    /// Lines of its `output.log` as the host had it.
    pub lines: usize,
    /// Its exit code when it ended on the host before it was ended (its `exit.json`).
    pub exit_code: Option<i32>,
}

/// What came of a [`WorkBack`]: `Err` says why the work is not back.
pub struct WorkBackDone {
    pub worker: String,
    pub attempt: u32,
    pub result: std::result::Result<(), String>,
}

impl std::fmt::Debug for SpawnSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpawnSpec")
            .field("worker", &self.worker)
            .field("attempt", &self.attempt)
            .field("nonce", &self.nonce)
            .field("window", &self.window)
            .field("cwd", &self.cwd)
            .field("launch", &self.launch)
            .field("log", &self.log)
            .field("host", &self.host)
            .field("env", &self.env)
            .field(
                "secret_env",
                &self
                    .secret_env
                    .iter()
                    .map(|(k, _)| (k, "<redacted>"))
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// A started attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spawned {
    pub pane_id: Option<String>,
    /// The wrapper's pid, leader of the attempt's process group.
    pub pid: Option<u32>,
}

/// Which attempt to look at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub worker: String,
    pub attempt: u32,
    pub pane_id: Option<String>,
    pub pid: Option<u32>,
    /// The attempt's `output.log` (the process backend shows its screen from it).
    pub log: PathBuf,
    /// Capture the last lines of its screen when it changes (waiting-for-input detection).
    pub watch_screen: bool,
}

/// Whether an attempt's pane or process is still there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Liveness {
    Alive,
    /// Exited; `status` is tmux's `#{pane_dead_status}` or the child's wait status when
    /// known (empty before tmux 3.6 when the SIGCHLD was lost).
    Dead {
        status: Option<i32>,
    },
    /// The pane or process is gone (killed, or the tmux server died).
    Gone,
    /// Not known this time (the tmux server did not answer in time): decide nothing, look
    /// again later.
    Unknown,
}

/// One poll of every watched attempt, in one round trip.
#[derive(Debug, Clone, Default)]
pub struct Poll {
    /// Same order as the targets given.
    pub liveness: Vec<Liveness>,
    /// The focused attempt's screen (ANSI text) when it changed since the last poll.
    pub screen: Option<String>,
    /// Same order as the targets: the last [`TAIL_LINES`] lines of each `watch_screen`
    /// target's screen (plain text) when it changed since the last poll.
    pub tails: Vec<Option<String>>,
    /// Set when the whole server is unreachable (its panes are all `Gone`).
    pub server_down: Option<String>,
    /// The SSH hosts that do not answer, or were lost, and what to tell the person about
    /// each (host name → one line). Every such host of the run is named, whether or not
    /// this poll had a target there; their targets are `Unknown`. A host's outage is not
    /// `server_down` (which is about a tmux server that answers `Gone`).
    pub hosts_down: std::collections::BTreeMap<String, String>,
    /// The server did not answer in time: liveness comes from the wrapper pids, and a
    /// `Gone` says nothing about the pane.
    pub unanswered: bool,
}

/// Lines of a pane's screen captured for waiting detection.
pub const TAIL_LINES: u32 = 15;

/// Where workers run. Every method blocks.
pub trait Multiplexer: Send {
    fn kind(&self) -> BackendKind;

    /// Start an attempt.
    ///
    /// # Errors
    /// Tmux refused (message from its stderr), or the process could not start.
    fn spawn(&mut self, spec: &SpawnSpec) -> Result<Spawned>;

    /// Start several attempts, in one round trip where the backend can; one result each,
    /// in order.
    fn spawn_many(&mut self, specs: &[SpawnSpec]) -> Vec<Result<Spawned>> {
        specs.iter().map(|s| self.spawn(s)).collect()
    }

    /// A second handle that starts attempts from another thread while this one keeps
    /// polling, for a backend whose start takes long (tmux: a script of new windows);
    /// `None` (the default): the driver starts attempts on its own loop.
    fn launcher(&mut self) -> Option<Box<dyn Launcher>> {
        None
    }

    /// True when [`poll`](Self::poll) may wait long behind other work of the backend (tmux:
    /// a server runs one client's commands in order, a launch batch first): the driver then
    /// polls from a thread of its own and keeps settling exits from their files meanwhile.
    /// A backend with SSH hosts answers false: the driver asks it about its hosts at every
    /// launch and turn, which must not wait for a poll. Default: false (the loop polls in
    /// place).
    fn polls_off_loop(&self) -> bool {
        false
    }

    /// Liveness of `targets` and, if `focus` is given, its screen when changed. With no
    /// target, only the focus's screen is looked at (tmux: no pane listing).
    fn poll(&mut self, targets: &[Target], focus: Option<&Target>) -> Poll;

    /// Type `text` into the attempt, then Enter (tmux: `load-buffer -` + `paste-buffer -d
    /// -p` + `send-keys Enter`; process: a line on its stdin). Never repeated automatically.
    ///
    /// # Errors
    /// The attempt has no pane or stdin any more, or tmux refused (its stderr).
    fn send_text(&mut self, target: &Target, text: &str) -> Result<()>;

    /// A command that shows the attempt interactively (tmux `attach-session`), for the
    /// dashboard to run with the terminal handed over; `None` when only the log can be shown.
    fn attach_command(&self, target: &Target) -> Option<std::process::Command>;

    /// The pane of this machine's window named `window` (`<worker>-<attempt>`), live or
    /// dead, with its process: what a driver that stopped before recording a launch left
    /// (`crate::lead`'s adoption of it). Default: `None` (the backend has no windows).
    fn find_window(&mut self, window: &str) -> Option<Spawned> {
        let _ = window;
        None
    }

    /// End every process of an attempt known only by its nonce: one a stopped driver
    /// launched and never recorded, found again when the attempt is launched anew. Returns
    /// the pids that survived SIGKILL. Default: the `/proc` scan of
    /// [`crate::backend::reap`].
    fn end_stale_attempt(&mut self, nonce: &str) -> Vec<u32> {
        crate::backend::reap::end_attempt(nonce, std::time::Duration::from_millis(500))
    }

    /// Send SIGTERM (SIGKILL with `hard`) to every process of the attempt `nonce` on SSH
    /// host `host`, found there by its nonce: a remote attempt has no pid here. Default:
    /// the backend has no hosts.
    ///
    /// # Errors
    /// `host` is not one of the run's hosts, or it did not answer (what ssh said).
    fn signal_on_host(&mut self, host: &str, nonce: &str, hard: bool) -> Result<()> {
        let _ = (nonce, hard); // Nothing to signal without hosts.
        Err(no_such_host(host))
    }

    /// End what is left of the ended attempt `nonce` of `worker` on SSH host `host`
    /// (SIGTERM, `grace`, SIGKILL) without making the caller wait; survivors are logged.
    /// Default: the backend has no hosts (logged).
    fn reap_on_host(&mut self, host: &str, worker: &str, nonce: &str, grace: Duration) {
        let _ = (nonce, grace); // Nothing to end without hosts.
        tracing::warn!("{worker}: {}", no_such_host(host));
    }

    /// Remove what holds a finished run's attempts (tmux: its session); returns what was
    /// removed, for the person, or `None` when there was nothing (used by `clean`).
    ///
    /// # Errors
    /// Tmux refused to remove the session.
    fn remove_run(&mut self) -> Result<Option<String>> {
        Ok(None)
    }

    /// Forget what was last captured, so the next poll hands over the focused screen even
    /// if it did not change (after the dashboard switches workers).
    fn forget_screen(&mut self) {}

    /// SSH hosts found lost since the last call (`(host, why)`): gone longer than their
    /// limit, so their workers are to be ended and retried elsewhere. Default: none.
    fn take_lost_hosts(&mut self) -> Vec<(String, String)> {
        vec![]
    }

    /// End the attempts `left` running on the SSH host `host` (it was lost while they
    /// ran) the first time the host answers again, and bring their files back into their
    /// local folders then; without hosts, nothing.
    fn end_on_host_when_back(&mut self, _host: &str, _left: Vec<LeftOnHost>) {}

    /// The attempts (per host) that [`end_on_host_when_back`] ended since the last call,
    /// with what came back of each.
    ///
    /// [`end_on_host_when_back`]: Multiplexer::end_on_host_when_back
    fn take_ended_on_hosts(&mut self) -> Vec<(String, Vec<EndedOnHost>)> {
        vec![]
    }

    /// Ask whether the SSH host `host` answers (one of its launches failed): one that does
    /// not is down from then on, as when a poll fails. The answer comes later from
    /// [`take_checked_hosts`]; the caller never waits on the host. Without hosts, nothing.
    ///
    /// [`take_checked_hosts`]: Multiplexer::take_checked_hosts
    fn check_host(&mut self, _host: &str) {}

    /// The answers to [`check_host`] since the last call: `(host, answers)`.
    ///
    /// [`check_host`]: Multiplexer::check_host
    fn take_checked_hosts(&mut self) -> Vec<(String, bool)> {
        vec![]
    }

    /// Start `launch` (attempts that all run on SSH host `host`) on that host's own
    /// thread: its worktrees there first, then its files and windows. The caller does not
    /// wait: what came of it is in [`take_launched_on_hosts`] later. False when the
    /// backend cannot (no such host, or no hosts): the caller starts them itself.
    ///
    /// [`take_launched_on_hosts`]: Multiplexer::take_launched_on_hosts
    fn launch_on_host(&mut self, _host: &str, _launch: HostLaunch) -> bool {
        false
    }

    /// What came of the [`launch_on_host`] batches that ended since the last call.
    ///
    /// [`launch_on_host`]: Multiplexer::launch_on_host
    fn take_launched_on_hosts(&mut self) -> Vec<HostLaunched> {
        vec![]
    }

    /// Bring back the work of an attempt that ended on SSH host `host`, on that host's
    /// own thread. The caller does not wait: what came of it is in
    /// [`take_brought_back`] later. False when the backend cannot (no such host).
    ///
    /// [`take_brought_back`]: Multiplexer::take_brought_back
    fn bring_back_on_host(&mut self, _host: &str, _work: WorkBack) -> bool {
        false
    }

    /// What came of the [`bring_back_on_host`] asks that ended since the last call.
    ///
    /// [`bring_back_on_host`]: Multiplexer::bring_back_on_host
    fn take_brought_back(&mut self) -> Vec<WorkBackDone> {
        vec![]
    }

    /// Whether the attempt's pane can be reached now, asked just before the person's
    /// terminal is handed to [`attach_command`]: a pane on an SSH host that does not answer
    /// within a few seconds is `Err` (the line to show), so the dashboard never hangs on
    /// an attach. Default: it can.
    ///
    /// # Errors
    /// The host of the pane does not answer (what ssh said).
    ///
    /// [`attach_command`]: Multiplexer::attach_command
    fn reachable(&self, _target: &Target) -> Result<()> {
        Ok(())
    }

    /// The line to show when the [`attach_command`] of `target` ended with `status`, if
    /// the way it ended says something the person should know: on an SSH host, ssh's own
    /// failure (255: the host stopped answering while attached and the keep-alive gave
    /// up, or the connection failed). Default: nothing.
    ///
    /// [`attach_command`]: Multiplexer::attach_command
    fn attach_ended(&self, _target: &Target, _status: std::process::ExitStatus) -> Option<String> {
        None
    }

    /// The SSH hosts that do not answer now, or were lost (`Poll::hosts_down`'s hosts,
    /// without a poll). Default: none.
    fn hosts_not_answering(&self) -> std::collections::BTreeSet<String> {
        Default::default()
    }
}

/// The error of an SSH host a run does not know.
pub fn no_such_host(host: &str) -> crate::error::Error {
    crate::error::Error::Other(format!("host {host} is not one of this run's hosts"))
}

/// Starts attempts on a thread of its own (see [`Multiplexer::launcher`]).
pub trait Launcher: Send {
    /// As [`Multiplexer::spawn_many`]: one result per spec, in order.
    fn spawn_many(&mut self, specs: &[SpawnSpec]) -> Vec<Result<Spawned>>;

    /// As [`spawn_many`](Self::spawn_many), handing each result to `each` (the spec's
    /// index, in order, once each) as soon as it is known, so the first attempts of a long
    /// batch are recorded while the backend starts the rest. Default: all at the end.
    fn spawn_each(&mut self, specs: &[SpawnSpec], each: &mut dyn FnMut(usize, Result<Spawned>)) {
        for (i, r) in self.spawn_many(specs).into_iter().enumerate() {
            each(i, r);
        }
    }
}

/// End an attempt's process group: SIGTERM now; the caller sends SIGKILL after the grace
/// period with `hard = true`. Only the group led by `pid` is signalled, never crewmux.
///
/// # Errors
/// [`Error::Other`](crate::error::Error::Other) for a pid that is not a process group crewmux may
/// signal (0, 1, its own, or out of range); [`Error::System`](crate::error::Error::System) when
/// `killpg` fails other than by `ESRCH` (a group that is already gone is not an error).
pub fn signal_group(pid: u32, hard: bool) -> Result<()> {
    use nix::sys::signal::{killpg, Signal};
    use nix::unistd::Pid;
    let pid_i =
        i32::try_from(pid).map_err(|_| crate::error::Error::Other(format!("bad pid {pid}")))?;
    if pid_i <= 1 || pid == std::process::id() {
        return Err(crate::error::Error::Other(format!(
            "refusing to signal process group {pid}"
        )));
    }
    let sig = if hard {
        Signal::SIGKILL
    } else {
        Signal::SIGTERM
    };
    match killpg(Pid::from_raw(pid_i), sig) {
        Ok(()) | Err(nix::errno::Errno::ESRCH) => Ok(()),
        Err(e) => Err(crate::error::Error::system(
            format!("signal {sig} to process group {pid}"),
            e.into(),
        )),
    }
}

/// True when a process with `pid` exists and is not a zombie.
pub fn pid_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .map(|(_, rest)| !rest.trim_start().starts_with('Z'))
            .unwrap_or(true),
        Err(_) => false,
    }
}
