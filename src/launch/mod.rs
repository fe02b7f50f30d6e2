//! The launch wrapper every attempt runs in (both backends) and the exit evidence it leaves:
//! `exit.json`, then the `__CREWMUX_EXIT_<nonce>__:<code>` marker line (docs/design.md "Exit
//! evidence", docs/tmux.md "Exit detection").

#[cfg(test)]
mod fence_tests;
mod marker;
mod marker_wait;
pub mod tail;
#[cfg(test)]
mod test_wrapper;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use marker::{find_marker, strip_ansi, MarkerScanner, MARKER_PREFIX};
pub use marker_wait::{make_release_fifo, release, MARKER_WAIT_S, RELEASE_FIFO};

use crate::error::{Error, Result};
use crate::store::write_replace;

/// The files of one attempt: `workers/<id>/attempt-<n>/{prompt.md,launch.sh,output.log,
/// exit.json,result.md}` (docs/design.md "The run directory").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptPaths {
    pub dir: PathBuf,
    pub prompt: PathBuf,
    pub launch: PathBuf,
    pub output: PathBuf,
    pub exit: PathBuf,
    pub result: PathBuf,
    /// Left by the wrapper when it cannot enter the working directory: that directory.
    pub cwd_failed: PathBuf,
}

impl AttemptPaths {
    pub fn new(dir: PathBuf) -> Self {
        AttemptPaths {
            prompt: dir.join("prompt.md"),
            launch: dir.join("launch.sh"),
            output: dir.join("output.log"),
            exit: dir.join("exit.json"),
            result: dir.join("result.md"),
            cwd_failed: dir.join(CWD_FAILED_FILE),
            dir,
        }
    }
}

/// `exit.json` as the wrapper writes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExitRecord {
    pub schema_version: u32,
    /// The agent's exit status; 128+n when killed by signal n.
    pub code: i32,
    pub nonce: String,
    /// When the agent ended, UTC with milliseconds (`2026-12-01T09:40:07.123Z`; whole
    /// seconds from a `date` without `%N`), by the clock of the machine it ran on. Absent
    /// in records of wrappers before the field: the exit's time is then when it was noticed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<chrono::DateTime<chrono::Utc>>,
}

/// File the wrapper leaves in the attempt folder when `cd` into the working directory
/// fails: the directory, one line.
pub const CWD_FAILED_FILE: &str = "cwd-failed";

/// Exit code of an attempt whose wrapper could not enter its working directory: the
/// shell's "found but cannot be run" (POSIX `sh`, "Exit Status for Commands").
pub const CWD_FAILED_CODE: i32 = 126;

/// The working directory an attempt's wrapper could not enter, if that is how it ended.
pub fn cwd_failed(attempt_dir: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(attempt_dir.join(CWD_FAILED_FILE)).ok()?;
    Some(PathBuf::from(text.trim_end_matches('\n')))
}

/// Why an attempt's fence could not start, if that is how it ended (the wrapper's
/// `sandbox::FAILED_FILE`, bwrap's words).
pub fn sandbox_failed(attempt_dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(attempt_dir.join(crate::sandbox::FAILED_FILE)).ok()?;
    let line = text.lines().next().unwrap_or("").trim();
    Some(if line.is_empty() {
        "bwrap did not start the agent".to_string()
    } else {
        line.to_string()
    })
}

/// A fresh random nonce for one attempt: 16 hex characters.
pub fn new_nonce() -> String {
    let id = uuid::Uuid::new_v4().simple().to_string();
    id[..16].to_string()
}

