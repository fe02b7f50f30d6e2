//! `[workspace] setup`: a command run in the worker's worktree before the agent, inside the
//! worker's pane so its output is visible there.

use std::path::{Path, PathBuf};

use crate::domain::{RunState, WorkerKind, WorkerState};
use crate::error::{Error, Result};

/// File the setup script leaves in the attempt folder when setup fails: its exit code.
pub const SETUP_FAILED_FILE: &str = "setup-failed";

/// The argv to launch: the agent's own, or — for a team worker in a worktree of a run with
/// a setup command — `sh <attempt>/setup.sh <agent argv…>`, a script that runs the setup
/// (stdin from `/dev/null`, so a prompt fed on stdin still reaches the agent), and on a
/// non-zero exit N writes N to `<attempt>/setup-failed`, prints `setup failed (exit N)`
/// and exits N; otherwise it `exec`s the agent.
///
/// # Errors
/// The script cannot be written.
pub fn wrap_argv(
    state: &RunState,
    w: &WorkerState,
    attempt_dir: &Path,
    argv: Vec<String>,
) -> Result<Vec<String>> {
    wrap_argv_at(state, w, attempt_dir, attempt_dir, argv)
}

/// [`wrap_argv`] for an attempt whose folder is `there` where it runs (an SSH host) and
/// `attempt_dir` here: the script is written here (it travels with the attempt's files)
/// and named by its path there.
///
/// # Errors
/// The script cannot be written.
pub fn wrap_argv_at(
    state: &RunState,
    w: &WorkerState,
    attempt_dir: &Path,
    there: &Path,
    argv: Vec<String>,
) -> Result<Vec<String>> {
    // Err: most often no such file (no earlier failed setup in this attempt dir).
    let _ = std::fs::remove_file(attempt_dir.join(SETUP_FAILED_FILE));
    let Some(ws) = state.workspace.as_ref() else {
        return Ok(argv);
    };
    let setup = match &ws.setup {
        Some(s) if !s.is_empty() && w.kind == WorkerKind::Worker => s,
        _ => return Ok(argv),
    };
    if !ws.workers.contains_key(&w.id) {
        return Ok(argv);
    }
    let quoted = setup
        .iter()
        .map(|a| shlex::try_quote(a).map(|c| c.into_owned()))
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|_| Error::Usage("[workspace] setup: an argument has a NUL byte".into()))?
        .join(" ");
    let script = format!(
        "#!/bin/sh\n\
         # crewmux: [workspace] setup, then the agent. Generated; do not edit.\n\
         echo \"crewmux: setup: {shown}\"\n\
         {quoted} < /dev/null\n\
         code=$?\n\
         if [ \"$code\" -ne 0 ]; then\n\
           echo \"$code\" > \"$(dirname \"$0\")/{SETUP_FAILED_FILE}\"\n\
           echo \"crewmux: setup failed (exit $code)\" >&2\n\
           exit \"$code\"\n\
         fi\n\
         exec \"$@\"\n",
        shown = quoted.replace(['"', '$', '`', '\\'], "")
    );
    let path: PathBuf = attempt_dir.join("setup.sh");
    crate::store::write_replace(&path, script.as_bytes())?;
    let mut out = vec![
        "sh".to_string(),
        there.join("setup.sh").display().to_string(),
    ];
    out.extend(argv);
    Ok(out)
}

/// The exit code of a failed setup in this attempt, if it failed.
pub fn failed_code(attempt_dir: &Path) -> Option<i32> {
    std::fs::read_to_string(attempt_dir.join(SETUP_FAILED_FILE))
        .ok()?
        .trim()
        .parse()
        .ok()
}
