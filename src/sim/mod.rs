//! The built-in simulated agent (`crewmux sim-agent`): a real process that streams plausible
//! progress over a few seconds, may ask a question on stdin, writes a markdown result and
//! exits with a chosen code. The demo and most tests drive it.
//!
//! Behaviour comes from flags, overridden by `sim:` directive lines in the prompt file, so
//! a team file can script each worker:
//!
//! | directive | effect |
//! | --- | --- |
//! | `sim: lines=N` | progress lines to print |
//! | `sim: delay-ms=N` | delay between lines, ms |
//! | `sim: exit=N` | exit code |
//! | `sim: fail-first` | exit 1 on attempt 1, then behave normally |
//! | `sim: ask=TEXT` | ask TEXT halfway through and wait for a line on stdin |
//! | `sim: ask-default=TEXT` | answer taken when nobody answers within `ask-timeout` |
//! | `sim: ask-timeout=N` | seconds to wait for the answer |
//! | `sim: fail-with=TEXT` | print TEXT (e.g. a rate-limit line) then exit 1 |
//! | `sim: no-result` | write no result file |
//! | `sim: seed=N` | seed of the deterministic script |

mod script;

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use crate::error::{Error, IoContext, Result};

pub use crate::domain::clarification::ASK_PREFIX;
pub use script::{Behaviour, ProjectFacts};

/// Flags of the simulated agent; every timing is in milliseconds.
#[derive(Debug, clap::Args, Clone)]
pub struct SimAgentArgs {
    /// The prompt file to read (also `$CREWMUX_PROMPT_FILE`).
    #[arg(long, env = "CREWMUX_PROMPT_FILE")]
    pub prompt_file: PathBuf,
    /// Where to write the markdown result.
    #[arg(long, env = "CREWMUX_RESULT_FILE")]
    pub result_file: Option<PathBuf>,
    /// The attempt number (1-based).
    #[arg(long, env = "CREWMUX_ATTEMPT", default_value_t = 1)]
    pub attempt: u32,
    /// Seed for the deterministic script.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Progress lines to print.
    #[arg(long, default_value_t = 12)]
    pub lines: u32,
    /// Delay between lines, ms.
    #[arg(long, default_value_t = 250)]
    pub line_delay_ms: u64,
    /// Exit code to end with.
    #[arg(long, default_value_t = 0)]
    pub exit_code: i32,
    /// Fail (exit 1) on attempt 1, then succeed.
    #[arg(long)]
    pub fail_first: bool,
    /// Ask this question on stdin halfway through and wait for the answer.
    #[arg(long)]
    pub ask: Option<String>,
    /// Take this answer when the question is unanswered for --ask-timeout seconds.
    #[arg(long)]
    pub ask_default: Option<String>,
    /// Seconds to wait for an answer before taking --ask-default.
    #[arg(long, default_value_t = 20)]
    pub ask_timeout: u64,
    /// Print this line (e.g. a rate-limit message) before failing with exit 1.
    #[arg(long)]
    pub fail_with: Option<String>,
    /// Write no result file (to test required artifacts).
    #[arg(long)]
    pub no_result: bool,
}

/// The directive of a prompt line `sim: key[=value]` (what follows `sim:`), `None` for any
/// other line. These lines steer the simulated agent only: a reader of the prompt (the
/// dashboard's Prompt tab) is shown the prompt without them.
pub fn directive(line: &str) -> Option<&str> {
    line.trim().strip_prefix("sim:")
}

/// `prompt` without its [`directive`] lines: the prompt as the person reads it.
pub fn without_directives(prompt: &str) -> String {
    let mut out: String = prompt
        .lines()
        .filter(|l| directive(l).is_none())
        .collect::<Vec<_>>()
        .join("\n");
    if prompt.ends_with('\n') {
        out.push('\n');
    }
    out
}

