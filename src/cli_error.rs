//! Command-line mistakes as one line.
//!
//! clap reports a bad flag or value over several lines (the error, a tip, the usage, a pointer
//! to `--help`). crewmux's rule for bad input is one line that names the value and the fix,
//! so the binary folds clap's report into `crewmux: <error>; <tip> (see '<command> --help')`.
//! `--help` and `--version` are not errors and keep clap's own output.

/// How to give a missing problem (`run`, `dispatch`).
const PROBLEM_FIX: &str =
    "give the problem as the last argument, in quotes (`-` reads it from standard input)";

/// A command run with nothing after it that needs a subcommand (`crewmux steer`, `crewmux
/// creds`): clap then prints the command's whole help; this is the one line instead —
/// `` `crewmux steer` needs one of: add, retry, send (see 'crewmux steer --help') `` — or
/// `None` for any other report. The help's `Usage:` line names the command, its
/// `Commands:` list the subcommands (`help` left out).
fn missing_command(report: &str) -> Option<String> {
    let mut lines = report.lines();
    let usage = lines.find_map(|l| l.trim().strip_prefix("Usage:"))?;
    let words: Vec<&str> = usage
        .split_whitespace()
        .take_while(|w| !w.starts_with(['[', '<', '-']))
        .collect();
    if !usage.contains("<COMMAND>") || words.is_empty() {
        return None;
    }
    let mut in_list = false;
    let mut subs = Vec::new();
    for l in report.lines() {
        if l.trim() == "Commands:" {
            in_list = true;
            continue;
        }
        if in_list {
            // Entries are indented; the list ends at the next heading or a blank line.
            if !l.starts_with(' ') || l.trim().is_empty() {
                break;
            }
            // A wrapped description continues deeper than the entries' two spaces.
            if l.starts_with("   ") {
                continue;
            }
            if let Some(name) = l.split_whitespace().next().filter(|n| *n != "help") {
                subs.push(name);
            }
        }
    }
    if subs.is_empty() {
        return None;
    }
    let command = words.join(" ");
    Some(format!(
        "`{command}` needs one of: {} (see '{command} --help')",
        subs.join(", ")
    ))
}

/// Fold a clap error report (`clap::Error::render().to_string()`, plain text) into one line:
/// the error and its continuation lines joined by spaces, clap's `tip:` lines after a `;`,
/// and the usage line turned into `(see '<command> --help')`; a report without a usage line
/// (a bad value) points at `fallback_command`'s help (see [`command_of`]). The leading
/// `error: ` is dropped (the binary prefixes `crewmux: `). Never contains a newline.
#[must_use]
pub fn one_line(report: &str, fallback_command: &str) -> String {
    if let Some(line) = missing_command(report) {
        return line;
    }
    let mut message: Vec<&str> = Vec::new();
    let mut tips: Vec<&str> = Vec::new();
    let mut command: Option<String> = None;
    for line in report.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if let Some(tip) = line.strip_prefix("tip:") {
            tips.push(tip.trim());
        } else if let Some(usage) = line.strip_prefix("Usage:") {
            // "crewmux run [OPTIONS] <PROBLEM>": the command is the words before the first
            // placeholder or flag (a missing argument's usage repeats the flags given:
            // "crewmux run --headless --provider <PROVIDER> <PROBLEM>").
            let words: Vec<&str> = usage
                .split_whitespace()
                .take_while(|w| !w.starts_with(['[', '<', '-']))
                .collect();
            if !words.is_empty() {
                command = Some(words.join(" "));
            }
        } else if line.starts_with("For more information") {
            // Replaced by the `(see …)` hint built from the usage line.
        } else {
            message.push(line.strip_prefix("error:").map_or(line, str::trim));
        }
    }
    let mut out = message.join(" ");
    let mut problem_tip: Option<String> = None;
    // "…were not provided: <PROBLEM>" reads better than "…provided:  <PROBLEM>".
    out = out.replace(":  ", ": ");
    if out.starts_with("the following required arguments were not provided")
        && out.contains("<PROBLEM>")
    {
        tips.push(PROBLEM_FIX);
    }
    if let Some(text) = problem_taken_for_a_flag(&out) {
        let command = command.as_deref().unwrap_or(fallback_command);
        tips.push("a problem that starts with `-` goes after `--`");
        problem_tip = Some(format!("{command} -- '{text}'"));
    }
    if let Some(example) = &problem_tip {
        tips.push(example);
    }
    if !tips.is_empty() {
        out.push_str("; ");
        out.push_str(&tips.join("; "));
    }
    let command = command.unwrap_or_else(|| fallback_command.to_string());
    out.push_str(&format!(" (see '{command} --help')"));
    out
}

/// The text of an `unexpected argument '-…' found` that holds a space: a problem written
/// first thing on the line, which clap reads as a flag (README: a problem that starts with
/// `-` goes after `--`). `None` for a mistyped flag (one word).
fn problem_taken_for_a_flag(message: &str) -> Option<&str> {
    let rest = message.strip_prefix("unexpected argument '")?;
    let text = &rest[..rest.find("' found")?];
    (text.starts_with('-') && text.contains(char::is_whitespace)).then_some(text)
}

