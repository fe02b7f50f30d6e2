//! Running a short probe command (version, auth status) with a hard timeout: a private
//! process group, killed whole with SIGKILL at the deadline.
#![allow(
    clippy::expect_used,
    reason = "stdout and stderr are piped just before they are taken"
)]

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::EnvSnapshot;

/// Output of a command run with a timeout.
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeOutput {
    /// None when the command was killed at its timeout or died by a signal.
    pub exit_code: Option<i32>,
    /// stdout and stderr, joined.
    pub output: String,
    pub timed_out: bool,
}

/// Run `program args` with stdin closed, a private process group and every variable of
/// `env` set (over the inherited environment); kill the group with SIGKILL at `timeout`.
///
/// # Errors
/// The program cannot be started.
pub fn run_with_timeout(
    program: &Path,
    args: &[String],
    env: &EnvSnapshot,
    timeout: Duration,
) -> std::io::Result<ProbeOutput> {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(program);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    cmd.envs(env.iter());
    let mut child = cmd.spawn()?;
    let pid = child.id();
    let mut out = child.stdout.take().expect("piped");
    let mut err = child.stderr.take().expect("piped");
    let t_out = std::thread::spawn(move || {
        let mut s = Vec::new();
        // A read error ends the capture early: what was read is the output there is.
        let _ = out.read_to_end(&mut s);
        s
    });
    let t_err = std::thread::spawn(move || {
        let mut s = Vec::new();
        // As for stdout: what was read is the output there is.
        let _ = err.read_to_end(&mut s);
        s
    });
    let deadline = Instant::now() + timeout;
    let mut timed_out = false;
    let status = loop {
        if let Some(st) = child.try_wait()? {
            break Some(st);
        }
        if Instant::now() >= deadline {
            timed_out = true;
            // Err: the group has already exited (ESRCH); the wait below reaps it either way.
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
            // Err: the child has already exited; the wait below reaps it.
            let _ = child.kill();
            break child.wait().ok();
        }
        std::thread::sleep(Duration::from_millis(15));
    };
    // The group is dead, so the pipes close and the readers end.
    let mut bytes = t_out.join().unwrap_or_default();
    bytes.push(b'\n');
    bytes.extend(t_err.join().unwrap_or_default());
    Ok(ProbeOutput {
        exit_code: if timed_out {
            None
        } else {
            status.and_then(|s| s.code())
        },
        output: String::from_utf8_lossy(&bytes).into_owned(),
        timed_out,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hanging_command_is_killed_at_its_timeout() {
        let env = EnvSnapshot::from_pairs([("PATH", "/usr/bin:/bin")]);
        let t0 = Instant::now();
        let out = run_with_timeout(
            Path::new("/bin/sh"),
            &["-c".into(), "sleep 30 & sleep 30".into()],
            &env,
            Duration::from_millis(200),
        )
        .unwrap();
        assert!(out.timed_out);
        assert_eq!(out.exit_code, None);
        assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    }
}
