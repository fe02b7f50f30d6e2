//! Steering from the dashboard: `+` opens a form that adds a worker (id, role, provider,
//! a command line for a `command` worker, task), `r` retries the selected worker, `e` edits its task in `$EDITOR` first (the app
//! loop suspends the dashboard for it), `s` opens a line that is typed into its pane. The
//! engine's own rules ([`crate::engine::steer::check`]) say when a request does not apply,
//! so the dashboard and the driver refuse the same things with the same words.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::state::{InputLine, UiState};
use super::update::UiEffect;
use crate::domain::{RunState, WorkerKind};
use crate::engine::steer::{check, Steer};

/// A form open over the dashboard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SteerForm {
    Add(AddForm),
    Send(SendForm),
}

/// The add-worker form. `field`: one of the `FIELD_*` indices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddForm {
    pub id: String,
    pub roles: Vec<String>,
    pub role: usize,
    pub providers: Vec<String>,
    pub provider: usize,
    /// The program and its arguments of a `command` worker, as a shell would split them
    /// (never run through one); used only when the provider is `command`.
    pub command: String,
    /// What the worker should do (several lines).
    pub task: String,
    pub field: usize,
}

impl AddForm {
    /// The chosen provider is `command`: the command field is asked for.
    pub fn runs_command(&self) -> bool {
        self.providers
            .get(self.provider)
            .is_some_and(|p| p == "command")
    }
}

/// The add-worker form's fields, in Tab order.
pub const FIELD_ID: usize = 0;
pub const FIELD_ROLE: usize = 1;
pub const FIELD_PROVIDER: usize = 2;
/// Only when the provider is `command` (Tab skips it otherwise).
pub const FIELD_COMMAND: usize = 3;
pub const FIELD_TASK: usize = 4;
/// Fields of the add-worker form.
pub const ADD_FIELDS: usize = 5;

/// The send-text line for one worker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendForm {
    pub worker: String,
    pub line: InputLine,
    /// The worker has ended: the line starts its next attempt, which continues its
    /// conversation (`engine::steer`), instead of being typed into its pane.
    pub ended: bool,
}

/// The role a new worker gets unless the person picks another.
const DEFAULT_ROLE: &str = "backend-engineer";

/// `+`: open the add-worker form with a free id, the team's first role and provider.
pub fn open_add(ui: &mut UiState, run: &RunState) {
    let roles: Vec<String> = crate::providers::agents::roles()
        .map(str::to_string)
        .collect();
    let first = run.workers.iter().find(|w| w.kind == WorkerKind::Worker);
    let role = first
        .and_then(|w| roles.iter().position(|r| *r == w.role))
        .or_else(|| roles.iter().position(|r| r == DEFAULT_ROLE))
        .unwrap_or(0);
    let mut providers: Vec<String> = Vec::new();
    // The default first, as `crewmux steer add` picks it; `command` (a program of the
    // person's) next in a team of command workers, else last.
    let commands = run
        .workers
        .iter()
        .any(|w| w.kind == WorkerKind::Worker && w.provider == "command");
    let default = crate::engine::steer::default_added_provider(run);
    let command_next = commands.then(|| "command".to_string());
    for p in std::iter::once(default)
        .chain(command_next)
        .chain(run.workers.iter().map(|w| w.provider.clone()))
        .chain(ui.providers.iter().cloned())
        .chain(["sim".to_string(), "command".to_string()])
    {
        if !providers.contains(&p) {
            providers.push(p);
        }
    }
    let id = crate::engine::steer::next_added_id(run);
    ui.form = Some(SteerForm::Add(AddForm {
        id,
        roles,
        role,
        providers,
        provider: 0,
        command: String::new(),
        task: String::new(),
        field: FIELD_TASK,
    }));
}

