//! A team file entry that lacks a required field: the error names the entry and points at
//! its table, where serde alone reports only "missing field" at the top of the file. Any
//! other error inside an entry (an unknown or mistyped field) names the entry too.

use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

use crate::error::Error;
use crate::providers::agents;
use crate::providers::spec::line_col;

/// The tables a required field can be missing from, read without their own rules.
#[derive(Deserialize)]
struct Loose {
    #[serde(default)]
    worker: Vec<Spanned<toml::Table>>,
    #[serde(default)]
    check: Vec<Spanned<toml::Table>>,
    #[serde(default)]
    critic: Vec<Spanned<toml::Table>>,
}

/// What to write for a missing `field` of a `what` entry.
fn hint(what: &str, field: &str) -> String {
    match (what, field) {
        (_, "role") => format!(
            "add role = \"…\" (one of {})",
            agents::roles().collect::<Vec<_>>().join(", ")
        ),
        (_, "id") => {
            format!("add id = \"…\" (lowercase letters, digits and `-`, unique in the {what}s)")
        }
        ("check", "command") => "add command = [\"argv\", …]".to_string(),
        _ => format!("add `{field}`"),
    }
}

/// `err` (`FILE:LINE:COL: message`) with the `[[worker]]`, `[[check]]` or `[[critic]]`
/// entry whose table holds byte `at` named after the place: `FILE:LINE:COL: worker `a`:
/// message` (`worker #2` when it has no id). `err` as it is outside every entry, or when
/// the file does not parse as TOML at all.
pub(super) fn with_entry(err: Error, text: &str, at: usize) -> Error {
    let Error::Usage(line) = &err else {
        return err;
    };
    let Ok(loose) = toml::from_str::<Loose>(text) else {
        return err;
    };
    let groups = [
        ("worker", &loose.worker),
        ("check", &loose.check),
        ("critic", &loose.critic),
    ];
    for (what, tables) in groups {
        for (n, t) in tables.iter().enumerate() {
            if !t.span().contains(&at) {
                continue;
            }
            let name = match t.get_ref().get("id").and_then(|v| v.as_str()) {
                Some(id) => format!("{what} `{id}`"),
                None => format!("{what} #{}", n + 1),
            };
            // After `FILE:LINE:COL: `: the path may hold `: ` itself, the place does not.
            let (line_no, col) = line_col(text, at);
            let place = format!(":{line_no}:{col}: ");
            return match line.find(&place) {
                Some(i) => {
                    let (head, rest) = line.split_at(i + place.len());
                    Error::Usage(format!("{head}{name}: {rest}"))
                }
                None => err,
            };
        }
    }
    err
}

/// When `e` is serde's "missing field `x`", the one-line error for the first `[[worker]]`,
/// `[[check]]` or `[[critic]]` without `x`: `FILE:LINE:COL: worker `b`: missing `role`:
/// add role = "…" (one of …)`, LINE:COL at the entry's table. `None` for any other error, or
/// when no entry lacks the field (the caller reports serde's message as it is).
pub(super) fn missing_field(path: &Path, text: &str, e: &toml::de::Error) -> Option<Error> {
    let message = e.message();
    let field = message
        .split("missing field `")
        .nth(1)?
        .split('`')
        .next()?
        .to_string();
    let loose: Loose = toml::from_str(text).ok()?;
    // Each kind of entry with the fields it requires (domain/team.rs).
    let groups = [
        ("worker", &loose.worker, &["id", "role"][..]),
        ("check", &loose.check, &["id", "command"][..]),
        ("critic", &loose.critic, &["id"][..]),
    ];
    for (what, tables, required) in groups {
        if !required.contains(&field.as_str()) {
            continue;
        }
        for (n, t) in tables.iter().enumerate() {
            if t.get_ref().contains_key(&field) {
                continue;
            }
            let name = match t.get_ref().get("id").and_then(|v| v.as_str()) {
                Some(id) => format!("{what} `{id}`"),
                None => format!("{what} #{}", n + 1),
            };
            let (line, col) = line_col(text, t.span().start);
            return Some(Error::Usage(format!(
                "{}:{line}:{col}: {name}: missing `{field}`: {}",
                path.display(),
                hint(what, &field)
            )));
        }
    }
    None
}