/// The command a command line names, for pointing at its help: `crewmux run` for
/// `crewmux --verbose run --parallel abc x`, `crewmux` when no subcommand is named. `args`
/// starts with the program name, as `std::env::args` does.
#[must_use]
pub fn command_of(args: &[String]) -> String {
    use clap::CommandFactory;
    let cli = crate::cli::Cli::command();
    let sub = args
        .iter()
        .skip(1)
        .find_map(|a| cli.find_subcommand(a).map(|c| c.get_name().to_string()));
    match sub {
        Some(name) => format!("crewmux {name}"),
        None => "crewmux".to_string(),
    }
}

#[cfg(test)]
mod missing_tests {
    use clap::Parser;

    use crate::cli::Cli;

    #[test]
    fn a_command_given_without_its_subcommand_is_one_line_naming_them() {
        for (args, said) in [
            (
                vec!["crewmux", "steer"],
                "`crewmux steer` needs one of: add, retry, send (see 'crewmux steer --help')",
            ),
            (
                vec!["crewmux", "creds"],
                "`crewmux creds` needs one of: add, list, remove, rotate (see 'crewmux creds --help')",
            ),
        ] {
            let err = Cli::try_parse_from(&args).expect_err("a usage error");
            assert_eq!(super::one_line(&err.render().to_string(), "crewmux"), said);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{command_of, one_line};
    use crate::cli::Cli;
    use clap::Parser;

    fn folded(args: &[&str]) -> String {
        let err = Cli::try_parse_from(args).expect_err("a usage error");
        let args: Vec<String> = args.iter().map(|a| (*a).to_string()).collect();
        one_line(&err.render().to_string(), &command_of(&args))
    }

    #[test]
    fn a_bad_value_names_the_value_the_flag_and_the_help_of_its_command() {
        let line = folded(&["crewmux", "run", "--parallel", "abc", "x"]);
        assert_eq!(
            line,
            "invalid value 'abc' for '--parallel <PARALLEL>': use a whole number 1..=256 \
             (see 'crewmux run --help')"
        );
    }

    #[test]
    fn a_negative_or_out_of_range_number_names_the_range_not_a_flag_tip() {
        for (args, want) in [
            (
                &["crewmux", "run", "--parallel", "-3", "x"][..],
                "invalid value '-3' for '--parallel <PARALLEL>': use a whole number 1..=256",
            ),
            (
                &["crewmux", "dispatch", "--parallel", "257", "x"][..],
                "invalid value '257' for '--parallel <PARALLEL>': use a whole number 1..=256",
            ),
            (
                &["crewmux", "run", "--timeout", "-5", "x"][..],
                "invalid value '-5' for '--timeout <SECONDS>': use a whole number of seconds, \
                 e.g. 600 (0 turns it off)",
            ),
            (
                &["crewmux", "run", "--idle-timeout", "ten", "x"][..],
                "invalid value 'ten' for '--idle-timeout <SECONDS>': use a whole number of \
                 seconds, e.g. 600 (0 turns it off)",
            ),
            (
                &["crewmux", "run", "--max-attempts", "x", "x"][..],
                "invalid value 'x' for '--max-attempts <MAX_ATTEMPTS>': use a whole number 1..=20",
            ),
        ] {
            let line = folded(args);
            assert!(line.starts_with(want), "{args:?}: {line}");
            assert!(!line.contains("use '--"), "{args:?}: no flag tip: {line}");
            assert!(!line.contains('\n'));
        }
    }

    #[test]
    fn a_missing_problem_says_how_to_give_it_and_points_at_the_command_help() {
        let line = folded(&["crewmux", "run", "--headless", "--provider", "sim"]);
        assert!(line.contains("<PROBLEM>"), "{line}");
        assert!(
            line.contains("give the problem as the last argument"),
            "{line}"
        );
        assert!(line.ends_with("(see 'crewmux run --help')"), "{line}");
    }

    #[test]
    fn an_unknown_flag_keeps_claps_tip_on_the_same_line() {
        let line = folded(&["crewmux", "run", "--bogus", "x"]);
        assert!(
            line.starts_with("unexpected argument '--bogus' found; "),
            "{line}"
        );
        assert!(line.contains("use '-- --bogus'"), "{line}");
        assert!(line.ends_with("(see 'crewmux run --help')"), "{line}");
        assert!(!line.contains('\n'));
    }

    #[test]
    fn a_problem_that_starts_with_a_dash_is_told_to_go_after_two_dashes() {
        let line = folded(&["crewmux", "run", "--verbose flag is broken, fix it"]);
        assert!(
            line.contains(
                "a problem that starts with `-` goes after `--`; \
                 crewmux run -- '--verbose flag is broken, fix it'"
            ),
            "{line}"
        );
        assert!(line.ends_with("(see 'crewmux run --help')"), "{line}");
        let typo = folded(&["crewmux", "run", "--verbos", "x"]);
        assert!(!typo.contains("goes after `--`"), "{typo}");
    }

    #[test]
    fn a_missing_argument_is_named_on_the_same_line() {
        let line = folded(&["crewmux", "run"]);
        assert!(
            line.starts_with("the following required arguments were not provided: <PROBLEM>"),
            "{line}"
        );
        assert!(!line.contains('\n'));
    }

    #[test]
    fn an_unknown_subcommand_points_at_the_top_level_help() {
        let line = folded(&["crewmux", "frob"]);
        assert!(line.starts_with("unrecognized subcommand 'frob'"), "{line}");
        assert!(line.ends_with("(see 'crewmux --help')"), "{line}");
    }
}
