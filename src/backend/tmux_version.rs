//! The one tmux version check: `doctor` reports it and `run` follows it (the process
//! backend below the minimum). crewmux needs tmux ≥ [`MIN_TMUX`]: it sends commands through
//! `source-file -` scripts, starts windows with `new-window -e`, and its tmux calls are
//! built for the 3.2a command set (docs/tmux.md "Minimum supported tmux").

/// The oldest tmux crewmux drives, `(major, minor)`.
pub const MIN_TMUX: (u32, u32) = (3, 2);

/// [`MIN_TMUX`] as people write it (`3.2`).
pub fn min_tmux_text() -> String {
    format!("{}.{}", MIN_TMUX.0, MIN_TMUX.1)
}

/// `(major, minor)` in `tmux -V` output (`tmux 3.3a` → `(3, 3)`, `tmux next-3.4` →
/// `(3, 4)`, `tmux openbsd-7.4` is read as `(7, 4)`); `None` without a `N.N` in it.
pub fn parse_tmux_version(output: &str) -> Option<(u32, u32)> {
    let start = output.find(|c: char| c.is_ascii_digit())?;
    let rest = &output[start..];
    let (major, rest) = rest.split_once('.')?;
    let minor: String = rest.chars().take_while(char::is_ascii_digit).collect();
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// Whether the tmux that printed `version` (the `tmux -V` line; `None` when tmux is not on
/// PATH) can run workers: `Ok(())`, or why not in one phrase that names the version and
/// the minimum (e.g. `tmux 2.9a is older than 3.2, the oldest crewmux drives`).
///
/// # Errors
/// The phrase, when tmux is missing, its version cannot be read, or it is below
/// [`MIN_TMUX`].
pub fn tmux_usable(version: Option<&str>) -> Result<(), String> {
    let Some(line) = version.map(str::trim) else {
        return Err("tmux is not on PATH".into());
    };
    match parse_tmux_version(line) {
        Some(v) if v >= MIN_TMUX => Ok(()),
        Some(_) => Err(format!(
            "{line} is older than {}, the oldest crewmux drives",
            min_tmux_text()
        )),
        None => Err(format!(
            "`tmux -V` printed {line:?}, which names no version; crewmux needs tmux {} or newer",
            min_tmux_text()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse() {
        assert_eq!(parse_tmux_version("tmux 3.3a"), Some((3, 3)));
        assert_eq!(parse_tmux_version("tmux next-3.4"), Some((3, 4)));
        assert_eq!(parse_tmux_version("tmux 2.9a"), Some((2, 9)));
        assert_eq!(parse_tmux_version("tmux 3.10"), Some((3, 10)));
        assert_eq!(parse_tmux_version("tmux master"), None);
    }

    #[test]
    fn the_minimum_is_usable_and_below_it_is_not() {
        assert_eq!(tmux_usable(Some("tmux 3.2a")), Ok(()));
        assert_eq!(tmux_usable(Some("tmux 3.10")), Ok(()));
        assert_eq!(tmux_usable(Some("tmux 4.0")), Ok(()));
        let old = tmux_usable(Some("tmux 3.1c\n")).unwrap_err();
        assert_eq!(
            old,
            "tmux 3.1c is older than 3.2, the oldest crewmux drives"
        );
        assert!(tmux_usable(Some("tmux master"))
            .unwrap_err()
            .contains("names no version"));
        assert_eq!(tmux_usable(None).unwrap_err(), "tmux is not on PATH");
    }
}
