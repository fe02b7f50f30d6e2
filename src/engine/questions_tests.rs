//! Questions through a worker's MCP server, its progress lines and the question timeout.

use chrono::Duration;

use super::questions::ToolQuestion;
use super::tests::{launched, run, t0};
use super::{update, Effect, Input, KillReason, RunMemory};
use crate::domain::clarification::Reach;
use crate::domain::clarification::{Approval, ApprovalPolicy, ToolReply};
use crate::domain::{RunState, WorkerStatus};

fn asked(call: &str, default: Option<&str>) -> Input {
    Input::ToolAsked {
        worker: "w0".into(),
        attempt: 1,
        question: ToolQuestion {
            call: call.into(),
            question: "Which database?".into(),
            choices: vec!["sqlite".into(), "postgres".into()],
            default: default.map(String::from),
            approval: None,
            reach: Reach::Unknown,
        },
    }
}

fn started(timeout_s: Option<u64>) -> (RunState, RunMemory) {
    let (mut s, mut mem) = (run(1, 1), RunMemory::default());
    s.worker_mut("w0").unwrap().flow.question_timeout_s = timeout_s;
    s.worker_mut("w0").unwrap().idle_timeout_s = Some(30);
    update(&mut s, &mut mem, t0(), Input::Start);
    launched(&mut s, &mut mem, "w0", 1, t0());
    (s, mem)
}

fn replies(fx: &[Effect]) -> Vec<(String, ToolReply)> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::Reply { call, reply, .. } => Some((call.clone(), reply.clone())),
            _ => None,
        })
        .collect()
}

#[test]
fn an_ask_waits_with_its_choices_default_and_deadline_and_the_answer_goes_to_the_call() {
    let (mut s, mut mem) = started(Some(300));
    update(&mut s, &mut mem, t0(), asked("9-1", Some("sqlite")));
    let w = s.worker("w0").unwrap();
    assert_eq!(w.status, WorkerStatus::Waiting);
    let p = w.pending.clone().unwrap();
    assert_eq!(p.tool_call.as_deref(), Some("9-1"));
    assert_eq!(p.choices, ["sqlite", "postgres"]);
    assert_eq!(p.default.as_deref(), Some("sqlite"));
    assert_eq!(p.deadline, Some(t0() + Duration::seconds(300)));
    // Waiting counts toward no idle clock: 100 s later (idle limit 30 s) nothing is killed.
    let later = t0() + Duration::seconds(100);
    let fx = update(&mut s, &mut mem, later, Input::Tick);
    assert!(
        !fx.iter().any(|e| matches!(e, Effect::Kill { .. })),
        "{fx:?}"
    );
    let text = "postgres\twith \"quotes\"\nand a newline";
    let fx = update(
        &mut s,
        &mut mem,
        later,
        Input::AnswerWorker {
            worker: "w0".into(),
            text: text.into(),
        },
    );
    assert_eq!(
        replies(&fx),
        [("9-1".to_string(), ToolReply::Answer { text: text.into() })]
    );
    assert!(
        !fx.iter().any(|e| matches!(e, Effect::Paste { .. })),
        "never pasted"
    );
    let w = s.worker("w0").unwrap();
    assert_eq!(
        w.status,
        WorkerStatus::Running,
        "the worker goes on at once"
    );
    assert!(w.pending.is_none() && w.question.is_none());
    // The idle clock starts at the answer: 29 s after it, still no kill.
    let fx = update(&mut s, &mut mem, later + Duration::seconds(29), Input::Tick);
    assert!(
        !fx.iter().any(|e| matches!(e, Effect::Kill { .. })),
        "{fx:?}"
    );
}

#[test]
fn an_unanswered_ask_gets_its_default_at_the_deadline_and_is_kept_unanswered() {
    let (mut s, mut mem) = started(Some(60));
    update(&mut s, &mut mem, t0(), asked("9-1", Some("sqlite")));
    let fx = update(&mut s, &mut mem, t0() + Duration::seconds(59), Input::Tick);
    assert!(replies(&fx).is_empty());
    let fx = update(&mut s, &mut mem, t0() + Duration::seconds(60), Input::Tick);
    assert_eq!(
        replies(&fx),
        [(
            "9-1".to_string(),
            ToolReply::TimedOut {
                after_s: 60,
                default: Some("sqlite".into())
            }
        )]
    );
    assert_eq!(s.worker("w0").unwrap().status, WorkerStatus::Running);
    let a = &s.clarification.worker_answers[0];
    assert_eq!(a.question, "Which database?");
    assert!(a.answer.contains("not answered within 60s"), "{}", a.answer);
    assert!(a.answer.contains("`sqlite`"), "{}", a.answer);
}

