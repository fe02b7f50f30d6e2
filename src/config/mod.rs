//! The person's config file, `config.toml` in crewmux's config directory
//! (`$CREWMUX_CONFIG_DIR`, else `$XDG_CONFIG_HOME/crewmux`, else `~/.config/crewmux`):
//! key bindings, theme colours, which notifications fire, and the default mode and
//! provider of a new run. Every key is optional; a missing file is the defaults.
//!
//! ```toml
//! [keys]            # action = "key" or ["key", …]; see the dashboard's help (?)
//! retry = "R"
//! add-worker = ["+", "A"]
//!
//! [theme]           # accent, ok, warn, error, crashed, starting, dim, text, on-accent,
//! accent = "magenta" # selection; a name, #rrggbb or an xterm index 0-255
//!
//! [notify]          # each true unless set
//! bell = true
//! osc = true        # OSC 9 / OSC 777 desktop notifications
//! notify-send = false
//! tmux = true       # display-message on every client of your own tmux
//! command = ["ntfy", "publish", "my-runs"] # argv, no shell; the event as JSON on stdin
//! command-timeout-s = 10 # then the command is killed (1-3600)
//!
//! [lead]
//! linger-s = 300    # seconds a finished run's tmux session and helpers stay (0: none)
//!
//! [defaults]
//! mode = "solo"     # crazy, ccg or solo, when neither --mode nor --team is given
//! provider = "codex" # when --provider is not given
//! ```
//!
//! An unknown key or a bad value is one error, `file:line:col: what is wrong and what to
//! write`, from the TOML parser's spans.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use crate::error::{Error, Result};
use crate::lead::NotifyWays;
use crate::providers::spec::line_col;
use crate::providers::toml_hint::toml_error_with;
use crate::providers::user_config_dir;
use crate::providers::EnvSnapshot;
use crate::tui::keys::{action_named, parse_key, Keys};
use crate::tui::theme::{parse_colour, Theme};

/// The config file's name in the config directory.
pub const FILE_NAME: &str = "config.toml";

/// Built-in modes a config may name as the default.
pub const MODES: [&str; 3] = ["crazy", "ccg", "solo"];

/// What the config file says, checked.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Config {
    /// The file read (`None`: there was none, every value is the default).
    pub path: Option<PathBuf>,
    pub keys: Keys,
    pub theme: Theme,
    pub notify: NotifyWays,
    /// What the run's lead does once the run has ended.
    pub lead: LeadConfig,
    /// `crazy`, `ccg` or `solo`.
    pub mode: Option<String>,
    pub provider: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    keys: BTreeMap<Spanned<String>, Spanned<OneOrMany>>,
    #[serde(default)]
    theme: BTreeMap<Spanned<String>, Spanned<String>>,
    #[serde(default)]
    notify: NotifyFile,
    #[serde(default)]
    lead: LeadFile,
    #[serde(default)]
    defaults: DefaultsFile,
}

/// What the run's lead does once its run has ended (`[lead]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeadConfig {
    /// How long a finished run's lead stays for late requests (a retry from a dashboard
    /// reopens the run) before it ends the run's tmux session and the helper processes
    /// (`tail -F`, `pipe-pane`); the run's files and worktrees stay. `linger-s`, seconds.
    pub linger: std::time::Duration,
}

/// Default of [`LeadConfig::linger`]: five minutes, long enough to read the last panes of
/// a run that just ended, short enough that an hour of runs leaves no pile of sessions.
pub const DEFAULT_LINGER: std::time::Duration = std::time::Duration::from_secs(300);