/// What the wrapper runs.
#[derive(Debug, Clone)]
pub struct WrapperSpec<'a> {
    pub worker: &'a str,
    pub attempt: u32,
    pub nonce: &'a str,
    pub argv: &'a [String],
    pub cwd: &'a Path,
    /// A file fed to the agent on stdin (prompt by stdin); `None` keeps the pane's tty.
    pub stdin_file: Option<&'a Path>,
    /// Wait for [`LOG_ATTACHED_KEY`] on the pane's tty before starting, so that tmux's
    /// `pipe-pane` is attached before the agent prints its first byte; and after the
    /// marker, until it is in `output.log` (see `marker_wait`).
    pub wait_for_log: bool,
    /// The driver lets the wrapper go once it has read the marker (through the attempt's
    /// [`RELEASE_FIFO`], made here): this machine's attempts. Otherwise the wrapper looks
    /// for the marker in `output.log` itself (an SSH host's).
    pub release_fifo: bool,
    /// A filter the agent's stdout goes through (`crewmux pane-text …`); the wrapper adds
    /// `--raw <dir>/cli-events.jsonl` and keeps the agent's own exit status.
    pub render: Option<&'a [String]>,
    /// The fence the agent's argv runs in (`sandbox::Policy::bwrap_argv`, ending with the
    /// fence's first command): the wrapper stays outside it, opens the fence's status
    /// files (`sandbox::STARTED_FILE`, `sandbox::ERR_FILE`) and, when the fence never
    /// started, leaves `sandbox::FAILED_FILE` with bwrap's reason.
    pub fence: Option<&'a [String]>,
}

/// The key (tmux `send-keys` name) typed into a new pane once its `pipe-pane` is attached:
/// the wrapper's first line reads the pane's tty and starts the agent when it comes.
///
/// Ctrl-D is the end-of-file character of a new pane's tty (canonical mode, `VEOF`; tmux
/// keeps the kernel's defaults for a session made detached), so the wrapper's `read` returns
/// at once, and the line discipline does not echo it, so the pane and `output.log` show
/// nothing of it. A key typed before the wrapper reads is kept by the tty until it does.
/// Waiting so forks nothing: looking for `output.log` every 50 ms forked a `sleep` in most
/// new panes, one more process start each (about a millisecond of CPU here) while the tmux
/// server makes the next windows.
pub const LOG_ATTACHED_KEY: &str = "C-d";

/// File where a rendered agent's exit status waits for the wrapper (the agent runs on the
/// left of a pipe, whose status `sh` does not give).
const AGENT_CODE_FILE: &str = ".agent-code";

