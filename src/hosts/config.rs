//! `hosts.toml`: the machines workers may run on besides this one. Read from the user's
//! config dir (`$CREWMUX_CONFIG_DIR`, else `$XDG_CONFIG_HOME/crewmux`, else
//! `~/.config/crewmux`), then `<project>/.crewmux/hosts.toml`; a host named in both takes
//! the project's table. A mistake is one `file:line:col` line: it refuses a run (or
//! `dispatch`) that uses an SSH host, and is a warning for one that uses none.
//!
//! ```toml
//! [hosts.box]
//! ssh = "me@box.example"          # a destination for `ssh`: ~/.ssh/config, keys and agent apply
//! ssh_args = ["-p", "2222"]       # optional, passed to ssh before the destination
//! workdir = "/home/me/crewmux"    # absolute; crewmux keeps its runs and repositories here
//! max_workers = 8                 # optional (default 8)
//! tmux = "tmux"                   # optional: the tmux program on that host
//! tmux_socket = "crewmux"         # optional: the `-L` socket name there (as `--tmux-socket`)
//! lost_after_s = 120              # optional, ≥ 1: unreachable this long → its workers are retried here
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::{Error, Result};
use crate::providers::spec::line_col;
use crate::providers::toml_hint::toml_error_with;
use crate::providers::EnvSnapshot;

/// The host every run has: this machine.
pub const LOCAL: &str = crate::domain::LOCAL_HOST;
/// Workers a host takes at once when `max_workers` is not set.
pub const DEFAULT_MAX_WORKERS: u32 = 8;
/// Seconds a host may not answer before it is lost, when `lost_after_s` is not set.
pub const DEFAULT_LOST_AFTER_S: u64 = 120;
/// The file name, in the user's config dir and in `<project>/.crewmux/`.
pub const HOSTS_FILE: &str = "hosts.toml";

/// One SSH host.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, Deserialize)]
pub struct HostSpec {
    pub name: String,
    /// The destination given to `ssh` (`user@name`, or a `Host` of `~/.ssh/config`).
    pub ssh: String,
    /// Options passed to `ssh` before the destination.
    pub ssh_args: Vec<String>,
    /// Absolute directory on the host for crewmux's runs and repositories.
    pub workdir: PathBuf,
    pub max_workers: u32,
    /// The tmux program on the host.
    pub tmux: String,
    /// The `-L` socket name of crewmux's tmux server on the host.
    pub tmux_socket: String,
    /// Seconds a host may not answer before its workers are marked `crashed (host lost)`
    /// and retried on this machine.
    #[serde(default = "default_lost_after")]
    pub lost_after_s: u64,
    /// The file the table was read from.
    pub source: PathBuf,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HostsFile {
    #[serde(default)]
    hosts: BTreeMap<String, toml::Spanned<HostTable>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HostTable {
    #[serde(default)]
    ssh: Option<toml::Spanned<String>>,
    #[serde(default)]
    ssh_args: Vec<String>,
    #[serde(default)]
    workdir: Option<toml::Spanned<String>>,
    #[serde(default)]
    max_workers: Option<toml::Spanned<u32>>,
    #[serde(default)]
    tmux: Option<toml::Spanned<String>>,
    #[serde(default)]
    tmux_socket: Option<toml::Spanned<String>>,
    #[serde(default)]
    lost_after_s: Option<toml::Spanned<u64>>,
}

/// What to write for a value of the wrong type, by key.
const HINTS: &[(&str, &str)] = &[
    ("max_workers", "use a whole number ≥ 1, e.g. 8"),
    (
        "lost_after_s",
        "use a whole number of seconds ≥ 1, e.g. 120",
    ),
    ("ssh", "use a quoted destination, e.g. \"me@box\""),
    (
        "workdir",
        "use a quoted absolute path on that host, e.g. \"/home/me/crewmux\"",
    ),
    ("tmux", "use a quoted program name or path, e.g. \"tmux\""),
    ("tmux_socket", "use a quoted socket name, e.g. \"crewmux\""),
    (
        "ssh_args",
        "use a list of quoted words, e.g. [\"-p\", \"2222\"]",
    ),
];

fn default_lost_after() -> u64 {
    DEFAULT_LOST_AFTER_S
}

/// The hosts a project can use, by name (`local` is implied and never listed).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hosts {
    pub hosts: BTreeMap<String, HostSpec>,
}

impl Hosts {
    /// The user's file, then the project's (see the module docs); no file is no hosts.
    ///
    /// # Errors
    /// [`Error::Usage`] naming the file, line and column of a mistake.
    pub fn load(project_dir: &Path, env: &EnvSnapshot) -> Result<Hosts> {
        let mut files = vec![];
        if let Some(dir) = crate::providers::user_config_dir(env) {
            files.push(dir.join(HOSTS_FILE));
        }
        files.push(project_dir.join(".crewmux").join(HOSTS_FILE));
        let mut hosts = Hosts::default();
        for path in files {
            let text = match std::fs::read_to_string(&path) {
                Ok(t) => t,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => {
                    return Err(Error::Usage(format!(
                        "{}: cannot read: {e}",
                        path.display()
                    )))
                }
            };
            hosts.hosts.extend(parse(&path, &text)?);
        }
        Ok(hosts)
    }

