//! Telling the person something happened (a question, the end of a run) in ways their
//! terminal shows: the bell; the desktop notification escape sequences — OSC 9 (iTerm2,
//! kitty, WezTerm, Windows Terminal) or OSC 777 (foot, and other VTE-style terminals) —;
//! `notify-send` where it exists; and, when crewmux runs inside the person's own tmux
//! (`$TMUX` set), a `display-message` on that client. `--quiet`/`--no-notify` turns it off;
//! the config file's `[notify]` table picks among them ([`NotifyWays`]). The bell and the
//! escape sequences go out only when standard error is a terminal (a log file or a pipe
//! would only collect them).

use std::io::{IsTerminal, Write};

/// Which ways of telling the person fire (each on unless the config turns it off).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotifyWays {
    /// The terminal bell (BEL).
    pub bell: bool,
    /// The OSC 9 / OSC 777 desktop notification sequence.
    pub osc: bool,
    /// `notify-send`, where it is installed.
    pub notify_send: bool,
    /// `tmux display-message` on the person's own client, inside their tmux.
    pub tmux: bool,
}

impl Default for NotifyWays {
    fn default() -> Self {
        NotifyWays {
            bell: true,
            osc: true,
            notify_send: true,
            tmux: true,
        }
    }
}
use std::process::{Command, Stdio};

/// The escape sequences for `msg`: the bell, then OSC 777 when `term` names a terminal that
/// reads it (foot, or a `TERM_PROGRAM`-less VTE), else OSC 9; each only when `ways` has it.
/// Control characters and `;` are removed from the text so it cannot end or change the
/// sequence.
pub fn sequences(msg: &str, term: &str, vte: bool, ways: NotifyWays) -> Vec<u8> {
    let text: String = msg
        .chars()
        .filter(|c| !c.is_control() && *c != ';')
        .collect();
    let mut out = if ways.bell { b"\x07".to_vec() } else { vec![] };
    if !ways.osc {
        return out;
    }
    if term.starts_with("foot") || vte {
        out.extend(format!("\x1b]777;notify;crewmux;{text}\x07").bytes());
    } else {
        out.extend(format!("\x1b]9;crewmux: {text}\x07").bytes());
    }
    out
}

/// Notify in every way `ways` allows and this system has; each is a courtesy, so failures
/// are only logged.
pub fn notify(msg: &str, ways: NotifyWays) {
    let term = std::env::var("TERM").unwrap_or_default();
    let vte = std::env::var_os("VTE_VERSION").is_some();
    if std::io::stderr().is_terminal() {
        if let Err(e) = std::io::stderr().write_all(&sequences(msg, &term, vte, ways)) {
            tracing::debug!("notification sequence: {e}");
        }
    }
    let quiet = |c: &mut Command| {
        c.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
    };
    if ways.notify_send && which::which("notify-send").is_ok() {
        let mut c = Command::new("notify-send");
        c.arg("crewmux").arg(msg);
        quiet(&mut c);
        if let Err(e) = c.spawn() {
            tracing::debug!("notify-send: {e}");
        }
    }
    // Inside the person's own tmux: a message on their client (tmux finds it through $TMUX).
    if ways.tmux && std::env::var_os("TMUX").is_some() {
        let mut c = Command::new("tmux");
        c.args(["display-message", &format!("crewmux: {msg}")]);
        quiet(&mut c);
        if let Err(e) = c.spawn() {
            tracing::debug!("tmux display-message: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn osc_9_by_default_and_777_for_foot_and_vte() {
        let s = String::from_utf8(sequences(
            "frontend asks",
            "xterm-kitty",
            false,
            NotifyWays::default(),
        ))
        .unwrap();
        assert_eq!(s, "\x07\x1b]9;crewmux: frontend asks\x07");
        let s =
            String::from_utf8(sequences("run done", "foot", false, NotifyWays::default())).unwrap();
        assert_eq!(s, "\x07\x1b]777;notify;crewmux;run done\x07");
        let s = String::from_utf8(sequences(
            "run done",
            "xterm-256color",
            true,
            NotifyWays::default(),
        ))
        .unwrap();
        assert!(s.contains("]777;notify;crewmux;run done"));
    }

    #[test]
    fn the_config_turns_the_bell_and_the_sequence_off_one_by_one() {
        let no_bell = NotifyWays {
            bell: false,
            ..NotifyWays::default()
        };
        let s = String::from_utf8(sequences("done", "xterm", false, no_bell)).unwrap();
        assert_eq!(s, "\x1b]9;crewmux: done\x07");
        let no_osc = NotifyWays {
            osc: false,
            ..NotifyWays::default()
        };
        assert_eq!(sequences("done", "xterm", false, no_osc), b"\x07");
    }

    #[test]
    fn the_text_cannot_break_out_of_the_sequence() {
        let s = String::from_utf8(sequences(
            "a\x07b;c\x1b]0;x",
            "xterm",
            false,
            NotifyWays::default(),
        ))
        .unwrap();
        assert_eq!(s, "\x07\x1b]9;crewmux: abc]0x\x07");
    }
}
