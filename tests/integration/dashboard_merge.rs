//! The dashboard's diff and merge end to end: a run with worktrees finishes in a dashboard
//! inside a tmux pane, `d` opens the worker's diff, `}` jumps to its next file, `m` offers
//! the merge with the target branch and the diffstat, and `y` brings the change into the
//! user's branch.

use std::time::Duration;

use crate::support::*;

#[test]
fn d_opens_the_diff_and_m_merges_the_result_into_the_users_branch() {
    if !tmux_ready("d_opens_the_diff_and_m_merges_the_result_into_the_users_branch") {
        return;
    }
    let t = TeamProject::in_repo(
        &[("a.txt", "a\n"), ("b.txt", "b\n")],
        &command_worker(
            "one",
            "echo A >> a.txt && echo B >> b.txt",
            "Changed a.txt and b.txt.",
        ),
    );
    let d = t.path();
    let workers = TmuxServer::new("dm-workers");
    let cmd = dashboard_cmd(d, &workers, "", t.team(), "change the files", "");
    let viewer = Viewer::start("dm-viewer", (140, 42), &cmd);
    viewer.wait_screen("q leaves the dashboard", Duration::from_secs(60));

    viewer.keys(&["d"]);
    let s = viewer.wait_screen("diff --git a/a.txt b/a.txt", Duration::from_secs(15));
    assert!(s.contains("+A"), "{s}");
    // Once seen on a loaded CI machine: the first `}` left the diff at its first file and
    // no notice stayed on the screen (the run's end, a moment later, says its own line
    // there). The jump itself is what this checks: `}` again until the second file shows.
    let mut s = String::new();
    for _ in 0..3 {
        viewer.keys(&["}"]);
        if wait_for(
            || {
                s = viewer.screen();
                s.contains("file 2 of 2") || s.contains("┃diff --git a/b.txt b/b.txt")
            },
            Duration::from_secs(5),
        ) {
            break;
        }
    }
    assert!(s.contains("diff --git a/b.txt b/b.txt"), "{s}");

    // `m` offers the merge once the council has sat; the dashboard follows the run's lead,
    // so the verdict reaches the screen a moment after the worker's diff does.
    viewer.wait_screen("council ✓ ok", Duration::from_secs(30));
    viewer.keys(&["m"]);
    let s = viewer.wait_screen("Merge the run's result?", Duration::from_secs(15));
    assert!(s.contains("into your branch main"), "{s}");
    assert!(s.contains("2 files changed, 2 insertions(+)"), "{s}");
    assert_eq!(
        std::fs::read_to_string(d.join("a.txt")).unwrap(),
        "a\n",
        "nothing merged before y"
    );
    viewer.keys(&["y"]);
    let s = viewer.wait_screen("merged crewmux/", Duration::from_secs(20));
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

    // Asked again, it says the run is already merged, as `crewmux merge` does.
    viewer.keys(&["m"]);
    viewer.wait_screen("is already merged into main", Duration::from_secs(15));
    viewer.keys(&["q"]);
    viewer.wait_screen("EXITED 0", Duration::from_secs(20));
}
