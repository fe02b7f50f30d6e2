//! The run's lead: the process that drives one run on its own, detached from every
//! terminal, so that quitting a dashboard, closing its terminal or losing an SSH
//! connection never stops a run (docs/design.md "The lead and its dashboards").
//!
//! `run`, `demo`, `attach` and `resume` start it with [`start`] and then open a dashboard
//! that follows it ([`super::dashboard::follow_dashboard`]). The lead is the hidden
//! `crewmux lead <run>` ([`run`]): it leaves the terminal's session (setsid(2)) before
//! anything else, writes everything it says to `<run dir>/lead.log` (on the tmux backend
//! the run session's first window shows that file), drives the run until it ends, stays
//! grace period (`[lead] linger-s` in config.toml) for late requests, then ends the run's tmux session
//! and helper processes (its files and worktrees stay) and exits.

use std::io::Read;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::cli::LeadArgs;
use crate::domain::RunState;
use crate::error::{Error, IoContext, Result};
use crate::lead::DriverOptions;
use crate::store::RunStore;

/// Everything the lead prints, in the run directory.
pub const LOG_FILE: &str = "lead.log";

/// Who leads the run: [`LeadRecord`] as JSON, in the run directory.
pub const RECORD_FILE: &str = "lead.json";

/// How long [`start`] waits for a new lead to take the run's driver lock before it says
/// the lead did not start (a busy machine loads the providers' files in ~1 s).
pub const START_WAIT: Duration = Duration::from_secs(30);

/// The process that leads (or led) a run, written by the lead when it starts.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LeadRecord {
    pub pid: u32,
    pub started_at: chrono::DateTime<chrono::Utc>,
}

/// The lead's record of the run in `dir`, when one was written and reads.
pub fn record(dir: &Path) -> Option<LeadRecord> {
    let text = std::fs::read_to_string(dir.join(RECORD_FILE)).ok()?;
    serde_json::from_str(&text).ok()
}

/// What a new lead is started with.
#[derive(Debug, Clone, Copy)]
pub struct LeadOptions {
    /// No bell or desktop notification (`--quiet`).
    pub quiet: bool,
    /// Cap on a packaged prompt, characters.
    pub prompt_max_chars: usize,
}

impl Default for LeadOptions {
    fn default() -> Self {
        LeadOptions {
            quiet: false,
            prompt_max_chars: DriverOptions::default().prompt_max_chars,
        }
    }
}

/// Start the lead of the run in `store` (`state` as saved) as a process of its own and
/// wait until it drives the run; returns its pid. The credential store's passphrase is
/// asked here, on the terminal, when the store exists and `CREWMUX_CREDENTIAL_PASSPHRASE`
/// is not set, and handed to the lead in its environment only (never on a command line
/// or in a file).
///
/// # Errors
/// The passphrase is wrong or cannot be asked; `lead.log` cannot be opened; the lead
/// cannot be started, or it exits (or does not take the run) within [`START_WAIT`]: the
/// error quotes the end of its log.
pub fn start(store: &RunStore, state: &RunState, opts: LeadOptions) -> Result<u32> {
    start_asking(store, state, opts, true)
}

