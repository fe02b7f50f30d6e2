use super::RunState;

/// `state` as the JSON object `state.json` holds.
fn as_json(state: &RunState) -> serde_json::Value {
    serde_json::to_value(state).unwrap()
}

#[test]
fn a_state_file_without_the_hosts_not_answering_loads_with_none() {
    let mut run = crate::tui::fixtures::crazy_run();
    run.hosts_not_answering
        .insert("box".into(), chrono::Utc::now());
    let mut json = as_json(&run);
    // What a driver from before the field wrote.
    json.as_object_mut()
        .unwrap()
        .remove("hosts_not_answering")
        .expect("the field is written when a host does not answer");
    let old: RunState = serde_json::from_value(json).unwrap();
    assert!(old.hosts_not_answering.is_empty(), "{old:?}");
}

#[test]
fn the_hosts_not_answering_and_since_when_survive_a_save_and_none_is_not_written() {
    let mut run = crate::tui::fixtures::crazy_run();
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
    let back: RunState = serde_json::from_str(&text).unwrap();
    assert_eq!(back.hosts_not_answering, run.hosts_not_answering);
}
