//! Real git repositories in temporary folders: make one, run git in it, and read what a
//! run left (its id, a command's stderr).

use std::path::Path;
use std::process::{Command, Output};

use super::{only_run_dir, project, Project};

/// `git -C dir args…`; its stdout without the trailing newline. Panics with git's stderr
/// when git fails.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim_end().to_string()
}

/// Whether `git -C dir args…` succeeds (for questions git answers by its exit code,
/// such as `merge-base --is-ancestor`).
pub fn git_ok(dir: &Path, args: &[&str]) -> bool {
    Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .status()
        .expect("git runs")
        .success()
}

/// A repository with `files` (paths may hold folders) committed on `main` as `start`, by
/// a user of its own (the machine's git identity is never needed).
pub fn repo(files: &[(&str, &str)]) -> Project {
    let tmp = project();
    let d = tmp.path();
    git(d, &["init", "-q", "-b", "main"]);
    git(d, &["config", "user.email", "user@example.com"]);
    git(d, &["config", "user.name", "User"]);
    for (name, text) in files {
        let p = d.join(name);
        std::fs::create_dir_all(p.parent().expect("a file in the repository"))
            .expect("make the file's folder");
        std::fs::write(p, text).expect("write the file");
    }
    git(d, &["add", "-A"]);
    git(d, &["commit", "-qm", "start"]);
    tmp
}

/// The id of the only run under `project`.
pub fn run_id(project: &Path) -> String {
    only_run_dir(project)
        .file_name()
        .expect("a run directory has a name")
        .to_string_lossy()
        .into_owned()
}

/// A command's stderr as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}
