//! The ways a terminal shows a notification: the bell, and the desktop notification escape
//! sequences — OSC 9 (iTerm2, kitty, WezTerm, Windows Terminal) or OSC 777 (foot, and other
//! VTE-style terminals). They go out only when standard error is a terminal (a log file or
//! a pipe would only collect them): the driving process's own when it runs in the
//! foreground (`--headless`), and every dashboard's, which rings for the notifications of
//! the lead it follows.

use std::io::{IsTerminal, Write};

use super::NotifyWays;

/// The escape sequences for `msg`: the bell, then OSC 777 when `term` names a terminal that
/// reads it (foot, or a `TERM_PROGRAM`-less VTE), else OSC 9; each only when `ways` has it.
/// Control characters and `;` are removed from the text so it cannot end or change the
/// sequence.
pub fn sequences(msg: &str, term: &str, vte: bool, ways: &NotifyWays) -> Vec<u8> {
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

/// Ring this process's terminal for `msg` (the bell and the OSC sequence `ways` allow),
/// when standard error is one; a failed write is only logged.
pub fn ring_stderr(msg: &str, ways: &NotifyWays) {
    if !std::io::stderr().is_terminal() {
        return;
    }
    let term = std::env::var("TERM").unwrap_or_default();
    let vte = std::env::var_os("VTE_VERSION").is_some();
    let bytes = sequences(msg, &term, vte, ways);
    if bytes.is_empty() {
        return;
    }
    let mut err = std::io::stderr().lock();
    if let Err(e) = err.write_all(&bytes).and_then(|()| err.flush()) {
        tracing::debug!("notification sequence: {e}");
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
            &NotifyWays::default(),
        ))
        .unwrap();
        assert_eq!(s, "\x07\x1b]9;crewmux: frontend asks\x07");
        let s = String::from_utf8(sequences("run done", "foot", false, &NotifyWays::default()))
            .unwrap();
        assert_eq!(s, "\x07\x1b]777;notify;crewmux;run done\x07");
        let s = String::from_utf8(sequences(
            "run done",
            "xterm-256color",
            true,
            &NotifyWays::default(),
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
        let s = String::from_utf8(sequences("done", "xterm", false, &no_bell)).unwrap();
        assert_eq!(s, "\x1b]9;crewmux: done\x07");
        let no_osc = NotifyWays {
            osc: false,
            ..NotifyWays::default()
        };
        assert_eq!(sequences("done", "xterm", false, &no_osc), b"\x07");
    }

    #[test]
    fn the_text_cannot_break_out_of_the_sequence() {
        let s = String::from_utf8(sequences(
            "a\x07b;c\x1b]0;x",
            "xterm",
            false,
            &NotifyWays::default(),
        ))
        .unwrap();
        assert_eq!(s, "\x07\x1b]9;crewmux: abc]0x\x07");
    }
}
