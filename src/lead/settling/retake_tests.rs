//! Result retakes: taken again once the marker is in output.log, across drivers.

use super::*;
use crate::lead::result::{collect_output, FromLog};
use crate::logging::info_lines;

#[test]
fn a_result_taken_before_the_marker_is_taken_again_with_the_lines_that_came_after() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let log = d.join("output.log");
    std::fs::write(&log, "working\nstep 1\n").unwrap();
    // Settled from exit.json while the last lines and the marker were on their way.
    assert_eq!(collect_output(d, None, true), FromLog::Result);
    let taken = std::fs::read_to_string(d.join("result.md")).unwrap();
    assert_eq!(taken, "working\nstep 1\n");
    let now = Instant::now();
    let r = Retake::new(of(d, "n1"), false, None, now);
    assert!(!r.due(now, false), "no marker yet");
    let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    std::io::Write::write_all(&mut f, b"the answer is 42\n\n__CREWMUX_EXIT_n1__:0\n").unwrap();
    assert!(r.due(now, false), "the marker is there");
    let registry = crate::providers::Registry::builtin();
    assert_eq!(r.take_again(&registry), None, "the engine has a result");
    let again = std::fs::read_to_string(d.join("result.md")).unwrap();
    assert_eq!(again, "working\nstep 1\nthe answer is 42\n");
    // Past the wait, it is due without the marker too.
    let late = Retake::new(of(d, "other"), false, None, now);
    assert!(late.due(now + RETAKE_WITHIN, false) && !late.due(now, false));
    assert!(late.due(now, true), "forced when the driver leaves");
}

#[test]
fn a_marker_alone_after_the_take_leaves_the_result_and_an_agents_own_result_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let log = d.join("output.log");
    std::fs::write(&log, "all of it\n").unwrap();
    assert_eq!(collect_output(d, None, true), FromLog::Result);
    let r = Retake::new(of(d, "n1"), false, None, Instant::now());
    let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    std::io::Write::write_all(&mut f, b"\r\n\x1b[0m__CREWMUX_EXIT_n1__:0\r\n").unwrap();
    let registry = crate::providers::Registry::builtin();
    assert_eq!(r.take_again(&registry), None, "nothing but the marker came");
    assert_eq!(
        std::fs::read_to_string(d.join("result.md")).unwrap(),
        "all of it\n"
    );
    // An agent that wrote result.md itself: nothing is taken from the output.
    let own = tempfile::tempdir().unwrap();
    std::fs::write(own.path().join("output.log"), "chatter\n").unwrap();
    std::fs::write(own.path().join("result.md"), "my answer\n").unwrap();
    assert_eq!(collect_output(own.path(), None, true), FromLog::No);
    // Nor for a failed attempt.
    let failed = tempfile::tempdir().unwrap();
    std::fs::write(failed.path().join("output.log"), "oops\n").unwrap();
    assert_eq!(collect_output(failed.path(), None, false), FromLog::No);
    assert!(!failed.path().join("result.md").exists());
}

#[test]
fn a_result_whose_output_all_came_after_the_exit_goes_to_the_engine() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let log = d.join("output.log");
    std::fs::write(&log, "").unwrap();
    assert_eq!(collect_output(d, None, true), FromLog::NoText);
    assert!(!d.join("result.md").exists());
    let r = Retake::new(of(d, "n1"), true, None, Instant::now());
    std::fs::write(&log, "late answer\n__CREWMUX_EXIT_n1__:0\n").unwrap();
    let registry = crate::providers::Registry::builtin();
    assert_eq!(
        r.take_again(&registry),
        Some(Input::ResultTaken {
            worker: "w".into(),
            attempt: 1,
            result: d.join("result.md"),
        })
    );
    assert_eq!(
        std::fs::read_to_string(d.join("result.md")).unwrap(),
        "late answer\n"
    );
}

fn of<'a>(dir: &'a Path, nonce: &'a str) -> Of<'a> {
    Of {
        worker: "w",
        attempt: 1,
        dir,
        nonce,
    }
}

