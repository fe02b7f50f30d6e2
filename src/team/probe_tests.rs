//! Which teams wait for the agent CLIs' probes when they are resolved: only those with a
//! worker that routing may send to an agent CLI.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::{resolve, ResolveOptions};
use crate::providers::EnvSnapshot;

/// Options resolving `team` in `dir` with a PATH that holds only a fake `claude`, which
/// appends a line to `dir/ran` whenever anything starts it.
fn with_fake_claude(dir: &Path, team: &str) -> ResolveOptions {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let claude = bin.join("claude");
    let ran = dir.join("ran");
    std::fs::write(
        &claude,
        format!("#!/bin/sh\necho \"$*\" >> '{}'\n", ran.display()),
    )
    .unwrap();
    std::fs::set_permissions(&claude, std::fs::Permissions::from_mode(0o755)).unwrap();
    let file = dir.join("team.toml");
    std::fs::write(&file, team).unwrap();
    let mut opts = ResolveOptions::new("p", dir);
    opts.team_file = Some(file);
    opts.env = EnvSnapshot::from_pairs([
        ("PATH", bin.display().to_string()),
        ("HOME", dir.display().to_string()),
    ]);
    opts
}

const COMMANDS: &str = "name = \"t\"\n\n[[worker]]\nid = \"a\"\nrole = \"backend-engineer\"\n\
                        provider = \"command\"\ncommand = [\"true\"]\n";

#[test]
fn a_team_of_commands_starts_no_agent_cli_and_a_routed_worker_does() {
    let tmp = tempfile::tempdir().unwrap();
    let team = resolve(&with_fake_claude(tmp.path(), COMMANDS)).unwrap();
    assert_eq!(team.workers[0].provider, "command");
    assert!(
        !tmp.path().join("ran").exists(),
        "no worker can go to an agent CLI: none is probed"
    );

    let routed = format!("{COMMANDS}\n[[worker]]\nid = \"b\"\nrole = \"backend-engineer\"\n");
    // Whether `b` finds a usable CLI does not matter here; that it was looked for does.
    let outcome = resolve(&with_fake_claude(tmp.path(), &routed));
    let ran = std::fs::read_to_string(tmp.path().join("ran")).unwrap_or_default();
    assert!(!ran.is_empty(), "routing `b` probes the CLIs: {outcome:?}");
}
