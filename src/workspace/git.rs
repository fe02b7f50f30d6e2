//! Running `git` as a child process, every call bounded by a timeout.
//!
//! crewmux drives git through its command line rather than a library: the user's own
//! configuration (identity, `core.autocrlf`, merge drivers) and hooks apply exactly as when
//! they run git themselves, and the behaviour is the one every other worktree tool relies on.
//! The same runner drives git on an SSH host ([`Git::over_ssh`]): each call is one
//! `ssh … -- <dest> 'env … git -C <dir> …'` over the host's shared connection.
#![allow(
    clippy::expect_used,
    reason = "stdout and stderr are piped just before they are taken"
)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use wait_timeout::ChildExt;

use crate::error::{Error, Result};

/// Default bound on one git call: 120 s (a `worktree add` of a large repository on a slow
/// disk takes seconds; a hung credential helper or hook must not hang the run).
pub const GIT_TIMEOUT: Duration = Duration::from_secs(120);

/// What one git call printed and how it ended.
#[derive(Debug, Clone)]
pub struct GitOutput {
    /// Exit status; `None` never happens (a killed call is an error).
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl GitOutput {
    pub fn ok(&self) -> bool {
        self.code == 0
    }
}

/// A git command runner for one directory.
#[derive(Debug, Clone)]
pub struct Git {
    dir: PathBuf,
    timeout: Duration,
    env: Vec<(String, String)>,
    /// `ssh <options> -- <dest>`: git runs on that host, `dir` is a path there.
    via: Option<Vec<String>>,
}

impl Git {
    /// Git in `dir` with the default [`GIT_TIMEOUT`].
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Git {
            dir: dir.into(),
            timeout: GIT_TIMEOUT,
            env: vec![],
            via: None,
        }
    }

    /// Git in `dir` on an SSH host: `ssh` is the call up to the destination (`ssh <options>
    /// -- <dest>`); each git call becomes one remote command line, its words quoted for
    /// the shell there, the environment passed through `env`.
    pub fn over_ssh(ssh: Vec<String>, dir: impl Into<PathBuf>) -> Self {
        Git {
            via: Some(ssh),
            ..Git::new(dir)
        }
    }

    /// The same runner with another timeout.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The same runner with an extra environment variable for every call.
    pub fn with_env(mut self, key: &str, value: &str) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Run `git args…`; returns its output whatever its exit status.
    ///
    /// # Errors
    /// Git cannot be started, or the call outlived the timeout (it is killed; the
    /// message names the command and the timeout).
    pub fn output(&self, args: &[&str]) -> Result<GitOutput> {
        let mut cmd = self.command(args)?;
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().map_err(|e| {
            Error::Other(format!(
                "cannot run git ({e}): install git or run with a shared workspace"
            ))
        })?;
        let mut out = child.stdout.take().expect("piped");
        let mut err = child.stderr.take().expect("piped");
        let out_reader = std::thread::spawn(move || {
            let mut buf = Vec::new();
            // A read error ends the capture early: what was read is the output there is.
            let _ = out.read_to_end(&mut buf);
            buf
        });
        let err_reader = std::thread::spawn(move || {
            let mut buf = Vec::new();
            // As for stdout: what was read is the stderr there is.
            let _ = err.read_to_end(&mut buf);
            buf
        });
        let program = || format!("git {} (in {})", args.join(" "), self.dir.display());
        let status = match child
            .wait_timeout(self.timeout)
            .map_err(|e| Error::Command {
                program: program(),
                message: e.to_string(),
            })? {
            Some(s) => s,
            None => {
                // Past the timeout: the error returned says so; kill and reap are best effort (the
                // child may have just exited).
                let _ = child.kill();
                let _ = child.wait();
                return Err(Error::Command {
                    program: program(),
                    message: format!(
                        "did not finish within {} s and was stopped",
                        self.timeout.as_secs()
                    ),
                });
            }
        };
        let stdout = String::from_utf8_lossy(&out_reader.join().unwrap_or_default()).into_owned();
        let stderr = String::from_utf8_lossy(&err_reader.join().unwrap_or_default()).into_owned();
        Ok(GitOutput {
            code: status.code().unwrap_or(128),
            stdout,
            stderr,
        })
    }

