//! tmux's command language: one command as a quoted line (for `source-file -` and the
//! control-mode channel), a batch split into one line a command, and which commands only
//! read (tmux(1) "PARSING SYNTAX").

use tmux_interface::{Tmux, TmuxCommand};

use crate::error::{Error, Result};

/// One tmux command as a line of tmux's command language, with `-e NAME=value` options
/// added right after the command name (for `new-window`/`new-session`); every argument
/// quoted with [`tmux_quote`].
///
/// # Errors
/// A name or value with control characters (they cannot be quoted safely).
#[allow(
    clippy::needless_pass_by_value,
    reason = "tmux_interface builds commands by value"
)]
pub fn command_line(cmd: TmuxCommand<'_>, env: &[(String, String)]) -> Result<String> {
    let mut args: Vec<String> = cmd.to_vec().into_iter().map(|c| c.into_owned()).collect();
    if args.is_empty() {
        return Err(Error::Other("empty tmux command".into()));
    }
    let name = args.remove(0);
    let mut line = vec![name];
    for (k, v) in env {
        if v.chars().any(|c| c.is_control()) || k.chars().any(|c| c.is_control()) {
            return Err(Error::Other(format!(
                "the value for {k} has control characters; re-add it with `crewmux creds add`"
            )));
        }
        line.push("-e".into());
        line.push(tmux_quote(&format!("{k}={v}")));
    }
    line.extend(args.iter().map(|a| tmux_quote(a)));
    Ok(line.join(" "))
}

/// The arguments of a tmux invocation after `tmux` itself, for an error.
pub(super) fn tmux_args(tmux: &Tmux<'_>) -> Vec<String> {
    let mut args: Vec<String> = tmux
        .clone()
        .build()
        .to_vec()
        .into_iter()
        .map(std::borrow::Cow::into_owned)
        .collect();
    if args.first().is_some_and(|a| a == "tmux") {
        args.remove(0);
    }
    args
}

/// Quote one argument for tmux's command language (used with `source-file -`): single
/// quotes when possible; otherwise double quotes with `\`, `"`, `$` and `~` escaped
/// (tmux(1) "PARSING SYNTAX").
pub fn tmux_quote(arg: &str) -> String {
    if !arg.contains('\'') {
        format!("'{arg}'")
    } else {
        let mut s = String::from("\"");
        for c in arg.chars() {
            if matches!(c, '\\' | '"' | '$' | '~') {
                s.push('\\');
            }
            s.push(c);
        }
        s.push('"');
        s
    }
}

/// The commands of one tmux invocation (`a … ; b …`) as control-mode lines, one command
/// a line (a line that holds several gets one `%error` block when any fails to parse, so
/// replies could no longer be counted).
///
/// # Errors
/// An argument with a NUL byte.
pub(super) fn channel_lines(commands: &[String]) -> Result<Vec<String>> {
    let mut lines = vec![];
    for cmd in commands.split(|a| a == ";").filter(|c| !c.is_empty()) {
        let words: std::result::Result<Vec<String>, String> = cmd
            .iter()
            .map(|a| super::control::quote_line_arg(a))
            .collect();
        lines.push(words.map_err(Error::Other)?.join(" "));
    }
    Ok(lines)
}

/// Commands that change nothing in the server: safe to run again as a process when the
/// channel ended before answering.
pub(super) fn is_read_only(line: &str) -> bool {
    let name = line.split(' ').next().unwrap_or("").trim_matches('\'');
    matches!(
        name,
        "list-panes"
            | "list-sessions"
            | "list-windows"
            | "capture-pane"
            | "display-message"
            | "has-session"
            | "show-options"
            | "show-buffer"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_becomes_one_line_per_command() {
        let args: Vec<String> = [
            "list-panes",
            "-F",
            "#{pane_id}\t",
            ";",
            "capture-pane",
            "-p",
            "-t",
            "%1",
        ]
        .map(String::from)
        .to_vec();
        let lines = channel_lines(&args).unwrap();
        assert_eq!(
            lines,
            vec![
                "'list-panes' '-F' \"#{pane_id}\\t\"",
                "'capture-pane' '-p' '-t' '%1'"
            ]
        );
        assert!(lines.iter().all(|l| is_read_only(l)));
        assert!(!is_read_only("'paste-buffer' '-t' '%1'"));
    }

    #[test]
    fn quoting_keeps_quotes_and_dollars_literal() {
        assert_eq!(tmux_quote("a b"), "'a b'");
        assert_eq!(tmux_quote("it's $HOME"), "\"it's \\$HOME\"");
    }
}