#[test]
fn a_screen_question_past_its_timeout_ends_the_attempt_failed() {
    let (mut s, mut mem) = started(Some(60));
    s.worker_mut("w0").unwrap().max_attempts = 1;
    update(
        &mut s,
        &mut mem,
        t0(),
        Input::Asked {
            worker: "w0".into(),
            attempt: 1,
            question: "Proceed? (y/n)".into(),
        },
    );
    let fx = update(&mut s, &mut mem, t0() + Duration::seconds(61), Input::Tick);
    assert!(
        fx.contains(&Effect::Kill {
            worker: "w0".into(),
            attempt: 1,
            reason: KillReason::QuestionTimeout
        }),
        "{fx:?}"
    );
    super::tests::exited(&mut s, &mut mem, "w0", 1, 143);
    let w = s.worker("w0").unwrap();
    assert_eq!(w.status, WorkerStatus::Failed);
    assert_eq!(
        w.reason.as_deref(),
        Some("no answer to its question within 60s (question_timeout_s)")
    );
    assert_eq!(
        s.clarification.worker_answers.len(),
        1,
        "kept for the report"
    );
}

/// A screen question answered (pasted): the worker waits until output of its own comes
/// (the driver leaves the paste's echo out), its question's deadline is over, and its idle
/// clock runs from the answer.
#[test]
fn an_answered_screen_question_runs_the_idle_clock_from_the_answer() {
    let (mut s, mut mem) = started(Some(60));
    let asked = Input::Asked {
        worker: "w0".into(),
        attempt: 1,
        question: "Proceed? (y/n)".into(),
    };
    update(&mut s, &mut mem, t0(), asked);
    let answer = Input::AnswerWorker {
        worker: "w0".into(),
        text: "y".into(),
    };
    let at = t0() + Duration::seconds(50);
    let fx = update(&mut s, &mut mem, at, answer);
    assert!(
        fx.iter().any(|e| matches!(e, Effect::Paste { .. })),
        "{fx:?}"
    );
    // Past the question's deadline (60 s) but within the idle limit (30 s) of the answer:
    // nothing ends, and it still waits (nothing of its own came).
    let fx = update(&mut s, &mut mem, at + Duration::seconds(20), Input::Tick);
    assert!(
        !fx.iter().any(|e| matches!(e, Effect::Kill { .. })),
        "{fx:?}"
    );
    assert_eq!(s.worker("w0").unwrap().status, WorkerStatus::Waiting);
    let fx = update(&mut s, &mut mem, at + Duration::seconds(31), Input::Tick);
    assert!(
        fx.contains(&Effect::Kill {
            worker: "w0".into(),
            attempt: 1,
            reason: KillReason::IdleTimeout
        }),
        "{fx:?}"
    );
    // A stall line is the worker's own: it runs again.
    let (mut s, mut mem) = started(Some(60));
    let asked = Input::Asked {
        worker: "w0".into(),
        attempt: 1,
        question: "Proceed? (y/n)".into(),
    };
    update(&mut s, &mut mem, t0(), asked);
    let answer = Input::AnswerWorker {
        worker: "w0".into(),
        text: "y".into(),
    };
    update(&mut s, &mut mem, t0(), answer);
    let stall = Input::StallLine {
        worker: "w0".into(),
        attempt: 1,
        line: "Reconnecting... 1/5".into(),
    };
    update(&mut s, &mut mem, t0() + Duration::seconds(1), stall);
    let w = s.worker("w0").unwrap();
    assert_eq!(w.status, WorkerStatus::Running);
    assert!(w.flow.stall.is_some());
}

#[test]
fn an_ask_is_refused_while_the_run_is_cancelled_or_another_question_waits() {
    let (mut s, mut mem) = started(None);
    update(&mut s, &mut mem, t0(), asked("9-1", None));
    let fx = update(&mut s, &mut mem, t0(), asked("9-2", None));
    assert!(
        matches!(&replies(&fx)[..], [(c, ToolReply::Refused { why })] if c == "9-2" && why.contains("one at a time")),
        "{fx:?}"
    );
    // The first call seen again (a lead that took over) is not refused, not asked twice.
    let fx = update(&mut s, &mut mem, t0(), asked("9-1", None));
    assert!(fx.is_empty(), "{fx:?}");
    update(&mut s, &mut mem, t0(), Input::Cancel { worker: None });
    let (mut s2, mut mem2) = started(None);
    update(&mut s2, &mut mem2, t0(), Input::Cancel { worker: None });
    let fx = update(&mut s2, &mut mem2, t0(), asked("9-3", None));
    assert!(
        matches!(&replies(&fx)[..], [(_, ToolReply::Refused { why })] if why.contains("cancelled")),
        "{fx:?}"
    );
    assert_ne!(s2.worker("w0").unwrap().status, WorkerStatus::Waiting);
}