impl Default for LeadConfig {
    fn default() -> Self {
        LeadConfig {
            linger: DEFAULT_LINGER,
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct LeadFile {
    linger_s: Option<u64>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct NotifyFile {
    bell: Option<bool>,
    osc: Option<bool>,
    notify_send: Option<bool>,
    tmux: Option<bool>,
    command: Option<Spanned<Vec<String>>>,
    command_timeout_s: Option<Spanned<u64>>,
}

/// Longest `[notify] command-timeout-s`: an hour (a command that long is hung).
pub const MAX_COMMAND_TIMEOUT_S: u64 = 3600;

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct DefaultsFile {
    mode: Option<Spanned<String>>,
    provider: Option<Spanned<String>>,
}

/// Where the config file is for this environment (it may not exist).
pub fn path(env: &EnvSnapshot) -> Option<PathBuf> {
    user_config_dir(env).map(|d| d.join(FILE_NAME))
}

/// Read the person's config file; the defaults when there is none.
///
/// # Errors
/// The file cannot be read, or says something crewmux cannot use: one line
/// `file:line:col: …` with the fix.
pub fn load() -> Result<Config> {
    let env = EnvSnapshot::current();
    let Some(path) = path(&env) else {
        return Ok(Config::default());
    };
    match std::fs::read_to_string(&path) {
        Ok(text) => parse(&path, &text, &crate::providers::Registry::load(None, &env)?),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Config::default()),
        Err(e) => Err(Error::io(path, e)),
    }
}

/// What to write for a value of the wrong type, by key (the rest is read from the type).
const HINTS: &[(&str, &str)] = &[
    ("mode", "use one of crazy, ccg, solo, quoted"),
    ("provider", "use a provider's name, quoted, e.g. \"codex\""),
    (
        "command",
        "use the program and its arguments as a list of strings, e.g. [\"ntfy\", \"publish\", \"my-runs\"]",
    ),
    (
        "command-timeout-s",
        "use a whole number of seconds from 1 to 3600",
    ),
];

/// Check `text`, the config file at `path`; `registry` knows the providers.
///
/// # Errors
/// One line `path:line:col: …` naming the key or value and what to write instead.
pub fn parse(path: &Path, text: &str, registry: &crate::providers::Registry) -> Result<Config> {
    let file: File = toml::from_str(text).map_err(|e| toml_error_with(path, text, &e, HINTS))?;
    let at = |span: std::ops::Range<usize>, msg: String| -> Error {
        let (line, col) = line_col(text, span.start);
        Error::Usage(format!("{}:{line}:{col}: {msg}", path.display()))
    };
    let mut config = Config {
        path: Some(path.to_path_buf()),
        ..Config::default()
    };
    let mut bindings = Vec::new();
    let mut spans = Vec::new();
    for (name, value) in &file.keys {
        let action = action_named(name.get_ref()).map_err(|m| at(name.span(), m))?;
        let texts = match value.get_ref() {
            OneOrMany::One(k) => vec![k.clone()],
            OneOrMany::Many(ks) if !ks.is_empty() => ks.clone(),
            OneOrMany::Many(_) => {
                return Err(at(
                    value.span(),
                    format!("`{}` has no key: give one, e.g. \"r\"", name.get_ref()),
                ))
            }
        };
        let keys = texts
            .iter()
            .map(|k| parse_key(k))
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|m| at(value.span(), m))?;
        bindings.push((action, keys));
        spans.push((action, value.span()));
    }
    // All at once: a swap of two actions' keys holds in either order of the file.
    config.keys.bind_all(bindings).map_err(|(action, m)| {
        let span = spans
            .iter()
            .find(|(a, _)| *a == action)
            .map_or(0..0, |(_, s)| s.clone());
        at(span, m)
    })?;
    for (role, colour) in &file.theme {
        let c = parse_colour(colour.get_ref()).map_err(|m| at(colour.span(), m))?;
        config
            .theme
            .set(role.get_ref(), c)
            .map_err(|m| at(role.span(), m))?;
    }
    config.notify = notify_ways(&file.notify, &at)?;
    if let Some(s) = file.lead.linger_s {
        config.lead.linger = std::time::Duration::from_secs(s);
    }
    if let Some(mode) = &file.defaults.mode {
        if !MODES.contains(&mode.get_ref().as_str()) {
            return Err(at(
                mode.span(),
                format!(
                    "unknown mode `{}`: use one of {}",
                    mode.get_ref(),
                    MODES.join(", ")
                ),
            ));
        }
        config.mode = Some(mode.get_ref().clone());
    }
    if let Some(p) = &file.defaults.provider {
        if registry.get(p.get_ref()).is_none() {
            let names: Vec<&str> = registry.names().collect();
            return Err(at(
                p.span(),
                format!(
                    "unknown provider `{}`: use one of {}",
                    p.get_ref(),
                    names.join(", ")
                ),
            ));
        }
        config.provider = Some(p.get_ref().clone());
    }
    Ok(config)
}

/// The `[notify]` table, checked: a command names a program, its timeout is 1-3600 s.
///
/// # Errors
/// One line at the value (through `at`) saying what to write.
fn notify_ways(
    n: &NotifyFile,
    at: &impl Fn(std::ops::Range<usize>, String) -> Error,
) -> Result<NotifyWays> {
    let mut ways = NotifyWays {
        bell: n.bell.unwrap_or(true),
        osc: n.osc.unwrap_or(true),
        notify_send: n.notify_send.unwrap_or(true),
        tmux: n.tmux.unwrap_or(true),
        ..NotifyWays::default()
    };
    if let Some(c) = &n.command {
        if c.get_ref().first().is_none_or(|p| p.trim().is_empty()) {
            return Err(at(
                c.span(),
                "`command` names no program: give it and its arguments, e.g. [\"ntfy\", \"publish\", \"my-runs\"], or leave the key out".into(),
            ));
        }
        ways.command = Some(c.get_ref().clone());
    }
    if let Some(t) = &n.command_timeout_s {
        let s = *t.get_ref();
        if !(1..=MAX_COMMAND_TIMEOUT_S).contains(&s) {
            return Err(at(
                t.span(),
                format!("command-timeout-s {s} is out of range: use 1 to {MAX_COMMAND_TIMEOUT_S} seconds"),
            ));
        }
        ways.command_timeout = std::time::Duration::from_secs(s);
    }
    Ok(ways)
}

/// Fill what the command line left open with the config's defaults: the mode when neither
/// `--mode` nor `--team` was given, the provider when `--provider` was not.
pub fn apply_defaults(opts: &mut crate::team::ResolveOptions, config: &Config) {
    use crate::team::Mode;
    if opts.mode.is_none() && opts.team_file.is_none() {
        opts.mode = config.mode.as_deref().and_then(|m| match m {
            "crazy" => Some(Mode::Crazy),
            "ccg" => Some(Mode::Ccg),
            "solo" => Some(Mode::Solo),
            _ => None,
        });
    }
    if opts.provider.is_none() {
        opts.provider.clone_from(&config.provider);
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
