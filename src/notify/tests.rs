use std::time::{Duration, Instant};

use super::*;
use crate::domain::{EventKind, RunEvent};

fn event(kind: EventKind, worker: Option<(&str, u32)>, message: &str) -> RunEvent {
    RunEvent {
        ts: "2026-01-02T10:16:03.123Z".parse().unwrap(),
        kind,
        worker: worker.map(|(w, _)| w.to_string()),
        attempt: worker.map(|(_, a)| a),
        source: "engine".into(),
        message: message.into(),
    }
}

#[test]
fn a_waiting_worker_is_a_question_as_one_json_object() {
    let e = event(
        EventKind::WorkerWaiting,
        Some(("asker", 2)),
        "Which colour should the badge be?",
    );
    let n = Notification::of_event("r1", &e).unwrap();
    let v: serde_json::Value = serde_json::from_str(&n.json()).unwrap();
    assert_eq!(
        v,
        serde_json::json!({
            "kind": "question",
            "run": "r1",
            "worker": "asker",
            "attempt": 2,
            "event": "worker-waiting",
            "message": "asker asks: Which colour should the badge be?",
            "at": "2026-01-02T10:16:03.123Z",
        })
    );
    assert!(!n.json().contains('\n'), "one line: {}", n.json());
}

#[test]
fn a_halt_a_blocking_council_and_every_end_of_a_run_notify_and_nothing_else() {
    let kind = |k: EventKind, msg: &str| {
        Notification::of_event("r1", &event(k, None, msg)).map(|n| (n.kind, n.message))
    };
    assert_eq!(
        kind(EventKind::RunHalted, "clarification needed: which page?"),
        Some(("clarification", "clarification needed: which page?".into()))
    );
    assert_eq!(
        kind(EventKind::Council, "blocked"),
        Some(("council-blocked", "the council blocked".into()))
    );
    assert_eq!(kind(EventKind::Council, "ok"), None);
    assert_eq!(kind(EventKind::Council, "attention"), None);
    assert_eq!(
        kind(EventKind::RunDone, "council ok"),
        Some(("run-ended", "run done: council ok".into()))
    );
    assert_eq!(
        kind(EventKind::RunFailed, "council blocked; report.md is empty"),
        Some((
            "run-ended",
            "run failed: council blocked; report.md is empty".into()
        ))
    );
    assert_eq!(
        kind(EventKind::RunCancelled, "every worker stopped"),
        Some(("run-ended", "run cancelled: every worker stopped".into()))
    );
    let n = Notification::of_event("r1", &event(EventKind::RunDone, None, "council ok")).unwrap();
    assert_eq!((n.worker, n.attempt), (None, None));
    for k in [
        EventKind::WorkerStarted,
        EventKind::WorkerCompleted,
        EventKind::WorkerAnswered,
        EventKind::StageChanged,
    ] {
        assert_eq!(
            Notification::of_event("r1", &event(k.clone(), Some(("w", 1)), "x")),
            None,
            "{k}"
        );
    }
}

fn question() -> Notification {
    Notification::of_event(
        "r1",
        &event(EventKind::WorkerWaiting, Some(("asker", 1)), "Colour?"),
    )
    .unwrap()
}

fn sh(script: &str) -> Vec<String> {
    vec!["sh".into(), "-c".into(), script.into()]
}

#[test]
fn the_command_reads_the_json_on_stdin_and_the_kind_and_run_in_its_environment() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("got");
    let script = format!(
        "cat > {0}; echo \"$CREWMUX_EVENT $CREWMUX_RUN\" >> {0}",
        out.display()
    );
    command::run(&sh(&script), &question(), Duration::from_secs(10)).unwrap();
    let got = std::fs::read_to_string(&out).unwrap();
    assert_eq!(got, format!("{}\nquestion r1\n", question().json()));
}

#[test]
fn a_command_not_found_failing_or_hung_is_one_line_and_the_hung_one_is_killed() {
    let why = command::run(
        &["/no/such/notifier".to_string()],
        &question(),
        Duration::from_secs(10),
    )
    .unwrap_err();
    assert!(
        why.starts_with("the notify command `/no/such/notifier` cannot be started:"),
        "{why}"
    );
    let why = command::run(
        &sh("echo 'no route to ntfy.sh' >&2; exit 3"),
        &question(),
        Duration::from_secs(10),
    )
    .unwrap_err();
    assert_eq!(
        why,
        "the notify command `sh` failed (exit status: 3): no route to ntfy.sh"
    );
    let t0 = Instant::now();
    let why = command::run(&sh("sleep 30"), &question(), Duration::from_millis(300)).unwrap_err();
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    assert!(
        why.contains("ran longer than 0.3 s") && why.contains("killed"),
        "{why}"
    );
}

#[test]
fn the_notifier_runs_the_command_once_per_notification_in_order_and_reports_failures() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("got");
    let ways = NotifyWays {
        bell: false,
        osc: false,
        notify_send: false,
        tmux: false,
        command: Some(sh(&format!(
            "cat >> {}; [ \"$CREWMUX_EVENT\" = question ]",
            out.display()
        ))),
        command_timeout: Duration::from_secs(10),
    };
    let mut n = Notifier::new(ways.clone(), false, None);
    n.send(&question());
    let ended =
        Notification::of_event("r1", &event(EventKind::RunDone, None, "council ok")).unwrap();
    n.send(&ended);
    let failures = n.finish();
    let got = std::fs::read_to_string(&out).unwrap();
    assert_eq!(got, format!("{}\n{}\n", question().json(), ended.json()));
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert!(failures[0].contains("exit status: 1"), "{failures:?}");
    // --quiet: nothing at all.
    let mut q = Notifier::new(ways, true, None);
    q.send(&question());
    assert!(q.finish().is_empty());
    assert_eq!(std::fs::read_to_string(&out).unwrap(), got);
}

#[test]
fn the_users_tmux_is_the_one_of_tmux_never_the_workers_private_server() {
    assert_eq!(
        tmux::user_socket(Some("/tmp/tmux-1000/default,4242,0"), "crewmux"),
        Some(std::path::PathBuf::from("/tmp/tmux-1000/default"))
    );
    let private = tmux::private_path("crewmux");
    let env = format!("{},1,2", private.display());
    assert_eq!(tmux::user_socket(Some(&env), "crewmux"), None);
    assert_eq!(tmux::user_socket(None, "crewmux"), None);
    assert_eq!(tmux::user_socket(Some(""), "crewmux"), None);
    assert_eq!(tmux::escaped("50% #{done}\x07"), "50% ##{done}");
}
