//! Unit tests of `hosts::git`: paths, the ssh transport, the refusal.

use super::*;

fn host() -> HostSpec {
    HostSpec {
        name: "b".into(),
        ssh: "me@b".into(),
        ssh_args: vec!["-F".into(), "/my config".into()],
        workdir: "/srv/crew".into(),
        max_workers: 2,
        tmux: "tmux".into(),
        tmux_socket: "crewmux".into(),
        lost_after_s: 120,
        source: "h.toml".into(),
    }
}

#[test]
fn a_project_has_one_repository_and_each_worker_a_worktree_under_the_workdir() {
    assert_eq!(
        remote_repo(&host(), Path::new("/home/me/shop")),
        PathBuf::from("/srv/crew/repos/shop.git")
    );
    assert_eq!(
        remote_worktree(&host(), "r1", "api"),
        PathBuf::from("/srv/crew/worktrees/r1/api")
    );
    assert_eq!(pushed_ref("crewmux/r1/api"), "refs/crewmux-push/r1/api");
}

#[test]
fn git_reaches_the_host_over_the_shared_connection() {
    let link = SshLink::new(&host()).unwrap();
    let cmd = git_ssh_command(&link).unwrap();
    // Quoted for the shell git runs it through.
    let words = shlex::split(&cmd).unwrap();
    assert_eq!(words[..3], ["ssh", "-o", "BatchMode=yes"], "{cmd}");
    assert!(words.iter().any(|w| w == "ControlMaster=auto"), "{cmd}");
    assert_eq!(words[words.len() - 2..], ["-F", "/my config"], "{cmd}");
    assert_eq!(
        git_url(&link, Path::new("/srv/crew/repos/shop.git")),
        "ssh://me@b/srv/crew/repos/shop.git"
    );
}

#[test]
fn a_remote_worker_without_a_worktree_is_refused_in_one_line() {
    let p = Path::new("/p");
    assert!(refuse_without_worktree(p, &[], None).is_ok());
    let p = tempfile::tempdir().unwrap();
    let p = p.path();
    let e = refuse_without_worktree(p, &[("a", "box")], None)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(&format!(
            "worker `a` runs on host `box`, but {} is not a git repository",
            p.display()
        )),
        "{e}"
    );
    let planned = ["a".to_string()];
    assert!(refuse_without_worktree(p, &[("a", "box")], Some(&planned[..])).is_ok());
    let e = refuse_without_worktree(p, &[("a", "box"), ("b", "box")], Some(&planned[..]))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("worker `b`") && e.contains("shared project directory"),
        "{e}"
    );
    assert_eq!(e.lines().count(), 1);
}

#[test]
fn each_worker_gets_what_the_host_said_of_its_worktree() {
    let ids = ["a", "b", "c"].map(String::from);
    let out = "ok a\nfail b fatal: 'x' is already checked out \n";
    let r = worktree_results(out, &ids);
    assert!(r[0].1.is_ok());
    assert_eq!(
        r[1].1.as_ref().unwrap_err().to_string(),
        "fatal: 'x' is already checked out"
    );
    assert!(r[2]
        .1
        .as_ref()
        .unwrap_err()
        .to_string()
        .contains("said nothing of its worktree"));
}
