//! Exit codes with a meaning: not retried on the same provider, moved to a fallback, the
//! reason says what to do, and a fixer avoids the failed provider.

use std::collections::BTreeMap;

use super::tests::{exited, exited_saying, launched, launches, run, t0};
use super::*;
use crate::domain::*;

/// Two gemini workers with codex as fallback, gemini's 41 declared as auth.
fn gemini_run(with_fallback: bool) -> RunState {
    let mut s = run(2, 1);
    for w in &mut s.workers {
        w.provider = "gemini".into();
        w.model = Some("gemini-2.5-pro".into());
        w.max_attempts = 3;
        if with_fallback {
            s.routing.fallbacks.insert(
                w.id.clone(),
                vec![Fallback {
                    provider: "codex".into(),
                    model: Some("gpt-6.2-sol".into()),
                }],
            );
        }
    }
    let auth = ExitMeaning {
        meaning: ExitKind::Auth,
        fix: "set GEMINI_API_KEY or run `gemini` once to log in".into(),
    };
    s.routing
        .exit_codes
        .insert("gemini".into(), BTreeMap::from([(41, auth)]));
    s
}

fn events(fx: &[Effect], kind: &str) -> Vec<String> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::Event(ev) if ev.kind.as_str() == kind => Some(ev.message.clone()),
            _ => None,
        })
        .collect()
}

const REASON: &str =
    "gemini: not authenticated (exit 41): set GEMINI_API_KEY or run `gemini` once to log in";

#[test]
fn an_auth_exit_moves_the_worker_and_the_pending_ones_to_the_fallback() {
    let (mut s, mut mem) = (gemini_run(true), RunMemory::default());
    update(&mut s, &mut mem, t0(), Input::Start);
    launched(&mut s, &mut mem, "w0", 1, t0());
    let fx = exited(&mut s, &mut mem, "w0", 1, 41);
    let failed = events(&fx, "worker-failed");
    assert_eq!(failed, vec![format!("failed (exit 41): {REASON}")]);
    let w0 = s.worker("w0").unwrap();
    assert_eq!(
        (w0.provider.as_str(), w0.model.as_deref()),
        ("codex", Some("gpt-6.2-sol"))
    );
    assert_eq!(
        launches(&fx),
        vec![("w0".to_string(), 2)],
        "retried, on codex"
    );
    assert_eq!(
        s.worker("w1").unwrap().provider,
        "codex",
        "the pending gemini worker moves before it fails the same way"
    );
    assert_eq!(events(&fx, "provider-switched").len(), 2);
    assert!(events(&fx, "provider-switched")[0]
        .starts_with("gemini → codex: gemini: not authenticated"));
    assert_eq!(
        s.routing.failed.get("gemini").map(String::as_str),
        Some(REASON)
    );
    assert_eq!(s.dispatches[0].reason.as_deref(), Some(REASON));
}

#[test]
fn without_a_fallback_an_auth_exit_is_not_retried() {
    let (mut s, mut mem) = (gemini_run(false), RunMemory::default());
    update(&mut s, &mut mem, t0(), Input::Start);
    launched(&mut s, &mut mem, "w0", 1, t0());
    let fx = exited(&mut s, &mut mem, "w0", 1, 41);
    let w0 = s.worker("w0").unwrap();
    assert_eq!(
        w0.status,
        WorkerStatus::Failed,
        "attempts remain, yet no retry"
    );
    assert_eq!(w0.attempt, 1);
    assert_eq!(w0.reason.as_deref(), Some(REASON));
    assert!(events(&fx, "worker-retry-scheduled").is_empty());
    assert!(!launches(&fx).contains(&("w0".to_string(), 2)));
    assert!(mem.no_retry.is_empty(), "the flag is used up");
}

#[test]
fn an_undeclared_exit_code_is_retried_on_the_same_provider() {
    let (mut s, mut mem) = (gemini_run(true), RunMemory::default());
    update(&mut s, &mut mem, t0(), Input::Start);
    launched(&mut s, &mut mem, "w0", 1, t0());
    let fx = exited(&mut s, &mut mem, "w0", 1, 1);
    let w0 = s.worker("w0").unwrap();
    assert_eq!(w0.provider, "gemini");
    assert_eq!(launches(&fx), vec![("w0".to_string(), 2)]);
    assert_eq!(
        events(&fx, "worker-failed"),
        vec!["failed (exit 1): exit code 1"]
    );
    assert!(s.routing.failed.is_empty());
}

#[test]
fn a_fixer_does_not_go_to_a_provider_that_failed_auth() {
    let (mut s, mut mem) = (gemini_run(true), RunMemory::default());
    s.workers.truncate(1);
    s.fixer = Some(AgentSpec {
        provider: Some("gemini".into()),
        approvals: Some(crate::domain::clarification::ApprovalsSpec {
            policy: Some(crate::domain::clarification::ApprovalPolicy::Auto),
        }),
        ..AgentSpec::default()
    });
    update(&mut s, &mut mem, t0(), Input::Start);
    launched(&mut s, &mut mem, "w0", 1, t0());
    exited(&mut s, &mut mem, "w0", 1, 41);
    launched(&mut s, &mut mem, "w0", 2, t0());
    exited(&mut s, &mut mem, "w0", 2, 0);
    let verdict = CriticVerdict {
        critic: "tests".into(),
        verdict: Verdict::Fail,
        confidence: 1.0,
        findings: vec!["cargo test failed".into()],
    };
    let fx = update(&mut s, &mut mem, t0(), Input::CouncilReady(vec![verdict]));
    assert_eq!(launches(&fx), vec![("fixer-r1".into(), 1)]);
    let fixer = s.worker("fixer-r1").unwrap();
    assert_eq!(
        (fixer.provider.as_str(), fixer.model.as_deref()),
        ("codex", Some("gpt-6.2-sol"))
    );
    // The fixer takes the policy its spec carries (the team's, `team::route`).
    assert_eq!(
        fixer.flow.approvals,
        crate::domain::clarification::ApprovalPolicy::Auto
    );
}

