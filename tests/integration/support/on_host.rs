//! crewmux runs that reach the test's SSH host ([`super::sshd::SshHost`]): the test's tmux
//! socket here and the host's private SSH control directory, so a run, a background run
//! and a later `merge`/`clean` share one connection set-up. [`HostRepo`] is the set-up
//! most `hosts*` tests share; [`headless`] the run most of them make;
//! [`dashboard_on_host`] the dashboard of a run with a remote worker.

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use super::sshd::{sshd_ready, SshHost};
use super::{
    assert_events_once, crewmux, repo, state_worker, try_state, wait_for, wait_limited, Project,
    TeamProject, TmuxServer, Viewer,
};

/// The set-up most `hosts*` tests share: the test's SSH host, named `box` in the hosts
/// file of a git repository with a committed `README` (code reaches a host by git), and a
/// tmux server here for the run's local side. Dropped in that order: the project (its
/// runs checked, see [`Project`]), the local server, then the host.
pub struct HostRepo {
    pub repo: Project,
    pub server: TmuxServer,
    pub host: SshHost,
}

impl HostRepo {
    /// `None` without sshd, ssh or tmux (the test then skips, loudly: see
    /// [`sshd_ready`]); `tag` names the test's tmux server and its skip line.
    pub fn start(tag: &str) -> Option<HostRepo> {
        if !sshd_ready(tag) {
            return None;
        }
        let host = SshHost::start();
        let server = TmuxServer::new(tag);
        let repo = repo(&[("README", "x\n")]);
        host.write_hosts_file(repo.path(), "box");
        Some(HostRepo { repo, server, host })
    }

    /// The project (the repository) crewmux runs in.
    pub fn path(&self) -> &Path {
        self.repo.path()
    }

    /// Write `team.toml` with `body` into the project; its path, as an argument.
    pub fn team(&self, body: &str) -> String {
        let team = self.path().join("team.toml");
        std::fs::write(&team, body).unwrap();
        team.to_str().unwrap().to_string()
    }

    /// [`crewmux_on_host`] in this project, on its server and host.
    pub fn command(&self, args: &[&str]) -> Command {
        crewmux_on_host(self.path(), &self.server.socket, &self.host, args)
    }

    /// [`spawn_on_host`] in this project, on its server and host.
    pub fn spawn(&self, args: &[&str]) -> Child {
        spawn_on_host(self.path(), &self.server.socket, &self.host, args)
    }

    /// [`run_with_host`] in this project, on its server and host.
    pub fn run(&self, args: &[&str]) -> Output {
        run_with_host(self.path(), &self.server.socket, &self.host, args)
    }

    /// A headless run of `team` started with the host frozen (its sshd SIGSTOPped) and
    /// thawed once the run ended: its output, and each stderr line with when it came.
    pub fn run_frozen_from_the_start(&self, team: &str) -> TimedRun {
        let pids = self.host.freeze();
        assert!(!pids.is_empty(), "no sshd to freeze");
        let t0 = std::time::Instant::now();
        let t0_utc = chrono::Utc::now();
        let mut child = self.spawn(&headless(team, "a host frozen from the start"));
        let lines = timed_lines(child.stderr.take().unwrap(), t0);
        let out = wait_limited(child, &["run"]);
        self.host.thaw(&pids);
        let lines = lines.join().unwrap();
        let all = lines
            .iter()
            .map(|(at, l)| format!("{:>6.1} s  {l}\n", at.as_secs_f64()))
            .collect();
        eprintln!("{all}");
        TimedRun {
            out,
            lines,
            all,
            t0_utc,
        }
    }
}

/// A run whose stderr lines were read as they came ([`HostRepo::run_frozen_from_the_start`]).
pub struct TimedRun {
    pub out: Output,
    /// Each line with how long after the start it came.
    pub lines: Vec<(std::time::Duration, String)>,
    /// Every line with its time, for a failed assertion.
    pub all: String,
    /// When the run was started (UTC).
    pub t0_utc: chrono::DateTime<chrono::Utc>,
}

