//! Command-line definitions (clap) only; handlers live in `commands`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

pub use crate::cli_limits::LimitArgs;

/// crewmux: run a team of AI coding agents in tmux panes; watch, steer and judge them.
#[derive(Debug, Parser)]
#[command(name = "crewmux", version, about, long_about = None)]
pub struct Cli {
    /// On an error, print its whole chain of causes, not one line (with a backtrace when
    /// `RUST_BACKTRACE=1` is set too).
    #[arg(short, long, global = true)]
    pub verbose: bool,
    /// Without a command on a terminal: the home screen, the runs of this project.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Home screen: list the runs of every project crewmux has run in.
    #[arg(long)]
    pub all: bool,
    /// Home screen: tmux server socket name (`tmux -L NAME`) of the runs it opens and
    /// starts [env: CREWMUX_TMUX_SOCKET] [default: crewmux]. After a command, that
    /// command's own `--tmux-socket`.
    #[arg(long = "tmux-socket", id = "home_tmux_socket", value_parser = socket_name)]
    pub home_tmux_socket: Option<String>,
    /// Home screen: project directory (default: the current one).
    #[arg(long = "project", id = "home_project")]
    pub home_project: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a team on a problem (dashboard on a terminal, --headless otherwise).
    Run(RunArgs),
    /// Run the built-in `crazy` team on the bundled demo problem with the simulated agent.
    Demo(DemoArgs),
    /// Reopen the dashboard on a run, reconciling its saved state with tmux.
    Attach(AttachArgs),
    /// Show a run (or the list of runs) as text or JSON.
    Status(StatusArgs),
    /// Answer a pending clarification (the run's, or a waiting worker's with --worker).
    Answer(AnswerArgs),
    /// Continue a run halted at a question, or interrupted.
    Resume(AttachArgs),
    /// Stop every worker of a run (SIGTERM, grace, SIGKILL) and mark it cancelled.
    Cancel(CancelArgs),
    /// Steer a run: add a worker, retry one (optionally with a new task), or type a line
    /// into a running worker's pane; a run another crewmux process drives gets the request.
    Steer(SteerArgs),
    /// Check tmux and every provider: installed, version, auth state, install hint.
    Doctor(DoctorArgs),
    /// Print the routing decision for a problem without launching anything.
    Dispatch(DispatchArgs),
    /// Print a shell completion script (e.g. `crewmux completions bash > ~/.local/share/bash-completion/completions/crewmux`).
    Completions(CompletionsArgs),
    /// Print the man page in roff (e.g. `crewmux man > ~/.local/share/man/man1/crewmux.1`), or
    /// write it and a page per command into a folder (`--dir`).
    Man(ManArgs),
    /// Manage the encrypted credential store.
    #[command(subcommand)]
    Creds(CredsCommand),
    /// Remove finished runs' tmux sessions and merged worktrees, with guards.
    Clean(CleanArgs),
    /// Bring a run's integration branch (or one worker's) into your checked-out branch.
    Merge(MergeArgs),
    /// Print a run's change: the integration branch, or one worker's.
    Diff(DiffArgs),
    /// The built-in simulated agent (used by `demo` and tests).
    #[command(hide = true)]
    SimAgent(crate::sim::SimAgentArgs),
    /// The filter that makes a CLI's JSON events readable in its pane (launch wrappers).
    #[command(hide = true)]
    PaneText(crate::commands::pane_text::PaneTextArgs),
    /// The run's lead: drives one run, detached from every terminal, until it ends
    /// (`run`, `demo`, `attach` and `resume` start it; its log is `<run dir>/lead.log`).
    #[command(hide = true)]
    Lead(LeadArgs),
    /// The MCP server an attempt's agent starts over stdio (its CREWMUX_MCP_CONFIG).
    #[command(hide = true)]
    McpServe(crate::commands::mcp_serve::McpServeArgs),
    /// One hook event of an attempt's agent CLI (its per-attempt hooks run it): kept in the
    /// attempt's `mcp/hooks.jsonl` for the lead.
    #[command(hide = true)]
    HookEvent(crate::commands::hook_event::HookEventArgs),
    /// What the completion scripts offer beyond clap's static lists: `runs`, this
    /// project's run ids, newest first, one a line.
    #[command(name = "__complete", hide = true)]
    Complete(CompleteArgs),
}