/// `s`: open the send line for the selected worker, when it is running or an agent's
/// worker that has ended (the line then goes to its next attempt).
pub fn open_send(ui: &mut UiState, run: &RunState) {
    let Some(w) = ui.selected_worker(run) else {
        ui.notice = Some("no worker to send text to".into());
        return;
    };
    let probe = Steer::SendText {
        worker: w.id.clone(),
        text: "-".into(),
    };
    match check(run, &probe) {
        Ok(()) => {
            ui.form = Some(SteerForm::Send(SendForm {
                worker: w.id.clone(),
                line: InputLine::default(),
                ended: w.status.is_terminal(),
            }))
        }
        Err(why) => ui.notice = Some(why),
    }
}

/// `r`: retry the selected worker as it was.
pub fn retry(ui: &mut UiState, run: &RunState) -> Vec<UiEffect> {
    let Some(w) = ui.selected_worker(run) else {
        ui.notice = Some("no worker to retry".into());
        return Vec::new();
    };
    let steer = Steer::Retry {
        worker: w.id.clone(),
        task: None,
    };
    match check(run, &steer) {
        Ok(()) => {
            ui.notice = Some(format!("retrying {} as attempt {}", w.id, w.attempt + 1));
            vec![UiEffect::Steer(steer)]
        }
        Err(why) => {
            ui.notice = Some(why);
            Vec::new()
        }
    }
}

/// `e`: edit the selected worker's task, then retry (the app loop opens the editor).
pub fn edit_retry(ui: &mut UiState, run: &RunState) -> Vec<UiEffect> {
    let Some(w) = ui.selected_worker(run) else {
        ui.notice = Some("no worker to retry".into());
        return Vec::new();
    };
    let probe = Steer::Retry {
        worker: w.id.clone(),
        task: None,
    };
    match check(run, &probe) {
        Ok(()) => vec![UiEffect::EditRetry {
            worker_id: w.id.clone(),
        }],
        Err(why) => {
            ui.notice = Some(why);
            Vec::new()
        }
    }
}

/// A key while a form is open: the form reads it whole (letters are text there).
pub fn form_key(ui: &mut UiState, run: &RunState, key: KeyEvent) -> Vec<UiEffect> {
    ui.notice = None;
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    let alt = key.modifiers.contains(KeyModifiers::ALT);
    if key.code == KeyCode::Esc || (ctrl && key.code == KeyCode::Char('c')) {
        ui.form = None;
        ui.notice = Some("nothing sent".into());
        return Vec::new();
    }
    match ui.form.as_mut() {
        Some(SteerForm::Add(f)) => {
            let submit = (ctrl && key.code == KeyCode::Char('s'))
                || (key.code == KeyCode::Enter && f.field != FIELD_TASK);
            if submit {
                return submit_add(ui, run);
            }
            add_key(f, key.code, ctrl || alt);
        }
        Some(SteerForm::Send(f)) => match key.code {
            KeyCode::Enter => return submit_send(ui, run),
            KeyCode::Char('s') if ctrl => return submit_send(ui, run),
            KeyCode::Backspace => f.line.delete_back(),
            KeyCode::Delete => f.line.delete_forward(),
            KeyCode::Left => f.line.left(),
            KeyCode::Right => f.line.right(),
            KeyCode::Home => f.line.home(),
            KeyCode::End => f.line.end(),
            KeyCode::Char(c) if !ctrl && !alt => f.line.insert(c),
            _ => {}
        },
        None => {}
    }
    Vec::new()
}