    /// Run `git args…` and return its stdout; a non-zero exit is an error carrying git's
    /// stderr (first line kept whole, the rest cut).
    ///
    /// # Errors
    /// [`Error::Command`] with git's stderr when git exits non-zero; as [`output`](Self::output)
    /// when git cannot start or outlives its timeout.
    pub fn run(&self, args: &[&str]) -> Result<String> {
        let out = self.output(args)?;
        if out.ok() {
            Ok(out.stdout)
        } else {
            Err(Error::Command {
                program: format!("git {}", args.join(" ")),
                message: format!("exit {}: {}", out.code, first_lines(&out.stderr, 3)),
            })
        }
    }

    /// The process of one call: `git -C <dir> args…` here, or its line through ssh.
    fn command(&self, args: &[&str]) -> Result<Command> {
        // Never wait on a terminal prompt for credentials or an editor.
        let mut env: Vec<(&str, &str)> = vec![
            ("GIT_TERMINAL_PROMPT", "0"),
            ("GIT_EDITOR", "true"),
            ("LC_ALL", "C"),
        ];
        env.extend(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        let Some(ssh) = &self.via else {
            let mut cmd = Command::new("git");
            cmd.arg("-C").arg(&self.dir).args(args);
            cmd.envs(env);
            return Ok(cmd);
        };
        let dir = self.dir.to_string_lossy();
        let mut words: Vec<String> = vec!["env".into()];
        words.extend(env.iter().map(|(k, v)| format!("{k}={v}")));
        words.extend(["git".into(), "-C".into(), dir.into_owned()]);
        words.extend(args.iter().map(|a| a.to_string()));
        let line = shlex::try_join(words.iter().map(String::as_str)).map_err(|_| {
            Error::Usage("cannot pass a git argument with a NUL byte over ssh".into())
        })?;
        let (program, options) = ssh
            .split_first()
            .ok_or_else(|| Error::Other("git over ssh without an ssh command".into()))?;
        let mut cmd = Command::new(program);
        cmd.args(options).arg(line);
        Ok(cmd)
    }

    /// Whether the local branch `name` (`refs/heads/<name>`) exists.
    ///
    /// # Errors
    /// As [`output`](Self::output): git cannot be started, or outlived its timeout.
    pub fn has_branch(&self, name: &str) -> Result<bool> {
        let r = format!("refs/heads/{name}");
        Ok(self.output(&["rev-parse", "--verify", "--quiet", &r])?.ok())
    }

    /// `run` with the output trimmed of its trailing newline.
    ///
    /// # Errors
    /// As [`run`](Self::run).
    pub fn line(&self, args: &[&str]) -> Result<String> {
        Ok(self.run(args)?.trim_end().to_string())
    }
}

/// The first `n` non-empty lines of `text`, joined with ` / `.
pub fn first_lines(text: &str, n: usize) -> String {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take(n)
        .collect::<Vec<_>>()
        .join(" / ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failing_call_keeps_git_stderr() {
        let tmp = tempfile::tempdir().unwrap();
        let err = Git::new(tmp.path())
            .run(&["rev-parse", "HEAD"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("not a git repository"), "{err}");
    }

    #[test]
    fn over_ssh_a_call_is_one_quoted_line_for_the_hosts_shell() {
        let ssh = ["ssh", "-o", "BatchMode=yes", "--", "me@b"].map(String::from);
        let cmd = Git::over_ssh(ssh.to_vec(), "/srv/work tree")
            .with_env("GIT_AUTHOR_NAME", "crewmux")
            .command(&["commit", "-m", "it's done"])
            .unwrap();
        assert_eq!(cmd.get_program(), "ssh");
        let args: Vec<String> = cmd
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(args[..4], ["-o", "BatchMode=yes", "--", "me@b"]);
        assert_eq!(
            shlex::split(&args[4]).unwrap(),
            [
                "env",
                "GIT_TERMINAL_PROMPT=0",
                "GIT_EDITOR=true",
                "LC_ALL=C",
                "GIT_AUTHOR_NAME=crewmux",
                "git",
                "-C",
                "/srv/work tree",
                "commit",
                "-m",
                "it's done"
            ]
        );
    }

    #[test]
    fn a_call_past_its_timeout_is_stopped_with_a_message() {
        let tmp = tempfile::tempdir().unwrap();
        // `git -c alias.x='!sleep 5' x`: a shell alias that outlives a 200 ms bound.
        let err = Git::new(tmp.path())
            .with_timeout(Duration::from_millis(200))
            .run(&["-c", "alias.slow=!sleep 5", "slow"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("did not finish within"), "{err}");
    }
}
