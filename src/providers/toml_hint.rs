//! A TOML value of the wrong type, told as the key and what to write: serde's own words
//! (`invalid type: string "yes", expected a boolean`) name neither.

use std::path::Path;

use crate::error::Error;

use super::spec::line_col;

/// `e` as one line `file:line:col: …`. A wrong type or value names its key and what to
/// write there: the `hints` entry for that key (`("max_workers", "use a whole number ≥
/// 1")`), else one read from the type serde expected.
pub(crate) fn toml_error_with(
    path: &Path,
    text: &str,
    e: &toml::de::Error,
    hints: &[(&str, &str)],
) -> Error {
    let span = e.span();
    let (line, col) = span
        .clone()
        .map(|s| line_col(text, s.start))
        .unwrap_or((1, 1));
    let message = e.message().trim().replace('\n', " ");
    let named = span
        .filter(|_| {
            message.starts_with("invalid type:")
                || message.starts_with("invalid value:")
                || out_of_range(&message)
        })
        .and_then(|s| {
            let key = key_before(text, s.start)?;
            let hint = hints
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, h)| (*h).to_string())
                .or_else(|| {
                    if out_of_range(&message) {
                        Some("use a smaller whole number".to_string())
                    } else {
                        hint_for(&message)
                    }
                })?;
            // The parser's span of a number too large is its first digit only: show the
            // whole number.
            let value = if out_of_range(&message) {
                token_at(text, s.start)
            } else {
                text.get(s).unwrap_or("").trim()
            };
            Some(format!("{key}: {hint} (not {value})"))
        });
    Error::Usage(format!(
        "{}:{line}:{col}: {}",
        path.display(),
        named.unwrap_or(message)
    ))
}

/// A number the TOML parser or serde could not hold (`number too large to fit in target
/// type`, `… too small …`, an integer past i64): the key and its hint say what fits.
fn out_of_range(message: &str) -> bool {
    message.starts_with("number too large") || message.starts_with("number too small")
}

/// The bare word (a number) starting at `offset`: up to a space, `,`, `]`, `}` or `#`.
fn token_at(text: &str, offset: usize) -> &str {
    let rest = text.get(offset..).unwrap_or("");
    let end = rest
        .find(|c: char| c.is_whitespace() || matches!(c, ',' | ']' | '}' | '#'))
        .unwrap_or(rest.len());
    &rest[..end]
}

/// The key of a value starting at `offset`: `key = ` (bare, quoted or dotted, its last
/// part) just before it on its line.
fn key_before(text: &str, offset: usize) -> Option<String> {
    let before = text.get(..offset)?;
    let line = before.rsplit('\n').next()?;
    let key = line.trim_end().strip_suffix('=')?.trim();
    let last = key
        .rsplit('.')
        .next()?
        .trim()
        .trim_matches('"')
        .trim_matches('\'');
    (!last.is_empty()).then(|| last.to_string())
}

/// What to write, from serde's "expected …" (its names for Rust types).
fn hint_for(message: &str) -> Option<String> {
    let expected = message.rsplit("expected ").next()?.trim();
    let hint = match expected {
        "a boolean" => "use true or false".to_string(),
        "u8" | "u16" | "u32" | "u64" | "usize" => "use a whole number ≥ 0".to_string(),
        "i8" | "i16" | "i32" | "i64" | "isize" => "use a whole number".to_string(),
        "f32" | "f64" => "use a number".to_string(),
        "a string" => "use a quoted string, e.g. \"text\"".to_string(),
        "a sequence" => "use a list, e.g. [\"a\", \"b\"]".to_string(),
        other => format!("expected {other}"),
    };
    Some(hint)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, Debug)]
    #[allow(dead_code)]
    struct T {
        n: Option<u32>,
        b: Option<bool>,
    }

    fn err(text: &str, hints: &[(&str, &str)]) -> String {
        let e = toml::from_str::<T>(text).unwrap_err();
        toml_error_with(Path::new("f.toml"), text, &e, hints).to_string()
    }

    #[test]
    fn a_wrong_type_names_its_key_and_what_to_write() {
        assert_eq!(
            err("b = true\nn = -3\n", &[("n", "use a whole number ≥ 1")]),
            "f.toml:2:5: n: use a whole number ≥ 1 (not -3)"
        );
        assert_eq!(
            err("b = \"yes\"\n", &[]),
            "f.toml:1:5: b: use true or false (not \"yes\")"
        );
        assert_eq!(
            err("n = \"soon\"\n", &[]),
            "f.toml:1:5: n: use a whole number ≥ 0 (not \"soon\")"
        );
    }

    #[test]
    fn a_number_too_large_names_its_key_and_what_to_write() {
        assert_eq!(
            err(
                "b = true\nn = 99999999999999999999\n",
                &[("n", "use a whole number ≥ 1")]
            ),
            "f.toml:2:5: n: use a whole number ≥ 1 (not 99999999999999999999)"
        );
        assert_eq!(
            err("n = 99999999999999999999\n", &[]),
            "f.toml:1:5: n: use a smaller whole number (not 99999999999999999999)"
        );
    }
}
