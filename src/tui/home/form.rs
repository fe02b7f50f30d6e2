//! The home screen's new-run form: what `crewmux run` takes, as fields — the problem, a
//! built-in mode or a team file (picked from the project's team files or typed as a
//! path), a provider, `--base`, `--include-uncommitted` and, with SSH hosts, `--hosts` —
//! and "run again": the form filled from a run's `manifest.json` and `state.json`.

use std::path::{Path, PathBuf};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::{Home, HomeExit};

/// A field of the new-run form, in Tab order ([`Home::form_fields`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FormField {
    #[default]
    Problem,
    /// A built-in mode or one of the project's team files, chosen with ←/→.
    Team,
    /// A team file path typed by the person (relative to the project); when not empty it
    /// is the run's team and the Team choice is not used.
    TeamPath,
    Provider,
    /// `--base`: empty is `HEAD`.
    Base,
    /// `--include-uncommitted`, toggled with ←/→ or Space.
    Uncommitted,
    /// `--hosts`; only when `hosts.toml` names a host.
    Hosts,
}

impl FormField {
    /// Fields that take typed text.
    fn is_text(self) -> bool {
        matches!(
            self,
            FormField::Problem | FormField::TeamPath | FormField::Base
        )
    }
}

/// The new-run form's state.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Form {
    pub problem: String,
    pub field: FormField,
    /// Index into [`Home::modes`].
    pub mode: usize,
    /// See [`FormField::TeamPath`].
    pub team_path: String,
    /// A provider for the built-in modes' workers by name; `None`: the routing decides.
    pub provider: Option<String>,
    /// See [`FormField::Base`].
    pub base: String,
    pub include_uncommitted: bool,
    /// Index into [`Home::hosts`].
    pub hosts: usize,
    /// The project the run starts in when it is not the home screen's own ("run again" of
    /// another project's run in the `--all` list); `None`: the home project.
    pub project: Option<PathBuf>,
    /// "Run again" of this run id: the form says so.
    pub again_of: Option<String>,
}

/// The new-run form's result: the flags of a `crewmux run`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewRun {
    pub problem: String,
    /// A built-in mode (`crazy`, `ccg`, `solo`) or a team file.
    pub mode: ModeChoice,
    /// A provider for the built-in modes' workers; `None`: the routing's choice.
    pub provider: Option<String>,
    /// `--hosts`: spread the workers over these; empty: where the team file puts them.
    pub hosts: Vec<String>,
    /// `--base`; `None`: `HEAD`.
    pub base: Option<String>,
    pub include_uncommitted: bool,
    /// The project to start the run in; `None`: the home project.
    pub project: Option<PathBuf>,
}

/// A mode of the picker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModeChoice {
    Builtin(&'static str),
    TeamFile(PathBuf),
}

impl ModeChoice {
    /// What the picker shows: the mode's name, or `team <path>` with the path relative to
    /// `project` where it is inside it.
    pub fn label(&self, project: &Path) -> String {
        match self {
            ModeChoice::Builtin(m) => (*m).to_string(),
            ModeChoice::TeamFile(p) => {
                format!("team {}", p.strip_prefix(project).unwrap_or(p).display())
            }
        }
    }
}

/// The folders of a project whose `*.toml` files are offered as teams, in order:
/// `.crewmux/teams/` (the project's own teams), then `examples/` and `teams/` (team files
/// copied from crewmux's `examples/` usually land in one of them).
const TEAM_DIRS: [&str; 3] = [".crewmux/teams", "examples", "teams"];

/// The modes to offer for `project`: the built-in ones, then the team files of
/// [`TEAM_DIRS`] by name, then the `*.toml` files at the project's top that hold a
/// `[[worker]]` table (a `Cargo.toml` or `pyproject.toml` is not a team).
pub fn modes(project: &Path) -> Vec<ModeChoice> {
    let mut out: Vec<ModeChoice> = ["crazy", "ccg", "solo"]
        .into_iter()
        .map(ModeChoice::Builtin)
        .collect();
    let tomls = |dir: &Path| -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .map(|d| {
                d.filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "toml"))
                    .collect()
            })
            .unwrap_or_default();
        files.sort();
        files
    };
    for dir in TEAM_DIRS {
        out.extend(
            tomls(&project.join(dir))
                .into_iter()
                .map(ModeChoice::TeamFile),
        );
    }
    out.extend(
        tomls(project)
            .into_iter()
            .filter(|p| {
                std::fs::read_to_string(p)
                    .is_ok_and(|t| t.lines().any(|l| l.trim_start().starts_with("[[worker]]")))
            })
            .map(ModeChoice::TeamFile),
    );
    out
}

