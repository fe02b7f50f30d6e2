//! Telling the person something happened (a question, the end of a run) in ways their
//! terminal shows: the bell; the desktop notification escape sequences — OSC 9 (iTerm2,
//! kitty, WezTerm, Windows Terminal) or OSC 777 (foot, and other VTE-style terminals) —;
//! `notify-send` where it exists; and, when crewmux runs inside the person's own tmux
//! (`$TMUX` set), a `display-message` on that client. `--quiet`/`--no-notify` turns it off.

use std::io::Write;
use std::process::{Command, Stdio};

/// The escape sequences for `msg`: the bell, then OSC 777 when `term` names a terminal that
/// reads it (foot, or a `TERM_PROGRAM`-less VTE), else OSC 9. Control characters and `;`
/// are removed from the text so it cannot end or change the sequence.
pub fn sequences(msg: &str, term: &str, vte: bool) -> Vec<u8> {
    let text: String = msg
        .chars()
        .filter(|c| !c.is_control() && *c != ';')
        .collect();
    let mut out = b"\x07".to_vec();
    if term.starts_with("foot") || vte {
        out.extend(format!("\x1b]777;notify;crewmux;{text}\x07").bytes());
    } else {
        out.extend(format!("\x1b]9;crewmux: {text}\x07").bytes());
    }
    out
}

/// Notify in every way available; each is a courtesy, so failures are only logged. The
/// escape sequences go to stderr only when it is a terminal: a headless run's stderr read
/// by a script or a log file gets none.
pub fn notify(msg: &str) {
    use std::io::IsTerminal;
    let term = std::env::var("TERM").unwrap_or_default();
    let vte = std::env::var_os("VTE_VERSION").is_some();
    let mut stderr = std::io::stderr();
    if stderr.is_terminal() {
        if let Err(e) = stderr.write_all(&sequences(msg, &term, vte)) {
            tracing::debug!("notification sequence: {e}");
        }
    }
    let quiet = |c: &mut Command| {
        c.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
    };
    if which::which("notify-send").is_ok() {
        let mut c = Command::new("notify-send");
        c.arg("crewmux").arg(msg);
        quiet(&mut c);
        if let Err(e) = c.spawn() {
            tracing::debug!("notify-send: {e}");
        }
    }
    // Inside the person's own tmux: a message on their client (tmux finds it through $TMUX).
    if std::env::var_os("TMUX").is_some() {
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
        let s = String::from_utf8(sequences("frontend asks", "xterm-kitty", false)).unwrap();
        assert_eq!(s, "\x07\x1b]9;crewmux: frontend asks\x07");
        let s = String::from_utf8(sequences("run done", "foot", false)).unwrap();
        assert_eq!(s, "\x07\x1b]777;notify;crewmux;run done\x07");
        let s = String::from_utf8(sequences("run done", "xterm-256color", true)).unwrap();
        assert!(s.contains("]777;notify;crewmux;run done"));
    }

    #[test]
    fn the_text_cannot_break_out_of_the_sequence() {
        let s = String::from_utf8(sequences("a\x07b;c\x1b]0;x", "xterm", false)).unwrap();
        assert_eq!(s, "\x07\x1b]9;crewmux: abc]0x\x07");
    }
}
