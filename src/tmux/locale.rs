//! tmux and the locale: a tmux client whose environment names no UTF-8 locale treats its
//! output as ASCII and prints every control character and non-ASCII byte as `_` (tmux 3.3a,
//! measured: `env -i tmux display -p -F '#{pane_id}<TAB>#{pane_pid}'` prints `%0_693`).
//! crewmux reads tab-separated replies, so under such a locale (`env -i`, a bare cron or
//! systemd service) nothing it asked tmux for could be read. The client decides from the
//! first of `LC_ALL`, `LC_CTYPE` and `LANG` that is set and not empty: UTF-8 when it
//! contains `UTF-8` or `UTF8` in any case (tmux(1), `-u`). When it does not, crewmux gives
//! every tmux it starts `C.UTF-8` in that variable (`LC_CTYPE` when none is set), a locale
//! glibc always has; the panes a server started that way inherit it.

/// The variable and value to give a tmux client so it reads and writes UTF-8, or `None`
/// when `get` (an environment lookup) already names a UTF-8 locale.
pub fn utf8_fix(get: impl Fn(&str) -> Option<String>) -> Option<(&'static str, &'static str)> {
    let set = |name: &'static str| get(name).filter(|v| !v.is_empty()).map(|v| (name, v));
    match set("LC_ALL")
        .or_else(|| set("LC_CTYPE"))
        .or_else(|| set("LANG"))
    {
        Some((_, v)) if is_utf8(&v) => None,
        Some(("LC_ALL", _)) => Some(("LC_ALL", "C.UTF-8")),
        _ => Some(("LC_CTYPE", "C.UTF-8")),
    }
}

/// [`utf8_fix`] for this process's environment.
pub fn utf8_fix_here() -> Option<(&'static str, &'static str)> {
    utf8_fix(|name| std::env::var(name).ok())
}

/// Give `cmd` (a tmux client about to start) a UTF-8 locale when this process has none.
pub fn give_utf8(cmd: &mut std::process::Command) {
    if let Some((name, value)) = utf8_fix_here() {
        cmd.env(name, value);
    }
}

fn is_utf8(value: &str) -> bool {
    let v = value.to_ascii_uppercase();
    v.contains("UTF-8") || v.contains("UTF8")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fix(vars: &[(&str, &str)]) -> Option<(&'static str, &'static str)> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        utf8_fix(|name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()))
    }

    #[test]
    fn the_first_set_variable_decides_as_tmux_does() {
        assert_eq!(fix(&[]), Some(("LC_CTYPE", "C.UTF-8")));
        assert_eq!(fix(&[("LANG", "en_US.UTF-8")]), None);
        assert_eq!(fix(&[("LANG", "C.utf8")]), None);
        assert_eq!(fix(&[("LANG", "C")]), Some(("LC_CTYPE", "C.UTF-8")));
        // LC_CTYPE before LANG; an empty one is not set.
        assert_eq!(
            fix(&[("LC_CTYPE", "C"), ("LANG", "C.UTF-8")]),
            Some(("LC_CTYPE", "C.UTF-8"))
        );
        assert_eq!(fix(&[("LC_CTYPE", ""), ("LANG", "C.UTF-8")]), None);
        // LC_ALL wins over both, so it is the one to change.
        assert_eq!(
            fix(&[("LC_ALL", "POSIX"), ("LANG", "C.UTF-8")]),
            Some(("LC_ALL", "C.UTF-8"))
        );
        assert_eq!(fix(&[("LC_ALL", "de_DE.UTF-8"), ("LC_CTYPE", "C")]), None);
    }
}
