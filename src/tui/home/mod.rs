//! The home screen (`crewmux` with no subcommand): the project's runs, or with `--all` the
//! runs of every project in the [`index`], newest first, with their problem, status,
//! council, workers done/total and age. Enter opens a run's dashboard, `n` starts a new
//! run (the [`form`]), `r` runs the selected one again (the form filled from it), `x`
//! cleans a finished one after a confirmation. State, keys and drawing are pure;
//! `app` runs the loop.

pub mod app;
pub mod form;
pub mod index;
pub mod view;

pub use form::{modes, origin, Form, FormField, ModeChoice, NewRun, RunOrigin};

use std::path::PathBuf;

use chrono::{DateTime, Utc};
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use crate::domain::{CouncilStatus, RunState, RunStatus};
use crate::store::{list_run_ids, runs_root, RunStore};

/// One run as the home list shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRow {
    pub id: String,
    pub project: PathBuf,
    pub problem: String,
    /// `None` when `state.json` could not be read (`error` says why).
    pub status: Option<RunStatus>,
    pub council: Option<CouncilStatus>,
    pub done: usize,
    pub total: usize,
    pub created_at: Option<DateTime<Utc>>,
    pub error: Option<String>,
    /// The run has not ended and no process drives it: its lead was killed (or the
    /// machine restarted). Opening it starts a new lead.
    pub lead_gone: bool,
}

impl RunRow {
    /// The row of a run read from its saved state.
    pub fn from_state(s: &RunState) -> RunRow {
        RunRow {
            id: s.run_id.clone(),
            project: s.project_dir.clone(),
            problem: s.problem.clone(),
            status: Some(s.status),
            council: Some(s.council.status),
            done: s.workers.iter().filter(|w| w.status.is_terminal()).count(),
            total: s.workers.len(),
            created_at: Some(s.created_at),
            error: None,
            lead_gone: false,
        }
    }

    /// A run can be cleaned once it reached a final status.
    pub fn is_finished(&self) -> bool {
        self.status.is_some_and(|s| s.is_final())
    }
}

/// When run `id` was created, from the time its id starts with (`YYYYMMDD-HHMMSS-…`, as
/// `run` names runs): an unreadable run is listed by its date too.
fn created_from_id(id: &str) -> Option<DateTime<Utc>> {
    let time = chrono::NaiveDateTime::parse_from_str(id.get(..15)?, "%Y%m%d-%H%M%S").ok()?;
    Some(time.and_utc())
}

/// The runs of `projects`, newest first (run ids start with their creation time). A run
/// whose state cannot be read is listed with the reason, never hidden.
pub fn load_rows(projects: &[PathBuf]) -> Vec<RunRow> {
    let mut rows = Vec::new();
    for project in projects {
        for id in list_run_ids(project).unwrap_or_default() {
            let store = RunStore::at(runs_root(project).join(&id));
            rows.push(match store.load_state() {
                Ok(s) => RunRow {
                    lead_gone: matches!(s.status, RunStatus::Running | RunStatus::Detached)
                        && !store.is_driven().unwrap_or(true),
                    ..RunRow::from_state(&s)
                },
                Err(e) => RunRow {
                    id: id.clone(),
                    project: project.clone(),
                    problem: String::new(),
                    status: None,
                    council: None,
                    done: 0,
                    total: 0,
                    created_at: created_from_id(&id),
                    error: Some(e.to_string()),
                    lead_gone: false,
                },
            });
        }
    }
    rows.sort_by(|a, b| b.created_at.cmp(&a.created_at).then(b.id.cmp(&a.id)));
    rows
}

/// What the home screen asks its caller to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HomeExit {
    /// Open this run's dashboard (attaching a detached run); come back after.
    Open {
        project: PathBuf,
        id: String,
    },
    /// Clean this finished run (confirmed), then come back.
    Clean {
        project: PathBuf,
        id: String,
    },
    /// Start a new run in the home project with this form.
    New(NewRun),
    Quit,
}

/// The index of the built-in mode `name` in `modes` (0 when it is not there).
pub(crate) fn mode_index(modes: &[ModeChoice], name: &str) -> usize {
    modes
        .iter()
        .position(|m| *m == ModeChoice::Builtin(name_of(name)))
        .unwrap_or(0)
}

/// The built-in mode's static name (`solo` for a name that is none of them).
fn name_of(name: &str) -> &'static str {
    crate::config::MODES
        .into_iter()
        .find(|m| *m == name)
        .unwrap_or("solo")
}

