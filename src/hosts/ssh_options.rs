//! Options ssh refuses before it connects. `ssh -G` reads the options and config files a
//! call would use and prints the configuration it resolves, without connecting
//! (ssh(1), `-G`); it exits 255 on the mistakes that make every call fail the same way
//! (an unknown `-o` option, a `-F` file that cannot be read, a bad line in a config file,
//! a bad port). Such a host can never answer, so a run that needs it is refused at once
//! instead of waiting its `lost_after_s` for it.

use std::process::Command;
use std::time::Duration;

use super::config::HostSpec;
use super::ssh::SshLink;
use crate::error::{Error, Result};

/// Limit of the `ssh -G` call (it reads files only: milliseconds).
const LIMIT: Duration = Duration::from_secs(5);

/// `Ok` when ssh takes the options crewmux calls `host` with (its own and the host's
/// `ssh_args`), or when ssh cannot be asked (not installed, no answer in time: the calls
/// themselves say so later).
///
/// # Errors
/// [`Error::Usage`]: ssh refuses the options; one line naming the host, what ssh said,
/// `ssh_args` in the hosts file, and the command to try by hand.
pub fn check(host: &HostSpec) -> Result<()> {
    let link = SshLink::new(host)?;
    let mut cmd = Command::new("ssh");
    cmd.arg("-G")
        .args(link.options())
        .arg("--")
        .arg(link.dest());
    let out = match crate::tmux::output_within(cmd, None, LIMIT, &host.name) {
        Ok(out) => out,
        Err(e) => {
            tracing::debug!("host {}: ssh -G: {e}", host.name);
            return Ok(());
        }
    };
    if out.status.success() {
        return Ok(());
    }
    let said = String::from_utf8_lossy(&out.stderr);
    let said = said
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("no reason given");
    Err(refused(host, said))
}

/// The refusal of `host`'s options, ssh having said `said`.
fn refused(host: &HostSpec, said: &str) -> Error {
    Error::Usage(format!(
        "host `{}`: ssh refuses its options before connecting ({said}): fix `ssh_args` in {} (or the ssh config file ssh names); try `{} true` by hand",
        host.name,
        host.source.display(),
        super::doctor::by_hand(host)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(args: &[&str]) -> HostSpec {
        HostSpec {
            name: "junkopt".into(),
            ssh: "me@box".into(),
            ssh_args: args.iter().map(|a| (*a).to_string()).collect(),
            workdir: "/w".into(),
            max_workers: 1,
            tmux: "tmux".into(),
            tmux_socket: "s".into(),
            lost_after_s: 120,
            source: "/p/.crewmux/hosts.toml".into(),
        }
    }

    fn ssh_here() -> bool {
        let here = Command::new("ssh").arg("-V").output().is_ok();
        if !here {
            eprintln!("ssh is not installed: skipping");
        }
        here
    }

    #[test]
    fn an_unknown_option_is_refused_naming_the_host_ssh_args_and_the_fix() {
        if !ssh_here() {
            return;
        }
        let e = check(&spec(&["-o", "Bogus=1"])).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        let line = e.to_string();
        assert!(!line.contains('\n'), "{line}");
        for part in [
            "host `junkopt`",
            "Bad configuration option: bogus",
            "fix `ssh_args` in /p/.crewmux/hosts.toml",
            "try `ssh -o 'Bogus=1' me@box true` by hand",
        ] {
            assert!(line.contains(part), "{part}: {line}");
        }
    }

    #[test]
    fn a_config_file_that_cannot_be_read_is_refused() {
        if !ssh_here() {
            return;
        }
        let line = check(&spec(&["-F", "/nonexistent/ssh_config"]))
            .unwrap_err()
            .to_string();
        assert!(line.contains("/nonexistent/ssh_config"), "{line}");
    }

    #[test]
    fn options_ssh_takes_pass_without_connecting() {
        if !ssh_here() {
            return;
        }
        // Port 1 of a name that does not resolve: -G connects to nothing.
        check(&spec(&["-p", "1", "-o", "ConnectTimeout=3"])).unwrap();
        check(&spec(&[])).unwrap();
    }
}