impl TimedRun {
    /// When the first line `what` holds came; panics, showing every line, when none did.
    pub fn when(&self, what: impl Fn(&str) -> bool) -> std::time::Duration {
        self.lines
            .iter()
            .find(|(_, l)| what(l))
            .map(|(at, _)| *at)
            .unwrap_or_else(|| panic!("never said:\n{}", self.all))
    }
}

/// The lines of `from` as they come, each with how long after `t0` it came.
pub fn timed_lines(
    from: impl std::io::Read + Send + 'static,
    t0: std::time::Instant,
) -> std::thread::JoinHandle<Vec<(std::time::Duration, String)>> {
    std::thread::spawn(move || {
        use std::io::BufRead;
        std::io::BufReader::new(from)
            .lines()
            .map_while(Result::ok)
            .map(|l| (t0.elapsed(), l))
            .collect()
    })
}

/// `run --team <team> --no-clarify --headless -- <problem>`: a headless run of a team file.
pub fn headless<'a>(team: &'a str, problem: &'a str) -> [&'a str; 7] {
    [
        "run",
        "--team",
        team,
        "--no-clarify",
        "--headless",
        "--",
        problem,
    ]
}

/// `crewmux args…` in `project` with the tmux socket `socket` and `host`'s private SSH
/// control directory, debug log on, output piped; not started, so a test can add its own
/// environment.
pub fn crewmux_on_host(project: &Path, socket: &str, host: &SshHost, args: &[&str]) -> Command {
    let mut cmd = crewmux();
    cmd.current_dir(project)
        .env("CREWMUX_TMUX_SOCKET", socket)
        .env("XDG_RUNTIME_DIR", host.runtime_dir())
        .env("CREWMUX_LOG", "debug")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// As [`crewmux_on_host`], started in the background.
pub fn spawn_on_host(project: &Path, socket: &str, host: &SshHost, args: &[&str]) -> Child {
    crewmux_on_host(project, socket, host, args)
        .spawn()
        .expect("crewmux runs")
}

/// As [`crewmux_on_host`], run to its end (bounded); every run passes the event-once check.
pub fn run_with_host(project: &Path, socket: &str, host: &SshHost, args: &[&str]) -> Output {
    let out = wait_limited(spawn_on_host(project, socket, host, args), args);
    assert_events_once(project);
    out
}

/// Wait (60 s at most) until `worker` runs in a pane of the host the tests name `box`.
pub fn wait_running_remotely(project: &Path, worker: &str) {
    let ok = wait_for(
        || {
            try_state(project).is_some_and(|s| {
                let w = state_worker(&s, worker);
                w["status"] == "running"
                    && w["pane_id"].as_str().is_some_and(|p| p.starts_with("box:"))
            })
        },
        Duration::from_secs(60),
    );
    assert!(ok, "{worker} never ran on box: {:?}", try_state(project));
}

/// The dashboard in a tmux pane (viewer `<tag>-viewer`, 140×40) running `t`'s team with
/// the problem `problem`, its workers on `workers` and `host`'s SSH control directory;
/// returned once `worker` runs in a pane of the host and the dashboard shows it running
/// (with that screen). The header counts a worker still being started as running too, and
/// Enter on one says it has no pane yet: both waits are needed.
pub fn dashboard_on_host(
    t: &TeamProject,
    workers: &TmuxServer,
    host: &SshHost,
    tag: &str,
    problem: &str,
    worker: &str,
) -> (Viewer, String) {
    let cmd = super::viewer::dashboard_cmd(
        t.path(),
        workers,
        &format!("XDG_RUNTIME_DIR={}", host.runtime_dir().display()),
        t.team(),
        problem,
        "",
    );
    let viewer = Viewer::start(&format!("{tag}-viewer"), (140, 40), &cmd);
    wait_running_remotely(t.path(), worker);
    let screen = viewer.wait_screen("● running", Duration::from_secs(60));
    (viewer, screen)
}
