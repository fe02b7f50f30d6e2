//! A message on every client of the person's own tmux server — the server of the `$TMUX`
//! the run was started from, never the private server the workers' panes live on — so
//! whichever window or session they look at shows it in its status line for
//! `display-time`. tmux(1): `list-clients -F '#{client_name}'` names each attached
//! client, `display-message -c <client> <message>` shows a message on one (the message is
//! a format: `#` is written `##`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The socket of the person's own tmux server as `$TMUX` (`socket,pid,session`) names it,
/// unless that is the private server `private_socket` (a `tmux -L` name) crewmux runs the
/// workers on; `None` outside tmux.
pub fn user_socket(tmux_env: Option<&str>, private_socket: &str) -> Option<PathBuf> {
    let socket = PathBuf::from(tmux_env?.split(',').next()?);
    if socket.as_os_str().is_empty() || socket == private_path(private_socket) {
        return None;
    }
    Some(socket)
}

/// The socket path of `tmux -L name`: `$TMUX_TMPDIR` (else `/tmp`), `tmux-<uid>`, `name`
/// (tmux(1), `-L`).
pub fn private_path(name: &str) -> PathBuf {
    let dir = std::env::var_os("TMUX_TMPDIR")
        .filter(|d| !d.is_empty())
        .map_or_else(|| PathBuf::from("/tmp"), PathBuf::from);
    dir.join(format!("tmux-{}", nix::unistd::getuid()))
        .join(name)
}

/// `msg` as a tmux format that shows it as it is.
pub fn escaped(msg: &str) -> String {
    msg.chars()
        .filter(|c| !c.is_control())
        .collect::<String>()
        .replace('#', "##")
}

/// Show `msg` on every client attached to the tmux server at `socket`, on a thread of
/// its own (a server that does not answer holds nobody up); failures are only logged
/// (no server, no client).
pub fn tell_clients(socket: &Path, msg: &str) {
    let (socket, msg) = (socket.to_path_buf(), escaped(msg));
    let spawned = std::thread::Builder::new()
        .name("crewmux-notify-tmux".into())
        .spawn(move || {
            for client in clients(&socket) {
                let shown = Command::new("tmux")
                    .arg("-S")
                    .arg(&socket)
                    .args(["display-message", "-c", &client, &msg])
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status();
                if !shown.as_ref().is_ok_and(std::process::ExitStatus::success) {
                    tracing::debug!("tmux display-message on {client}: {shown:?}");
                }
            }
        });
    if let Err(e) = spawned {
        tracing::debug!("tmux display-message: {e}");
    }
}

/// The clients attached to the server at `socket` (none when it does not answer).
fn clients(socket: &Path) -> Vec<String> {
    let out = Command::new("tmux")
        .arg("-S")
        .arg(socket)
        .args(["list-clients", "-F", "#{client_name}"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output();
    match out {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect(),
        other => {
            tracing::debug!("tmux list-clients on {}: {other:?}", socket.display());
            vec![]
        }
    }
}
