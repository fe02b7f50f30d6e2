//! A TOML value of the wrong type, told as the key and what to write: serde's own words
//! (`invalid type: string "yes", expected a boolean`) name neither.

use std::path::Path;

use crate::error::Error;

use super::spec::line_col;

/// `e` as one line `file:line:col: …`. A wrong type or value names its key and what to
/// write there: the `hints` entry for that key (`("max_workers", "use a whole number ≥
/// 1")`), else one read from the type serde expected. An unknown field close to a known
/// one asks `did you mean …?` instead of listing every field, and a table written `[name]`
/// where a list of tables is expected says to write `[[name]]`.
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
    let said = named
        .or_else(|| unknown_field(&message))
        .or_else(|| unknown_variant(&message, text, e.span()?.start))
        .or_else(|| {
            let at = e.span()?.start;
            one_table_for_many(&message, text, at)
        })
        .unwrap_or(message);
    Error::Usage(format!("{}:{line}:{col}: {said}", path.display()))
}

/// serde's `unknown field `comand`, expected one of `id`, `command`, …` as `unknown field
/// `comand`: did you mean `command`?` when one expected field is that close
/// ([`crate::text::closest`]); `None` otherwise (the list is then the best help).
fn unknown_field(message: &str) -> Option<String> {
    let rest = message.strip_prefix("unknown field `")?;
    let (field, expected) = rest.split_once('`')?;
    // The names are every other piece between backticks: ", expected one of `a`, `b`".
    let known = expected.split('`').skip(1).step_by(2);
    let meant = crate::text::closest(field, known)?;
    Some(format!("unknown field `{field}`: did you mean `{meant}`?"))
}

/// serde's `unknown variant `aut`, expected one of `ask`, `auto`, `deny`` as `policy =
/// "aut": did you mean `auto`? (use ask, auto or deny)`: the key is read before the value
/// at `at`; the nearest word is asked for only when it is close ([`crate::text::closest`]).
fn unknown_variant(message: &str, text: &str, at: usize) -> Option<String> {
    let rest = message.strip_prefix("unknown variant `")?;
    let (value, expected) = rest.split_once('`')?;
    let known: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
    let key = key_before(text, at).map_or(String::new(), |k| format!("{k} = "));
    let list = match known.split_last() {
        Some((last, [])) => (*last).to_string(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => return None,
    };
    Some(match crate::text::closest(value, known.iter().copied()) {
        Some(meant) => format!("{key}\"{value}\": did you mean `{meant}`? (use {list})"),
        None => format!("{key}\"{value}\": unknown value (use {list})"),
    })
}

/// A table header `[name]` where the file needs a list of tables (serde: `invalid type:
/// map, expected a sequence`), said as what to write: `[[name]]`, once per entry (TOML's
/// array of tables).
fn one_table_for_many(message: &str, text: &str, at: usize) -> Option<String> {
    if !message.starts_with("invalid type: map, expected a sequence") {
        return None;
    }
    let line_start = text.get(..at)?.rfind('\n').map_or(0, |i| i + 1);
    let line = text.get(line_start..)?.lines().next()?.trim();
    let name = line.strip_prefix('[')?.split(']').next()?.trim();
    if name.is_empty() || name.starts_with('[') {
        return None;
    }
    Some(format!(
        "`[{name}]` is one table, but a list is expected here: write `[[{name}]]` for each entry"
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

    #[derive(serde::Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Team {
        #[serde(default)]
        worker: Vec<Worker>,
    }

    #[derive(serde::Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Worker {
        id: Option<String>,
        command: Option<Vec<String>>,
        role: Option<String>,
    }

    fn team_err(text: &str) -> String {
        let e = toml::from_str::<Team>(text).unwrap_err();
        toml_error_with(Path::new("t.toml"), text, &e, &[]).to_string()
    }

    #[test]
    fn an_unknown_field_close_to_a_known_one_asks_did_you_mean() {
        assert_eq!(
            team_err("[[worker]]\nid = \"a\"\ncomand = [\"true\"]\n"),
            "t.toml:3:1: unknown field `comand`: did you mean `command`?"
        );
        let far = team_err("[[worker]]\nelsewhere = 1\n");
        assert!(
            far.starts_with("t.toml:2:1: unknown field `elsewhere`, expected one of `id`"),
            "{far}"
        );
    }

    #[test]
    fn a_table_where_a_list_of_tables_is_expected_says_to_write_double_brackets() {
        assert_eq!(
            team_err("# a team\n\n[worker]\nid = \"a\"\n"),
            "t.toml:3:1: `[worker]` is one table, but a list is expected here: write \
             `[[worker]]` for each entry"
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
