//! Tests of the run directory: state files, the inbox and the driver lock.
use super::*;

#[test]
fn corrupt_and_newer_state_files_are_reported_and_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let store = RunStore::create(tmp.path(), "20260101-000000-abcd").unwrap();
    std::fs::write(store.state_path(), b"{\"schema_version\": 1, \"run_id\": ").unwrap();
    let err = store.load_state().unwrap_err().to_string();
    assert!(
        err.contains("state.json") && err.contains("not valid JSON"),
        "{err}"
    );
    std::fs::write(store.state_path(), b"{\"schema_version\": 99}").unwrap();
    let err = store.load_state().unwrap_err().to_string();
    assert!(err.contains("newer"), "{err}");
    assert_eq!(
        std::fs::read(store.state_path()).unwrap(),
        b"{\"schema_version\": 99}"
    );
}

#[test]
fn inbox_commands_are_read_once_in_order() {
    let tmp = tempfile::tempdir().unwrap();
    let store = RunStore::create(tmp.path(), "r").unwrap();
    store
        .send_command(&InboxCommand::AnswerRun { text: "a".into() })
        .unwrap();
    store
        .send_command(&InboxCommand::Cancel {
            worker: None,
            grace_s: None,
        })
        .unwrap();
    let (cmds, off) = store.read_commands(0).unwrap();
    assert_eq!(cmds.len(), 2);
    let (cmds, _) = store.read_commands(off).unwrap();
    assert!(cmds.is_empty());
}

#[test]
fn the_driver_lock_is_exclusive() {
    let tmp = tempfile::tempdir().unwrap();
    let store = RunStore::create(tmp.path(), "r").unwrap();
    let held = store.try_driver_lock().unwrap();
    assert!(held.is_some());
    assert!(store.is_driven().unwrap());
    drop(held);
    assert!(!store.is_driven().unwrap());
}

#[test]
fn a_broken_or_missing_state_names_the_side_file_and_waits_for_its_driver() {
    let tmp = tempfile::tempdir().unwrap();
    let store = RunStore::create(tmp.path(), "20260101-000000-abcd").unwrap();
    let forced = "`crewmux clean --run 20260101-000000-abcd --purge --force`";
    let err = store.load_state().unwrap_err().to_string();
    assert!(
        err.contains("missing") && err.contains(forced) && !err.contains("os error"),
        "{err}"
    );
    std::fs::write(store.state_path(), b"{broken").unwrap();
    std::fs::write(store.aside_path(), b"{}").unwrap();
    let mv = format!(
        "`mv {} {}`",
        store.aside_path().display(),
        store.state_path().display()
    );
    let driving = store.try_driver_lock().unwrap();
    let err = store.load_state().unwrap_err().to_string();
    assert!(
        err.contains(&mv) && err.contains("once the crewmux process that drives the run"),
        "{err}"
    );
    drop(driving);
    let err = store.load_state().unwrap_err().to_string();
    assert!(
        err.contains(&mv) && err.contains(forced) && !err.contains("once"),
        "{err}"
    );
}

/// `state` as the JSON object `state.json` holds.
fn as_json(state: &crate::domain::RunState) -> serde_json::Value {
    serde_json::to_value(state).unwrap()
}

#[test]
fn a_state_file_without_the_hosts_not_answering_loads_with_none() {
    let mut run = crate::engine::tests::run(1, 1);
    run.hosts_not_answering
        .insert("box".into(), chrono::Utc::now());
    let mut json = as_json(&run);
    // What a driver from before the field wrote.
    json.as_object_mut()
        .unwrap()
        .remove("hosts_not_answering")
        .expect("the field is written when a host does not answer");
    let old: crate::domain::RunState = serde_json::from_value(json).unwrap();
    assert!(old.hosts_not_answering.is_empty(), "{old:?}");
}

#[test]
fn the_hosts_not_answering_and_since_when_survive_a_save_and_none_is_not_written() {
    let mut run = crate::engine::tests::run(1, 1);
    assert!(
        as_json(&run).get("hosts_not_answering").is_none(),
        "an empty map leaves the file as an older driver wrote it"
    );
    let since = chrono::DateTime::parse_from_rfc3339("2026-12-01T10:02:03Z")
        .unwrap()
        .with_timezone(&chrono::Utc);
    run.hosts_not_answering.insert("box".into(), since);
    let text = serde_json::to_string(&run).unwrap();
    assert!(
        text.contains(r#""hosts_not_answering":{"box":"2026-12-01T10:02:03Z"}"#),
        "{text}"
    );
    let back: crate::domain::RunState = serde_json::from_str(&text).unwrap();
    assert_eq!(back.hosts_not_answering, run.hosts_not_answering);
}
