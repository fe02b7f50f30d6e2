//! A pane is never mistaken for another: a tmux server numbers its panes from `%0` when it
//! starts, so after the run's server dies and a new one starts on the same socket, a new
//! pane gets the id a dead worker's pane had. crewmux stores the server instance with the
//! pane id, and a pane of another instance is not the worker's: not alive, not shown, not
//! typed into, not attached to.

use std::time::Duration;

use crewmux::backend::{Liveness, Multiplexer, Target};
use crewmux::tmux::TmuxBackend;

use crate::support::*;

const TEAM: &str = "max_fix_rounds = 0\n\n[workspace]\nmode = \"shared\"\n\n[[worker]]\nid = \"w\"\nrole = \"backend-engineer\"\nprovider = \"command\"\nmax_attempts = 1\ncommand = [\"sh\", \"-c\", \"echo ORIGINAL; sleep 30\"]\n";

/// Start windows on the new server in `session` until one has pane id `id` (at most 30).
fn recycle(server: &TmuxServer, session: &str, id: &str) {
    let impostor = "echo IMPOSTOR; sleep 100";
    // The old server may still be shutting down on the socket: try again until it is gone.
    let mut err = String::new();
    let args = [
        "new-session",
        "-d",
        "-s",
        session,
        "-x",
        "80",
        "-y",
        "20",
        impostor,
    ];
    let started = wait_for(
        || {
            let out = server.tmux(&args);
            err = String::from_utf8_lossy(&out.stderr).into_owned();
            out.status.success()
        },
        Duration::from_secs(20),
    );
    assert!(started, "a new server on the socket: {err}");
    for _ in 0..30 {
        let panes = server.tmux(&["list-panes", "-a", "-F", "#{pane_id}"]);
        if String::from_utf8_lossy(&panes.stdout)
            .lines()
            .any(|l| l == id)
        {
            // The impostor's shell prints a moment after the window exists: wait for it,
            // so the screen read below is the impostor's and not an empty pane.
            let shown = wait_for(
                || {
                    let out = server.tmux(&["capture-pane", "-p", "-t", id]);
                    String::from_utf8_lossy(&out.stdout).contains("IMPOSTOR")
                },
                Duration::from_secs(10),
            );
            assert!(shown, "pane {id} never showed IMPOSTOR");
            return;
        }
        server.tmux(&["new-window", "-d", "-t", &format!("={session}:"), impostor]);
    }
    panic!("the new server never gave out pane {id}");
}

#[test]
fn a_pane_id_recycled_by_a_new_server_is_never_taken_for_a_dead_workers_pane() {
    if !tmux_ready("a_pane_id_recycled_by_a_new_server_is_never_taken_for_a_dead_workers_pane") {
        return;
    }
    let server = TmuxServer::new("paneid");
    let tmp = TeamProject::new(TEAM);
    let args = [
        "run",
        "--team",
        tmp.team_arg(),
        "--no-clarify",
        "--headless",
        "--backend",
        "tmux",
        "go",
    ];
    let mut driver = spawn_crewmux(tmp.path(), &server.socket, &args);
    let state = wait_state(
        tmp.path(),
        "w running in a pane",
        Duration::from_secs(60),
        |s| {
            let w = state_worker(s, "w");
            w["status"] == "running" && w["pane_id"].is_string()
        },
    );
    let pane_ref = state_worker(&state, "w")["pane_id"]
        .as_str()
        .unwrap()
        .to_string();
    let (id, instance) = pane_ref
        .split_once('@')
        .expect("the pane reference names its server");
    assert!(instance.contains('.'), "{pane_ref}");
    let session = state["session"].as_str().unwrap().to_string();
    let run_id = state["run_id"].as_str().unwrap().to_string();
    // `running` is saved once the window exists; the worker prints a moment later (its
    // wrapper first waits for `pipe-pane`). Kill nothing before its line is in output.log.
    let output_log = only_run_dir(tmp.path()).join("workers/w/attempt-1/output.log");
    assert!(
        wait_for(
            || std::fs::read_to_string(&output_log).is_ok_and(|o| o.contains("ORIGINAL")),
            Duration::from_secs(60),
        ),
        "w never printed ORIGINAL into {}",
        output_log.display()
    );

    // The driver and the whole server die; a new server on the same socket hands the same
    // pane id to another program, in a session of the run's name.
    driver.kill().unwrap();
    driver.wait().unwrap();
    server.kill();
    recycle(&server, &session, id);

    // The backend, as a driver or the dashboard holds it.
    let log = tmp.path().join("w.log");
    let target = Target {
        worker: "w".into(),
        attempt: 1,
        pane_id: Some(pane_ref.clone()),
        pid: None,
        log,
        watch_screen: true,
    };
    let mut backend = TmuxBackend::new(&server.socket, &session, vec![]);
    for _ in 0..2 {
        let poll = backend.poll(std::slice::from_ref(&target), Some(&target));
        assert_eq!(poll.liveness, vec![Liveness::Gone], "liveness");
        assert_eq!(poll.screen, None, "no screen of another pane");
        assert!(
            poll.tails.iter().all(Option::is_none),
            "no tail of another pane"
        );
    }
    assert!(backend.attach_command(&target).is_none(), "attach");
    let typed = backend.send_text(&target, "typed-into-the-wrong-pane");
    assert!(typed.is_err(), "text reached the recycled pane");
    let screen = server.tmux(&["capture-pane", "-p", "-t", id]);
    let screen = String::from_utf8_lossy(&screen.stdout);
    assert!(
        screen.contains("IMPOSTOR") && !screen.contains("typed-into"),
        "{screen}"
    );

    // A driver attached again decides the worker by its own pane: gone, so crashed.
    let out = run_crewmux(
        tmp.path(),
        &server.socket,
        &["attach", "--headless", &run_id],
    );
    let s = summary(&out);
    let w = worker(&s, "w");
    assert_eq!(w["status"], "crashed", "{s}");
    assert_ne!(w["exit_code"], 0, "{s}");
    let state = try_state(tmp.path()).unwrap();
    assert!(state_worker(&state, "w")["pane_id"].is_null(), "{state}");
    let run = only_run_dir(tmp.path());
    let output = std::fs::read_to_string(&output_log).unwrap();
    assert!(
        output.contains("ORIGINAL") && !output.contains("IMPOSTOR"),
        "{output}"
    );
    assert_eq!(count_events(&run, "pane-gone"), 1);
}