/// `crewmux __complete WHAT` (the completion scripts call it).
#[derive(Debug, Args)]
pub struct CompleteArgs {
    /// `runs`: the run ids of the project in the current directory.
    pub what: String,
}

/// Options of the hidden `crewmux lead` (docs/design.md "The lead and its dashboards").
#[derive(Debug, Args)]
pub struct LeadArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Run id.
    pub run: String,
    /// No bell or desktop notification.
    #[arg(long)]
    pub quiet: bool,
    /// Cap on a packaged prompt, characters.
    #[arg(long, default_value_t = 4000)]
    pub prompt_max_chars: usize,
    /// The socket of the person's own tmux server (the `$TMUX` the run was started
    /// from): its clients are shown the run's notifications.
    #[arg(long)]
    pub user_tmux: Option<std::path::PathBuf>,
}

/// Options shared by every command that touches runs.
#[derive(Debug, Args, Clone)]
pub struct CommonArgs {
    /// tmux server socket name (`tmux -L NAME`); never the user's default server.
    #[arg(
        long,
        env = "CREWMUX_TMUX_SOCKET",
        default_value = "crewmux",
        global = true,
        value_parser = socket_name
    )]
    pub tmux_socket: String,
    /// Project directory; runs live under `<project>/.crewmux/runs/`.
    #[arg(long, global = true)]
    pub project: Option<PathBuf>,
}

/// A `tmux -L` socket name ([`crate::domain::socket::socket_name`], the rule `hosts.toml`
/// follows too).
///
/// # Errors
/// The reason `s` is not a socket name, with the fix (clap prints it as a usage error).
pub fn socket_name(s: &str) -> Result<String, String> {
    crate::domain::socket::socket_name(s)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BackendArg {
    Tmux,
    Process,
}

/// `run --sandbox MODE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SandboxArg {
    None,
    Bwrap,
    Container,
}