/// Write `launch.sh` for an attempt. The agent's argv is quoted for `sh` (shlex); no text of
/// the problem or prompt is in it, only paths and provider flags. The marker is assembled
/// with `printf '%s'` pieces so that the script never contains the marker text itself.
/// When `cd` into the working directory fails the agent is not started: the wrapper writes
/// the directory to [`CWD_FAILED_FILE`] and ends the attempt with [`CWD_FAILED_CODE`].
///
/// SIGTERM (a cancel, a timeout: the whole process group gets it) is the agent's: the
/// wrapper catches it (`trap : TERM`; a caught signal is set back to its default in the
/// subshell that execs the agent, POSIX `sh` "trap"), waits for the agent and writes its
/// exit evidence as usual, and a render filter ignores it and ends when the agent's output
/// does. A wrapper that died on it made the pane read dead at once, and SIGKILL followed
/// then instead of after the grace.
///
/// # Errors
/// An argv element that cannot be quoted (a NUL byte), or an I/O error.
pub fn write_wrapper(paths: &AttemptPaths, spec: &WrapperSpec<'_>) -> Result<()> {
    let q = |s: &str| -> Result<String> {
        shlex::try_quote(s)
            .map(|c| c.into_owned())
            .map_err(|_| Error::Usage(format!("cannot pass {s:?} to a launch: it has a NUL byte")))
    };
    let argv = spec
        .argv
        .iter()
        .map(|a| q(a))
        .collect::<Result<Vec<_>>>()?
        .join(" ");
    let stdin = match spec.stdin_file {
        Some(f) => format!(" < {}", q(&f.display().to_string())?),
        None => String::new(),
    };
    let dir = q(&paths.dir.display().to_string())?;
    let (exec, fence_fds, fence_check) = fence_parts(spec.fence, &q)?;
    let run_agent = match spec.render {
        None => format!("( {exec} {argv} ){stdin}{fence_fds}\n  code=$?\n{fence_check}"),
        Some(filter) => {
            let filter = filter
                .iter()
                .map(|a| q(a))
                .collect::<Result<Vec<_>>>()?
                .join(" ");
            format!(
                "rm -f \"$dir/{AGENT_CODE_FILE}\"\n  \
                 {{ trap : TERM; ( {exec} {argv} ){stdin}{fence_fds}; echo \"$?\" > \"$dir/{AGENT_CODE_FILE}\"; }} \\\n    \
                 | ( trap '' TERM; exec {filter} --raw \"$dir/{events}\" )\n  \
                 piped=$?\n  \
                 code=$(cat \"$dir/{AGENT_CODE_FILE}\" 2>/dev/null)\n  \
                 [ -n \"$code\" ] || code=$piped\n{fence_check}",
                events = crate::providers::pane_text::EVENTS_FILE,
            )
        }
    };
    let log_wait = if spec.wait_for_log { "read -r _\n" } else { "" };
    let print_marker = format!(
        "printf '\\n%s%s%s:%d\\n' '__CREWMUX_' 'EXIT_'{nonce} '__' \"$code\"\n",
        nonce = q(spec.nonce)?
    );
    let print_marker = if spec.wait_for_log {
        if spec.release_fifo {
            marker_wait::make_release_fifo(&paths.dir)?;
        }
        marker_wait::print_and_wait(&print_marker, &q(spec.nonce)?, spec.release_fifo)
    } else {
        // The process backend: output goes to output.log directly.
        format!("{print_marker}sleep 0.05\n")
    };
    let script = format!(
        "#!/bin/sh\n\
         # crewmux launch wrapper: worker {worker}, attempt {attempt}. Generated; do not edit.\n\
         # Runs the agent in a subshell, writes exit.json, prints the exit marker, exits with\n\
         # the agent's status so that tmux's pane_dead_status agrees.\n\
         dir={dir}\n\
         CREWMUX_ATTEMPT_NONCE={nonce}; export CREWMUX_ATTEMPT_NONCE\n\
         # SIGTERM is the agent's: the wrapper stays to leave the exit evidence.\n\
         trap : TERM\n\
         {log_wait}\
         if cd {cwd}; then\n\
           {run_agent}\
         else\n\
           code={cwd_code}\n\
           printf '%s\\n' {cwd} > \"$dir/{CWD_FAILED_FILE}\"\n\
           echo \"crewmux: cannot enter working directory \"{cwd} >&2\n\
         fi\n\
         at=$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ 2>/dev/null)\n\
         case $at in *[!0-9TZ:.-]*|'') at=$(date -u +%Y-%m-%dT%H:%M:%SZ);; esac\n\
         printf '{{\"schema_version\":1,\"code\":%d,\"nonce\":\"%s\",\"ended_at\":\"%s\"}}\\n' \"$code\" {nonce} \"$at\" > \"$dir/.exit.json.tmp\" \\\n\
           && mv -f \"$dir/.exit.json.tmp\" \"$dir/exit.json\"\n\
         {print_marker}\
         exit \"$code\"\n",
        worker = spec.worker.replace('\n', " "),
        attempt = spec.attempt,
        cwd = q(&spec.cwd.display().to_string())?,
        nonce = q(spec.nonce)?,
        cwd_code = CWD_FAILED_CODE,
    );
    write_replace(&paths.launch, script.as_bytes())
}

