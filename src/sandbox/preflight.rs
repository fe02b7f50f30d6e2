//! Whether a sandbox mode can start on this machine, asked once before a run makes
//! anything (and by `doctor` and `dispatch`): a fence that cannot start is refused at the
//! start with one line and its fix, never run without.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::domain::SandboxMode;

/// Whether a mode can start here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Readiness {
    /// It can: what runs it (`bubblewrap 0.8.0`).
    Ready(String),
    /// It cannot: why, and the fix, one line.
    Refused(String),
}

/// `bwrap` on `path_var` (a `PATH` value), if it is there.
pub fn bwrap_program(path_var: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    find(path_var, "bwrap")
}

fn find(path_var: Option<&std::ffi::OsStr>, name: &str) -> Option<PathBuf> {
    std::env::split_paths(path_var?)
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// First line of a program's stderr (else stdout), trimmed.
fn first_line(out: &std::process::Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr);
    let text = if err.trim().is_empty() {
        String::from_utf8_lossy(&out.stdout).into_owned()
    } else {
        err.into_owned()
    };
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
        .to_string()
}

/// Whether `mode` can start here, `PATH` being `path_var`. `bwrap`: installed, and
/// `bwrap --ro-bind / / true` runs (it needs unprivileged user namespaces, or a setuid
/// bwrap); its stderr is the reason when it does not. `container`: a Podman or Docker that
/// answers `info`; and even then refused, this build does not launch containers yet.
pub fn preflight(mode: SandboxMode, path_var: Option<&std::ffi::OsStr>) -> Readiness {
    match mode {
        SandboxMode::None => Readiness::Ready("no fence".into()),
        SandboxMode::Bwrap => bwrap(path_var),
        SandboxMode::Container => container(path_var),
    }
}

fn bwrap(path_var: Option<&std::ffi::OsStr>) -> Readiness {
    let Some(prog) = bwrap_program(path_var) else {
        return Readiness::Refused(
            "bwrap (bubblewrap) is not installed: apt-get install bubblewrap".into(),
        );
    };
    let version = Command::new(&prog)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "bwrap".into());
    match Command::new(&prog)
        .args(["--ro-bind", "/", "/", "true"])
        .stdin(Stdio::null())
        .output()
    {
        Ok(o) if o.status.success() => Readiness::Ready(version),
        Ok(o) => Readiness::Refused(format!(
            "`bwrap --ro-bind / / true` failed here ({}): user namespaces are off or not allowed (sysctl kernel.unprivileged_userns_clone=1, or an AppArmor profile for bwrap)",
            match first_line(&o) {
                l if l.is_empty() => format!("exit {}", o.status.code().unwrap_or(-1)),
                l => l,
            }
        )),
        Err(e) => Readiness::Refused(format!("{} cannot be run: {e}", prog.display())),
    }
}

fn container(path_var: Option<&std::ffi::OsStr>) -> Readiness {
    let mut said = Vec::new();
    for name in ["podman", "docker"] {
        let Some(prog) = find(path_var, name) else {
            said.push(format!("{name} not installed"));
            continue;
        };
        match Command::new(&prog)
            .args(["info", "--format", "{{.ServerVersion}}"])
            .stdin(Stdio::null())
            .output()
        {
            Ok(o) if o.status.success() => {
                return Readiness::Refused(format!(
                    "{name} answers here, but this crewmux does not launch workers in containers yet: use `mode = \"bwrap\"`"
                ))
            }
            Ok(o) => said.push(format!("{name}: {}", first_line(&o))),
            Err(e) => said.push(format!("{name}: {e}")),
        }
    }
    Readiness::Refused(format!(
        "no container runtime can run here ({}): install and start Podman or Docker, or use `mode = \"bwrap\"`",
        said.join("; ")
    ))
}