impl From<SandboxArg> for crate::domain::SandboxMode {
    fn from(m: SandboxArg) -> Self {
        match m {
            SandboxArg::None => Self::None,
            SandboxArg::Bwrap => Self::Bwrap,
            SandboxArg::Container => Self::Container,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    Crazy,
    Ccg,
    Solo,
}

/// Options of a run (shared by `run` and `demo`).
#[derive(Debug, Args, Clone)]
pub struct RunOptions {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Where workers run; default: tmux when installed, else process.
    #[arg(long, value_enum)]
    pub backend: Option<BackendArg>,
    /// Workers launched at once (1..=256).
    #[arg(long, allow_negative_numbers = true, value_parser = crate::cli_values::whole_in::<usize>(1, 256))]
    pub parallel: Option<usize>,
    /// Print events on stderr and the summary JSON on stdout instead of the dashboard.
    #[arg(long)]
    pub headless: bool,
    /// Start the run with its own lead and print its id at once, without the dashboard
    /// (`crewmux attach <run>` opens it later).
    #[arg(long, conflicts_with = "headless")]
    pub detach: bool,
    /// With --detach: print the run's id and directory as JSON.
    #[arg(long, requires = "detach")]
    pub json: bool,
    /// Fix rounds after a blocked council, 0-10.
    #[arg(long, allow_negative_numbers = true, value_parser = crate::cli_values::whole_in::<u32>(0, 10))]
    pub max_fix_rounds: Option<u32>,
    /// Attempts per worker (failed, timed-out and crashed attempts are retried), 1-20.
    #[arg(long, allow_negative_numbers = true, value_parser = crate::cli_values::whole_in::<u32>(1, 20))]
    pub max_attempts: Option<u32>,
    /// No bell or desktop notification (also `--no-notify`).
    #[arg(long, visible_alias = "no-notify")]
    pub quiet: bool,
    #[command(flatten)]
    pub limits: LimitArgs,
    /// Stop the run once its workers' CLIs have spent this many US dollars (warned at
    /// 80 %); costs a CLI does not report come from providers.toml's `prices`.
    #[arg(long, value_name = "USD", allow_negative_numbers = true, value_parser = crate::cli_values::amount)]
    pub budget_usd: Option<f64>,
    /// Stop the run once its workers have used this many tokens, input and output (warned
    /// at 80 %); a CLI that reports none counts an estimate (bytes / 4).
    #[arg(long, value_name = "TOKENS", allow_negative_numbers = true, value_parser = crate::cli_values::tokens)]
    pub budget_tokens: Option<u64>,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub options: RunOptions,
    /// Built-in team.
    #[arg(long, value_enum, conflicts_with = "team")]
    pub mode: Option<ModeArg>,
    /// Team file (TOML, see examples/).
    #[arg(long)]
    pub team: Option<PathBuf>,
    /// Target: auto, codex, gemini, ccg, or a provider name.
    #[arg(long, default_value = "auto")]
    pub target: String,
    /// Force every worker onto one provider (e.g. `sim`).
    #[arg(long)]
    pub provider: Option<String>,
    /// Skip the run-level clarification gate.
    #[arg(long)]
    pub no_clarify: bool,
    /// Allow falling back to the simulated agent when no real provider is available.
    #[arg(long)]
    pub allow_sim_fallback: bool,
    /// Model role: default, smol, slow, plan, commit.
    #[arg(long, env = "CREWMUX_ROLE")]
    pub role: Option<String>,
    /// Cap on a packaged prompt, characters (the task itself is never cut).
    #[arg(
        long,
        default_value_t = 4000,
        allow_negative_numbers = true,
        value_parser = crate::cli_values::whole_in::<u64>(200, 1_000_000)
    )]
    pub prompt_max_chars: u64,
    /// Commit the workers' worktrees start from (branch, tag or SHA); default: HEAD.
    #[arg(long, value_name = "REF")]
    pub base: Option<String>,
    /// Base the workers on your working tree as it is, uncommitted changes included (your
    /// tree, index and stash are not touched).
    #[arg(long)]
    pub include_uncommitted: bool,
    /// Spread the workers that name no host over these hosts (`hosts.toml` names and
    /// `local`), by free capacity: `max_workers`, and `--parallel` for `local`.
    #[arg(long, value_name = "HOST,HOST", value_delimiter = ',')]
    pub hosts: Vec<String>,
    /// Fence every worker's agent (and the checks, critics and fixers): `bwrap`
    /// (bubblewrap), `container` (Podman or Docker) or `none`; over the team file's
    /// `[sandbox] mode` (README "Sandbox").
    #[arg(long, value_enum, value_name = "MODE")]
    pub sandbox: Option<SandboxArg>,
    /// Background the workers should know, as its own section of every agent's prompt:
    /// the text, or `@FILE` for a file's text.
    #[arg(long, value_name = "TEXT|@FILE")]
    pub context: Option<String>,
    /// Files of the project the task is about (paths relative to the project): listed in
    /// every agent's prompt, with their text as far as the prompt cap allows.
    #[arg(long, value_name = "PATH,PATH", value_delimiter = ',')]
    pub files: Vec<PathBuf>,
    /// What the result should be, as its own section of every agent's prompt.
    #[arg(long, value_name = "TEXT")]
    pub expected_outcome: Option<String>,
    /// Run only these workers of the team; the others are listed `not-run`.
    #[arg(long, value_name = "ID,ID", value_delimiter = ',')]
    pub only: Vec<String>,
    /// Run each worker's task as N candidates on different providers (2-8), rank them by
    /// the team's checks and keep the best (README "Races"); a worker's own `race` wins.
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = crate::cli_values::whole_in::<u32>(2, crate::domain::race::MAX_CANDIDATES as u64))]
    pub race: Option<u32>,
    /// The problem to work on (`-` reads it from standard input).
    pub problem: String,
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    #[command(flatten)]
    pub options: RunOptions,
    /// Seconds the demo's simulated question waits before taking its default answer.
    #[arg(long, default_value_t = 20, allow_negative_numbers = true, value_parser = crate::cli_values::seconds)]
    pub question_timeout: u64,
}