    /// The host called `name` (`None` for `local`).
    ///
    /// # Errors
    /// [`Error::Usage`] when no `hosts.toml` defines it, naming the hosts that exist and the
    /// one it most likely meant (`did you mean `box`?`, `config_hint::meant`).
    pub fn get(&self, name: &str) -> Result<Option<&HostSpec>> {
        if name == LOCAL {
            return Ok(None);
        }
        self.hosts.get(name).map(Some).ok_or_else(|| {
            let known: Vec<&str> = std::iter::once(LOCAL)
                .chain(self.hosts.keys().map(String::as_str))
                .collect();
            if let Some(meant) = super::config_hint::meant(name, known.iter().copied()) {
                return Error::Usage(format!(
                    "unknown host `{name}`: did you mean `{meant}`? (the hosts are {})",
                    known.join(", ")
                ));
            }
            if !is_host_name(name) {
                return Error::Usage(format!(
                    "unknown host `{name}`: the hosts are {}; a host name uses letters, digits, `-`, `_` or `.`",
                    known.join(", ")
                ));
            }
            Error::Usage(format!(
                "unknown host `{name}`: the hosts are {}; add `[hosts.{name}]` to {HOSTS_FILE} \
                 in your config dir or <project>/.crewmux/",
                known.join(", ")
            ))
        })
    }
}

/// A `hosts.toml` mistake as a one-line warning, for a run (or a dispatch) that uses no
/// SSH host: it goes on, and the person learns of the file before a run that uses a host
/// is refused by it. `None` when the files read (or there are none).
pub fn unused_file_warning(project_dir: &Path, env: &EnvSnapshot) -> Option<String> {
    let e = Hosts::load(project_dir, env).err()?;
    Some(format!(
        "warning: {e} (this run uses no SSH host, so it goes on; a run that uses one is refused until the file is fixed)"
    ))
}

/// The rule of a host name: letters, digits, `-`, `_` or `.` (a bare TOML key, so
/// `[hosts.NAME]` needs no quotes).
pub fn is_host_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
}

/// Parse one `hosts.toml`.
///
/// # Errors
/// [`Error::Usage`] `file:line:col: message` for TOML or a bad value.
pub fn parse(path: &Path, text: &str) -> Result<BTreeMap<String, HostSpec>> {
    let file: HostsFile = toml::from_str(text).map_err(|e| {
        let err = toml_error_with(path, text, &e, HINTS);
        match e.span() {
            Some(span) => super::config_hint::with_hosts_prefix(
                super::config_hint::with_host(err, text, span.start, HINTS),
                text,
                span.start,
            ),
            None => err,
        }
    })?;
    let mut out = BTreeMap::new();
    for (name, table) in file.hosts {
        let (line, col) = line_col(text, table.span().start);
        let at = |msg: String| Error::Usage(format!("{}:{line}:{col}: {msg}", path.display()));
        let t = table.into_inner();
        if name == LOCAL {
            return Err(at(format!(
                "`[hosts.{LOCAL}]`: `{LOCAL}` is this machine and always a host; give the SSH host another name"
            )));
        }
        if !is_host_name(&name) {
            return Err(at(format!(
                "host name `{name}`: use letters, digits, `-`, `_` or `.`"
            )));
        }
        // A value's mistake is placed at the value; a missing key at its table.
        let at_value = |start: usize, msg: String| {
            let (line, col) = line_col(text, start);
            Error::Usage(format!("{}:{line}:{col}: {msg}", path.display()))
        };
        let Some(ssh) = t.ssh else {
            return Err(at(format!(
                "host `{name}`: `ssh` is missing: add `ssh = \"me@box\"`, a destination for `ssh`"
            )));
        };
        if ssh.get_ref().trim().is_empty() || ssh.get_ref().starts_with('-') {
            return Err(at_value(ssh.span().start, format!(
                "host `{name}`: `ssh` must be a destination such as `me@box` (options go in `ssh_args`)"
            )));
        }
        let Some(workdir_value) = t.workdir else {
            return Err(at(format!(
                "host `{name}`: `workdir` is missing: add `workdir = \"/absolute/path\"`, a folder on that host for crewmux's runs"
            )));
        };
        let workdir = PathBuf::from(workdir_value.get_ref());
        if !workdir.is_absolute() {
            return Err(at_value(
                workdir_value.span().start,
                format!(
                    "host `{name}`: `workdir` {:?} must be an absolute path on that host",
                    workdir_value.get_ref()
                ),
            ));
        }
        let max_workers = match t.max_workers {
            Some(m) if *m.get_ref() == 0 => {
                return Err(at_value(
                    m.span().start,
                    format!("host `{name}`: `max_workers` must be at least 1"),
                ))
            }
            Some(m) => m.into_inner(),
            None => DEFAULT_MAX_WORKERS,
        };
        let (tmux, tmux_socket, lost_after_s) =
            tmux_and_loss(&name, t.tmux, t.tmux_socket, t.lost_after_s, &at_value)?;
        out.insert(
            name.clone(),
            HostSpec {
                name,
                ssh: ssh.into_inner(),
                ssh_args: t.ssh_args,
                workdir,
                max_workers,
                tmux,
                tmux_socket,
                lost_after_s,
                source: path.to_path_buf(),
            },
        );
    }
    Ok(out)
}