/// Run the simulated agent; returns its exit code.
///
/// # Errors
/// The prompt file cannot be read, or the result file cannot be written.
pub fn run(args: &SimAgentArgs) -> Result<i32> {
    let prompt = std::fs::read_to_string(&args.prompt_file).map_err(|e| {
        Error::Usage(format!(
            "sim-agent: cannot read prompt file {}: {e}",
            args.prompt_file.display()
        ))
    })?;
    let behaviour = Behaviour::from_args_and_prompt(args, &prompt);
    let mut out = std::io::stdout().lock();
    let script = script::progress_lines(&behaviour, &prompt);
    let half = script.len() / 2;
    let mut answer: Option<String> = None;

    say(
        &mut out,
        format_args!(
            "sim-agent: {} (attempt {}, seed {})",
            behaviour.role, args.attempt, behaviour.seed
        ),
    );
    for (i, line) in script.iter().enumerate() {
        if i == half {
            if let Some(question) = &behaviour.ask {
                answer = Some(ask(&mut out, question, &behaviour)?);
            }
        }
        say(&mut out, line);
        std::thread::sleep(Duration::from_millis(behaviour.delay_ms));
    }
    if script.is_empty() {
        if let Some(question) = &behaviour.ask {
            answer = Some(ask(&mut out, question, &behaviour)?);
        }
    }

    if let Some(text) = &behaviour.fail_with {
        say(&mut out, text);
        return Ok(1);
    }
    if behaviour.fail_first && args.attempt <= 1 {
        say(
            &mut out,
            format_args!(
                "error: simulated failure on attempt {} (fail-first); a retry will succeed",
                args.attempt
            ),
        );
        return Ok(1);
    }
    if !behaviour.no_result {
        if let Some(path) = &args.result_file {
            write_result(path, &behaviour, &prompt, answer.as_deref())?;
            say(
                &mut out,
                format_args!("result written to {}", path.display()),
            );
        }
    }
    say(
        &mut out,
        format_args!("done (exit {})", behaviour.exit_code),
    );
    Ok(behaviour.exit_code)
}

/// Print the question in the `__CREWMUX_ASK__:` protocol (with its default and wait, so
/// the dashboard can say them) and wait for one line on stdin, or take the default after
/// `ask_timeout_s`.
fn ask(out: &mut impl Write, question: &str, b: &Behaviour) -> Result<String> {
    let line = crate::domain::clarification::ScreenAsk {
        question: question.to_string(),
        default: b.ask_default.clone(),
        after_s: Some(b.ask_timeout_s),
    }
    .line();
    say(out, line);
    say(out, format_args!("? {question}"));
    // As in `say`: nothing to do when the pane is gone.
    let _ = write!(out, "> ").and_then(|()| out.flush());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let stdin = std::io::stdin();
        let got = stdin.lock().read_line(&mut line);
        // Err: the wait timed out and took the default; the late line has no reader.
        let _ = tx.send(got.map(|n| (n, line)));
    });
    let answer = match rx.recv_timeout(Duration::from_secs(b.ask_timeout_s)) {
        Ok(Ok((n, line))) if n > 0 => line.trim_end_matches(['\r', '\n']).to_string(),
        _ => match &b.ask_default {
            Some(d) => {
                say(out, "");
                say(
                    out,
                    format_args!("no answer after {}s; taking the default", b.ask_timeout_s),
                );
                d.clone()
            }
            None => String::new(),
        },
    };
    say(out, format_args!("answer received: {answer}"));
    Ok(answer)
}

/// Print one line of the agent's output and flush it, so the pane shows it at once.
fn say(out: &mut impl Write, line: impl std::fmt::Display) {
    // The agent's stdout is its pane or a pipe. When that is gone no one reads it, and the
    // run is decided by the exit file: the agent goes on to write its result and exit code.
    let _ = writeln!(out, "{line}").and_then(|()| out.flush());
}

fn write_result(path: &Path, b: &Behaviour, prompt: &str, answer: Option<&str>) -> Result<()> {
    let facts = ProjectFacts::scan(&std::env::current_dir().unwrap_or_default());
    let body = script::result_markdown(b, prompt, answer, &facts);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).at(dir)?;
    }
    crate::store::write_atomic(path, body.as_bytes())
}
