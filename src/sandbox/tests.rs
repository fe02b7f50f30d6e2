use super::*;

fn policy(tmp: &Path) -> Policy {
    Policy {
        workdir: tmp.join("proj/.crewmux/worktrees/r/a"),
        chdir: tmp.join("proj/.crewmux/worktrees/r/a/sub"),
        attempt_dir: tmp.join("proj/.crewmux/runs/r/workers/a/attempt-1"),
        git_dir: Some(tmp.join("proj/.git")),
        home: tmp.join("home"),
        home_entries: vec![".codex".into(), ".ssh/id_ed25519".into(), "/etc".into()],
        home_copy: None,
        read_only: vec![
            tmp.join("home"),
            tmp.join("tools/bin"),
            tmp.join("proj/bin"),
        ],
        hidden: vec![tmp.join("home/.ssh"), tmp.join("proj")],
        network: SandboxNetwork::None,
    }
}

/// The values that follow each `flag` in `argv`.
fn after(argv: &[String], flag: &str) -> Vec<String> {
    argv.windows(2)
        .filter(|w| w[0] == flag)
        .map(|w| w[1].clone())
        .collect()
}

#[test]
fn the_argv_binds_only_what_the_policy_names_and_never_a_hidden_path() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let argv = policy(t).bwrap_argv(Path::new("/usr/bin/bwrap"));
    assert_eq!(argv[0], "/usr/bin/bwrap");
    for flag in [
        "--die-with-parent",
        "--unshare-pid",
        "--unshare-net",
        "--cap-drop",
    ] {
        assert!(argv.iter().any(|a| a == flag), "{flag}: {argv:?}");
    }
    assert!(!argv.iter().any(|a| a == "--new-session"));
    let s = |p: &str| t.join(p).display().to_string();
    let binds = after(&argv, "--bind");
    assert_eq!(
        binds,
        [
            s("proj/.git"),
            s("proj/.crewmux/worktrees/r/a"),
            s("proj/.crewmux/runs/r/workers/a/attempt-1")
        ]
    );
    let ro = after(&argv, "--ro-bind-try");
    assert!(ro.contains(&s("home/.codex")), "{ro:?}");
    assert!(ro.contains(&s("tools/bin")), "{ro:?}");
    assert!(ro.contains(&s("proj/.git/hooks")) && ro.contains(&s("proj/.git/config")));
    for never in ["home/.ssh/id_ed25519", "home", "proj/bin", "proj"] {
        assert!(!ro.contains(&s(never)), "{never} bound: {ro:?}");
    }
    assert_eq!(after(&argv, "--tmpfs"), ["/tmp".to_string(), s("home")]);
    assert_eq!(
        after(&argv, "--chdir"),
        [s("proj/.crewmux/worktrees/r/a/sub")]
    );
    assert_eq!(argv[argv.len() - 4..argv.len() - 2], ["/bin/sh", "-c"]);
    let allow = Policy {
        network: SandboxNetwork::Allow,
        ..policy(t)
    };
    assert!(!allow
        .bwrap_argv(Path::new("bwrap"))
        .iter()
        .any(|a| a == "--unshare-net"));
}

#[test]
fn a_worktrees_common_dir_is_read_from_its_git_file() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let common = t.join("repo/.git");
    let meta = common.join("worktrees/a");
    std::fs::create_dir_all(&meta).unwrap();
    std::fs::write(meta.join("commondir"), "../..\n").unwrap();
    let wt = t.join("wt");
    std::fs::create_dir_all(&wt).unwrap();
    std::fs::write(wt.join(".git"), format!("gitdir: {}\n", meta.display())).unwrap();
    assert_eq!(
        git_common_dir(&wt),
        Some(std::fs::canonicalize(&common).unwrap())
    );
    assert_eq!(git_common_dir(&t.join("repo")), Some(common));
    assert_eq!(git_common_dir(t), None);
}