fn add_key(f: &mut AddForm, code: KeyCode, modified: bool) {
    // Tab moves over the command field unless the provider is `command`.
    let skip = |f: &AddForm, i: usize| i == FIELD_COMMAND && !f.runs_command();
    match code {
        KeyCode::Tab | KeyCode::BackTab => {
            let step = if code == KeyCode::Tab {
                1
            } else {
                ADD_FIELDS - 1
            };
            f.field = (f.field + step) % ADD_FIELDS;
            if skip(f, f.field) {
                f.field = (f.field + step) % ADD_FIELDS;
            }
            return;
        }
        KeyCode::Enter => f.task.push('\n'),
        KeyCode::Left | KeyCode::Right if matches!(f.field, FIELD_ROLE | FIELD_PROVIDER) => {
            let (v, n) = if f.field == FIELD_ROLE {
                (&mut f.role, f.roles.len())
            } else {
                (&mut f.provider, f.providers.len())
            };
            if n > 0 {
                *v = if code == KeyCode::Right {
                    (*v + 1) % n
                } else {
                    (*v + n - 1) % n
                };
            }
        }
        _ => {}
    }
    let text = match f.field {
        FIELD_ID => Some(&mut f.id),
        FIELD_COMMAND => Some(&mut f.command),
        FIELD_TASK => Some(&mut f.task),
        _ => None,
    };
    match code {
        KeyCode::Backspace => {
            if let Some(t) = text {
                t.pop();
            }
        }
        KeyCode::Char(c) if !modified => {
            if let Some(t) = text {
                t.push(c);
            }
        }
        _ => {}
    }
}

/// Type a bracketed paste into the open form (line breaks stay in the task, become
/// spaces elsewhere).
pub fn form_paste(ui: &mut UiState, text: &str) {
    match ui.form.as_mut() {
        Some(SteerForm::Add(f)) if f.field == FIELD_TASK => {
            f.task.push_str(&text.replace("\r\n", "\n"))
        }
        Some(SteerForm::Add(f)) if f.field == FIELD_ID => {
            f.id.extend(text.chars().filter(|c| !c.is_whitespace()))
        }
        Some(SteerForm::Add(f)) if f.field == FIELD_COMMAND => f.command.extend(
            text.chars()
                .map(|c| if c.is_whitespace() { ' ' } else { c }),
        ),
        Some(SteerForm::Send(f)) => {
            for c in text.chars() {
                f.line.insert(if c.is_whitespace() { ' ' } else { c });
            }
        }
        _ => {}
    }
}

fn submit_add(ui: &mut UiState, run: &RunState) -> Vec<UiEffect> {
    let Some(SteerForm::Add(f)) = &ui.form else {
        return Vec::new();
    };
    let command = if f.runs_command() {
        match crate::team::programs::argv_of(&f.command, &run.project_dir) {
            Ok(argv) => Some(argv),
            Err(why) => {
                ui.notice = Some(why);
                return Vec::new();
            }
        }
    } else {
        None
    };
    let steer = Steer::AddWorker {
        id: f.id.trim().to_string(),
        role: f.roles.get(f.role).cloned().unwrap_or_default(),
        provider: f.providers.get(f.provider).cloned().unwrap_or_default(),
        task: f.task.trim().to_string(),
        command,
    };
    if let Err(why) = check(run, &steer) {
        ui.notice = Some(why);
        return Vec::new();
    }
    ui.form = None;
    if let Steer::AddWorker {
        id,
        provider,
        command,
        ..
    } = &steer
    {
        let who = if id.is_empty() {
            "a worker".to_string()
        } else {
            id.clone()
        };
        ui.notice = Some(match command {
            Some(argv) => format!("adding {who} running {}", argv.join(" ")),
            None => format!("adding {who} on {provider}"),
        });
    }
    vec![UiEffect::Steer(steer)]
}

fn submit_send(ui: &mut UiState, run: &RunState) -> Vec<UiEffect> {
    let Some(SteerForm::Send(f)) = &ui.form else {
        return Vec::new();
    };
    let steer = Steer::SendText {
        worker: f.worker.clone(),
        text: f.line.text().trim().to_string(),
    };
    if let Err(why) = check(run, &steer) {
        ui.notice = Some(why);
        return Vec::new();
    }
    ui.notice = Some(format!("sent to {}", f.worker));
    ui.form = None;
    vec![UiEffect::Steer(steer)]
}
