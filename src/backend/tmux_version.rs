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

/// What tmux 3.3a prints (stderr, exit 1, for every command, `-V` included) when it finds no
/// UTF-8 locale: `tmux.c` tries `en_US.UTF-8`, then `C.UTF-8`, then the environment's
/// (`LC_ALL`, `LC_CTYPE`, `LANG`), and ends with one of these (strings checked in the 3.3a
/// binary).
pub const LOCALE_REFUSALS: [&str; 2] = [
    "need UTF-8 locale (LC_CTYPE) but have",
    "invalid LC_ALL, LC_CTYPE or LANG",
];

/// The line of `output` (what `tmux -V` printed) in which tmux refuses to start for lack of
/// a UTF-8 locale ([`LOCALE_REFUSALS`]), without its `tmux: ` prefix.
pub fn locale_refusal(output: &str) -> Option<&str> {
    output
        .lines()
        .map(str::trim)
        .find(|l| LOCALE_REFUSALS.iter().any(|r| l.contains(r)))
        .map(|l| l.strip_prefix("tmux: ").unwrap_or(l))
}

/// The fix for what [`tmux_usable`] found wrong with the tmux that printed `version`: a
/// UTF-8 locale when tmux refused to start without one, otherwise a tmux at the minimum
/// (one phrase, e.g. `install tmux 3.2 or newer`).
pub fn tmux_fix(version: Option<&str>) -> String {
    if version.and_then(locale_refusal).is_some() {
        "give tmux a UTF-8 locale: set LANG=C.UTF-8 (or another UTF-8 locale `locale -a` lists; \
         Debian and Ubuntu: `apt-get install locales`)"
            .to_string()
    } else {
        format!("install tmux {} or newer", min_tmux_text())
    }
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
    if let Some(said) = locale_refusal(line) {
        return Err(format!(
            "tmux will not start without a UTF-8 locale (it said: {said})"
        ));
    }
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
        assert_eq!(tmux_fix(Some("tmux 3.1c")), "install tmux 3.2 or newer");
    }

    #[test]
    fn a_tmux_without_a_utf8_locale_is_a_locale_problem_not_a_version_one() {
        for said in [
            "\ntmux: need UTF-8 locale (LC_CTYPE) but have ANSI_X3.4-1968\n",
            "\ntmux: invalid LC_ALL, LC_CTYPE or LANG\n",
        ] {
            let problem = tmux_usable(Some(said)).unwrap_err();
            assert!(
                problem.starts_with("tmux will not start without a UTF-8 locale (it said: "),
                "{problem}"
            );
            assert!(!problem.contains("tmux: "), "{problem}");
            assert!(!problem.contains("version"), "{problem}");
            let fix = tmux_fix(Some(said));
            assert!(fix.contains("LANG=C.UTF-8"), "{fix}");
            assert!(!fix.contains("install tmux"), "{fix}");
        }
    }
}
