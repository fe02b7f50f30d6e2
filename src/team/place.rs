//! Where a worker's value stands in its team file, for errors found after the file was
//! loaded (a `cwd` that leaves the project, a `host` no `hosts.toml` defines): they read
//! `team.toml:7:8: worker `a`: …` as the file's own mistakes do.

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

use crate::providers::spec::line_col;

#[derive(Deserialize)]
struct Workers {
    #[serde(default)]
    worker: Vec<BTreeMap<String, Spanned<toml::Value>>>,
}

/// `(line, col)` (from 1) of the value of `key` in the `[[worker]]` whose `id` is `id`, in
/// the TOML `text`, or of the file's top-level `key` the worker inherits (as `host`) when
/// it names none; `None` when the text does not parse or neither has the key.
pub fn worker_value(text: &str, id: &str, key: &str) -> Option<(usize, usize)> {
    let file: Workers = toml::from_str(text).ok()?;
    let worker = file
        .worker
        .into_iter()
        .find(|w| w.get("id").and_then(|v| v.get_ref().as_str()) == Some(id))?;
    let span = match worker.get(key) {
        Some(value) => value.span(),
        None => {
            let top: BTreeMap<String, Spanned<toml::Value>> = toml::from_str(text).ok()?;
            top.get(key)?.span()
        }
    };
    Some(line_col(text, span.start))
}

/// `msg` placed at worker `id`'s `key` in the team file `source` (`source:line:col: msg`),
/// at the file when the value cannot be found there (`source: msg`), and as it is when
/// `source` is no file that can be read (a built-in mode such as `mode:ccg`).
pub fn at_worker_value(source: &str, id: &str, key: &str, msg: &str) -> String {
    let Ok(text) = std::fs::read_to_string(source) else {
        return msg.to_string();
    };
    match worker_value(&text, id, key) {
        Some((line, col)) => format!("{source}:{line}:{col}: {msg}"),
        None => format!("{source}: {msg}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_value_of_the_named_worker() {
        let text = "name = \"t\"\n\n[[worker]]\nid = \"a\"\nhost = \"box\"\n\n[[worker]]\nid = \"b\"\nhost   = \"bxo\"\n";
        assert_eq!(worker_value(text, "b", "host"), Some((9, 10)));
        assert_eq!(worker_value(text, "a", "host"), Some((5, 8)));
        assert_eq!(worker_value(text, "a", "cwd"), None);
        let inherited = "host = \"bxo\"\n[[worker]]\nid = \"a\"\n";
        assert_eq!(worker_value(inherited, "a", "host"), Some((1, 8)));
        assert_eq!(worker_value(text, "c", "host"), None);
        assert_eq!(worker_value("[[worker", "a", "host"), None);
    }
}
