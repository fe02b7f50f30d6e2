//! An npm-installed agent CLI's version, read from its package's `package.json`.
//!
//! npm installs a CLI as a link on PATH (`<prefix>/bin/gemini`) to a script inside its
//! package (`<prefix>/lib/node_modules/@google/gemini-cli/bundle/gemini.js`); the
//! package's `version` is the CLI's version. Reading that file costs nothing, while
//! `--version` starts Node: 1–3 s of CPU per CLI, and on a loaded machine, with every CLI
//! probed at once, past the version limit, which left the version unknown.

use std::ffi::OsStr;
use std::path::Path;

/// The `version` of the npm package `bin` (a path on PATH, links followed) belongs to;
/// `None` when `bin` is not inside a package under a `node_modules` folder, or its
/// `package.json` cannot be read or has no version.
#[must_use]
pub fn npm_package_version(bin: &Path) -> Option<String> {
    let real = std::fs::canonicalize(bin).ok()?;
    let modules = OsStr::new("node_modules");
    // The package's folder: the first one whose parent is `node_modules`, or a scope
    // (`@google`) in it.
    let package = real.ancestors().skip(1).find(|dir| {
        let Some(parent) = dir.parent() else {
            return false;
        };
        parent.file_name() == Some(modules)
            || (parent
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('@'))
                && parent.parent().and_then(Path::file_name) == Some(modules))
    })?;
    version_in(&std::fs::read_to_string(package.join("package.json")).ok()?)
}

/// The `version` of a `package.json` text; `None` when it is not JSON or has none.
#[must_use]
pub fn version_in(package_json: &str) -> Option<String> {
    let json: serde_json::Value = serde_json::from_str(package_json).ok()?;
    json["version"]
        .as_str()
        .filter(|v| !v.is_empty())
        .map(str::to_string)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// `<root>/lib/node_modules/<package>/<script>` with `package.json` holding `json`,
    /// linked from `<root>/bin/<package, `/` read as `-`>` as npm does; the link's path.
    /// Also what the host's reading is tested on (`crate::hosts::doctor_version`).
    pub(crate) fn installed(
        root: &Path,
        package: &str,
        script: &str,
        json: &str,
    ) -> std::path::PathBuf {
        let dir = root.join("lib/node_modules").join(package);
        let file = dir.join(script);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, "#!/usr/bin/env node\n").unwrap();
        std::fs::write(dir.join("package.json"), json).unwrap();
        std::fs::create_dir_all(root.join("bin")).unwrap();
        let link = root.join("bin").join(package.replace('/', "-"));
        std::os::unix::fs::symlink(&file, &link).unwrap();
        link
    }

    #[test]
    fn a_scoped_or_plain_package_gives_its_version_through_the_link() {
        let a = tempfile::tempdir().unwrap();
        let bin = installed(
            a.path(),
            "@google/gemini-cli",
            "bundle/gemini.js",
            r#"{"name": "@google/gemini-cli", "version": "0.61.0"}"#,
        );
        assert_eq!(npm_package_version(&bin).as_deref(), Some("0.61.0"));
        let b = tempfile::tempdir().unwrap();
        let bin = installed(
            b.path(),
            "opencode-ai",
            "bin/opencode",
            r#"{"name": "opencode-ai", "version": "1.2.3-beta.1"}"#,
        );
        assert_eq!(npm_package_version(&bin).as_deref(), Some("1.2.3-beta.1"));
    }

    #[test]
    fn a_binary_outside_a_package_or_a_package_without_a_version_gives_none() {
        let a = tempfile::tempdir().unwrap();
        let plain = a.path().join("cli");
        std::fs::write(&plain, "#!/bin/sh\n").unwrap();
        assert_eq!(npm_package_version(&plain), None);
        let bin = installed(a.path(), "broken", "cli.js", r#"{"name": "broken"}"#);
        assert_eq!(npm_package_version(&bin), None);
        let c = tempfile::tempdir().unwrap();
        let bin = installed(c.path(), "garbled", "cli.js", "{ not json");
        assert_eq!(npm_package_version(&bin), None);
        assert_eq!(npm_package_version(&c.path().join("missing")), None);
    }
}
