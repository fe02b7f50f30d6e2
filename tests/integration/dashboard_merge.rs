//! The dashboard's diff and merge end to end: a run with worktrees finishes in a dashboard
//! inside a tmux pane, `d` opens the worker's diff, `}` jumps to its next file, `m` offers
//! the merge with the target branch and the diffstat, and `y` brings the change into the
//! user's branch.

use std::time::Duration;

use crate::dashboard::wait_screen;
use crate::support::*;
use crate::workspaces::{git, repo, worker};

#[test]
fn d_opens_the_diff_and_m_merges_the_result_into_the_users_branch() {
    if !tmux_ready("d_opens_the_diff_and_m_merges_the_result_into_the_users_branch") {
        return;
    }
    let tmp = repo(&[("a.txt", "a\n"), ("b.txt", "b\n")]);
    let d = tmp.path();
    let teamdir = tempfile::tempdir().unwrap();
    let team = team_file(
        teamdir.path(),
        "team.toml",
        &worker(
            "one",
            "echo A >> a.txt && echo B >> b.txt",
            "Changed a.txt and b.txt.",
        ),
    );
    let workers = TmuxServer::new("dm-workers");
    let viewer = TmuxServer::new("dm-viewer");
    let cmd = format!(
        "cd {} && CREWMUX_TMUX_SOCKET={} {} run --team {} --no-clarify 'change the files'; echo EXITED $?; sleep 60",
        d.display(),
        workers.socket,
        env!("CARGO_BIN_EXE_crewmux"),
        team.display()
    );
    let out = viewer.tmux(&[
        "new-session",
        "-d",
        "-s",
        "v",
        "-x",
        "140",
        "-y",
        "42",
        &cmd,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    wait_screen(&viewer, "q leaves the dashboard", Duration::from_secs(60));

    viewer.tmux(&["send-keys", "-t", "v", "d"]);
    let s = wait_screen(
        &viewer,
        "diff --git a/a.txt b/a.txt",
        Duration::from_secs(15),
    );
    assert!(s.contains("+A"), "{s}");
    viewer.tmux(&["send-keys", "-t", "v", "}"]);
    let s = wait_screen(&viewer, "file 2 of 2", Duration::from_secs(10));
    assert!(s.contains("diff --git a/b.txt b/b.txt"), "{s}");

    viewer.tmux(&["send-keys", "-t", "v", "m"]);
    let s = wait_screen(&viewer, "Merge the run's result?", Duration::from_secs(15));
    assert!(s.contains("into your branch main"), "{s}");
    assert!(s.contains("2 files changed, 2 insertions(+)"), "{s}");
    assert_eq!(
        std::fs::read_to_string(d.join("a.txt")).unwrap(),
        "a\n",
        "nothing merged before y"
    );
    viewer.tmux(&["send-keys", "-t", "v", "y"]);
    let s = wait_screen(&viewer, "merged crewmux/", Duration::from_secs(20));
    assert!(s.contains("into main"), "{s}");
    assert_eq!(std::fs::read_to_string(d.join("a.txt")).unwrap(), "a\nA\n");
    assert_eq!(std::fs::read_to_string(d.join("b.txt")).unwrap(), "b\nB\n");
    assert!(
        git(d, &["log", "-1", "--format=%s"]).starts_with("crewmux: merge run "),
        "{}",
        git(d, &["log", "-1", "--format=%s"])
    );
    assert_eq!(
        git(d, &["status", "--porcelain", "--untracked-files=no"]),
        ""
    );

    // Asked again, it says there is nothing left to take.
    viewer.tmux(&["send-keys", "-t", "v", "m"]);
    wait_screen(&viewer, "nothing to merge", Duration::from_secs(15));
    viewer.tmux(&["send-keys", "-t", "v", "q"]);
    wait_screen(&viewer, "EXITED 0", Duration::from_secs(20));
}
