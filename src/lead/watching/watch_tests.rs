//! A watch reads its log through the handle it keeps, follows a log replaced by another
//! file, and looks for `exit.json` only when it is told to, when the watcher saw it, or when
//! its last look is old.

use std::time::{Duration, Instant};

use super::watch::{Watch, EXIT_LOOK_EVERY};
use crate::domain::ExitSource;

fn exit_json(dir: &std::path::Path, code: i32, nonce: &str) {
    std::fs::write(
        dir.join("exit.json"),
        format!(r#"{{"schema_version":1,"code":{code},"nonce":"{nonce}"}}"#),
    )
    .unwrap();
}

#[test]
fn a_kept_log_is_read_as_it_grows_and_a_replaced_one_from_the_new_file() {
    let tmp = tempfile::tempdir().unwrap();
    let mut w = Watch::new("a", 1, "n1", tmp.path(), false);
    assert!(!w.read_log().grew, "no log yet");
    let log = tmp.path().join("output.log");
    std::fs::write(&log, "one\n").unwrap();
    assert_eq!(w.read_log().lines, ["one"]);
    let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    std::io::Write::write_all(&mut f, b"two\n").unwrap();
    assert_eq!(w.read_log().lines, ["two"]);
    // Brought back whole from elsewhere: a new file in its place, longer than what was read.
    let fresh = tmp.path().join("output.log.new");
    std::fs::write(&fresh, "one\ntwo\nthree\n").unwrap();
    std::fs::rename(&fresh, &log).unwrap();
    assert_eq!(w.read_log().lines, ["three"]);
}

#[test]
fn exit_json_is_looked_for_when_told_seen_or_due() {
    let tmp = tempfile::tempdir().unwrap();
    let mut w = Watch::new("a", 1, "n1", tmp.path(), false);
    let t0 = Instant::now();
    // The first look is due at once (an attempt may have ended before it was watched).
    assert_eq!(w.exit_evidence_looking(false, t0), None);
    exit_json(tmp.path(), 3, "n1");
    let soon = t0 + Duration::from_millis(100);
    assert_eq!(w.exit_evidence_looking(false, soon), None, "not due yet");
    assert_eq!(
        w.exit_evidence_looking(true, soon),
        Some((3, ExitSource::ExitFile)),
        "told to look (the pane is not alive, or no watcher)"
    );
    let mut w = Watch::new("a", 1, "n1", tmp.path(), false);
    std::fs::remove_file(tmp.path().join("exit.json")).unwrap();
    assert_eq!(w.exit_evidence_looking(false, t0), None);
    exit_json(tmp.path(), 4, "n1");
    w.exit_seen = true;
    assert_eq!(
        w.exit_evidence_looking(false, soon),
        Some((4, ExitSource::ExitFile)),
        "the watcher saw it"
    );
    let mut w = Watch::new("a", 1, "n1", tmp.path(), false);
    assert_eq!(
        w.exit_evidence_looking(false, t0),
        Some((4, ExitSource::ExitFile))
    );
    let mut w = Watch::new("a", 1, "n1", tmp.path(), false);
    std::fs::remove_file(tmp.path().join("exit.json")).unwrap();
    assert_eq!(w.exit_evidence_looking(false, t0), None);
    exit_json(tmp.path(), 5, "n1");
    assert_eq!(
        w.exit_evidence_looking(false, t0 + EXIT_LOOK_EVERY),
        Some((5, ExitSource::ExitFile)),
        "the last look is old: the watcher may have missed it"
    );
}

#[test]
fn a_marker_read_sends_one_look_for_exit_json_which_it_yields_to() {
    let tmp = tempfile::tempdir().unwrap();
    let mut w = Watch::new("a", 1, "n1", tmp.path(), false);
    let t0 = Instant::now();
    assert_eq!(w.exit_evidence_looking(false, t0), None);
    // A log brought back whole with its marker, its exit record beside it: the watcher has
    // not said so yet and the last look is recent, yet the record is what settles the exit.
    exit_json(tmp.path(), 3, "n1");
    std::fs::write(
        tmp.path().join("output.log"),
        "work\n__CREWMUX_EXIT_n1__:3\n",
    )
    .unwrap();
    assert!(w.read_log().grew);
    let soon = t0 + Duration::from_millis(100);
    assert_eq!(
        w.exit_evidence_looking(false, soon),
        Some((3, ExitSource::ExitFile))
    );
    // A marker with no record beside it is taken as the marker, and looked up once only.
    let other = tempfile::tempdir().unwrap();
    let mut w = Watch::new("a", 1, "n1", other.path(), false);
    assert_eq!(w.exit_evidence_looking(false, t0), None);
    std::fs::write(other.path().join("output.log"), "__CREWMUX_EXIT_n1__:7\n").unwrap();
    w.read_log();
    assert_eq!(
        w.exit_evidence_looking(false, soon),
        Some((7, ExitSource::Marker))
    );
    exit_json(other.path(), 9, "n1");
    assert_eq!(
        w.exit_evidence_looking(false, soon + Duration::from_millis(10)),
        Some((7, ExitSource::Marker)),
        "not due again until the look is old"
    );
}