/// The pieces of the wrapper for a fenced agent (`fence`): how the agent's subshell execs
/// it, the redirections of the fence's status files, and the check after it that leaves
/// `sandbox::FAILED_FILE` when the fence never started; all empty (`exec`) without one.
///
/// bwrap ignores SIGINT and SIGTERM (its first command inside sets them back for the
/// agent) so that it outlives the agent and passes on its status; fd 3 says the fence
/// started, bwrap's own stderr goes to a file, the agent's to fd 4.
///
/// # Errors
/// An argument that cannot be quoted.
fn fence_parts(
    fence: Option<&[String]>,
    q: &dyn Fn(&str) -> Result<String>,
) -> Result<(String, String, String)> {
    Ok(match fence {
        None => ("exec".to_string(), String::new(), String::new()),
        Some(fence) => {
            let fence = fence
                .iter()
                .map(|a| q(a))
                .collect::<Result<Vec<_>>>()?
                .join(" ");
            (
                format!("trap '' INT TERM; exec {fence}"),
                format!(
                    " 3>\"$dir/{started}\" 4>&2 2>\"$dir/{err}\"",
                    started = crate::sandbox::STARTED_FILE,
                    err = crate::sandbox::ERR_FILE
                ),
                format!(
                    "  if [ ! -s \"$dir/{started}\" ]; then\n    \
                     why=; read -r why < \"$dir/{err}\"\n    \
                     why=${{why#bwrap: }}\n    \
                     [ -n \"$why\" ] || why=\"bwrap exited $code before the agent started\"\n    \
                     printf '%s\\n' \"$why\" > \"$dir/{failed}\"\n  \
                     fi\n  \
                     [ -s \"$dir/{err}\" ] && cat \"$dir/{err}\" >&2\n",
                    started = crate::sandbox::STARTED_FILE,
                    err = crate::sandbox::ERR_FILE,
                    failed = crate::sandbox::FAILED_FILE,
                ),
            )
        }
    })
}

/// The environment variable every process of an attempt inherits from its wrapper: the
/// attempt's nonce. Found in `/proc/<pid>/environ` it names the attempt a process belongs
/// to, even one that left the process group (`setsid`, a double fork). (`CREWMUX_ATTEMPT`
/// is the attempt's number, 1-based, for the agent.)
pub const ATTEMPT_ENV: &str = "CREWMUX_ATTEMPT_NONCE";

/// The nonce of the attempt whose wrapper is at `launch` (its `CREWMUX_ATTEMPT_NONCE=` line);
/// `None` when there is no wrapper there or it has no such line.
pub fn wrapper_nonce(launch: &Path) -> Option<String> {
    let text = std::fs::read_to_string(launch).ok()?;
    text.lines().find_map(|l| {
        let v = l.strip_prefix(ATTEMPT_ENV)?.strip_prefix('=')?;
        let v = v.split(';').next()?.trim().trim_matches('\'');
        (!v.is_empty()).then(|| v.to_string())
    })
}

/// Read `exit.json` if it exists and carries this attempt's nonce. A record with another
/// nonce (an older attempt's file) is ignored; one that does not parse is `Err`.
///
/// # Errors
/// [`Error::Io`] when the file exists but cannot be read; [`Error::CorruptState`] when it is
/// not an exit record. A missing file is `Ok(None)`.
pub fn read_exit_file(path: &Path, nonce: &str) -> Result<Option<i32>> {
    Ok(read_exit_record(path, nonce)?.map(|r| r.code))
}

