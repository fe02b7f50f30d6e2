/// The line after the row of worker `id` in `text`.
fn line_after<'a>(text: &'a str, id: &str) -> &'a str {
    let mut lines = text.lines().skip_while(|l| !l.starts_with(id));
    lines.next();
    lines.next().unwrap_or_default()
}

#[test]
fn a_worker_moved_off_a_lost_host_and_one_on_a_host_say_where_they_run() {
    let mut run = crate::tui::fixtures::crazy_run();
    run.workers[0].moved_from = Some("box".into());
    run.workers[0].attempt = 2;
    run.workers[0].status = crate::domain::WorkerStatus::Running;
    run.workers[1].host = Some("box".into());
    let text = super::status_text(&run, true);
    assert_eq!(
        line_after(&text, &run.workers[0].id),
        "  attempt 2 on local (box lost)",
        "{text}"
    );
    assert_eq!(line_after(&text, &run.workers[1].id), "  on box", "{text}");
    assert_eq!(
        text.matches("box").count(),
        2,
        "no other worker names a host: {text}"
    );
}

#[test]
fn a_live_worker_on_a_host_that_does_not_answer_reads_unknown_and_others_do_not() {
    let mut run = crate::tui::fixtures::crazy_run();
    for (i, status) in [
        crate::domain::WorkerStatus::Running,
        crate::domain::WorkerStatus::Completed,
    ]
    .into_iter()
    .enumerate()
    {
        run.workers[i].host = Some("box".into());
        run.workers[i].status = status;
    }
    let down = ["box".to_string()].into();
    let text = super::status_text_with(&run, false, &down);
    let row = text
        .lines()
        .find(|l| l.starts_with(&run.workers[0].id))
        .unwrap();
    assert!(row.contains(" unknown "), "{text}");
    assert_eq!(
        line_after(&text, &run.workers[0].id),
        "  unknown (host box not answering); last seen running",
        "{text}"
    );
    // An ended worker of that host keeps what it ended as.
    assert_eq!(line_after(&text, &run.workers[1].id), "  on box", "{text}");
    let mut json = super::super::summary::summary(&run);
    super::unknown_in_json(&mut json, &run, &down, false);
    assert_eq!(
        json["workers"][0]["unknown"],
        "unknown (host box not answering)"
    );
    assert!(json["workers"][1].get("unknown").is_none(), "{json}");
    assert_eq!(json["hosts_not_answering"], serde_json::json!(["box"]));
}

/// A run whose first worker runs on `box` and its second ended there, the driving process
/// having found `box` not answering at 10:02:03 UTC.
fn run_with_box_not_answering() -> crate::domain::RunState {
    let mut run = crate::tui::fixtures::crazy_run();
    for (i, status) in [
        crate::domain::WorkerStatus::Running,
        crate::domain::WorkerStatus::Completed,
    ]
    .into_iter()
    .enumerate()
    {
        run.workers[i].host = Some("box".into());
        run.workers[i].status = status;
    }
    let since = chrono::DateTime::parse_from_rfc3339("2026-12-01T10:02:03Z")
        .unwrap()
        .with_timezone(&chrono::Utc);
    run.hosts_not_answering.insert("box".into(), since);
    run
}

#[test]
fn a_driven_run_reads_the_hosts_its_driver_finds_not_answering() {
    let run = run_with_box_not_answering();
    let down = super::hosts_down(&run, true, Default::default());
    assert_eq!(down, ["box".to_string()].into());
    let text = super::status_text_with(&run, true, &down);
    assert_eq!(
        line_after(&text, &run.workers[0].id),
        "  unknown (host box not answering); last seen running",
        "{text}"
    );
    assert!(
        text.contains(
            "\nhost box not answering since 2026-12-01 10:02:03 UTC; its workers' state is unknown until it answers\n"
        ),
        "{text}"
    );
    let mut json = super::super::summary::summary(&run);
    super::unknown_in_json(&mut json, &run, &down, true);
    assert_eq!(
        json["workers"][0]["unknown"],
        "unknown (host box not answering)"
    );
    assert!(json["workers"][1].get("unknown").is_none(), "{json}");
    assert_eq!(json["hosts_not_answering"], serde_json::json!(["box"]));
    assert_eq!(
        json["hosts_not_answering_since"],
        serde_json::json!({"box": "2026-12-01T10:02:03Z"})
    );
    assert_eq!(
        super::hosts_down_lines(&run),
        ["host box not answering since 2026-12-01 10:02:03 UTC: 1 worker(s) unknown"]
    );
}

#[test]
fn a_run_nobody_drives_ignores_what_a_driver_before_kept_and_uses_what_status_found() {
    let run = run_with_box_not_answering();
    let down = super::hosts_down(&run, false, Default::default());
    assert!(down.is_empty());
    let text = super::status_text_with(&run, false, &down);
    assert!(!text.contains("not answering"), "{text}");
    assert_eq!(line_after(&text, &run.workers[0].id), "  on box", "{text}");
    let found = ["box".to_string()].into();
    assert_eq!(
        super::hosts_down(&run, false, found),
        ["box".to_string()].into()
    );
}

#[test]
fn a_waiting_worker_says_how_long_its_question_still_waits_and_what_then() {
    let mut run = crate::tui::fixtures::crazy_run();
    let w = run
        .workers
        .iter_mut()
        .find(|w| w.status == crate::domain::WorkerStatus::Waiting)
        .unwrap();
    let id = w.id.clone();
    w.pending = Some(crate::domain::clarification::PendingQuestion {
        tool_call: Some("call-1".into()),
        default: Some("react-datepicker".into()),
        deadline: Some(chrono::Utc::now() + chrono::Duration::seconds(125)),
        ..Default::default()
    });
    let text = super::status_text(&run, true);
    let asks = text
        .lines()
        .skip_while(|l| !l.starts_with("  asks: "))
        .nth(1);
    let wait = asks.unwrap_or_else(|| panic!("no line after asks: {text}"));
    assert!(
        (wait.starts_with("  2:05 left") || wait.starts_with("  2:04 left"))
            && wait.ends_with("then the default applies: react-datepicker"),
        "{id}: {wait}\n{text}"
    );
}
