//! The programs a team's `command` workers, checks and critics start, looked up before the
//! run exists: a typo in `command = […]` is one line at `dispatch` and `run` instead of an
//! attempt that ends `exit 127` with the cause only in its output.
//!
//! The lookup is a shell's (POSIX `sh`, "Command Search and Execution"): a name without
//! `/` is searched on `PATH` (the `which` crate); an absolute path must exist. A relative
//! path with `/` (`./scripts/check.sh`) is not checked: it is read in the worker's tree,
//! which an upstream worker may still change.

use std::ffi::OsStr;
use std::path::Path;

use super::ResolvedTeam;
use crate::domain::{CheckSpec, CriticSpec, TeamSpec};
use crate::error::Error;

/// One program that cannot be found: who starts it (`worker `a``, `check `test``, `critic
/// `c``) and its `argv[0]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingProgram {
    pub who: String,
    pub program: String,
}

impl MissingProgram {
    /// `worker `a`: command `nosuch` not found on PATH: install it, or fix `command` in
    /// the team file`.
    pub fn message(&self) -> String {
        let where_ = if self.program.contains('/') {
            "no such file"
        } else {
            "not found on PATH"
        };
        format!(
            "{}: command `{}` {where_}: install it, or fix `command` in the team file",
            self.who, self.program
        )
    }
}

/// Whether `program` (an `argv[0]`) can be started, as a shell would find it with `path`
/// as `PATH`; `true` for a relative path with `/` (see the module doc).
pub fn program_found(program: &str, path: Option<&OsStr>, cwd: &Path) -> bool {
    if program.contains('/') {
        let p = Path::new(program);
        return !p.is_absolute() || p.exists();
    }
    which::which_in(program, path, cwd).is_ok()
}

/// A command line typed by the person (the dashboard's `+` form, `crewmux steer add
/// --command`) as an argv: split as a shell splits words (quotes keep words together),
/// never run through a shell; its program found as [`program_found`] finds it, relative
/// paths against `cwd`.
///
/// # Errors
/// One line naming the line or the program, and the fix.
pub fn argv_of(line: &str, cwd: &Path) -> Result<Vec<String>, String> {
    let argv = shlex::split(line)
        .filter(|a| !a.is_empty())
        .ok_or_else(|| {
            if line.trim().is_empty() {
                "type the command the worker runs (e.g. pytest -q)".to_string()
            } else {
                format!("command {line:?}: a quote is left open")
            }
        })?;
    let path = std::env::var_os("PATH");
    if !program_found(&argv[0], path.as_deref(), cwd) {
        return Err(format!(
            "command `{}` not found on PATH: install it, or give its path",
            argv[0]
        ));
    }
    Ok(argv)
}

/// The programs of `team` that run on this machine (workers without a host; checks and
/// critics, which run where the integration branch is) and cannot be found, in file order.
pub fn missing_programs(
    team: &ResolvedTeam,
    path: Option<&OsStr>,
    cwd: &Path,
) -> Vec<MissingProgram> {
    let workers = team
        .workers
        .iter()
        .filter(|w| w.host.is_none())
        .filter_map(|w| Some((format!("worker `{}`", w.id), w.command.as_deref()?)));
    missing_in(workers, &team.checks, &team.critics, path, cwd)
}

/// As [`missing_programs`], for a team file not routed yet: what `run` checks before the
/// run exists.
pub fn missing_in_spec(spec: &TeamSpec, path: Option<&OsStr>, cwd: &Path) -> Vec<MissingProgram> {
    let workers = spec
        .workers
        .iter()
        .filter(|w| w.host.is_none() && spec.host.is_none())
        .filter_map(|w| Some((format!("worker `{}`", w.id), w.command.as_deref()?)));
    missing_in(workers, &spec.checks, &spec.critics, path, cwd)
}

fn missing_in<'a>(
    workers: impl Iterator<Item = (String, &'a [String])>,
    checks: &'a [CheckSpec],
    critics: &'a [CriticSpec],
    path: Option<&OsStr>,
    cwd: &Path,
) -> Vec<MissingProgram> {
    let checks = checks
        .iter()
        .map(|c| (format!("check `{}`", c.id), c.command.as_slice()));
    let critics = critics
        .iter()
        .filter_map(|c| Some((format!("critic `{}`", c.id), c.command.as_deref()?)));
    workers
        .chain(checks)
        .chain(critics)
        .filter_map(|(who, argv)| {
            let program = argv.first()?;
            (!program_found(program, path, cwd)).then(|| MissingProgram {
                who,
                program: program.clone(),
            })
        })
        .collect()
}

/// The run-refusing form of [`missing_programs`] with this process's `PATH`.
///
/// # Errors
/// [`Error::Usage`] naming the first missing program, who starts it and the fix.
pub fn refuse_missing(team: &ResolvedTeam, project: &Path) -> Result<(), Error> {
    let path = std::env::var_os("PATH");
    first_refused(&missing_programs(team, path.as_deref(), project))
}

/// The run-refusing form of [`missing_in_spec`] with this process's `PATH`.
///
/// # Errors
/// As [`refuse_missing`].
pub fn refuse_missing_in_spec(spec: &TeamSpec, project: &Path) -> Result<(), Error> {
    let path = std::env::var_os("PATH");
    first_refused(&missing_in_spec(spec, path.as_deref(), project))
}

fn first_refused(missing: &[MissingProgram]) -> Result<(), Error> {
    match missing.first() {
        Some(m) => Err(Error::Usage(m.message())),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_name_is_looked_up_on_path_and_an_absolute_path_must_exist() {
        let dir = tempfile::tempdir().unwrap();
        let path = Some(OsStr::new("/usr/bin:/bin"));
        assert!(program_found("sh", path, dir.path()));
        assert!(!program_found("no-such-program-here", path, dir.path()));
        assert!(!program_found("/no/such/program", path, dir.path()));
        assert!(program_found("/bin/sh", path, dir.path()));
        // Read in the worker's tree, which an upstream may still change.
        assert!(program_found("./scripts/check.sh", path, dir.path()));
    }

    #[test]
    fn the_message_names_who_starts_it_and_the_fix() {
        let m = MissingProgram {
            who: "worker `a`".into(),
            program: "pytets".into(),
        };
        assert_eq!(
            m.message(),
            "worker `a`: command `pytets` not found on PATH: install it, or fix `command` in the team file"
        );
    }
}
