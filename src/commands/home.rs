//! `crewmux` with no subcommand on a terminal: the home screen, and what it leads to —
//! a run's dashboard (as `crewmux attach`), a new run (as `crewmux run`), a clean (as
//! `crewmux clean --purge --run`) — coming back to the home screen after each.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use clap::Parser;

use crate::cli::{AttachArgs, CleanArgs, Cli, CommonArgs};
use crate::error::{Error, Result};
use crate::tui::home::{self, index, Home, HomeExit, ModeChoice, NewRun};

/// Show the home screen for `project` (default: the current directory; `all`: every
/// project in the index); the runs it opens and starts use the tmux server `socket`.
///
/// # Errors
/// Exit 2: standard input or output is not a terminal, `project` is not a directory, or
/// `$CREWMUX_TMUX_SOCKET` is not a socket name.
pub fn run(all: bool, socket: Option<&str>, project: Option<&Path>) -> Result<i32> {
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        return Err(Error::Usage(
            "the home screen needs a terminal: name a command (`crewmux --help` lists them), \
             e.g. `crewmux status` for the list of runs"
                .into(),
        ));
    }
    let socket = match socket {
        Some(s) => s.to_string(),
        None => match std::env::var("CREWMUX_TMUX_SOCKET") {
            Ok(s) => crate::cli::socket_name(&s)
                .map_err(|e| Error::Usage(format!("CREWMUX_TMUX_SOCKET: {e}")))?,
            Err(_) => "crewmux".into(),
        },
    };
    let project = super::plan::project_dir(project)?;
    index::remember(&project);
    let projects = move |project: &Path| -> Vec<PathBuf> {
        if all {
            let mut p = index::index_path()
                .map(|i| index::read(&i))
                .unwrap_or_default();
            if !p.iter().any(|x| x == project) {
                p.push(project.to_path_buf());
            }
            p
        } else {
            vec![project.to_path_buf()]
        }
    };
    let providers = ready_providers(&project);
    let mut screen = Home::new(project.clone(), all, home::load_rows(&projects(&project)));
    // A run started here takes the config's default mode as `crewmux run` does.
    if let Some(mode) = crate::config::load()?.mode {
        screen.set_default_mode(&mode);
    }
    screen.hosts = host_choices(&project);
    screen.probing = true;
    let reload = || home::load_rows(&projects(&project));
    let refresh = |h: &mut Home| {
        h.rows = reload();
        if let Some(p) = providers.lock().ok().and_then(|p| p.clone()) {
            h.providers = p;
            h.probing = false;
        }
    };
    crate::tui::app::ESC_LEAVES.store(true, std::sync::atomic::Ordering::SeqCst);
    loop {
        let exit = home::app::run(&mut screen, &refresh)?;
        let outcome = match exit {
            HomeExit::Quit => return Ok(0),
            HomeExit::Open { project, id } => open(&common(&project, &socket), &id),
            HomeExit::Clean { project, id } => clean(&common(&project, &socket), &id),
            HomeExit::New(form) => new_run(
                &common(form.project.as_deref().unwrap_or(&project), &socket),
                &form,
            ),
        };
        screen.rows = reload();
        screen.notice = Some(match outcome {
            Ok(note) => {
                screen.started();
                note
            }
            // A refused start keeps the form: `n` brings the typed problem back.
            Err(e) if screen.draft.is_some() => format!(
                "{} (n reopens the form as it was)",
                home::refusal_for_the_form(&e.to_string())
            ),
            Err(e) => e.to_string(),
        });
    }
}

fn common(project: &Path, socket: &str) -> CommonArgs {
    CommonArgs {
        tmux_socket: socket.to_string(),
        project: Some(project.to_path_buf()),
    }
}

fn open(common: &CommonArgs, id: &str) -> Result<String> {
    super::manage::attach(
        AttachArgs {
            common: common.clone(),
            run: Some(id.to_string()),
            headless: false,
        },
        false,
    )?;
    Ok(format!("back from run {id}"))
}

/// The home screen's `x`: exactly `crewmux clean --run ID --purge` (one rule for both:
/// the run folder goes once nothing of the run is kept), as the confirmation says.
fn clean(common: &CommonArgs, id: &str) -> Result<String> {
    let code = super::manage::clean(CleanArgs {
        common: common.clone(),
        run: Some(id.to_string()),
        purge: true,
        force: false,
    })?;
    Ok(if code == 0 {
        format!("cleaned run {id}")
    } else if let Some(why) = unreadable(common, id) {
        // What `clean` says on the command line for it, here where the person looks.
        format!("kept run {id}: {why}")
    } else {
        // `clean` keeps what is not safe to remove (unmerged or uncommitted work, a run
        // still driven, an unreadable state file) and says why on the command line.
        format!("kept run {id}: `crewmux clean --run {id} --purge` (what x runs) says why")
    })
}