#[test]
fn the_council_waits_for_a_pending_retake_and_a_driver_killed_meanwhile_leaves_it_to_the_next() {
    let tmp = tempfile::tempdir().unwrap();
    let (store, mut state, world) = crate::lead::tests::scripted(tmp.path());
    // Every worker completed; `a`'s exit was settled before any of its output reached
    // output.log, so it has no result yet.
    state.stage = crate::domain::Stage::TeamVerify;
    state.checks.clear();
    for w in &mut state.workers {
        w.attempt = 1;
        w.status = crate::domain::WorkerStatus::Completed;
        w.exit_code = Some(0);
        let dir = store.attempt_dir(&w.id, 1);
        std::fs::create_dir_all(&dir).unwrap();
        if w.id != "a" {
            std::fs::write(dir.join("result.md"), "did src/lib.rs\n").unwrap();
            w.result = Some(dir.join("result.md"));
        }
    }
    store.save_state(&state).unwrap();
    let dir = store.attempt_dir("a", 1);
    let log = dir.join("output.log");
    std::fs::write(&log, "").unwrap();
    let opts = crate::lead::DriverOptions {
        quiet: true,
        ..Default::default()
    };
    let mut first =
        crate::lead::Driver::new(store.clone(), state.clone(), world.mux(), opts.clone());
    let of = Of {
        worker: "a",
        attempt: 1,
        dir: &dir,
        nonce: "n1",
    };
    first
        .retakes
        .push(Retake::new(of, true, Some("sim".into()), Instant::now()));
    let (waits, logged) = info_lines(|| first.council_or_wait());
    assert!(waits.is_none(), "the council waits");
    // A common wait of a moment: nothing for the Log.
    assert!(logged.is_empty(), "{logged}");
    assert!(!first.council_after_retakes(&mut |_| {}), "still pending");
    assert!(dir.join(RETAKE_FILE).exists());
    // Killed here: the next driver finds the retake and redoes it once the output is in.
    drop(first);
    let mut next = crate::lead::Driver::new(store.clone(), state, world.mux(), opts);
    assert_eq!(next.retakes.pending.len(), 1);
    assert!(next.council_or_wait().is_none());
    std::fs::write(&log, "the answer is in src/lib.rs\n__CREWMUX_EXIT_n1__:0\n").unwrap();
    let late = next.retake_results(false);
    assert_eq!(late.len(), 1, "{late:?}");
    next.apply(late, &mut |_| {});
    assert!(next.council_after_retakes(&mut |_| {}), "the council sat");
    assert!(!dir.join(RETAKE_FILE).exists(), "done: its file is gone");
    let a = next.state.worker("a").unwrap();
    assert_eq!(a.result.as_deref(), Some(dir.join("result.md").as_path()));
    let council = &next.state.council;
    assert_eq!(council.round, Some(0), "{council:?}");
    let said = format!("{:?}", council.verdicts);
    // Judged on the full result: what it says, not that it is missing.
    assert!(
        !said.contains("a: result file is empty")
            && !said.contains("a: completed with an empty result")
            && said.contains("a: src/lib.rs does not exist"),
        "{said}"
    );
}

#[test]
fn a_launch_that_quotes_a_result_still_to_be_taken_again_waits_for_it_and_others_do_not() {
    let tmp = tempfile::tempdir().unwrap();
    let (store, mut state, world) = crate::lead::tests::scripted(tmp.path());
    state.workers[1].flow.after = vec!["a".into()];
    state.workers[2].kind = WorkerKind::Critic;
    let mut late = state.workers[0].clone();
    late.id = "late".into();
    state.workers.push(late);
    for w in &mut state.workers {
        w.attempt = 1;
        w.status = WorkerStatus::Starting;
    }
    state.workers[0].status = WorkerStatus::Completed;
    let opts = crate::lead::DriverOptions {
        quiet: true,
        ..Default::default()
    };
    let mut d = crate::lead::Driver::new(store.clone(), state, world.mux(), opts);
    let dir = store.attempt_dir("a", 1);
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("output.log");
    std::fs::write(&log, "part of it\n").unwrap();
    let of = Of {
        worker: "a",
        attempt: 1,
        dir: &dir,
        nonce: "n1",
    };
    d.retakes.push(Retake::new(of, false, None, Instant::now()));
    // `b` waits for `a` and the critic `c` quotes every result: they wait; `late`
    // quotes none.
    let state = d.state.clone();
    let held: Vec<bool> = ["b", "c", "late"]
        .iter()
        .map(|w| d.retakes.hold(&state, w, 1))
        .collect();
    assert_eq!(held, [true, true, false]);
    d.council_after_retakes(&mut |_| {});
    assert!(d.pending_launches.is_empty(), "still held");
    std::fs::write(&log, "part of it\nand the rest\n__CREWMUX_EXIT_n1__:0\n").unwrap();
    let inputs = d.retake_results(false);
    d.apply(inputs, &mut |_| {});
    d.council_after_retakes(&mut |_| {});
    let released: Vec<(String, u32)> = d.pending_launches.iter().cloned().collect();
    assert_eq!(released, [("b".to_string(), 1), ("c".to_string(), 1)]);
    assert_eq!(
        std::fs::read_to_string(dir.join("result.md")).unwrap(),
        "part of it\nand the rest\n",
        "they quote the whole result"
    );
}

#[test]
fn a_retake_whose_lines_never_come_is_said_once_its_wait_is_over() {
    let tmp = tempfile::tempdir().unwrap();
    let (store, state, world) = crate::lead::tests::scripted(tmp.path());
    let opts = crate::lead::DriverOptions {
        quiet: true,
        ..Default::default()
    };
    let mut d = crate::lead::Driver::new(store.clone(), state, world.mux(), opts);
    let dir = store.attempt_dir("a", 1);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("output.log"), "part of it\n").unwrap();
    let of = Of {
        worker: "a",
        attempt: 1,
        dir: &dir,
        nonce: "n1",
    };
    let started = Instant::now() - RETAKE_WITHIN;
    d.retakes.push(Retake::new(of, false, None, started));
    let (_, logged) = info_lines(|| d.retake_results(false));
    assert!(
        logged.contains("a's last output lines did not come within 30 s: its result is what came"),
        "{logged}"
    );
    assert!(d.retakes.pending.is_empty());
    assert!(!dir.join(RETAKE_FILE).exists());
}

#[test]
fn what_the_council_waits_for_is_named() {
    let dir = std::path::Path::new("/nowhere");
    let r = |w: &str| {
        Retake::new(
            Of {
                worker: w,
                attempt: 1,
                dir,
                nonce: "n",
            },
            false,
            None,
            Instant::now(),
        )
    };
    assert_eq!(last_lines_of(&[r("a")]), "a's last output lines");
    assert_eq!(
        last_lines_of(&[r("a"), r("b"), r("c")]),
        "the last output lines of a, b and c"
    );
}
