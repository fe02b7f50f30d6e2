//! The home screen end to end: `crewmux` with no command runs in a tmux pane of a viewer
//! server (its runs' workers on a second private server); keys go in with `send-keys`, the
//! screen is read with `capture-pane`.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::support::*;

/// Start the home screen in `project`, with its own state directory (the `--all` index).
fn home_in_pane(project: &Path, workers: &TmuxServer, tag: &str) -> Viewer {
    let cmd = format!(
        "cd {} && XDG_STATE_HOME={}/state CREWMUX_TMUX_SOCKET={} {}; echo EXITED $?; sleep 60",
        project.display(),
        project.display(),
        workers.socket,
        env!("CARGO_BIN_EXE_crewmux"),
    );
    Viewer::start(tag, (120, 40), &cmd)
}

/// Each folder under the project's runs root with the first 80 bytes of its state file.
fn run_folders(project: &Path) -> Vec<(String, String)> {
    let root = project.join(".crewmux/runs");
    let mut out: Vec<(String, String)> = std::fs::read_dir(&root)
        .map(|d| {
            d.flatten()
                .map(|e| {
                    let state = std::fs::read_to_string(e.path().join("state.json"))
                        .map(|s| s.chars().take(80).collect())
                        .unwrap_or_else(|e| e.to_string());
                    (e.file_name().to_string_lossy().into_owned(), state)
                })
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

#[test]
fn home_new_run_shows_the_rendered_result_and_esc_comes_back() {
    if !tmux_ready("home_new_run_shows_the_rendered_result_and_esc_comes_back") {
        return;
    }
    let workers = TmuxServer::new("home-workers");
    let tmp = crate::support::project();
    std::fs::write(tmp.path().join("notes.md"), "# Notes\n").unwrap();
    let viewer = home_in_pane(tmp.path(), &workers, "home-viewer");
    viewer.wait_screen("no runs here yet", Duration::from_secs(20));

    // n opens the form: the problem, the mode (solo, as `crewmux run` without --mode), then
    // the simulated provider.
    viewer.keys(&["n"]);
    viewer.wait_screen("New run", Duration::from_secs(5));
    viewer.type_text("Write a haiku about tmux panes");
    viewer.keys(&["Tab"]);
    viewer.wait_screen("◀ solo ▶", Duration::from_secs(5));
    // Team → team file (left empty) → provider.
    viewer.keys(&["Tab", "Tab"]);
    // The providers come from a doctor probe on a thread; `sim` is offered last.
    let end = Instant::now() + Duration::from_secs(90);
    while !viewer.screen().contains("◀ sim ▶") {
        assert!(
            Instant::now() < end,
            "sim never offered:\n{}",
            viewer.screen()
        );
        if viewer.screen().contains("◀ auto") {
            viewer.keys(&["Left"]);
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    viewer.keys(&["Enter"]);

    // The run's dashboard opens; when the worker is done, 2 shows its result rendered.
    viewer.wait_screen("Workers 1", Duration::from_secs(60));
    viewer.wait_screen("1 done", Duration::from_secs(60));
    viewer.keys(&["2"]);
    viewer.wait_screen("Result · solo", Duration::from_secs(10));
    // result.md says "Read `notes.md`": rendered, the inline code loses its backticks.
    let result = viewer.wait_screen("Read notes.md", Duration::from_secs(10));
    assert!(
        !result.contains("`notes.md`"),
        "markdown is rendered, not shown raw:\n{result}"
    );
    assert!(result.contains("Summary"), "{result}");

    // Esc gives the keys back to the roster, Esc again leaves for the home screen.
    viewer.keys(&["Escape"]);
    viewer.wait_screen("Esc again goes back", Duration::from_secs(5));
    viewer.keys(&["Escape"]);
    let home = viewer.wait_screen("runs of", Duration::from_secs(15));
    assert!(home.contains("Write a haiku about tmux panes"), "{home}");
    viewer.wait_screen("done", Duration::from_secs(30));

    // r runs it again: the form comes filled with the problem and the provider it had.
    viewer.keys(&["r"]);
    // The provider is the form's last field: a capture taken while the form is being drawn
    // (seen on a loaded CI machine) has the title and not yet the rest.
    let again = viewer.wait_screen("◀ sim ▶", Duration::from_secs(10));
    assert!(again.contains("Run again:"), "{again}");
    assert!(again.contains("Write a haiku about tmux panes"), "{again}");
    viewer.keys(&["C-s"]);
    viewer.wait_screen("Workers 1", Duration::from_secs(60));
    viewer.wait_screen("1 done", Duration::from_secs(60));
    // From the roster one Esc goes back (a second one on the home screen would quit it).
    viewer.keys(&["Escape"]);
    let end = Instant::now() + Duration::from_secs(15);
    while !viewer.screen().contains("2 runs") {
        // Once seen with another count on a loaded CI machine: say what the folder held.
        assert!(
            Instant::now() < end,
            "\"2 runs\" never appeared; the runs folder holds {:?}:\n{}",
            run_folders(tmp.path()),
            viewer.screen()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    viewer.keys(&["q"]);
    let after = viewer.wait_screen("EXITED", Duration::from_secs(10));
    assert!(after.contains("EXITED 0"), "{after}");
    // The project is in the index `--all` reads.
    let index = std::fs::read_to_string(tmp.path().join("state/crewmux/projects")).unwrap();
    assert!(index.contains(&tmp.path().canonicalize().unwrap().display().to_string()));
}

#[test]
fn the_new_run_form_starts_a_team_file_of_examples_on_a_typed_base() {
    if !tmux_ready("the_new_run_form_starts_a_team_file_of_examples_on_a_typed_base") {
        return;
    }
    let workers = TmuxServer::new("home-form-workers");
    // `old` has a file that HEAD no longer has: the worker lists its tree.
    let repo = crate::support::repo(&[("gone.txt", "from the old commit\n")]);
    git(repo.path(), &["branch", "old"]);
    git(repo.path(), &["rm", "-q", "gone.txt"]);
    git(repo.path(), &["commit", "-qm", "drop gone.txt"]);
    std::fs::create_dir_all(repo.path().join("examples")).unwrap();
    std::fs::write(
        repo.path().join("examples/list.toml"),
        "name = \"list\"\n\n[[worker]]\nid = \"lister\"\nrole = \"backend-engineer\"\nprovider = \"command\"\n\
         command = [\"sh\", \"-c\", \"ls > listing.txt\"]\n",
    )
    .unwrap();
    let viewer = home_in_pane(repo.path(), &workers, "home-form-viewer");
    viewer.wait_screen("no runs here yet", Duration::from_secs(20));
    viewer.keys(&["n"]);
    viewer.wait_screen("New run", Duration::from_secs(5));
    viewer.type_text("List the files of the old commit");
    // The example team file is offered after the built-in modes (the form starts at solo).
    viewer.keys(&["Tab", "Right"]);
    viewer.wait_screen("◀ team examples/list.toml ▶", Duration::from_secs(5));
    // Team file (empty) → provider → base.
    viewer.keys(&["Tab", "Tab", "Tab"]);
    viewer.type_text("old");
    viewer.keys(&["Enter"]);
    viewer.wait_screen("1 done", Duration::from_secs(60));
    let id = run_id(repo.path());
    let state: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            repo.path()
                .join(".crewmux/runs")
                .join(&id)
                .join("state.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(state["workspace"]["base_ref"], "old", "{state:#}");
    let tree = state["workspace"]["workers"]["lister"]["path"]
        .as_str()
        .unwrap()
        .to_string();
    let listing = std::fs::read_to_string(Path::new(&tree).join("listing.txt")).unwrap();
    assert!(
        listing.contains("gone.txt"),
        "the worktree starts at `old`: {listing}"
    );
    // From the roster one Esc goes back (a second one on the home screen would quit it).
    viewer.keys(&["Escape"]);
    viewer.wait_screen("1 run", Duration::from_secs(15));
    // x keeps the run (its work is not merged) and says what clean says, here.
    viewer.keys(&["x"]);
    viewer.wait_screen("Clean run", Duration::from_secs(5));
    viewer.keys(&["y"]);
    let kept = viewer.wait_screen(
        &format!("kept run {id}: kept branch"),
        Duration::from_secs(15),
    );
    assert!(kept.contains("--worker lister"), "{kept}");
    viewer.keys(&["q"]);
    viewer.wait_screen("EXITED", Duration::from_secs(10));
}
