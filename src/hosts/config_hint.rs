//! Hints for `hosts.toml` mistakes: a value's type error placed in its host's table, a
//! host table written without its `hosts.` prefix, and the host a mistyped name meant.

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

/// The TOML parser's "unknown field" error for a top-level key of `hosts.toml` with what to
/// write: a table `[box]` is `[hosts.box]`; another key belongs in a host's table. `err`
/// as it is for any other error. `at` is where the parser placed it.
pub(super) fn with_hosts_prefix(err: Error, text: &str, at: usize) -> Error {
    let Error::Usage(line) = &err else {
        return err;
    };
    if !line.ends_with("expected `hosts`") {
        return err;
    }
    let line_start = text
        .get(..at)
        .map_or(0, |t| t.rfind('\n').map_or(0, |i| i + 1));
    let header = text
        .get(line_start..)
        .and_then(|l| l.lines().next())
        .map(str::trim)
        .and_then(|l| l.strip_prefix('[')?.split(']').next())
        .map(str::trim)
        .filter(|h| !h.starts_with('['));
    let hint = match header {
        Some(name) => format!("write `[hosts.{name}]` for a host named `{name}`"),
        None => "a host's keys go in its table: `[hosts.NAME]`".to_string(),
    };
    Error::Usage(format!("{line}: {hint}"))
}

/// The name in `known` that `name` most likely meant ([`crate::text::closest`]).
pub(super) fn meant<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    crate::text::closest(name, known)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_without_the_hosts_prefix_is_told_how_to_write_it() {
        let usage = |s: &str| Error::Usage(s.to_string());
        let text = "[box]\nssh = \"me@box\"\n";
        let Error::Usage(said) = with_hosts_prefix(
            usage("h.toml:1:2: unknown field `box`, expected `hosts`"),
            text,
            1,
        ) else {
            panic!()
        };
        assert_eq!(
            said,
            "h.toml:1:2: unknown field `box`, expected `hosts`: write `[hosts.box]` for a host named `box`"
        );
        let Error::Usage(said) = with_hosts_prefix(
            usage("h.toml:1:1: unknown field `ssh`, expected `hosts`"),
            "ssh = \"me@box\"\n",
            0,
        ) else {
            panic!()
        };
        assert!(
            said.ends_with("a host's keys go in its table: `[hosts.NAME]`"),
            "{said}"
        );
        let Error::Usage(said) = with_hosts_prefix(usage("h.toml:1:1: other"), text, 1) else {
            panic!()
        };
        assert_eq!(said, "h.toml:1:1: other");
    }

    #[test]
    fn a_mistyped_host_meant_the_close_one() {
        let known = ["local", "box", "gpu-1"];
        assert_eq!(meant("BOX", known), Some("box"));
        assert_eq!(meant("bxo", known), Some("box"));
        assert_eq!(meant("gpu1", known), Some("gpu-1"));
        assert_eq!(meant("lcoal", known), Some("local"));
        assert_eq!(meant("elsewhere", known), None);
        assert_eq!(meant("x", known), None);
    }
}