/// As [`read_exit_file`], the whole record (its code and, when it has one, its time).
///
/// # Errors
/// As [`read_exit_file`].
pub fn read_exit_record(path: &Path, nonce: &str) -> Result<Option<ExitRecord>> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(path, e)),
    };
    let rec: ExitRecord = serde_json::from_slice(&bytes).map_err(|e| Error::CorruptState {
        path: path.to_path_buf(),
        reason: format!("not an exit record: {e}"),
    })?;
    Ok((rec.nonce == nonce).then_some(rec))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn run_wrapper(argv: &[&str]) -> (tempfile::TempDir, AttemptPaths, std::process::Output) {
        run_wrapper_with(argv, None)
    }

    fn run_wrapper_with(
        argv: &[&str],
        render: Option<&[String]>,
    ) -> (tempfile::TempDir, AttemptPaths, std::process::Output) {
        let tmp = tempfile::tempdir().unwrap();
        let paths = AttemptPaths::new(tmp.path().to_path_buf());
        let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
        let spec = WrapperSpec {
            render,
            ..test_wrapper::spec(&argv, tmp.path())
        };
        write_wrapper(&paths, &spec).unwrap();
        let out = Command::new("sh").arg(&paths.launch).output().unwrap();
        (tmp, paths, out)
    }

    /// A filter like `crewmux pane-text`: keeps stdin in the `--raw` file, prints a line.
    fn filter() -> Vec<String> {
        ["sh", "-c", "cat > \"$2\"; echo rendered", "filter"]
            .map(String::from)
            .to_vec()
    }

    #[test]
    fn a_rendered_agent_keeps_its_exit_code_and_its_raw_output() {
        let f = filter();
        let (_t, paths, out) =
            run_wrapper_with(&["sh", "-c", "echo '{\"type\":\"x\"}'; exit 7"], Some(&f));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("rendered\n"), "{stdout}");
        assert!(
            !stdout.contains("\"type\""),
            "the raw line is not in the pane: {stdout}"
        );
        assert_eq!(read_exit_file(&paths.exit, "abc123").unwrap(), Some(7));
        assert_eq!(out.status.code(), Some(7));
        let raw = std::fs::read_to_string(paths.dir.join("cli-events.jsonl")).unwrap();
        assert_eq!(raw, "{\"type\":\"x\"}\n");
    }

    #[test]
    fn a_rendered_agent_killed_by_a_signal_is_128_plus_n() {
        let f = filter();
        let (_t, paths, _out) = run_wrapper_with(&["sh", "-c", "kill -TERM $$"], Some(&f));
        assert_eq!(read_exit_file(&paths.exit, "abc123").unwrap(), Some(143));
    }

    #[test]
    fn wrapper_records_the_code_in_exit_json_marker_and_status() {
        let (_t, paths, out) = run_wrapper(&["sh", "-c", "echo hi; exit 7"]);
        assert_eq!(out.status.code(), Some(7));
        assert_eq!(read_exit_file(&paths.exit, "abc123").unwrap(), Some(7));
        assert_eq!(read_exit_file(&paths.exit, "other").unwrap(), None);
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(find_marker(&text, "abc123"), Some(7));
        let script = std::fs::read_to_string(&paths.launch).unwrap();
        assert!(!script.contains("__CREWMUX_EXIT_abc123__"), "{script}");
    }

    #[test]
    fn exit_json_holds_when_the_agent_ended_and_old_records_still_load() {
        let before = chrono::Utc::now() - chrono::Duration::milliseconds(1);
        let (_t, paths, _out) = run_wrapper(&["sh", "-c", "sleep 0.3; exit 3"]);
        let after = chrono::Utc::now();
        let rec = read_exit_record(&paths.exit, "abc123").unwrap().unwrap();
        let at = rec
            .ended_at
            .expect("the wrapper records when the agent ended");
        assert!(before < at && at <= after, "{before} {at} {after}");
        // Milliseconds, not just seconds.
        let text = std::fs::read_to_string(&paths.exit).unwrap();
        assert!(
            text.contains(&format!(".{:03}Z", at.timestamp_subsec_millis())),
            "{text}"
        );
        let old = r#"{"schema_version":1,"code":4,"nonce":"abc123"}"#;
        std::fs::write(&paths.exit, old).unwrap();
        let rec = read_exit_record(&paths.exit, "abc123").unwrap().unwrap();
        assert_eq!((rec.code, rec.ended_at), (4, None));
    }

    #[test]
    fn an_exit_inside_the_agent_does_not_skip_the_marker() {
        let (_t, paths, out) = run_wrapper(&["sh", "-c", "exit 0"]);
        assert_eq!(out.status.code(), Some(0));
        assert_eq!(read_exit_file(&paths.exit, "abc123").unwrap(), Some(0));
    }

    #[test]
    fn hostile_argv_reaches_the_agent_unchanged() {
        let nasty = "it's \"quoted\"; $(rm -rf /) `id` \n-x \u{202e} 漢字 🎉";
        let (_t, _p, out) = run_wrapper(&["printf", "%s", nasty]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.starts_with(nasty), "{text:?}");
    }

    #[test]
    fn a_working_directory_it_cannot_enter_ends_the_attempt_before_the_agent() {
        let tmp = tempfile::tempdir().unwrap();
        let paths = AttemptPaths::new(tmp.path().to_path_buf());
        let gone = tmp.path().join("gone dir");
        let argv = vec![
            "touch".to_string(),
            tmp.path().join("ran").display().to_string(),
        ];
        let spec = test_wrapper::spec(&argv, &gone);
        write_wrapper(&paths, &spec).unwrap();
        let out = Command::new("sh").arg(&paths.launch).output().unwrap();
        assert_eq!(out.status.code(), Some(CWD_FAILED_CODE));
        assert!(!tmp.path().join("ran").exists(), "the agent did not start");
        assert_eq!(
            read_exit_file(&paths.exit, "abc123").unwrap(),
            Some(CWD_FAILED_CODE)
        );
        assert_eq!(cwd_failed(tmp.path()), Some(gone));
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(find_marker(&text, "abc123"), Some(CWD_FAILED_CODE));
    }

    #[test]
    fn a_signal_death_is_128_plus_n() {
        let (_t, paths, _out) = run_wrapper(&["sh", "-c", "kill -TERM $$"]);
        assert_eq!(read_exit_file(&paths.exit, "abc123").unwrap(), Some(143));
    }

    #[test]
    fn on_tmux_the_agent_starts_on_the_panes_key_and_nothing_is_forked_before() {
        let tmp = tempfile::tempdir().unwrap();
        let paths = AttemptPaths::new(tmp.path().to_path_buf());
        let began = tmp.path().join("began");
        let argv = ["touch", &began.display().to_string()].map(String::from);
        let spec = WrapperSpec {
            wait_for_log: true,
            release_fifo: true,
            ..test_wrapper::spec(&argv, tmp.path())
        };
        write_wrapper(&paths, &spec).unwrap();
        // stdin stands for the pane's tty: the key is its end of file.
        let mut child = Command::new("sh")
            .arg(&paths.launch)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let key = child.stdin.take().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(400));
        assert!(child.try_wait().unwrap().is_none(), "it waits for the key");
        assert!(!began.exists(), "the agent started before the key");
        let children = format!("/proc/{0}/task/{0}/children", child.id());
        let forked = std::fs::read_to_string(children).unwrap();
        assert_eq!(forked.trim(), "", "it forked while it waited");
        drop(key);
        let end = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !began.exists() && std::time::Instant::now() < end {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(began.exists(), "the agent never started after the key");
        // Let its marker wait go once it waits (its bound ends it otherwise).
        let end = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while child.try_wait().unwrap().is_none() && std::time::Instant::now() < end {
            crate::launch::release(tmp.path());
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert_eq!(child.wait().unwrap().code(), Some(0));
    }

    #[test]
    fn on_tmux_the_wrapper_stays_until_its_marker_is_in_output_log() {
        use std::io::Write;
        let tmp = tempfile::tempdir().unwrap();
        let paths = AttemptPaths::new(tmp.path().to_path_buf());
        // The pane's output, not yet copied to output.log: a lagging tmux server.
        let (mut child, text) = test_wrapper::started_until_marker(tmp.path(), false);
        std::thread::sleep(std::time::Duration::from_millis(500));
        assert!(child.try_wait().unwrap().is_none(), "it waits for the log");
        std::fs::OpenOptions::new()
            .append(true)
            .open(&paths.output)
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
        let start = std::time::Instant::now();
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(4));
        assert!(start.elapsed() < std::time::Duration::from_secs(2));
    }
}