#[test]
fn with_no_provider_left_the_fix_round_is_skipped_with_the_reason() {
    let (mut s, mut mem) = (gemini_run(false), RunMemory::default());
    s.workers.truncate(1);
    update(&mut s, &mut mem, t0(), Input::Start);
    launched(&mut s, &mut mem, "w0", 1, t0());
    exited(&mut s, &mut mem, "w0", 1, 41);
    let verdict = CriticVerdict {
        critic: "tests".into(),
        verdict: Verdict::Fail,
        confidence: 1.0,
        findings: vec!["solo failed".into()],
    };
    let fx = update(&mut s, &mut mem, t0(), Input::CouncilReady(vec![verdict]));
    assert!(launches(&fx).is_empty());
    assert!(fx.contains(&Effect::WriteReport));
    assert_eq!(
        events(&fx, "fix-skipped"),
        vec![format!(
            "the council blocked but no usable provider can fix: {REASON}"
        )]
    );
}

fn not_logged_in() -> ExitSaid {
    ExitSaid {
        meaning: ExitMeaning {
            meaning: ExitKind::Auth,
            fix: "set ANTHROPIC_API_KEY".into(),
        },
        line: "Not logged in · Please run /login".into(),
        resets_at: None,
        other_key: false,
    }
}

#[test]
fn an_exit_its_output_calls_auth_is_not_retried_and_the_reason_quotes_it() {
    let (mut s, mut mem) = (gemini_run(false), RunMemory::default());
    s.workers[0].provider = "claude".into();
    update(&mut s, &mut mem, t0(), Input::Start);
    launched(&mut s, &mut mem, "w0", 1, t0());
    let fx = exited_saying(&mut s, &mut mem, "w0", 1, Some(not_logged_in()));
    let w0 = s.worker("w0").unwrap();
    let reason = "claude: not authenticated (exit 1: \"Not logged in · Please run /login\"): \
                  set ANTHROPIC_API_KEY";
    assert_eq!((w0.status, w0.attempt), (WorkerStatus::Failed, 1));
    assert_eq!(w0.reason.as_deref(), Some(reason));
    assert!(events(&fx, "worker-retry-scheduled").is_empty());
    assert_eq!(
        s.routing.failed.get("claude").map(String::as_str),
        Some(reason)
    );
}

#[test]
fn an_exit_its_output_calls_auth_moves_to_the_fallback() {
    let (mut s, mut mem) = (gemini_run(true), RunMemory::default());
    update(&mut s, &mut mem, t0(), Input::Start);
    launched(&mut s, &mut mem, "w0", 1, t0());
    let fx = exited_saying(&mut s, &mut mem, "w0", 1, Some(not_logged_in()));
    assert_eq!(s.worker("w0").unwrap().provider, "codex");
    assert_eq!(launches(&fx), vec![("w0".to_string(), 2)]);
}

#[test]
fn a_declared_exit_code_wins_over_the_output() {
    let (mut s, mut mem) = (gemini_run(false), RunMemory::default());
    update(&mut s, &mut mem, t0(), Input::Start);
    launched(&mut s, &mut mem, "w0", 1, t0());
    exited_saying(&mut s, &mut mem, "w0", 41, Some(not_logged_in()));
    assert_eq!(s.worker("w0").unwrap().reason.as_deref(), Some(REASON));
}

/// An exit noticed late (a host that did not answer, `status` reconciling a run nobody
/// drove) ends at the time its `exit.json` says, kept between its start and when it was
/// noticed; a record without a time ends when it was noticed.
#[test]
fn an_attempt_ends_when_its_exit_record_says_not_when_it_was_noticed() {
    let end = |at: Option<chrono::DateTime<chrono::Utc>>| {
        let (mut s, mut mem) = (run(1, 1), RunMemory::default());
        update(&mut s, &mut mem, t0(), Input::Start);
        launched(&mut s, &mut mem, "w0", 1, t0());
        let noticed = t0() + chrono::Duration::seconds(154);
        let exited = Input::Exited {
            worker: "w0".into(),
            attempt: 1,
            code: 0,
            source: ExitSource::ExitFile,
            missing_artifacts: vec![],
            result: None,
            said: None,
            ended_at: at,
            question: None,
        };
        update(&mut s, &mut mem, noticed, exited);
        let w = s.worker("w0").unwrap();
        assert_eq!(w.ended_at, s.dispatches[0].ended_at);
        w.ended_at.unwrap() - t0()
    };
    let secs = chrono::Duration::seconds;
    assert_eq!(end(Some(t0() + secs(6))), secs(6));
    assert_eq!(end(None), secs(154));
    // A host's clock ahead or behind: never after it was noticed, never before it started.
    assert_eq!(end(Some(t0() + secs(900))), secs(154));
    assert_eq!(end(Some(t0() - secs(30))), secs(0));
}
