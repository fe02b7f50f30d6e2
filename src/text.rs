//! Text as agents print it, made plain for the detectors and critics.

/// The name in `known` that a mistyped `name` most likely meant: the same but for case,
/// else one at most two edits away (optimal string alignment distance, `strsim`) and
/// shorter than `name` is long, the closest first. Used for `did you mean …?` hints.
pub fn closest<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let lower = name.to_lowercase();
    known
        .into_iter()
        .map(|k| {
            let d = if k.to_lowercase() == lower {
                0
            } else {
                strsim::osa_distance(&lower, &k.to_lowercase())
            };
            (d, k)
        })
        .filter(|(d, _)| *d <= 2 && *d < name.chars().count())
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

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
