//! Exit-marker parsing: whole lines `__CREWMUX_EXIT_<nonce>__:<code>` after stripping `\r`
//! and ANSI escapes (docs/tmux.md "Wrapper shape that works"). Another nonce, or the right
//! marker inside a longer line, is never an exit.

/// The start of every exit-marker line.
pub const MARKER_PREFIX: &str = "__CREWMUX_EXIT_";

/// Remove ANSI escape sequences (the `strip-ansi-escapes` crate, as `text::clean_text`,
/// tabs kept) and carriage returns.
pub fn strip_ansi(text: &str) -> String {
    // Printable ASCII and newlines are all the parser would keep as they are: most output
    // lines are only that, and each costs a parser pass otherwise (every line a worker
    // prints is sorted through here).
    if text
        .bytes()
        .all(|b| b == b'\n' || b == b'\t' || (b' '..=b'~').contains(&b))
    {
        return text.to_string();
    }
    crate::text::strip_keeping_tabs(text).replace('\r', "")
}

/// Parse one line as this nonce's marker.
fn parse_line(line: &str, nonce: &str) -> Option<i32> {
    // Most lines are not markers: skip them before paying for the ANSI strip.
    if !line.contains(MARKER_PREFIX) {
        return None;
    }
    let clean = strip_ansi(line);
    let rest = clean.strip_prefix(MARKER_PREFIX)?;
    let rest = rest.strip_prefix(nonce)?;
    let code = rest.strip_prefix("__:")?;
    if code.is_empty() || !code.bytes().all(|b| b.is_ascii_digit()) || code.len() > 3 {
        return None;
    }
    code.parse().ok()
}

/// The code of the last marker line with `nonce` in `text`, if any.
pub fn find_marker(text: &str, nonce: &str) -> Option<i32> {
    text.lines().rev().find_map(|l| parse_line(l, nonce))
}

/// Incremental scanner over a growing `output.log`: feed it new bytes as they arrive;
/// partial lines are kept until their newline comes. Memory is bounded by one line
/// (lines longer than 4096 bytes cannot be markers and are dropped).
#[derive(Debug, Clone, Default)]
pub struct MarkerScanner {
    partial: Vec<u8>,
    found: Option<i32>,
}

impl MarkerScanner {
    /// Feed bytes; returns every complete line (lossy UTF-8) so the caller can also look
    /// for questions and rate-limit lines.
    pub fn feed(&mut self, bytes: &[u8], nonce: &str) -> Vec<String> {
        let mut lines = vec![];
        for &b in bytes {
            if b == b'\n' {
                let line = String::from_utf8_lossy(&self.partial).into_owned();
                if let Some(code) = parse_line(&line, nonce) {
                    self.found = Some(code);
                }
                lines.push(line);
                self.partial.clear();
            } else if self.partial.len() < 4096 {
                self.partial.push(b);
            }
        }
        lines
    }

    /// The bytes after the last newline (a prompt that waits on the same line), lossy UTF-8.
    pub fn partial(&self) -> String {
        String::from_utf8_lossy(&self.partial).into_owned()
    }

    /// The exit code of the last complete marker line seen.
    pub fn found(&self) -> Option<i32> {
        self.found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_whole_lines_with_the_right_nonce_count() {
        assert_eq!(find_marker("x\n__CREWMUX_EXIT_n1__:3\n", "n1"), Some(3));
        assert_eq!(find_marker("__CREWMUX_EXIT_n0__:0\n", "n1"), None);
        assert_eq!(find_marker("say __CREWMUX_EXIT_n1__:0\n", "n1"), None);
        assert_eq!(find_marker("__CREWMUX_EXIT_n1__:0 trailing\n", "n1"), None);
        assert_eq!(find_marker("__CREWMUX_EXIT_n1__:\n", "n1"), None);
        assert_eq!(
            find_marker("\x1b[32m__CREWMUX_EXIT_n1__:2\x1b[0m\r\n", "n1"),
            Some(2)
        );
    }

    #[test]
    fn plain_text_strips_as_the_parser_would() {
        for text in [
            "worker 3 line 12: compiling module 12",
            "two\nlines ~ {} [] 100%",
            "",
            "\x1b[32mgreen\x1b[0m\r",
            "tab\there, bell\x07, del\x7f",
            "caf\u{e9} \u{2714} done",
        ] {
            let parser = crate::text::strip_keeping_tabs(text).replace('\r', "");
            assert_eq!(strip_ansi(text), parser, "{text:?}");
        }
    }

    #[test]
    fn tabs_are_text_and_stay() {
        assert_eq!(strip_ansi("README\talpha.txt"), "README\talpha.txt");
        assert_eq!(
            strip_ansi("\x1b[1mREADME\x1b[0m\talpha.txt\r"),
            "README\talpha.txt"
        );
        assert_eq!(crate::text::clean_text("a\t\x1b[32mb\x1b[0m\r\n"), "a\tb\n");
    }

    #[test]
    fn the_scanner_joins_split_reads() {
        let mut s = MarkerScanner::default();
        assert!(s.feed(b"hello\n__CREWMUX_EX", "ab").len() == 1);
        assert_eq!(s.found(), None);
        s.feed(b"IT_ab__:12\n", "ab");
        assert_eq!(s.found(), Some(12));
    }
}
