//! Text as agents print it, made plain for the detectors and critics.

/// Text as a reader sees it: ANSI escapes removed (`strip-ansi-escapes`, a VT parser),
/// `\r\n` and lone `\r` made `\n`.
pub fn clean_text(output: &str) -> String {
    let stripped = strip_keeping_tabs(output);
    stripped.replace("\r\n", "\n").replace('\r', "\n")
}

/// `output` without its ANSI escapes (`strip-ansi-escapes`), tabs kept: the crate keeps
/// only the newline of the control characters, and a tab is text (`ls` and `paste`
/// separate columns with it). A tab ends no escape sequence a terminal would honour, so
/// each piece between tabs is stripped on its own.
pub fn strip_keeping_tabs(output: &str) -> String {
    if !output.contains('\t') {
        return strip_ansi_escapes::strip_str(output);
    }
    output
        .split('\t')
        .map(strip_ansi_escapes::strip_str)
        .collect::<Vec<_>>()
        .join("\t")
}
