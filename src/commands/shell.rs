//! Shell conventions: completion scripts (clap_complete) and the man page (clap_mangen),
//! both generated from the one command-line definition in `cli`.

use clap::CommandFactory;

use crate::cli::Cli;
use crate::error::{Error, Result};

/// `crewmux completions SHELL`: the completion script for `shell` on stdout.
///
/// # Errors
/// None in practice (writing to a closed pipe ends the process quietly).
pub fn completions(shell: clap_complete::Shell) -> Result<i32> {
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "crewmux", &mut out);
    let script = with_run_ids(shell, &String::from_utf8_lossy(&out));
    crate::out!("{script}");
    Ok(0)
}

/// The commands whose first argument is a run id.
const RUN_COMMANDS: &str = "attach status answer resume cancel steer merge diff";

/// clap's static script (clap_complete 4.6.12) with run ids offered where a command takes
/// one, from `crewmux __complete runs` at the moment of completing: bash wraps clap's
/// function, zsh names a function of its own where clap wrote `_default` for a run, fish
/// adds one `complete` line. Elvish and PowerShell keep clap's script.
fn with_run_ids(shell: clap_complete::Shell, script: &str) -> String {
    use clap_complete::Shell;
    match shell {
        Shell::Bash => format!(
            "{script}
# Run ids where a command takes one (crewmux __complete runs), else clap's completion.
_crewmux_runs() {{
    local cur=\"${{COMP_WORDS[COMP_CWORD]}}\" prev=\"${{COMP_WORDS[COMP_CWORD-1]}}\"
    if [[ \"$prev\" == --run ]] || {{ [[ $COMP_CWORD -eq 2 && \"$cur\" != -* ]] && [[ \" {RUN_COMMANDS} \" == *\" ${{COMP_WORDS[1]}} \"* ]]; }}; then
        COMPREPLY=( $(compgen -W \"$(crewmux __complete runs 2>/dev/null)\" -- \"$cur\") )
        return 0
    fi
    _crewmux \"$@\"
}}
complete -F _crewmux_runs -o bashdefault -o default crewmux
"
        ),
        Shell::Zsh => {
            let body = script
                .lines()
                .map(|l| {
                    let run_arg = l.starts_with("':run -- Run id")
                        || l.starts_with("'::run -- Run id")
                        || l.starts_with("'--run=[");
                    if run_arg {
                        l.replacen(":_default'", ":_crewmux_runs'", 1)
                    } else {
                        l.to_string()
                    }
                })
                .collect::<Vec<_>>()
                .join("\n");
            body.replacen(
                "#compdef crewmux\n",
                "#compdef crewmux\n\n# This project's run ids (crewmux __complete runs).\n_crewmux_runs() {\n    local -a runs\n    runs=(${(f)\"$(crewmux __complete runs 2>/dev/null)\"})\n    compadd -a runs\n}\n",
                1,
            ) + "\n"
        }
        Shell::Fish => format!(
            "{script}# Run ids where a command takes one (crewmux __complete runs).
complete -c crewmux -n \"__fish_seen_subcommand_from {RUN_COMMANDS}\" -f -a \"(crewmux __complete runs 2>/dev/null)\"
"
        ),
        _ => script.to_string(),
    }
}

/// `crewmux __complete runs`: this project's run ids, newest first, one a line. Nothing
/// (and exit 0) where there are none or the project cannot be read: a completion script
/// must never print an error into the person's prompt.
///
/// # Errors
/// An unknown `what` ([`Error::Usage`]).
pub fn complete(args: &crate::cli::CompleteArgs) -> Result<i32> {
    if args.what != "runs" {
        return Err(Error::Usage(format!(
            "__complete {}: only `runs` is completed",
            args.what
        )));
    }
    let mut ids = super::plan::project_dir(None)
        .ok()
        .and_then(|d| crate::store::list_run_ids(&d).ok())
        .unwrap_or_default();
    // Run ids start with their start time (`YYYYMMDD-HHMMSS-…`).
    ids.sort();
    for id in ids.iter().rev() {
        crate::outln!("{id}");
    }
    Ok(0)
}

/// `crewmux man`: the main page (section 1, roff) on stdout; with `--dir`, that page as
/// `crewmux.1` and one page per command (`crewmux-run.1`, `crewmux-creds-add.1`, …, by
/// clap_mangen) written into the folder. The main page lists the commands by name (their
/// pages exist once `--dir` wrote them), the dashboard's keys (the help overlay's rows,
/// default bindings), team files, the exit status and the files a run keeps.
///
/// # Errors
/// The folder cannot be written ([`Error::System`] naming it), or a page cannot be rendered.
pub fn man(args: &crate::cli::ManArgs) -> Result<i32> {
    let page = main_page().map_err(|e| Error::Other(format!("rendering the man page: {e}")))?;
    let Some(dir) = &args.dir else {
        crate::out!("{page}");
        return Ok(0);
    };
    let failed = |e: std::io::Error| {
        Error::Usage(format!(
            "--dir {}: cannot write the man pages there: {e}",
            dir.display()
        ))
    };
    std::fs::create_dir_all(dir).map_err(failed)?;
    clap_mangen::generate_to(Cli::command(), dir).map_err(failed)?;
    std::fs::write(dir.join("crewmux.1"), page).map_err(failed)?;
    crate::outln!("wrote the crewmux man pages to {}", dir.display());
    Ok(0)
}

/// The main page: clap's title, name, synopsis, description and options, then the
/// sections clap knows nothing of.
fn main_page() -> std::io::Result<String> {
    let cmd = Cli::command();
    let man = clap_mangen::Man::new(cmd.clone());
    let mut out = Vec::new();
    man.render_title(&mut out)?;
    man.render_name_section(&mut out)?;
    man.render_synopsis_section(&mut out)?;
    man.render_description_section(&mut out)?;
    man.render_options_section(&mut out)?;
    let mut page = String::from_utf8_lossy(&out).into_owned();
    page.push_str(".SH COMMANDS\n");
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = sub.get_name();
        page.push_str(&format!(
            ".TP\n\\fBcrewmux {}\\fR\n{}\n",
            roff(name),
            roff(&sub.get_about().map(ToString::to_string).unwrap_or_default())
        ));
    }
    page.push_str(&format!(
        ".PP\n{}\n",
        roff(
            "Each command's options: crewmux COMMAND --help, or its own page (crewmux-run(1), …) \
             once crewmux man --dir DIR has written them."
        )
    ));
    page.push_str(".SH DASHBOARD KEYS\n");
    page.push_str(&roff_paragraph(
        "The default keys (config.toml [keys] can rebind them); ? shows them in the dashboard.",
    ));
    for (heading, rows) in
        crate::tui::panels::overlay::help_rows(&crate::tui::keys::Keys::default())
    {
        page.push_str(&format!(".SS {}\n", roff(heading)));
        for (keys, said) in rows {
            page.push_str(&format!(".TP\n\\fB{}\\fR\n{}\n", roff(&keys), roff(said)));
        }
    }
    for (heading, paragraphs) in PROSE {
        page.push_str(&format!(".SH {heading}\n"));
        for p in *paragraphs {
            page.push_str(&roff_paragraph(p));
        }
    }
    page.push_str(".SH SEE ALSO\n");
    let pages: Vec<String> = cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set())
        .map(|s| format!("crewmux\\-{}(1)", roff(s.get_name())))
        .collect();
    page.push_str(&format!(
        "{}\n.PP\n{}\n",
        pages.join(", "),
        roff("(written by crewmux man --dir DIR); tmux(1), git-worktree(1).")
    ));
    Ok(page)
}

/// The page's sections of prose: heading and paragraphs (docs/design.md says the same at
/// length).
const PROSE: &[(&str, &[&str])] = &[
    (
        "TEAM FILES",
        &[
            "crewmux run --team FILE takes a TOML team: optional name, parallel (workers at once, \
             default 5), max_fix_rounds (default 1) and clarify; one [[worker]] table per worker \
             (id, unique, of a-z, 0-9 and -; role; provider or target; model or role_model; \
             prompt or prompt_file; timeout_s, idle_timeout_s, stall_after_s, max_attempts, \
             artifacts, cwd, after, workspace, host, approvals, sandbox; command = [argv...] with provider = \
             \"command\"), an [approvals] table (policy = \"ask\", \"auto\" or \"deny\"), a [sandbox] table \
             (mode = \"none\", \"bwrap\" or \"container\"; network = \"allow\" or \"none\"), [[check]] tables (id and command: exit 0 is pass) and [[critic]] \
             tables. Unknown fields are errors, reported as FILE:LINE:COL. The README and the \
             examples folder of the source have whole teams.",
        ],
    ),
    (
        "APPROVALS",
        &[
            "An agent CLI that hands its permission decisions to crewmux (Claude Code, through \
             --permission-prompt-tool) makes its worker waiting with the tool and the command or \
             path it asks for. In the dashboard y allows it once, n denies it (type a reason, or \
             press Enter for none) and A allows that tool for the rest of the run (kept in \
             state.json). From a shell: crewmux answer RUN --worker ID --allow, --allow-always \
             or --deny [REASON] (the run id first).",
            "policy = \"ask\" (the default) asks for every request; \"auto\" allows a request \
             whose every path is inside the worker's own worktree and asks for the rest (a shell \
             command's target cannot be told: it asks); \"deny\" denies every request without \
             asking. A question nobody answers within question_timeout_s is denied.",
        ],
    ),
    (
        "SANDBOX",
        &[
            "[sandbox] mode = \"bwrap\" in a team file (a worker's sandbox = { ... } wins, \
             crewmux run --sandbox MODE over both) runs each agent, and the checks, critics and \
             fixers, inside bubblewrap: its worktree, its attempt folder and the repository's \
             .git read-write; the system and PATH read-only; an empty home holding only what its \
             provider's sandbox_home lists; a private /tmp; network = \"none\": loopback only. \
             ~/.ssh, ~/.gnupg, the credential store, other workers' worktrees and your checkout \
             are not there. crewmux doctor says whether it can start here; a run whose fence \
             cannot start is refused before it makes anything.",
        ],
    ),
    (
        "EXIT STATUS",
        &[
            "0: the run is done and its council is ok or attention.",
            "1: the run is blocked (its council failed) or failed.",
            "2: bad input: a flag, a value, a team file, a missing program; nothing was created.",
            "3: the run is halted at a clarification question (answer it with crewmux answer, \
             then crewmux resume).",
        ],
    ),
    (
        "FILES",
        &[
            "PROJECT/.crewmux/runs/RUN/: a run's manifest.json, state.json, events.jsonl, \
             report.md and workers/ID/attempt-N/{prompt.md,launch.sh,output.log,exit.json,result.md}.",
            "PROJECT/.crewmux/worktrees/RUN/: the workers' git worktrees (branches crewmux/RUN/ID).",
            "~/.config/crewmux/config.toml, providers.toml, hosts.toml (CREWMUX_CONFIG_DIR moves \
             them); the project's .crewmux/providers.toml and hosts.toml override them.",
        ],
    ),
];

/// `text` as roff running text: backslashes and dashes escaped, a leading `.` or `'`
/// guarded (roff(7)).
fn roff(text: &str) -> String {
    let escaped = text.replace('\\', "\\e").replace('-', "\\-");
    if escaped.starts_with(['.', '\'']) {
        format!("\\&{escaped}")
    } else {
        escaped
    }
}

fn roff_paragraph(text: &str) -> String {
    format!(".PP\n{}\n", roff(text))
}