#[derive(Debug, Args)]
pub struct AttachArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Run id (or a unique prefix); default: the newest run.
    pub run: Option<String>,
    /// Continue without the dashboard.
    #[arg(long)]
    pub headless: bool,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Run id (or a unique prefix); without it, the list of runs.
    pub run: Option<String>,
    /// Print the run summary (or the list) as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct AnswerArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Run id (or a unique prefix).
    pub run: String,
    /// Answer this waiting worker instead of the run-level question.
    #[arg(long)]
    pub worker: Option<String>,
    /// The worker's approval request: allow it once (needs --worker).
    #[arg(long, requires = "worker", conflicts_with_all = ["text", "deny", "allow_always"])]
    pub allow: bool,
    /// The worker's approval request: allow it and every later request of its kind (tool
    /// name) for the rest of the run (needs --worker).
    #[arg(long, requires = "worker", conflicts_with_all = ["text", "deny"])]
    pub allow_always: bool,
    /// The worker's approval request: deny it, with REASON told to the agent when given
    /// (needs --worker; put the run id before it).
    #[arg(long, value_name = "REASON", num_args = 0..=1, default_missing_value = "",
          requires = "worker", conflicts_with = "text")]
    pub deny: Option<String>,
    /// The answer (not with --allow, --allow-always or --deny).
    #[arg(required_unless_present_any = ["allow", "allow_always", "deny"])]
    pub text: Option<String>,
}

#[derive(Debug, Args)]
pub struct SteerArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Run id (or a unique prefix).
    pub run: String,
    #[command(subcommand)]
    pub what: SteerCommand,
}

/// What `crewmux steer <run>` asks of the run.
#[derive(Debug, Subcommand)]
pub enum SteerCommand {
    /// Add a worker to the run; it joins the current round's work (a finished run reopens).
    Add {
        /// What the worker should do (for a `--command` worker: optional, it is told to
        /// run its command).
        #[arg(required_unless_present = "command")]
        task: Option<String>,
        /// Worker id: lowercase letters, digits and `-` [default: the first free `added-N`].
        #[arg(long)]
        id: Option<String>,
        /// The role its prompt is packaged for [default: the team's first worker's that is not a `command` worker, else `sim`].
        #[arg(long)]
        role: Option<String>,
        /// Provider it runs on [default: the team's first worker's that is not a `command` worker, else `sim`; `command` with `--command`].
        #[arg(long)]
        provider: Option<String>,
        /// Add a `command` worker running this program and its arguments, split as a
        /// shell splits words (e.g. `--command 'pytest -q'`) but never run through a shell.
        #[arg(long, value_name = "ARGV")]
        command: Option<String>,
    },
    /// Start a new attempt of a worker that has ended.
    Retry {
        /// The worker to retry.
        worker: String,
        /// Replace what the worker was told with this text.
        #[arg(long, conflicts_with = "task_file")]
        task: Option<String>,
        /// Replace what the worker was told with this file's text.
        #[arg(long)]
        task_file: Option<PathBuf>,
    },
    /// Type a line of text into a running worker's pane, then Enter (a waiting worker
    /// takes it as its answer); an agent's worker that has ended starts its next attempt
    /// with it, continuing its conversation.
    Send {
        /// The worker: running, waiting, or an agent's worker that has ended.
        worker: String,
        /// The text to type.
        text: String,
    },
}

