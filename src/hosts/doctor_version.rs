//! An npm-installed agent CLI's version on a host, read from its package's `package.json`
//! as `providers::npm_version` reads it here: one short script finds the package folder
//! of the CLI's real path (the first folder whose parent is `node_modules`, or a scope
//! such as `@google` in it) and prints the file; the version is parsed here. `--version`
//! starts Node on the host, seconds of CPU each, past its limit on a loaded host.

use std::time::Duration;

use super::doctor::RemoteSh;

/// Limit of the script (it reads one file).
const LIMIT: Duration = Duration::from_secs(10);

/// The script printing the `package.json` of the npm package `path` belongs to; exit 1
/// when it is in none.
fn script(path: &str) -> String {
    let p = shlex::try_quote(path).map_or_else(|_| "''".into(), |w| w.into_owned());
    format!(
        "p=$(readlink -f -- {p}) || exit 1\n\
         d=${{p%/*}}\n\
         while [ -n \"$d\" ] && [ \"$d\" != / ]; do\n\
         \x20 up=${{d%/*}}\n\
         \x20 case $up in */node_modules) exec cat -- \"$d/package.json\";; esac\n\
         \x20 case ${{up##*/}} in @*) case ${{up%/*}} in */node_modules) exec cat -- \"$d/package.json\";; esac;; esac\n\
         \x20 d=$up\n\
         done\n\
         exit 1\n"
    )
}

/// The version of the npm package the CLI at `path` on the host belongs to; `None` when
/// it is in none, or the host did not say.
pub fn remote_package_version(path: &str, sh: &dyn RemoteSh) -> Option<String> {
    let out = sh.sh(&script(path), LIMIT).ok()?;
    if out.code != Some(0) {
        return None;
    }
    crate::providers::npm_version::version_in(&out.output)
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::process::Command;

    use super::*;
    use crate::error::Result;
    use crate::hosts::doctor::RemoteOut;

    /// This machine as the host: the script runs in a local `sh`.
    struct Here;

    impl RemoteSh for Here {
        fn sh(&self, script: &str, _limit: Duration) -> Result<RemoteOut> {
            let out = Command::new("sh").arg("-c").arg(script).output().unwrap();
            Ok(RemoteOut {
                code: out.status.code(),
                output: String::from_utf8_lossy(&out.stdout).into_owned(),
                timed_out: false,
            })
        }
    }

    /// An npm install under `root` as `providers::npm_version` tests it; the link's path.
    fn installed(root: &Path, package: &str, script: &str, json: &str) -> String {
        crate::providers::npm_version::tests::installed(root, package, script, json)
            .display()
            .to_string()
    }

    #[test]
    fn the_host_says_a_scoped_or_plain_packages_version_and_nothing_for_another_binary() {
        let a = tempfile::tempdir().unwrap();
        let gemini = installed(
            a.path(),
            "@google/gemini-cli",
            "bundle/gemini.js",
            r#"{"name": "@google/gemini-cli", "version": "0.61.0"}"#,
        );
        assert_eq!(
            remote_package_version(&gemini, &Here).as_deref(),
            Some("0.61.0")
        );
        let plain = installed(
            a.path(),
            "opencode-ai",
            "bin/opencode",
            r#"{"name": "opencode-ai", "version": "1.2.3"}"#,
        );
        assert_eq!(
            remote_package_version(&plain, &Here).as_deref(),
            Some("1.2.3")
        );
        let sh = a.path().join("tool");
        std::fs::write(&sh, "#!/bin/sh\n").unwrap();
        assert_eq!(
            remote_package_version(&sh.display().to_string(), &Here),
            None
        );
        assert_eq!(remote_package_version("/no/such/cli", &Here), None);
    }
}
