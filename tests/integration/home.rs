//! The home screen end to end: `crewmux` with no command runs in a tmux pane of a viewer
//! server (its runs' workers on a second private server); keys go in with `send-keys`, the
//! screen is read with `capture-pane`.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::support::*;

fn screen(viewer: &TmuxServer) -> String {
    String::from_utf8_lossy(&viewer.tmux(&["capture-pane", "-p", "-t", "v"]).stdout).into_owned()
}

fn wait_screen(viewer: &TmuxServer, what: &str, limit: Duration) -> String {
    let end = Instant::now() + limit;
    loop {
        let s = screen(viewer);
        if s.contains(what) {
            return s;
        }
        assert!(Instant::now() < end, "{what:?} never appeared:\n{s}");
        std::thread::sleep(Duration::from_millis(150));
    }
}

fn keys(viewer: &TmuxServer, keys: &[&str]) {
    for k in keys {
        viewer.tmux(&["send-keys", "-t", "v", k]);
    }
}

/// Start the home screen in `project`, with its own state directory (the `--all` index).
fn home_in_pane(project: &Path, workers: &TmuxServer, viewer: &TmuxServer) {
    let cmd = format!(
        "cd {} && XDG_STATE_HOME={}/state CREWMUX_TMUX_SOCKET={} {}; echo EXITED $?; sleep 60",
        project.display(),
        project.display(),
        workers.socket,
        env!("CARGO_BIN_EXE_crewmux"),
    );
    let out = viewer.tmux(&[
        "new-session",
        "-d",
        "-s",
        "v",
        "-x",
        "120",
        "-y",
        "40",
        &cmd,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn home_new_run_shows_the_rendered_result_and_esc_comes_back() {
    if !tmux_ready("home_new_run_shows_the_rendered_result_and_esc_comes_back") {
        return;
    }
    let workers = TmuxServer::new("home-workers");
    let viewer = TmuxServer::new("home-viewer");
    let tmp = crate::support::project();
    std::fs::write(tmp.path().join("notes.md"), "# Notes\n").unwrap();
    home_in_pane(tmp.path(), &workers, &viewer);
    wait_screen(&viewer, "no runs here yet", Duration::from_secs(20));

    // n opens the form: the problem, then the solo mode, then the simulated provider.
    keys(&viewer, &["n"]);
    wait_screen(&viewer, "New run", Duration::from_secs(5));
    viewer.tmux(&[
        "send-keys",
        "-t",
        "v",
        "-l",
        "Write a haiku about tmux panes",
    ]);
    keys(&viewer, &["Tab", "Right", "Right"]);
    wait_screen(&viewer, "◀ solo ▶", Duration::from_secs(5));
    keys(&viewer, &["Tab"]);
    // The providers come from a doctor probe on a thread; `sim` is offered last.
    let end = Instant::now() + Duration::from_secs(90);
    while !screen(&viewer).contains("◀ sim ▶") {
        assert!(
            Instant::now() < end,
            "sim never offered:\n{}",
            screen(&viewer)
        );
        if screen(&viewer).contains("◀ auto") {
            keys(&viewer, &["Left"]);
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    keys(&viewer, &["Enter"]);

    // The run's dashboard opens; when the worker is done, 2 shows its result rendered.
    wait_screen(&viewer, "Workers 1", Duration::from_secs(60));
    wait_screen(&viewer, "1 done", Duration::from_secs(60));
    keys(&viewer, &["2"]);
    wait_screen(&viewer, "Result · solo", Duration::from_secs(10));
    // result.md says "Read `notes.md`": rendered, the inline code loses its backticks.
    let result = wait_screen(&viewer, "Read notes.md", Duration::from_secs(10));
    assert!(
        !result.contains("`notes.md`"),
        "markdown is rendered, not shown raw:\n{result}"
    );
    assert!(result.contains("Summary"), "{result}");

    // Esc gives the keys back to the roster, Esc again leaves for the home screen.
    keys(&viewer, &["Escape"]);
    wait_screen(&viewer, "Esc again goes back", Duration::from_secs(5));
    keys(&viewer, &["Escape"]);
    let home = wait_screen(&viewer, "runs of", Duration::from_secs(15));
    assert!(home.contains("Write a haiku about tmux panes"), "{home}");
    wait_screen(&viewer, "done", Duration::from_secs(30));
    keys(&viewer, &["q"]);
    let after = wait_screen(&viewer, "EXITED", Duration::from_secs(10));
    assert!(after.contains("EXITED 0"), "{after}");
    // The project is in the index `--all` reads.
    let index = std::fs::read_to_string(tmp.path().join("state/crewmux/projects")).unwrap();
    assert!(index.contains(&tmp.path().canonicalize().unwrap().display().to_string()));
}
