//! A run's `state.json` that another program breaks or removes: a corrupt state file is
//! reported, never overwritten, and the driver's state (every worker and result) is not
//! lost; the messages about it name a fix that works.

use std::path::Path;
use std::time::Duration;

use crate::support::{
    count_events, only_run_dir, run_crewmux, try_run_dir, wait_for, wait_limited, TeamProject,
};

/// One simulated worker that prints for a few seconds (time to break the state file).
const SLOW: &str = "[[worker]]\nid = \"w\"\nrole = \"backend-engineer\"\nprovider = \"sim\"\nmax_attempts = 1\nprompt = \"{problem}\\nsim: lines=12\\nsim: delay-ms=250\"\n";

/// One simulated worker that ends at once.
const QUICK: &str = "[[worker]]\nid = \"w\"\nrole = \"backend-engineer\"\nprovider = \"sim\"\nmax_attempts = 1\nprompt = \"{problem}\\nsim: lines=2\"\n";

const BROKEN: &[u8] = b"{broken\n";

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_state_file_broken_during_a_headless_run_is_kept_and_the_state_saved_beside_it() {
    let t = TeamProject::new(SLOW);
    let child = t.run("go").process().spawn();
    // Once the worker runs, the state file is a driver's: break it (again, should a save
    // that was under way replace the broken file at that moment).
    // Read as text: the file may not be there yet, or end in a line being written.
    let started = wait_for(
        || {
            try_run_dir(t.path()).is_some_and(|d| {
                std::fs::read_to_string(d.join("events.jsonl"))
                    .is_ok_and(|t| t.contains("\"kind\":\"worker-started\""))
            })
        },
        Duration::from_secs(90),
    );
    assert!(started, "the worker never started");
    let run = only_run_dir(t.path());
    let state = run.join("state.json");
    for _ in 0..5 {
        std::fs::write(&state, BROKEN).unwrap();
        std::thread::sleep(Duration::from_millis(200));
        if std::fs::read(&state).unwrap() == BROKEN {
            break;
        }
    }
    let out = wait_limited(child, &["run"]);
    let err = stderr(&out);
    let side = run.join("state.json.crewmux-saved");

    // The process ends non-zero, its last line naming both files and the fix.
    assert_eq!(out.status.code(), Some(1), "{err}");
    let last = err.lines().last().unwrap_or_default();
    let mv = format!("mv {} {}", side.display(), state.display());
    assert!(
        last.contains(&state.display().to_string()) && last.contains(&mv),
        "last line: {last}\n{err}"
    );
    // Said once, while it ran, on stderr and in the log, and the broken file is untouched.
    assert_eq!(err.matches("state-saved-aside:").count(), 1, "{err}");
    assert_eq!(count_events(&run, "state-saved-aside"), 1);
    assert_eq!(std::fs::read(&state).unwrap(), BROKEN);
    // The side file holds the final state: nothing of the run is lost.
    let saved: serde_json::Value = serde_json::from_slice(&std::fs::read(&side).unwrap()).unwrap();
    assert_eq!(saved["status"], "done", "{saved}");
    assert_eq!(saved["workers"][0]["status"], "completed", "{saved}");

    // Reading the run names that fix; taking it makes the run whole again.
    let id = run.file_name().unwrap().to_str().unwrap().to_string();
    let status = run_crewmux(t.path(), "unused", &["status", &id, "--json"]);
    assert_eq!(status.status.code(), Some(1));
    assert!(stderr(&status).contains(&mv), "{}", stderr(&status));
    std::fs::rename(&side, &state).unwrap();
    let status = run_crewmux(t.path(), "unused", &["status", &id, "--json"]);
    assert_eq!(status.status.code(), Some(0), "{}", stderr(&status));
}

/// `clean --run <run> --purge` on `run`: its exit code and stderr.
fn clean(project: &Path, run: &str, force: bool) -> (Option<i32>, String) {
    let mut args = vec!["clean", "--run", run, "--purge"];
    if force {
        args.push("--force");
    }
    let out = run_crewmux(project, "unused", &args);
    (out.status.code(), stderr(&out))
}

#[test]
fn clean_removes_a_run_whose_state_is_broken_or_missing_only_when_forced() {
    for broken in [true, false] {
        let t = TeamProject::new(QUICK);
        let out = t.run("go").process().output();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let run = only_run_dir(t.path());
        let id = run.file_name().unwrap().to_str().unwrap().to_string();
        if broken {
            std::fs::write(run.join("state.json"), BROKEN).unwrap();
        } else {
            std::fs::remove_file(run.join("state.json")).unwrap();
        }

        // Kept without --force, with a line that names the way that removes it.
        let (code, err) = clean(t.path(), &id, false);
        assert_eq!(code, Some(1), "{err}");
        let forced = format!("crewmux clean --run {id} --purge --force");
        assert!(err.contains(&forced), "{err}");
        assert!(!err.contains("os error"), "{err}");
        assert!(run.is_dir());
        if broken {
            assert_eq!(std::fs::read(run.join("state.json")).unwrap(), BROKEN);
        }

        // Forced: removed.
        let (code, err) = clean(t.path(), &id, true);
        assert_eq!(code, Some(0), "{err}");
        assert!(err.contains(&format!("removed {}", run.display())), "{err}");
        assert!(!run.exists());
    }
}
