//! The set-up most integration tests share: a temporary project with a team file, and a
//! headless `crewmux run` of that team on a chosen backend.
//!
//! ```ignore
//! let t = TeamProject::new(TEAM);
//! let out = t.run("fix it").process().args(&["--max-attempts", "1"]).output();
//! ```

use std::path::{Path, PathBuf};
use std::process::{Child, Output};

use super::{project, repo, run_crewmux, spawn_crewmux, tmux_ready, Project, TmuxServer};

/// A temporary [`Project`] and the team file crewmux runs in it.
///
/// The team file is `team.toml` in the project, or, for a git repository
/// ([`TeamProject::in_repo`]), in a directory of its own, so the repository's tree stays
/// exactly what the test committed.
pub struct TeamProject {
    project: Project,
    team: PathBuf,
    /// Where the team file lives when it is not in the project; removed with it.
    _team_dir: Option<Project>,
}

impl TeamProject {
    /// A new temporary project holding `team.toml` with `body`.
    pub fn new(body: &str) -> Self {
        let project = project();
        let team = project.path().join("team.toml");
        std::fs::write(&team, body).expect("write team.toml");
        TeamProject {
            project,
            team,
            _team_dir: None,
        }
    }

    /// A git repository with `files` committed on `main` (see [`repo`]), and a team file
    /// with `body` outside it.
    pub fn in_repo(files: &[(&str, &str)], body: &str) -> Self {
        let dir = project();
        let team = dir.path().join("team.toml");
        std::fs::write(&team, body).expect("write team.toml");
        TeamProject {
            project: repo(files),
            team,
            _team_dir: Some(dir),
        }
    }

    /// The project directory crewmux runs in.
    pub fn path(&self) -> &Path {
        self.project.path()
    }

    /// The team file.
    pub fn team(&self) -> &Path {
        &self.team
    }

    /// The team file as a command-line argument.
    pub fn team_arg(&self) -> &str {
        self.team.to_str().expect("a UTF-8 temporary path")
    }

    /// `crewmux run --team <team> --no-clarify --headless … -- <problem>` in this project,
    /// on crewmux's default backend and a socket nobody uses until [`Run::on`],
    /// [`Run::process`] or [`Run::tmux`] says otherwise.
    pub fn run(&self, problem: &str) -> Run<'_> {
        Run {
            project: self.path(),
            socket: "unused".into(),
            args: vec![
                "run".into(),
                "--team".into(),
                self.team_arg().into(),
                "--no-clarify".into(),
                "--headless".into(),
            ],
            problem: problem.into(),
        }
    }
}

/// One headless `crewmux run` being put together by [`TeamProject::run`].
#[must_use = "a run does nothing until output() or spawn()"]
pub struct Run<'a> {
    project: &'a Path,
    socket: String,
    args: Vec<String>,
    problem: String,
}

impl<'a> Run<'a> {
    /// In `dir` instead of the team's own project (another repository, a bare one…).
    pub fn in_dir(mut self, dir: &'a Path) -> Self {
        self.project = dir;
        self
    }

    /// On `backend` (`--backend` and its socket).
    pub fn on(self, backend: &Backend) -> Self {
        let socket = backend.socket().to_string();
        self.args(&["--backend", backend.name]).socket(&socket)
    }

    /// On the process backend.
    pub fn process(self) -> Self {
        self.args(&["--backend", "process"])
    }

    /// On tmux, with the workers on `server`.
    pub fn tmux(self, server: &TmuxServer) -> Self {
        self.args(&["--backend", "tmux"]).socket(&server.socket)
    }

    /// With `CREWMUX_TMUX_SOCKET` set to `socket` (the backend left to crewmux).
    pub fn socket(mut self, socket: &str) -> Self {
        self.socket = socket.into();
        self
    }

    /// With the clarification gate (without `--no-clarify`).
    pub fn clarify(mut self) -> Self {
        self.args.retain(|a| a != "--no-clarify");
        self
    }

    /// More flags, before the problem.
    pub fn args(mut self, extra: &[&str]) -> Self {
        self.args.extend(extra.iter().map(|a| (*a).to_string()));
        self
    }

    /// The whole command line after `crewmux`: the problem follows `--`, so one starting
    /// with `-` is not read as a flag.
    fn argv(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self.args.iter().map(String::as_str).collect();
        v.extend(["--", self.problem.as_str()]);
        v
    }

    /// Run it to the end (bounded, event-checked: see [`run_crewmux`]).
    pub fn output(self) -> Output {
        run_crewmux(self.project, &self.socket, &self.argv())
    }

    /// Start it in the background (see [`spawn_crewmux`]).
    pub fn spawn(self) -> Child {
        spawn_crewmux(self.project, &self.socket, &self.argv())
    }
}

/// A backend a scenario runs on: `process`, or `tmux` with a private server.
pub struct Backend {
    /// The `--backend` value.
    pub name: &'static str,
    /// The tmux server of the `tmux` backend.
    pub server: Option<TmuxServer>,
}

impl Backend {
    /// The process backend.
    pub fn process() -> Self {
        Backend {
            name: "process",
            server: None,
        }
    }

    /// The tmux backend on a new private server tagged `tag`.
    pub fn tmux(tag: &str) -> Self {
        Backend {
            name: "tmux",
            server: Some(TmuxServer::new(tag)),
        }
    }

    /// The socket to hand crewmux (`unused` on the process backend).
    pub fn socket(&self) -> &str {
        self.server.as_ref().map_or("unused", |s| s.socket.as_str())
    }
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// The backends a scenario runs on: the process backend, and tmux where it is installed
/// (skipped loudly otherwise, see [`tmux_ready`]).
pub fn backends(test: &str) -> Vec<Backend> {
    let mut v = vec![Backend::process()];
    if tmux_ready(test) {
        v.push(Backend::tmux(test));
    }
    v
}

/// tmux where it is installed, else the process backend (said loudly by [`tmux_ready`]).
pub fn tmux_or_process(test: &str) -> Backend {
    if tmux_ready(test) {
        Backend::tmux(test)
    } else {
        Backend::process()
    }
}

/// A team-file `[[worker]]` table: a `command` worker (one attempt) that runs `script` with
/// `sh -c` in its working directory and then writes `result` as its result.
pub fn command_worker(id: &str, script: &str, result: &str) -> String {
    format!(
        "[[worker]]\nid = \"{id}\"\nrole = \"backend-engineer\"\nprovider = \"command\"\nmax_attempts = 1\ncommand = [\"sh\", \"-c\", '''{script}; printf '%s\\n' \"{result}\" > \"$CREWMUX_RESULT_FILE\"''']\n\n"
    )
}
