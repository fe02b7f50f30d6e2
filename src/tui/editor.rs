//! Edit-and-retry (`e`): the worker's task goes to a file in its folder of the run, the
//! dashboard gives the terminal to the person's editor (`$VISUAL`, else `$EDITOR`, else
//! `vi`, run through `sh -c` as git runs it, so `EDITOR="code --wait"` works), and the
//! edited text becomes the task of the worker's next attempt.

use super::terminal::TerminalGuard;
use crate::domain::RunState;
use crate::store::RunStore;

/// Name of the file the task is edited in, in `workers/<id>/`.
pub const TASK_FILE: &str = "task-edit.md";

/// The editor command: `$VISUAL`, else `$EDITOR`, else `vi`.
pub fn editor_command() -> String {
    ["VISUAL", "EDITOR"]
        .iter()
        .filter_map(|v| std::env::var(v).ok())
        .find(|v| !v.trim().is_empty())
        .unwrap_or_else(|| "vi".into())
}

/// Open `worker`'s task in the editor with the dashboard suspended; returns the edited
/// task.
///
/// # Errors
/// One line for the person when nothing is to be retried: the file cannot be written or
/// read, the editor cannot start or exits non-zero, or the task is empty or unchanged.
pub fn edit_task(
    guard: &mut TerminalGuard,
    run: &RunState,
    worker: &str,
    store: &RunStore,
) -> Result<String, String> {
    let Some(w) = run.worker(worker) else {
        return Err(format!("there is no worker `{worker}` in this run"));
    };
    let dir = store.dir().join("workers").join(worker);
    let path = dir.join(TASK_FILE);
    std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::write(&path, &w.task))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    let editor = editor_command();
    let mut cmd = std::process::Command::new("sh");
    cmd.arg("-c")
        .arg(format!("{editor} \"$1\""))
        .arg("sh")
        .arg(&path);
    let status = guard
        .suspend(|| cmd.status())
        .map_err(|e| format!("cannot give the terminal to the editor: {e}"))?
        .map_err(|e| format!("cannot start the editor `{editor}`: {e}"))?;
    if !status.success() {
        let code = status.code().map_or("a signal".into(), |c| c.to_string());
        return Err(format!(
            "the editor `{editor}` exited with {code}: {worker} not retried"
        ));
    }
    let edited = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let edited = edited.trim_end().to_string();
    if edited.trim().is_empty() {
        return Err(format!("the task is empty: {worker} not retried"));
    }
    if edited == w.task.trim_end() {
        return Err(format!(
            "the task is unchanged: {worker} not retried (r retries it as it is)"
        ));
    }
    Ok(edited)
}