/// `tmux`, `tmux_socket` and `lost_after_s` of host `name`, checked, or their defaults.
fn tmux_and_loss(
    name: &str,
    tmux: Option<toml::Spanned<String>>,
    tmux_socket: Option<toml::Spanned<String>>,
    lost_after_s: Option<toml::Spanned<u64>>,
    at_value: &dyn Fn(usize, String) -> Error,
) -> Result<(String, String, u64)> {
    let tmux = match tmux {
        Some(p) if p.get_ref().trim().is_empty() => {
            return Err(at_value(
                p.span().start,
                format!(
                    "host `{name}`: `tmux` is empty: name the tmux program on that host, \
                     e.g. \"tmux\", or leave the key out"
                ),
            ))
        }
        Some(p) => p.into_inner(),
        None => "tmux".into(),
    };
    let tmux_socket = match tmux_socket {
        Some(s) => crate::domain::socket::socket_name(s.get_ref())
            .map_err(|m| at_value(s.span().start, format!("host `{name}`: `tmux_socket` {m}")))?,
        None => "crewmux".into(),
    };
    // 0 would lose the host at its first missed poll; never-lost is not offered (its
    // workers would wait for it forever).
    let lost_after_s = match lost_after_s {
        Some(l) if *l.get_ref() == 0 => {
            return Err(at_value(
                l.span().start,
                format!(
                    "host `{name}`: `lost_after_s` must be at least 1 (seconds); \
                     leave it out for {DEFAULT_LOST_AFTER_S}"
                ),
            ))
        }
        Some(l) => l.into_inner(),
        None => DEFAULT_LOST_AFTER_S,
    };
    Ok((tmux, tmux_socket, lost_after_s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_table_is_read_with_its_defaults() {
        let hosts = parse(
            Path::new("h.toml"),
            "[hosts.box]\nssh = \"me@box\"\nworkdir = \"/srv/crew\"\n",
        )
        .unwrap();
        let h = &hosts["box"];
        assert_eq!(h.ssh, "me@box");
        assert_eq!(h.workdir, PathBuf::from("/srv/crew"));
        assert_eq!(h.max_workers, DEFAULT_MAX_WORKERS);
        assert_eq!(h.tmux, "tmux");
        assert_eq!(h.tmux_socket, "crewmux");
    }

    #[test]
    fn mistakes_are_one_line_at_their_place() {
        let e = parse(
            Path::new("h.toml"),
            "[hosts.box]\nssh = \"me@box\"\nworkdir = \"crew\"\n",
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("h.toml:3:11: host `box`: `workdir`"), "{e}");
        let e = parse(Path::new("h.toml"), "[hosts.box]\nworkdir = \"/w\"\n")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "h.toml:1:1: host `box`: `ssh` is missing: add `ssh = \"me@box\"`, a destination for `ssh`"
        );
        let e = parse(
            Path::new("h.toml"),
            "[hosts.local]\nssh = \"x\"\nworkdir = \"/w\"\n",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("`local` is this machine"), "{e}");
        let e = parse(
            Path::new("h.toml"),
            "[hosts.b]\nssh = \"x\"\nworkdir = \"/w\"\nport = 2\n",
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("h.toml:") && e.contains("port"), "{e}");
        assert!(!e.contains('\n'), "{e}");
        let e = parse(
            Path::new("h.toml"),
            "[hosts.b]\nssh = \"x\"\nworkdir = \"/w\"\nlost_after_s = 99999999999999999999\n",
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            e,
            "h.toml:4:16: host `b`: `lost_after_s`: use a whole number of seconds ≥ 1, e.g. 120 \
             (not 99999999999999999999)"
        );
    }

    fn one(extra: &str) -> String {
        parse(
            Path::new("h.toml"),
            &format!("[hosts.b]\nssh = \"x\"\nworkdir = \"/w\"\n{extra}\n"),
        )
        .unwrap_err()
        .to_string()
    }

    #[test]
    fn bad_values_are_refused_by_the_clis_rules_naming_the_key_and_the_fix() {
        let e = one("tmux_socket = \"a/b\"");
        assert!(
            e.starts_with("h.toml:4:15: host `b`: `tmux_socket` `a/b` is not a socket name"),
            "{e}"
        );
        assert!(one("tmux_socket = \"default\"").contains("`default`"));
        let e = one("lost_after_s = 0");
        assert!(
            e.starts_with("h.toml:4:16: host `b`: `lost_after_s` must be at least 1"),
            "{e}"
        );
        let e = one("tmux = \"\"");
        assert!(
            e.starts_with("h.toml:4:8: host `b`: `tmux` is empty"),
            "{e}"
        );
        assert_eq!(
            one("max_workers = -3"),
            "h.toml:4:15: host `b`: `max_workers`: use a whole number ≥ 1, e.g. 8 (not -3)"
        );
        assert_eq!(
            one("lost_after_s = \"soon\""),
            "h.toml:4:16: host `b`: `lost_after_s`: use a whole number of seconds ≥ 1, e.g. 120 (not \"soon\")"
        );
    }

    #[test]
    fn the_project_file_overrides_the_users_and_unknown_names_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let user = dir.path().join("user");
        let project = dir.path().join("project");
        std::fs::create_dir_all(&user).unwrap();
        std::fs::create_dir_all(project.join(".crewmux")).unwrap();
        std::fs::write(
            user.join(HOSTS_FILE),
            "[hosts.a]\nssh = \"u@a\"\nworkdir = \"/a\"\n[hosts.b]\nssh = \"u@b\"\nworkdir = \"/b\"\n",
        )
        .unwrap();
        std::fs::write(
            project.join(".crewmux").join(HOSTS_FILE),
            "[hosts.b]\nssh = \"p@b\"\nworkdir = \"/pb\"\n",
        )
        .unwrap();
        let env = EnvSnapshot::from_pairs([("CREWMUX_CONFIG_DIR", user.display().to_string())]);
        let hosts = Hosts::load(&project, &env).unwrap();
        assert_eq!(hosts.get("a").unwrap().unwrap().ssh, "u@a");
        assert_eq!(hosts.get("b").unwrap().unwrap().ssh, "p@b");
        assert_eq!(hosts.get(LOCAL).unwrap(), None);
        let e = hosts.get("c").unwrap_err().to_string();
        assert!(
            e.contains("unknown host `c`") && e.contains("local, a, b"),
            "{e}"
        );
        assert!(e.contains("add `[hosts.c]`"), "{e}");
        // A name close to a host's: that host, not a table to add.
        let e = hosts.get("B").unwrap_err().to_string();
        assert!(
            e.contains("unknown host `B`: did you mean `b`? (the hosts are local, a, b)")
                && !e.contains("[hosts."),
            "{e}"
        );
        // A name no table could have: the rule, not a table that is not TOML.
        let e = hosts.get("TRY BOX").unwrap_err().to_string();
        assert!(
            e.contains("unknown host `TRY BOX`")
                && e.contains("a host name uses letters, digits, `-`, `_` or `.`")
                && !e.contains("[hosts."),
            "{e}"
        );
        assert_eq!(unused_file_warning(&project, &env), None);
    }

    #[test]
    fn a_broken_file_is_a_one_line_warning_naming_its_place_for_a_run_without_hosts() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("project");
        std::fs::create_dir_all(project.join(".crewmux")).unwrap();
        let env = EnvSnapshot::from_pairs([(
            "CREWMUX_CONFIG_DIR",
            dir.path().join("none").display().to_string(),
        )]);
        assert_eq!(unused_file_warning(&project, &env), None, "no file");
        let file = project.join(".crewmux").join(HOSTS_FILE);
        std::fs::write(
            &file,
            "[hosts.b]\nssh = \"u@b\"\nworkdir = \"/b\"\nmax_workers = 0\n",
        )
        .unwrap();
        let w = unused_file_warning(&project, &env).unwrap();
        assert!(
            w.starts_with(&format!("warning: {}:4:", file.display()))
                && w.contains("max_workers")
                && w.contains("goes on"),
            "{w}"
        );
        assert_eq!(w.lines().count(), 1, "{w}");
    }
}
