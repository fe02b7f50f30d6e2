//! Text as agents print it, made plain for the detectors and critics.

/// Text as a reader sees it: ANSI escapes removed (`strip-ansi-escapes`, a VT parser),
/// `\r\n` and lone `\r` made `\n`.
pub fn clean_text(output: &str) -> String {
    let stripped = strip_ansi_escapes::strip_str(output);
    stripped.replace("\r\n", "\n").replace('\r', "\n")
}