#[test]
fn an_npm_cli_brings_its_node_modules_and_path_its_own_directories() {
    let tmp = tempfile::tempdir().unwrap();
    let t = std::fs::canonicalize(tmp.path()).unwrap();
    let pkg = t.join("lib/node_modules/@x/cli/bin");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::write(pkg.join("cli.js"), "").unwrap();
    let bin = t.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(pkg.join("cli.js"), bin.join("cli")).unwrap();
    let path = std::env::join_paths([bin.clone(), "/usr/bin".into()]).unwrap();
    let got = program_paths("cli", Some(&path));
    assert_eq!(
        got,
        [bin, t.join("lib/node_modules"), pkg.join("cli.js")],
        "no system directory, each once"
    );
}

#[test]
fn a_missing_bwrap_is_refused_with_the_install_command() {
    let tmp = tempfile::tempdir().unwrap();
    let r = preflight(SandboxMode::Bwrap, Some(tmp.path().as_os_str()));
    assert_eq!(
        r,
        Readiness::Refused(
            "bwrap (bubblewrap) is not installed: apt-get install bubblewrap".into()
        )
    );
    let c = preflight(SandboxMode::Container, Some(tmp.path().as_os_str()));
    let Readiness::Refused(why) = c else {
        panic!("{c:?}")
    };
    assert!(
        why.starts_with(
            "no container runtime can run here (podman not installed; docker not installed)"
        ),
        "{why}"
    );
}

#[test]
fn a_bwrap_that_cannot_make_namespaces_is_refused_with_its_own_words() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let fake = tmp.path().join("bwrap");
    std::fs::write(
        &fake,
        "#!/bin/sh\n[ \"$1\" = --version ] && { echo 'bubblewrap 0.8.0'; exit 0; }\necho 'bwrap: No permissions to creating new namespace, likely because the kernel does not allow non-privileged user namespaces.' >&2\nexit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let r = preflight(SandboxMode::Bwrap, Some(tmp.path().as_os_str()));
    let Readiness::Refused(why) = r else {
        panic!("{r:?}")
    };
    assert!(
        why.contains("(bwrap: No permissions to creating new namespace"),
        "{why}"
    );
}

#[test]
fn a_workers_home_copy_is_seeded_once_and_bound_read_write_over_the_home() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(home.join(".codex/sessions")).unwrap();
    std::fs::write(home.join(".codex/config.toml"), "model = \"m\"\n").unwrap();
    std::fs::write(home.join(".claude.json"), "{}").unwrap();
    let copy = tmp.path().join("state/fence-homes/r/a");
    let entries = vec![
        ".codex".to_string(),
        ".claude.json".into(),
        ".gemini".into(),
    ];
    assert!(seed_home(&home, &entries, &copy).unwrap().is_empty());
    assert_eq!(
        std::fs::read_to_string(copy.join(".codex/config.toml")).unwrap(),
        "model = \"m\"\n"
    );
    assert!(copy.join(".claude.json").is_file() && !copy.join(".gemini").exists());
    // What the worker's CLI wrote stays: a second seed copies nothing over it.
    std::fs::write(copy.join(".codex/sessions/s-1.jsonl"), "turn").unwrap();
    std::fs::write(home.join(".codex/config.toml"), "changed").unwrap();
    seed_home(&home, &entries, &copy).unwrap();
    assert!(copy.join(".codex/sessions/s-1.jsonl").is_file());
    assert_eq!(
        std::fs::read_to_string(copy.join(".codex/config.toml")).unwrap(),
        "model = \"m\"\n"
    );
    let mut p = policy(tmp.path());
    p.home_copy = Some(copy.clone());
    let argv = p.bwrap_argv(Path::new("/usr/bin/bwrap"));
    let binds: Vec<(String, String)> = argv
        .windows(3)
        .filter(|w| w[0] == "--bind-try")
        .map(|w| (w[1].clone(), w[2].clone()))
        .collect();
    assert!(
        binds.contains(&(
            copy.join(".codex").display().to_string(),
            home.join(".codex").display().to_string()
        )),
        "{argv:?}"
    );
    // Never a hidden entry, copy or not.
    assert!(
        !argv.iter().any(|a| a.contains(".ssh/id_ed25519")),
        "{argv:?}"
    );
}
