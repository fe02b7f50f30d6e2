//! Command handlers: one function per subcommand, called by `main`. Each returns the
//! process exit code or a typed error.

pub mod clean;
pub mod creds;
pub mod dashboard;
pub mod dispatch;
pub mod doctor;
pub mod doctor_hosts;
pub mod drive;
pub mod home;
pub mod hook_event;
pub mod lead;
pub mod manage;
pub mod mcp_serve;
pub mod pane_text;
pub mod plan;
pub mod planning;
pub mod precheck;
pub mod run;
pub mod shell;
pub mod status;
pub mod steer;
pub mod summary;
pub mod workspace;

/// `println!` for command output on stdout that ends the process quietly (exit 0) when the
/// reader has gone away (`crewmux status | head`), instead of panicking on EPIPE.
#[macro_export]
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::commands::write_out(&format!("{}\n", format_args!($($arg)*)))
    };
}

/// `print!` counterpart of [`outln!`].
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::commands::write_out(&format!($($arg)*))
    };
}

/// `eprintln!` for messages on stderr that never panics: a reader that went away
/// (`crewmux run … 2>&1 | head -1`) or a full disk must not end a process that is driving
/// workers half way, so a line that cannot be written is dropped (stdout's [`outln!`]
/// ends the process instead: its reader wanted the output, stderr's only the news).
#[macro_export]
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::commands::write_err(&format!("{}\n", format_args!($($arg)*)))
    };
}

thread_local! {
    /// Lines [`write_err`] keeps instead of writing, while [`capture_err`] runs.
    static CAPTURED: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Run `f` with what it would write to stderr kept instead (this thread only); returns its
/// result and that text. For a command run from a screen that owns the terminal (the home
/// screen's `x` runs `clean`), which then shows the text itself.
pub fn capture_err<T>(f: impl FnOnce() -> T) -> (T, String) {
    let before = CAPTURED.with(|c| c.borrow_mut().replace(String::new()));
    let out = f();
    let text = CAPTURED.with(|c| std::mem::replace(&mut *c.borrow_mut(), before));
    (out, text.unwrap_or_default())
}

/// Write `text` to stderr; a failure drops it (see [`errln!`]). Kept instead while
/// [`capture_err`] runs on this thread.
pub fn write_err(text: &str) {
    use std::io::Write;
    let kept = CAPTURED.with(|c| match c.borrow_mut().as_mut() {
        Some(buf) => {
            buf.push_str(text);
            true
        }
        None => false,
    });
    if kept {
        return;
    }
    let mut stderr = std::io::stderr().lock();
    // Dropped on purpose: stderr carries news only, and a run must outlive its reader.
    let _ = stderr
        .write_all(text.as_bytes())
        .and_then(|()| stderr.flush());
}

/// Write `text` to stdout; a closed pipe ends the process with exit 0.
pub fn write_out(text: &str) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout
        .write_all(text.as_bytes())
        .and_then(|_| stdout.flush())
    {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
    }
}

use crate::cli::{Cli, Command};
use crate::error::Result;

/// Run the parsed command line; returns the process exit code. (The `dispatch` command is
/// [`dispatch::run`]; this is only the router.)
///
/// # Errors
/// Whatever the chosen command fails with: bad input as [`crate::error::Error::Usage`],
/// and the I/O, tmux and state errors of the command itself.
pub fn execute(cli: Cli) -> Result<i32> {
    let Some(command) = cli.command else {
        return home::run(
            cli.all,
            cli.home_tmux_socket.as_deref(),
            cli.home_project.as_deref(),
        );
    };
    // Before a command these would be the home screen's and silently unused.
    for (flag, given) in [
        ("--tmux-socket", cli.home_tmux_socket.is_some()),
        ("--project", cli.home_project.is_some()),
        ("--all", cli.all),
    ] {
        if given {
            return Err(crate::error::Error::Usage(format!(
                "{flag} before a command is the home screen's: put it after the command name (`crewmux <command> {flag} …`)"
            )));
        }
    }
    match command {
        Command::Creds(cmd) => creds::run(cmd),
        Command::Run(args) => run::run(args),
        Command::Demo(args) => run::demo(args),
        Command::SimAgent(args) => crate::sim::run(&args),
        Command::PaneText(args) => pane_text::run(&args),
        Command::Lead(args) => lead::run(args),
        Command::McpServe(args) => mcp_serve::run(args),
        Command::HookEvent(args) => hook_event::run(&args),
        Command::Status(args) => status::status(args),
        Command::Answer(args) => manage::answer(args),
        Command::Cancel(args) => manage::cancel(args),
        Command::Steer(args) => steer::run(args),
        Command::Attach(args) => manage::attach(args, false),
        Command::Resume(args) => manage::attach(args, true),
        Command::Clean(args) => manage::clean(args),
        Command::Merge(args) => workspace::merge(args),
        Command::Diff(args) => workspace::diff(args),
        Command::Doctor(args) => doctor::run(args),
        Command::Dispatch(args) => dispatch::run(args),
        Command::Completions(args) => shell::completions(args.shell),
        Command::Complete(args) => shell::complete(&args),
        Command::Man(args) => shell::man(&args),
    }
}
