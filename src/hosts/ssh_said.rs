//! What ssh said when it could not run a command on a host (its exit 255 and its
//! stderr), read into the few cases a person acts on differently: a host that answered
//! and refused the login, a host key that does not match `known_hosts` or is not in it,
//! ssh's own configuration that cannot be used (these stay wrong until someone fixes
//! them), and everything else, which may pass (no answer, a refused connection, a name
//! that does not resolve). Wording from OpenSSH 9.2p1 (`ssh(1)`, `sshconnect.c`,
//! `readconf.c`).

use super::config::HostSpec;

/// Why ssh could not run a command on a host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SshFailed {
    /// The host answered and refused the login (`user@host: Permission denied
    /// (publickey).`, too many authentication failures): ssh's line.
    LoginRefused(String),
    /// The host's key is not the one `known_hosts` has for it (`REMOTE HOST
    /// IDENTIFICATION HAS CHANGED`): the host as ssh names it (`[127.0.0.1]:2222`) and
    /// the `ssh-keygen … -R …` line ssh suggests, when it gave one.
    HostKeyChanged {
        host: String,
        remove: Option<String>,
    },
    /// `known_hosts` has no key for the host, and crewmux's ssh asks nothing
    /// (`BatchMode`): the host as ssh names it, when it said.
    HostKeyUnknown(Option<String>),
    /// ssh's configuration cannot be used (a `-F` file it cannot read, a bad option in a
    /// config file or in `ssh_args`): ssh's line.
    Config(String),
    /// Anything else (no answer in time, a refused connection, a name that does not
    /// resolve, a connection closed): ssh's most telling line. The host may answer later.
    NoAnswer(String),
}

/// The first line of `said` that contains `needle`, trimmed.
fn line_with<'a>(said: &'a str, needle: &str) -> Option<&'a str> {
    said.lines().map(str::trim).find(|l| l.contains(needle))
}

/// The text between `before` and `after` in the line of `said` that has both.
fn between<'a>(said: &'a str, before: &str, after: &str) -> Option<&'a str> {
    said.lines().find_map(|l| {
        let rest = &l[l.find(before)? + before.len()..];
        Some(rest[..rest.find(after)?].trim())
    })
}

/// One line of `said` for a person: the first that is not part of a banner (`@@@`) or a
/// notice ssh prints on success too (`Warning: Permanently added`).
pub fn one_line(said: &str) -> String {
    let skip = |l: &&str| l.is_empty() || l.starts_with('@') || l.starts_with("Warning:");
    let line = said
        .lines()
        .map(str::trim)
        .find(|l| !skip(l))
        .or_else(|| said.lines().map(str::trim).find(|l| !l.is_empty()))
        .unwrap_or("no output");
    line.chars().take(200).collect()
}

impl SshFailed {
    /// Read what ssh said (its stderr, or any text that holds it).
    pub fn read(said: &str) -> SshFailed {
        if said.contains("REMOTE HOST IDENTIFICATION HAS CHANGED")
            || line_with(said, "has changed and you have requested strict checking").is_some()
        {
            return SshFailed::HostKeyChanged {
                host: between(said, "Host key for ", " has changed")
                    .unwrap_or("the host")
                    .to_string(),
                remove: line_with(said, "ssh-keygen ").map(str::to_string),
            };
        }
        if let Some(l) = line_with(said, "Permission denied (")
            .or_else(|| line_with(said, "Too many authentication failures"))
        {
            return SshFailed::LoginRefused(l.to_string());
        }
        if said.contains("Host key verification failed") {
            let host = between(said, "host key is known for ", " and you have");
            return SshFailed::HostKeyUnknown(host.map(str::to_string));
        }
        let config = [
            "Can't open user config file",
            "Bad configuration option",
            "bad configuration options",
            "Bad owner or permissions on",
            "unknown option --",
            "command-line line",
            "no argument after keyword",
            "missing argument",
        ];
        if let Some(l) = config.iter().find_map(|c| line_with(said, c)) {
            return SshFailed::Config(l.to_string());
        }
        SshFailed::NoAnswer(one_line(said))
    }

    /// True when it stays so until someone fixes it (everything but [`SshFailed::NoAnswer`]):
    /// a run that needs the host is refused before it starts instead of waiting for it.
    pub fn permanent(&self) -> bool {
        !matches!(self, SshFailed::NoAnswer(_))
    }

    /// What ssh said, in one short line without the fix (a notice, a `--hosts` reason).
    pub fn said(&self) -> String {
        match self {
            SshFailed::LoginRefused(l) | SshFailed::Config(l) | SshFailed::NoAnswer(l) => l.clone(),
            SshFailed::HostKeyChanged { host, .. } => {
                format!("host key of {host} does not match the known_hosts entry")
            }
            SshFailed::HostKeyUnknown(host) => format!(
                "host key of {} is not in known_hosts",
                host.as_deref().unwrap_or("the host")
            ),
        }
    }

    /// One line for a person: what is wrong and the fix, for `host` (its `ssh_args` and
    /// the file that defines it name the fix). `doctor --hosts` prints it after `ssh FAIL`.
    pub fn phrase(&self, host: &HostSpec) -> String {
        let by_hand = super::doctor::by_hand(host);
        let source = host.source.display();
        match self {
            SshFailed::LoginRefused(said) => format!(
                "login refused: {said}; check `{by_hand}` by hand (keys, ~/.ssh/config, `ssh_args` in {source})"
            ),
            SshFailed::HostKeyChanged { host: name, remove } => format!(
                "host key of {name} does not match the known_hosts entry: check it and fix known_hosts ({})",
                remove.clone().unwrap_or_else(|| format!("ssh-keygen -R {name}"))
            ),
            SshFailed::HostKeyUnknown(name) => format!(
                "host key of {} is not in known_hosts, and crewmux's ssh asks nothing (BatchMode): check the key and add it, e.g. run `{by_hand}` once by hand",
                name.as_deref().unwrap_or("the host")
            ),
            SshFailed::Config(said) => match said
                .strip_prefix("Can't open user config file ")
                .and_then(|rest| rest.rsplit_once(": "))
            {
                Some((file, why)) => format!(
                    "ssh config file {file} cannot be read ({why}): fix `ssh_args` in {source}"
                ),
                None => format!(
                    "ssh refuses its configuration: {said}; fix `ssh_args` in {source} or the ssh config file"
                ),
            },
            SshFailed::NoAnswer(said) => format!(
                "unreachable: {said}; check `{by_hand}` by hand (keys, ~/.ssh/config, `ssh_args` in {source})"
            ),
        }
    }
}

#[cfg(test)]
#[path = "ssh_said_tests.rs"]
mod tests;