/// As [`start`]; `ask` false never prompts (the dashboard owns the terminal): a
/// passphrase that is needed and not known yet is then an error saying how to start the
/// lead instead.
///
/// # Errors
/// As [`start`].
pub fn start_asking(
    store: &RunStore,
    state: &RunState,
    opts: LeadOptions,
    ask: bool,
) -> Result<u32> {
    let passphrase = passphrase_for_the_lead(ask, &state.run_id)?;
    let log_path = store.dir().join(LOG_FILE);
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .at(&log_path)?;
    let log_len = log.metadata().map(|m| m.len()).unwrap_or(0);
    let exe = std::env::current_exe().on("cannot find the crewmux binary to start the lead")?;
    let mut cmd = std::process::Command::new(exe);
    cmd.arg("lead")
        .arg(&state.run_id)
        .arg("--project")
        .arg(&state.project_dir)
        .arg("--prompt-max-chars")
        .arg(opts.prompt_max_chars.to_string())
        .current_dir(&state.project_dir)
        .stdin(std::process::Stdio::null())
        .stdout(log.try_clone().at(&log_path)?)
        .stderr(log);
    if opts.quiet {
        cmd.arg("--quiet");
    }
    // The person's own tmux, named explicitly: the lead leaves it (its own tmux commands
    // go to the run's server only) but shows its notifications on every client there.
    let tmux_env = std::env::var("TMUX").ok();
    if let Some(s) = crate::notify::tmux::user_socket(tmux_env.as_deref(), &state.tmux_socket) {
        cmd.arg("--user-tmux").arg(s);
    }
    cmd.env_remove("TMUX").env_remove("TMUX_PANE");
    if let Some(p) = passphrase {
        use secrecy::ExposeSecret;
        cmd.env(crate::creds::PASSPHRASE_ENV, p.expose_secret());
    }
    let mut child = cmd.spawn().on("cannot start the run's lead")?;
    let pid = child.id();
    let until = Instant::now() + START_WAIT;
    loop {
        if store.is_driven()? {
            break;
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Err(Error::Other(format!(
                "the lead of run {} ended at once ({status}): {}",
                state.run_id,
                log_tail(&log_path, log_len)
            )));
        }
        if Instant::now() >= until {
            return Err(Error::Other(format!(
                "the lead of run {} (pid {pid}) did not take the run within {} s; its log is {}",
                state.run_id,
                START_WAIT.as_secs(),
                log_path.display()
            )));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    // Collected when it exits, so a dashboard open for hours leaves no zombie behind.
    std::thread::spawn(move || child.wait());
    Ok(pid)
}

/// The passphrase this process was given for the credential store, kept for the next
/// lead it starts (a retry in a finished run's dashboard) so it is asked once.
static PASSPHRASE: std::sync::OnceLock<crate::creds::SecretString> = std::sync::OnceLock::new();

/// The passphrase the lead needs to open the credential store: none without a store or
/// when the environment carries it; the one given before; else asked now on this
/// terminal (`ask`).
fn passphrase_for_the_lead(ask: bool, run_id: &str) -> Result<Option<crate::creds::SecretString>> {
    if std::env::var_os(crate::creds::PASSPHRASE_ENV).is_some() {
        return Ok(None);
    }
    let path = crate::creds::Store::default_path()?;
    if !path.exists() {
        return Ok(None);
    }
    if let Some(p) = PASSPHRASE.get() {
        return Ok(Some(p.clone()));
    }
    if !ask {
        return Err(Error::Usage(format!(
            "the credential store's passphrase is needed to start a lead: q, then crewmux attach {run_id}"
        )));
    }
    let passphrase = crate::creds::passphrase_from_env_or_prompt(false)?;
    // A wrong passphrase is said here, where the person typed it, not in the lead's log.
    crate::creds::Store::open(&path, passphrase.clone())?;
    // Err: set already by another thread; either is the one typed.
    let _ = PASSPHRASE.set(passphrase.clone());
    Ok(Some(passphrase))
}

/// The last lines the lead wrote after byte `from` of its log, for an error line.
fn log_tail(path: &Path, from: u64) -> String {
    let mut text = String::new();
    if let Ok(mut f) = std::fs::File::open(path) {
        use std::io::Seek;
        let _ = f.seek(std::io::SeekFrom::Start(from));
        let _ = f.read_to_string(&mut text);
    }
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = lines[lines.len().saturating_sub(3)..].join(" / ");
    if tail.is_empty() {
        "it said nothing".into()
    } else {
        tail
    }
}

/// `crewmux lead <run>`: drive the run from a session of its own until it ends, then
/// linger and end its session. Returns the run's exit code (docs/design.md "Exit codes").
///
/// # Errors
/// An unknown run; the errors of driving it (another process drives it already).
#[allow(
    clippy::needless_pass_by_value,
    reason = "a command handler owns the flags clap parsed for it"
)]
pub fn run(args: LeadArgs) -> Result<i32> {
    // Out of the terminal's session: its hang-up and its job control never reach the lead.
    // Err: already a session leader (started by something that did this for us).
    if let Err(e) = nix::unistd::setsid() {
        tracing::debug!("setsid: {e}");
    }
    let project = super::plan::project_dir(args.common.project.as_deref())?;
    let store = RunStore::open(&project, Some(&args.run))?;
    let config = crate::config::load()?;
    let dopts = DriverOptions {
        quiet: args.quiet,
        prompt_max_chars: args.prompt_max_chars,
        user_tmux: args.user_tmux.clone(),
        ..DriverOptions::default()
    };
    let mut code = 0;
    loop {
        let state = store.load_state()?;
        if !state.status.is_final() || has_requests(&store, &state) {
            if store.is_driven()? {
                // Another lead took the run (an `attach` during the linger).
                return Ok(code);
            }
            write_record(store.dir())?;
            crate::errln!(
                "[{}] crewmux: lead of run {} (pid {})",
                chrono::Local::now().format("%H:%M:%S"),
                state.run_id,
                std::process::id()
            );
            code = super::drive::drive_printing(store.clone(), state, dopts.clone(), false)?;
        }
        if !linger(&store, config.lead.linger) {
            break;
        }
    }
    let state = store.load_state()?;
    if state.status.is_final() {
        let ended = super::clean::end_session(&state, &store, &state.run_id)?;
        if ended > 0 {
            crate::errln!(
                "crewmux: run {} ended {} s ago: its tmux session and helpers are gone, its files stay in {}",
                state.run_id,
                config.lead.linger.as_secs(),
                state.run_dir.display()
            );
        }
    }
    Ok(code)
}

/// Wait out the grace period of a finished run; true when a request arrived meanwhile
/// (the run is driven again for it). The inbox's length is looked at every 500 ms and the
/// state read again only when it grew: parsing `state.json` twice a second cost a lingering
/// lead of 64 workers 0.23 % of a core.
fn linger(store: &RunStore, linger: Duration) -> bool {
    let until = Instant::now() + linger;
    let mut seen = None;
    while Instant::now() < until {
        let len = store.inbox_len();
        if seen != Some(len) {
            match store.load_state() {
                Ok(state) if has_requests(store, &state) => return true,
                Ok(_) => seen = Some(len),
                // Read again at the next look (a save being replaced, a broken file).
                Err(_) => {}
            }
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    false
}

/// True when the run's inbox holds requests no driver has read yet.
fn has_requests(store: &RunStore, state: &RunState) -> bool {
    store.inbox_len() > state.inbox_read.unwrap_or(u64::MAX)
}

/// Write `lead.json` for this process (atomically: a reader never sees half of it).
fn write_record(dir: &Path) -> Result<()> {
    let record = LeadRecord {
        pid: std::process::id(),
        started_at: chrono::Utc::now(),
    };
    crate::store::write_json_atomic(&dir.join(RECORD_FILE), &record)
}
