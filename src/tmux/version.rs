//! Which tmux is installed: on PATH at all, and its version from `tmux -V`.

use std::process::{Command, Stdio};

use crate::error::{Error, Result};

/// True when a `tmux` binary is on PATH.
pub fn tmux_available() -> bool {
    which::which("tmux").is_ok()
}

/// `(major, minor)` from `tmux -V` (e.g. `tmux 3.3a` → `(3, 3)`, `tmux next-3.6` → `(3, 6)`).
///
/// # Errors
/// Tmux missing or its output unrecognised.
pub fn tmux_version() -> Result<(u32, u32)> {
    let out = Command::new("tmux")
        .arg("-V")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Error::Other(format!("tmux -V: {e}")))?;
    let text = String::from_utf8_lossy(&out.stdout);
    parse_version(&text).ok_or_else(|| Error::Other(format!("tmux -V printed {text:?}")))
}

fn parse_version(text: &str) -> Option<(u32, u32)> {
    let v = text.split_whitespace().nth(1)?;
    let v = v.trim_start_matches(|c: char| !c.is_ascii_digit());
    let mut parts = v.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor: String = parts
        .next()
        .unwrap_or("0")
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    Some((major, minor.parse().unwrap_or(0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse() {
        assert_eq!(parse_version("tmux 3.3a\n"), Some((3, 3)));
        assert_eq!(parse_version("tmux 3.4"), Some((3, 4)));
        assert_eq!(parse_version("tmux next-3.6"), Some((3, 6)));
        assert_eq!(parse_version("garbage"), None);
    }
}
