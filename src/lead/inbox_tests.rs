//! Requests in the run's inbox are never dropped: one sent while no process drove the run,
//! or left unread when its driver stopped, is carried out by the next driver, and one that
//! no longer applies is refused with a `request-refused` event.

use super::tests::{drive, scripted, End};
use crate::domain::{EventKind, RunStatus};
use crate::store::InboxCommand;

fn finished(end: End) -> crate::domain::RunState {
    match end {
        End::Finished(s) => *s,
        End::Crashed => panic!("the driver crashed"),
    }
}

#[test]
fn a_cancel_sent_while_no_process_drove_the_run_is_carried_out_by_the_next_driver() {
    let tmp = tempfile::tempdir().unwrap();
    let (store, mut state, world) = scripted(tmp.path());
    // As `run` plans it: no request read yet.
    state.inbox_read = Some(0);
    store.save_state(&state).unwrap();
    store
        .send_command(&InboxCommand::Cancel {
            worker: None,
            grace_s: None,
        })
        .unwrap();
    let end = finished(drive(&store, &world, None));
    assert_eq!(end.status, RunStatus::Cancelled, "{:?}", end.reason);
    assert_eq!(end.inbox_read, Some(store.inbox_len()));
    // Saved with the state: a later driver does not carry it out again.
    assert_eq!(
        store.load_state().unwrap().inbox_read,
        Some(store.inbox_len())
    );
}

#[test]
fn a_request_that_no_longer_applies_is_refused_with_an_event_not_dropped() {
    let tmp = tempfile::tempdir().unwrap();
    let (store, mut state, world) = scripted(tmp.path());
    state.inbox_read = Some(0);
    store.save_state(&state).unwrap();
    let end = finished(drive(&store, &world, None));
    assert_eq!(end.status, RunStatus::Done, "{:?}", end.reason);
    // Sent after the run ended, to a run nobody drives: the next driver says no.
    store
        .send_command(&InboxCommand::Cancel {
            worker: None,
            grace_s: None,
        })
        .unwrap();
    store
        .send_command(&InboxCommand::AnswerWorker {
            worker: "c".into(),
            text: "MySQL".into(),
        })
        .unwrap();
    let again = finished(drive(&store, &world, None));
    assert_eq!(again.status, RunStatus::Done);
    let refused: Vec<String> = store
        .read_events()
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == EventKind::RequestRefused)
        .map(|e| e.message)
        .collect();
    assert_eq!(
        refused,
        vec![
            "the cancel of the run not carried out: run r1 is already done".to_string(),
            "the answer to c not carried out: run r1 is already done".to_string(),
        ]
    );
}
