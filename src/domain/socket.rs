//! The name of a tmux server socket crewmux uses (`tmux -L`).

/// A `tmux -L` socket name: 1 to 64 of `A-Z a-z 0-9 . _ -`, not starting with `.`, and not
/// `default` (tmux's own server, which crewmux never touches: docs/design.md "Exit evidence").
///
/// # Errors
/// The reason `s` is not a socket name, with the fix (clap prints it as a usage error).
pub fn socket_name(s: &str) -> Result<String, String> {
    if s.is_empty()
        || s.len() > 64
        || s.starts_with('.')
        || !s
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
    {
        return Err(format!(
            "`{s}` is not a socket name: use 1-64 letters, digits, `.`, `_` or `-` (e.g. crewmux-dev)"
        ));
    }
    if s == "default" {
        return Err(
            "`default` is your own tmux server; crewmux uses a dedicated one: pick another name"
                .into(),
        );
    }
    Ok(s.to_string())
}