/// What a run was started with, for "run again" (read by [`origin`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOrigin {
    pub project: PathBuf,
    pub id: String,
    pub problem: String,
    /// `mode:<name>` or the team file's path (the manifest's `team.source`).
    pub source: String,
    pub provider: Option<String>,
    pub hosts: Vec<String>,
    /// `--base` as it was asked; `None` for `HEAD` or a run without worktrees.
    pub base: Option<String>,
    pub include_uncommitted: bool,
}

/// What run `id` of `project` was started with, from its `manifest.json` (the team's
/// source, `provider`, `hosts`) and `state.json` (the problem, the base as asked).
///
/// # Errors
/// A one-line reason when either file cannot be read or parsed.
pub fn origin(project: &Path, id: &str) -> Result<RunOrigin, String> {
    let store = crate::store::RunStore::at(crate::store::runs_root(project).join(id));
    let state = store.load_state().map_err(|e| e.to_string())?;
    let path = store.manifest_path();
    let manifest: serde_json::Value = std::fs::read_to_string(&path)
        .map_err(|e| format!("{}: {e}", path.display()))
        .and_then(|t| serde_json::from_str(&t).map_err(|e| format!("{}: {e}", path.display())))?;
    let source = manifest["team"]["source"]
        .as_str()
        .ok_or_else(|| format!("{}: no team.source", path.display()))?
        .to_string();
    let ws = state.workspace.as_ref();
    Ok(RunOrigin {
        project: state.project_dir.clone(),
        id: id.to_string(),
        problem: state.problem.clone(),
        source,
        provider: manifest["provider"].as_str().map(str::to_string),
        hosts: manifest["hosts"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|h| h.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default(),
        base: ws
            .map(|w| w.base_ref.clone())
            .filter(|b| !b.is_empty() && b != "HEAD"),
        include_uncommitted: ws.is_some_and(|w| w.uncommitted),
    })
}

impl Home {
    /// The form's fields in Tab order: the hosts field only when `hosts.toml` names a host.
    pub fn form_fields(&self) -> Vec<FormField> {
        let mut f = vec![
            FormField::Problem,
            FormField::Team,
            FormField::TeamPath,
            FormField::Provider,
            FormField::Base,
            FormField::Uncommitted,
        ];
        if !self.hosts.is_empty() {
            f.push(FormField::Hosts);
        }
        f
    }

    /// Open the form filled from `o` ("run again": same problem, team, provider, base and
    /// hosts, all editable). A team file that is one of the offered modes is chosen there;
    /// any other is put in the path field. A `--hosts` list that is not one of the
    /// choices leaves hosts to the team file, saying so.
    pub fn open_again(&mut self, o: RunOrigin) {
        let mut form = Form {
            problem: o.problem,
            mode: self.default_mode,
            provider: o.provider,
            base: o.base.unwrap_or_default(),
            include_uncommitted: o.include_uncommitted,
            project: (o.project != self.project).then_some(o.project.clone()),
            again_of: Some(o.id.clone()),
            ..Form::default()
        };
        if let Some(mode) = o.source.strip_prefix("mode:") {
            form.mode = super::mode_index(&self.modes, mode);
        } else {
            let path = PathBuf::from(&o.source);
            match self
                .modes
                .iter()
                .position(|m| *m == ModeChoice::TeamFile(path.clone()))
            {
                Some(i) if form.project.is_none() => form.mode = i,
                _ => form.team_path = path.display().to_string(),
            }
        }
        if !o.hosts.is_empty() {
            match self.hosts.iter().position(|h| *h == o.hosts) {
                Some(i) => form.hosts = i,
                None => {
                    self.notice = Some(format!(
                        "run {} was spread over {}: not a choice here, the team file decides",
                        o.id,
                        o.hosts.join(",")
                    ))
                }
            }
        }
        self.form = Some(form);
    }

    /// Keys of the new-run form: Tab/S-Tab move between the fields; in the problem Enter
    /// starts a new line and Ctrl-S (or Enter on any other field) starts the run; ←/→
    /// choose a mode, provider or hosts and toggle "include uncommitted" (as Space does);
    /// typed text goes to the problem, team file and base fields; Esc leaves the form.
    pub(super) fn form_key(&mut self, key: KeyEvent) -> Option<HomeExit> {
        let fields = self.form_fields();
        let modes = self.modes.len().max(1);
        let hosts = self.hosts.len().max(1);
        let providers = self.providers.clone();
        let form = self.form.as_mut()?;
        let at = fields.iter().position(|f| *f == form.field).unwrap_or(0);
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let step = |v: usize, n: usize, right: bool| {
            if right {
                (v + 1) % n
            } else {
                (v + n - 1) % n
            }
        };
        match key.code {
            KeyCode::Esc => self.form = None,
            KeyCode::Tab => form.field = fields[(at + 1) % fields.len()],
            KeyCode::BackTab => form.field = fields[(at + fields.len() - 1) % fields.len()],
            KeyCode::Char('s') if ctrl => return self.submit(),
            KeyCode::Enter if form.field != FormField::Problem => return self.submit(),
            KeyCode::Enter => form.problem.push('\n'),
            KeyCode::Backspace => {
                if let Some(text) = text_of(form) {
                    text.pop();
                }
            }
            KeyCode::Left | KeyCode::Right => {
                let right = key.code == KeyCode::Right;
                match form.field {
                    FormField::Team => form.mode = step(form.mode, modes, right),
                    FormField::Hosts => form.hosts = step(form.hosts, hosts, right),
                    FormField::Uncommitted => form.include_uncommitted = !form.include_uncommitted,
                    FormField::Provider => {
                        // 0 is "the routing decides", then the ready providers.
                        let at = form
                            .provider
                            .as_ref()
                            .and_then(|p| providers.iter().position(|x| x == p))
                            .map_or(0, |i| i + 1);
                        let next = step(at, providers.len() + 1, right);
                        form.provider = next.checked_sub(1).map(|i| providers[i].clone());
                    }
                    _ => {}
                }
            }
            KeyCode::Char(' ') if form.field == FormField::Uncommitted => {
                form.include_uncommitted = !form.include_uncommitted;
            }
            KeyCode::Char(c) if !ctrl => {
                if let Some(text) = text_of(form) {
                    text.push(c);
                }
            }
            _ => {}
        }
        None
    }

    /// Paste into the focused text field of the form (newlines only into the problem).
    pub fn paste(&mut self, text: &str) {
        let Some(form) = self.form.as_mut() else {
            return;
        };
        let multi = form.field == FormField::Problem;
        if let Some(field) = text_of(form) {
            let text = text.replace("\r\n", "\n");
            if multi {
                field.push_str(&text);
            } else {
                field.push_str(text.trim());
            }
        }
    }

    fn submit(&mut self) -> Option<HomeExit> {
        let form = self.form.as_ref()?;
        let problem = form.problem.trim().to_string();
        if problem.is_empty() {
            self.notice = Some("type the problem first (Tab moves between fields)".into());
            return None;
        }
        let project = form.project.clone().unwrap_or_else(|| self.project.clone());
        let path = form.team_path.trim();
        let mode = if path.is_empty() {
            self.modes.get(form.mode)?.clone()
        } else {
            ModeChoice::TeamFile(project.join(path))
        };
        let base = Some(form.base.trim().to_string()).filter(|b| !b.is_empty());
        let run = NewRun {
            problem,
            mode,
            provider: form.provider.clone(),
            hosts: self.hosts.get(form.hosts).cloned().unwrap_or_default(),
            base,
            include_uncommitted: form.include_uncommitted,
            project: form.project.clone(),
        };
        self.draft = self.form.take();
        Some(HomeExit::New(run))
    }
}

/// The focused field's text, when it takes text.
fn text_of(form: &mut Form) -> Option<&mut String> {
    if !form.field.is_text() {
        return None;
    }
    Some(match form.field {
        FormField::TeamPath => &mut form.team_path,
        FormField::Base => &mut form.base,
        _ => &mut form.problem,
    })
}