/// Why run `id` cannot be read (its state file unreadable or corrupt), as `clean` says
/// it; `None` when it reads.
fn unreadable(common: &CommonArgs, id: &str) -> Option<String> {
    let project = super::plan::project_dir(common.project.as_deref()).ok()?;
    let store = crate::store::RunStore::at(crate::store::runs_root(&project).join(id));
    store.load_state().err().map(|e| e.to_string())
}

/// The form's `--hosts` choices (see [`Home::hosts`]); none without SSH hosts or when
/// `hosts.toml` cannot be read (a run then says what is wrong).
fn host_choices(project: &Path) -> Vec<Vec<String>> {
    let hosts = match crate::hosts::Hosts::load(project, &crate::providers::EnvSnapshot::current())
    {
        Ok(h) => h,
        Err(e) => {
            tracing::warn!("home screen: {e}");
            return vec![];
        }
    };
    if hosts.hosts.is_empty() {
        return vec![];
    }
    let names: Vec<String> = hosts.hosts.keys().cloned().collect();
    let mut out = vec![vec![]];
    let mut all = names.clone();
    all.push(crate::hosts::LOCAL.into());
    out.push(all);
    if names.len() > 1 {
        out.extend(
            names
                .iter()
                .map(|n| vec![n.clone(), crate::hosts::LOCAL.into()]),
        );
    }
    out
}

/// Start the run as `crewmux run` would be asked on the command line, so every default and
/// check (the clarification gate included) is the same.
fn new_run(common: &CommonArgs, form: &NewRun) -> Result<String> {
    let mut argv: Vec<String> = vec!["crewmux".into(), "run".into()];
    if let Some(project) = &common.project {
        argv.push("--project".into());
        argv.push(project.display().to_string());
    }
    argv.push("--tmux-socket".into());
    argv.push(common.tmux_socket.clone());
    match &form.mode {
        ModeChoice::Builtin(m) => argv.extend(["--mode".into(), (*m).to_string()]),
        ModeChoice::TeamFile(p) => argv.extend(["--team".into(), p.display().to_string()]),
    }
    if let Some(p) = &form.provider {
        argv.extend(["--provider".into(), p.clone()]);
    }
    if !form.hosts.is_empty() {
        argv.extend(["--hosts".into(), form.hosts.join(",")]);
    }
    if let Some(base) = &form.base {
        argv.extend(["--base".into(), base.clone()]);
    }
    if form.include_uncommitted {
        argv.push("--include-uncommitted".into());
    }
    argv.push("--".into());
    argv.push(form.problem.clone());
    let cli = Cli::try_parse_from(&argv).map_err(|e| Error::Usage(e.to_string()))?;
    super::execute(cli)?;
    Ok("the new run is listed first".into())
}

/// The providers `doctor` finds ready, probed on a thread so the home screen opens at once;
/// `sim` (the simulated agent) is always offered last.
fn ready_providers(project: &Path) -> Arc<Mutex<Option<Vec<String>>>> {
    let out = Arc::new(Mutex::new(None));
    let slot = out.clone();
    let project = project.to_path_buf();
    std::thread::spawn(move || {
        let env = crate::providers::EnvSnapshot::current();
        let mut ready = super::doctor::report(Some(&project), &env)
            .map(|r| r.ready)
            .unwrap_or_default();
        if !ready.iter().any(|p| p == "sim") {
            ready.push("sim".into());
        }
        if let Ok(mut s) = slot.lock() {
            *s = Some(ready);
        }
    });
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_run_kept_because_it_cannot_be_read_says_why() {
        let tmp = tempfile::tempdir().unwrap();
        let run = crate::store::runs_root(tmp.path()).join("r1");
        std::fs::create_dir_all(&run).unwrap();
        std::fs::write(run.join("state.json"), "{ not json").unwrap();
        let common = super::common(tmp.path(), "crewmux-test-unused");
        let said = super::clean(&common, "r1").unwrap();
        assert!(said.starts_with("kept run r1: "), "{said}");
        assert!(said.contains("state.json"), "{said}");
        assert!(run.join("state.json").exists(), "nothing removed");
    }
}
