//! The wrapper with a fence: the agent's status passes through bwrap, and a fence that
//! never started leaves bwrap's reason for the driver.

use std::process::Command;

use super::*;

/// A fence that binds what the agent needs and `extra`, as `sandbox::Policy` would.
fn fence(dir: &Path, extra: &[&str]) -> Option<Vec<String>> {
    let bwrap = crate::sandbox::bwrap_program(std::env::var_os("PATH").as_deref())?;
    let policy = crate::sandbox::Policy {
        workdir: dir.to_path_buf(),
        chdir: dir.to_path_buf(),
        attempt_dir: dir.to_path_buf(),
        git_dir: None,
        home: dir.join("home"),
        home_entries: vec![],
        home_copy: None,
        read_only: vec![],
        hidden: vec![],
        network: crate::domain::SandboxNetwork::None,
    };
    let mut argv = policy.bwrap_argv(&bwrap);
    let at = argv.iter().position(|a| a == "--").unwrap();
    argv.splice(at..at, extra.iter().map(|s| (*s).to_string()));
    Some(argv)
}

fn run(argv: &[&str], fence: &[String]) -> (tempfile::TempDir, AttemptPaths, std::process::Output) {
    let tmp = tempfile::tempdir().unwrap();
    let paths = AttemptPaths::new(tmp.path().to_path_buf());
    let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
    let spec = WrapperSpec {
        fence: Some(fence),
        ..super::test_wrapper::spec(&argv, tmp.path())
    };
    write_wrapper(&paths, &spec).unwrap();
    let out = Command::new("sh").arg(&paths.launch).output().unwrap();
    (tmp, paths, out)
}

#[test]
fn a_fenced_agents_code_and_stderr_come_out_as_without_the_fence() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(f) = fence(tmp.path(), &[]) else {
        eprintln!("SKIP: bwrap is not installed");
        return;
    };
    let paths = AttemptPaths::new(tmp.path().to_path_buf());
    let argv: Vec<String> = ["sh", "-c", "echo out; echo err >&2; exit 3"]
        .map(String::from)
        .to_vec();
    let spec = WrapperSpec {
        fence: Some(&f),
        ..super::test_wrapper::spec(&argv, tmp.path())
    };
    write_wrapper(&paths, &spec).unwrap();
    let out = Command::new("sh").arg(&paths.launch).output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(read_exit_file(&paths.exit, "abc123").unwrap(), Some(3));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "err\n");
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("out\n"));
    assert_eq!(sandbox_failed(tmp.path()), None);
}

#[test]
fn a_fence_that_cannot_start_leaves_bwraps_reason_and_runs_no_agent() {
    let probe = tempfile::tempdir().unwrap();
    let Some(f) = fence(probe.path(), &["--bind", "/no/such/dir", "/x"]) else {
        eprintln!("SKIP: bwrap is not installed");
        return;
    };
    let marker = probe.path().join("ran");
    let touch = format!("touch {}", marker.display());
    let (tmp, paths, out) = run(&["sh", "-c", &touch], &f);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(read_exit_file(&paths.exit, "abc123").unwrap(), Some(1));
    assert_eq!(
        sandbox_failed(tmp.path()).as_deref(),
        Some("Can't find source path /no/such/dir: No such file or directory")
    );
    assert!(!marker.exists(), "the agent did not run");
    // bwrap's words still reach the pane.
    assert!(String::from_utf8_lossy(&out.stderr).contains("bwrap: Can't find source path"));
}