/// The home screen's state.
#[derive(Debug, Clone, PartialEq)]
pub struct Home {
    pub project: PathBuf,
    pub all: bool,
    pub rows: Vec<RunRow>,
    pub selected: usize,
    /// `x` asked to clean the selected run; `y` confirms.
    pub confirm_clean: bool,
    pub form: Option<Form>,
    pub modes: Vec<ModeChoice>,
    /// Providers `doctor` found ready, offered after "auto".
    pub providers: Vec<String>,
    /// The `doctor` probe behind `providers` still runs (the form says so: until it ends
    /// only "auto" is offered).
    pub probing: bool,
    /// The `--hosts` choices of the form when `hosts.toml` names SSH hosts: first none
    /// (the team file decides), then every host with `local`, then each host alone with
    /// `local`; empty: the form has no hosts field.
    pub hosts: Vec<Vec<String>>,
    pub notice: Option<String>,
    pub help: bool,
    /// The mode `n` starts the form at (index into `modes`): as `crewmux run` without
    /// `--mode`, the config file's default mode, else `solo`.
    pub default_mode: usize,
    /// The form of the last start, kept until the caller knows it started (see
    /// [`Home::started`]): a start that was refused reopens with the problem typed.
    pub draft: Option<Form>,
}

/// A refused start's message for the home form, which has no flags: the command line's
/// `--allow-sim-fallback` / `--provider sim` fixes (`team::route`) become choosing Provider
/// sim in the form.
pub fn refusal_for_the_form(msg: &str) -> String {
    // The form shows one line: the install list's lines (`…; or install one of:\n  codex:
    // …`) join it.
    msg.replace(":\n  ", ": ")
        .replace("\n  ", "; ")
        .replace(
            "or pass --allow-sim-fallback (or --provider sim) to use the simulated agent",
            "or choose Provider sim in this form to use the simulated agent",
        )
        .replace(
            "or pass --allow-sim-fallback",
            "or choose Provider sim in this form",
        )
}

impl Home {
    pub fn new(project: PathBuf, all: bool, rows: Vec<RunRow>) -> Home {
        let modes = modes(&project);
        let default_mode = mode_index(&modes, "solo");
        Home {
            modes,
            project,
            all,
            rows,
            selected: 0,
            confirm_clean: false,
            form: None,
            providers: Vec::new(),
            probing: false,
            hosts: Vec::new(),
            notice: None,
            help: false,
            default_mode,
            draft: None,
        }
    }

    /// Start the form at the built-in mode `name` (the config file's default; the config
    /// check refuses any other name, and one slipping through means `solo`).
    pub fn set_default_mode(&mut self, name: &str) {
        self.default_mode = mode_index(&self.modes, name);
    }

    /// The last form's run started: `n` opens an empty form again.
    pub fn started(&mut self) {
        self.draft = None;
    }

    pub fn selected_row(&self) -> Option<&RunRow> {
        self.rows
            .get(self.selected.min(self.rows.len().saturating_sub(1)))
    }

    /// Apply one key; `Some` when the caller must act (open, clean, start, quit).
    pub fn key(&mut self, key: KeyEvent) -> Option<HomeExit> {
        if key.kind == KeyEventKind::Release {
            return None;
        }
        if self.form.is_some() {
            return self.form_key(key);
        }
        self.notice = None;
        if self.help {
            self.help = false;
            return None;
        }
        if self.confirm_clean {
            self.confirm_clean = false;
            if key.code == KeyCode::Char('y') {
                let r = self.selected_row()?;
                return Some(HomeExit::Clean {
                    project: r.project.clone(),
                    id: r.id.clone(),
                });
            }
            self.notice = Some("not cleaned".into());
            return None;
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Char('q') | KeyCode::Esc => return Some(HomeExit::Quit),
            KeyCode::Char('c') if ctrl => return Some(HomeExit::Quit),
            KeyCode::Up | KeyCode::Char('k') => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down | KeyCode::Char('j') => {
                self.selected = (self.selected + 1).min(self.rows.len().saturating_sub(1))
            }
            KeyCode::Home | KeyCode::Char('g') => self.selected = 0,
            KeyCode::End | KeyCode::Char('G') => self.selected = self.rows.len().saturating_sub(1),
            KeyCode::Char('?') => self.help = true,
            KeyCode::Enter => {
                let Some(r) = self.selected_row() else {
                    self.notice = Some("no run yet: n starts one".into());
                    return None;
                };
                if let Some(e) = &r.error {
                    self.notice = Some(format!("{} cannot be opened: {e}", r.id));
                    return None;
                }
                return Some(HomeExit::Open {
                    project: r.project.clone(),
                    id: r.id.clone(),
                });
            }
            KeyCode::Char('x') => match self.selected_row() {
                None => self.notice = Some("no run to clean".into()),
                Some(r) if !r.is_finished() && r.error.is_none() => {
                    self.notice = Some(format!(
                        "{} has not finished: open it (Enter) and cancel it first",
                        r.id
                    ))
                }
                Some(_) => self.confirm_clean = true,
            },
            KeyCode::Char('n') => {
                self.form = Some(self.draft.take().unwrap_or(Form {
                    mode: self.default_mode,
                    ..Form::default()
                }))
            }
            KeyCode::Char('r') => match self.selected_row() {
                None => self.notice = Some("no run to run again: n starts one".into()),
                Some(r) => match form::origin(&r.project, &r.id) {
                    Ok(o) => self.open_again(o),
                    Err(e) => self.notice = Some(format!("{} cannot be run again: {e}", r.id)),
                },
            },
            _ => {}
        }
        None
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
