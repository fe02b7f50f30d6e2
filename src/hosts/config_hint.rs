//! A `hosts.toml` value's type error, placed in its host's table.

use crate::error::Error;

/// A bad value's error (`file:line:col: key: hint (not value)`) with the host it belongs
/// to, as the other fields' errors say it: `file:line:col: host `b`: `key`: hint …`. The
/// host is the last `[hosts.NAME]` table opened before `at`.
pub(super) fn with_host(err: Error, text: &str, at: usize, hints: &[(&str, &str)]) -> Error {
    let Error::Usage(line) = &err else {
        return err;
    };
    let host = text
        .get(..at)
        .unwrap_or("")
        .lines()
        .rev()
        .find_map(|l| l.trim().strip_prefix("[hosts.")?.strip_suffix(']'))
        .map(|h| h.trim().trim_matches('"'));
    let Some(host) = host else {
        return err;
    };
    for (key, _) in hints {
        let needle = format!(": {key}: ");
        if let Some(i) = line.find(&needle) {
            return Error::Usage(format!(
                "{}: host `{host}`: `{key}`: {}",
                &line[..i],
                &line[i + needle.len()..]
            ));
        }
    }
    err
}