#[derive(Debug, Args)]
pub struct CancelArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Run id (or a unique prefix).
    pub run: String,
    /// Cancel one worker only.
    #[arg(long)]
    pub worker: Option<String>,
    /// Grace period between SIGTERM and SIGKILL, seconds.
    #[arg(long, default_value_t = 5, allow_negative_numbers = true, value_parser = crate::cli_values::seconds)]
    pub grace: u64,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Check each SSH host of `hosts.toml` instead: ssh, tmux, git, workdir and every
    /// agent CLI there; exit 1 when a host that counts is unusable.
    #[arg(long)]
    pub hosts: bool,
    /// With `--hosts`: only the hosts this team file's workers name count, and the agent
    /// CLIs they name must be usable there.
    #[arg(long, requires = "hosts")]
    pub team: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct DispatchArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Target: auto, codex, gemini, ccg, or a provider name.
    #[arg(long, default_value = "auto")]
    pub target: String,
    /// Built-in team.
    #[arg(long, value_enum, conflicts_with = "team")]
    pub mode: Option<ModeArg>,
    /// Team file (TOML, see examples/).
    #[arg(long)]
    pub team: Option<PathBuf>,
    /// Force every worker onto one provider.
    #[arg(long)]
    pub provider: Option<String>,
    /// Allow falling back to the simulated agent when no real provider is available.
    #[arg(long)]
    pub allow_sim_fallback: bool,
    /// Model role: default, smol, slow, plan, commit.
    #[arg(long, env = "CREWMUX_ROLE")]
    pub role: Option<String>,
    /// Print the decision as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub limits: LimitArgs,
    /// Spread the workers that name no host over these hosts, as `run --hosts` does.
    #[arg(long, value_name = "HOST,HOST", value_delimiter = ',')]
    pub hosts: Vec<String>,
    /// Workers launched at once (1..=256), as `run --parallel` (`local`'s share with
    /// `--hosts`).
    #[arg(long, allow_negative_numbers = true, value_parser = crate::cli_values::whole_in::<usize>(1, 256))]
    pub parallel: Option<usize>,
    /// Route each worker as N race candidates, as `run --race` (2-8).
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = crate::cli_values::whole_in::<u32>(2, crate::domain::race::MAX_CANDIDATES as u64))]
    pub race: Option<u32>,
    /// The problem to route.
    pub problem: String,
}

#[derive(Debug, Subcommand)]
pub enum CredsCommand {
    /// Add a key (read from a no-echo prompt or stdin, never from argv).
    Add {
        #[arg(long)]
        provider: String,
        #[arg(long)]
        label: Option<String>,
        /// Expiry date, YYYY-MM-DD.
        #[arg(long)]
        expires: Option<String>,
    },
    /// List keys: labels, active marker, usage, expiry; never a key.
    List {
        #[arg(long)]
        provider: Option<String>,
    },
    /// Remove a key by label.
    Remove {
        #[arg(long)]
        provider: String,
        #[arg(long)]
        label: String,
    },
    /// Move a provider to its next key, or set its strategy.
    Rotate {
        #[arg(long)]
        provider: Option<String>,
        #[arg(long)]
        strategy: Option<String>,
    },
}

#[derive(Debug, Args)]
pub struct CleanArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Only this run.
    #[arg(long)]
    pub run: Option<String>,
    /// Also remove the run directories of finished runs.
    #[arg(long)]
    pub purge: bool,
    /// Also remove worktrees whose branches are not merged or have uncommitted changes.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct MergeArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Run id (or a unique prefix); default: the newest run.
    pub run: Option<String>,
    /// Take this worker's branch instead of the integration branch.
    #[arg(long, value_name = "ID")]
    pub worker: Option<String>,
    /// One commit on your branch instead of a merge commit.
    #[arg(long)]
    pub squash: bool,
    /// Print the diffstat of what would be merged; change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Take the integration branch even when the council blocked or a worker is left out
    /// of it (the workers not in it are named).
    #[arg(long)]
    pub force: bool,
    /// Push the branch `merge` would take to this git remote, under its own name, for a
    /// review there, instead of merging it into your branch here.
    #[arg(long, value_name = "REMOTE", conflicts_with = "squash")]
    pub push: Option<String>,
}

#[derive(Debug, Args)]
pub struct DiffArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Run id (or a unique prefix); default: the newest run.
    pub run: Option<String>,
    /// This worker's change instead of the integration branch's.
    #[arg(long, value_name = "ID")]
    pub worker: Option<String>,
    /// Files and line counts only.
    #[arg(long)]
    pub stat: bool,
}

impl From<ModeArg> for crate::team::Mode {
    fn from(m: ModeArg) -> Self {
        match m {
            ModeArg::Crazy => Self::Crazy,
            ModeArg::Ccg => Self::Ccg,
            ModeArg::Solo => Self::Solo,
        }
    }
}

/// `crewmux man [--dir DIR]`.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write `crewmux.1` and one page per command (`crewmux-run.1`, …) into this folder
    /// (e.g. `~/.local/share/man/man1`) instead of printing the main page.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<std::path::PathBuf>,
}

/// `crewmux completions SHELL`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}