#[test]
fn progress_is_shown_and_never_changes_the_status() {
    let (mut s, mut mem) = started(None);
    update(
        &mut s,
        &mut mem,
        t0(),
        Input::Progress {
            worker: "w0".into(),
            attempt: 1,
            text: "completed".into(),
        },
    );
    let w = s.worker("w0").unwrap();
    assert_eq!(w.progress.as_deref(), Some("completed"));
    assert_eq!(w.status, WorkerStatus::Running);
}

#[test]
fn an_approval_answered_n_is_denied_with_the_reason_and_a_allows_the_tool_for_the_run() {
    let (mut s, mut mem) = started(Some(60));
    let approval = |call: &str| Input::ToolAsked {
        worker: "w0".into(),
        attempt: 1,
        question: ToolQuestion {
            call: call.into(),
            question: "allow Bash: {}".into(),
            choices: vec![],
            default: None,
            approval: Some(Approval {
                tool: "Bash".into(),
                input: "{}".into(),
                targets: None,
            }),
            reach: Reach::Unknown,
        },
    };
    let answer = |text: &str| Input::AnswerWorker {
        worker: "w0".into(),
        text: text.into(),
    };
    update(&mut s, &mut mem, t0(), approval("1-1"));
    let fx = update(&mut s, &mut mem, t0(), answer("n not on main"));
    assert_eq!(
        replies(&fx),
        [(
            "1-1".to_string(),
            ToolReply::Deny {
                reason: Some("not on main".into())
            }
        )]
    );
    update(&mut s, &mut mem, t0(), approval("1-2"));
    let fx = update(&mut s, &mut mem, t0(), answer("A"));
    assert_eq!(
        replies(&fx),
        [("1-2".to_string(), ToolReply::Allow { always: true })]
    );
    assert_eq!(s.clarification.always_allowed, vec!["Bash".to_string()]);
    // The same tool again, asked of a lead that took the run over (its memory is new):
    // allowed without asking, since the state keeps the kind.
    let mut mem = RunMemory::default();
    let fx = update(&mut s, &mut mem, t0(), approval("1-3"));
    assert_eq!(
        replies(&fx),
        [("1-3".to_string(), ToolReply::Allow { always: true })]
    );
    assert_eq!(s.worker("w0").unwrap().status, WorkerStatus::Running);
    // An unanswered approval is denied at its deadline.
    s.worker_mut("w0").unwrap().flow.question_timeout_s = Some(5);
    let mut other = approval("1-4");
    if let Input::ToolAsked { question, .. } = &mut other {
        question.approval.as_mut().unwrap().tool = "Write".into();
    }
    update(&mut s, &mut mem, t0(), other);
    let fx = update(&mut s, &mut mem, t0() + Duration::seconds(5), Input::Tick);
    assert_eq!(
        replies(&fx),
        [(
            "1-4".to_string(),
            ToolReply::TimedOut {
                after_s: 5,
                default: None
            }
        )]
    );
}

#[test]
fn auto_allows_a_write_inside_the_worktree_and_makes_the_worker_wait_for_one_outside() {
    let (mut s, mut mem) = started(Some(60));
    s.worker_mut("w0").unwrap().flow.approvals = ApprovalPolicy::Auto;
    let write = |call: &str, reach: Reach| Input::ToolAsked {
        worker: "w0".into(),
        attempt: 1,
        question: ToolQuestion {
            call: call.into(),
            question: "allow Write".into(),
            choices: vec![],
            default: None,
            approval: Some(Approval {
                tool: "Write".into(),
                input: "{}".into(),
                targets: Some(vec!["x".into()]),
            }),
            reach,
        },
    };
    let fx = update(&mut s, &mut mem, t0(), write("1-1", Reach::Inside));
    assert_eq!(
        replies(&fx),
        [("1-1".to_string(), ToolReply::Allow { always: false })]
    );
    assert_eq!(s.worker("w0").unwrap().status, WorkerStatus::Running);
    let fx = update(
        &mut s,
        &mut mem,
        t0(),
        write("1-2", Reach::Outside("/etc/x".into())),
    );
    assert!(replies(&fx).is_empty(), "{fx:?}");
    let w = s.worker("w0").unwrap();
    assert_eq!(w.status, WorkerStatus::Waiting);
    assert_eq!(
        w.pending.as_ref().unwrap().tool_call.as_deref(),
        Some("1-2")
    );
    // `deny`: answered at once, the worker never waits.
    let (mut s, mut mem) = started(Some(60));
    s.worker_mut("w0").unwrap().flow.approvals = ApprovalPolicy::Deny;
    let fx = update(&mut s, &mut mem, t0(), write("1-3", Reach::Inside));
    assert!(
        matches!(&replies(&fx)[..], [(c, ToolReply::Deny { reason: Some(_) })] if c == "1-3"),
        "{fx:?}"
    );
    assert_eq!(s.worker("w0").unwrap().status, WorkerStatus::Running);
}
