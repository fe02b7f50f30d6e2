//! Ranking a race: checks asked once every candidate has ended, the work stage held until
//! they are in, the order of the documented keys, and no pick when none completed.

use std::collections::BTreeMap;

use super::super::tests::{exited, launched, launches, run, t0};
use super::super::*;
use crate::domain::*;

/// Three candidates of task `fix`, all at once, with one team check when `checked`.
fn race_run(checked: bool) -> RunState {
    let mut s = run(3, 3);
    for (i, w) in s.workers.iter_mut().enumerate() {
        let n = u32::try_from(i + 1).unwrap();
        w.id = format!("fix-c{n}");
        w.max_attempts = 1;
        w.flow.candidate = Some(Candidate {
            task: "fix".into(),
            n,
            of: 3,
        });
    }
    if checked {
        s.checks = vec![CheckSpec {
            id: "works".into(),
            command: vec!["true".into()],
            cwd: None,
            timeout_s: None,
        }];
    }
    s.races = crate::domain::race::races_of(&s.workers);
    s
}

fn start_all(s: &mut RunState, mem: &mut RunMemory) {
    update(s, mem, t0(), Input::Start);
    for id in ["fix-c1", "fix-c2", "fix-c3"] {
        launched(s, mem, id, 1, t0());
    }
}

fn check(passed: bool) -> Vec<RaceCheck> {
    vec![RaceCheck {
        check: "works".into(),
        passed,
        code: Some(i32::from(!passed)),
        note: String::new(),
    }]
}

fn ranked_ids(s: &RunState) -> Vec<String> {
    s.races["fix"]
        .ranking
        .iter()
        .map(|r| r.id.clone())
        .collect()
}

#[test]
fn the_checks_run_once_all_candidates_ended_and_the_stage_waits_for_them() {
    let (mut s, mut mem) = (race_run(true), RunMemory::default());
    start_all(&mut s, &mut mem);
    exited(&mut s, &mut mem, "fix-c1", 1, 0);
    let fx = exited(&mut s, &mut mem, "fix-c2", 1, 0);
    assert!(!fx.iter().any(|e| matches!(e, Effect::RaceChecks { .. })));
    let fx = exited(&mut s, &mut mem, "fix-c3", 1, 1);
    let asked: Vec<_> = fx
        .iter()
        .filter_map(|e| match e {
            Effect::RaceChecks { task, candidates } => Some((task.clone(), candidates.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        asked,
        vec![(
            "fix".to_string(),
            vec!["fix-c1".to_string(), "fix-c2".to_string()]
        )],
        "the completed candidates only"
    );
    assert_eq!(s.stage, Stage::TeamExec, "held for the checks");
    assert!(!s.races["fix"].ranked());
    let fx = update(
        &mut s,
        &mut mem,
        t0(),
        Input::RaceChecked {
            task: "fix".into(),
            results: BTreeMap::from([
                ("fix-c1".to_string(), check(false)),
                ("fix-c2".to_string(), check(true)),
            ]),
        },
    );
    assert_eq!(ranked_ids(&s), ["fix-c2", "fix-c1", "fix-c3"]);
    assert_eq!(s.races["fix"].pick.as_deref(), Some("fix-c2"));
    assert!(s.races["fix"].ranking[2].why.starts_with("failed (exit 1)"));
    assert_eq!(s.stage, Stage::TeamVerify, "then the council's stage");
    assert!(s.left_out_by_race("fix-c1") && !s.left_out_by_race("fix-c2"));
    assert_eq!(launches(&fx), vec![("check-works".to_string(), 1)]);
}

#[test]
fn without_checks_a_change_beats_none_and_the_smaller_change_wins() {
    let (mut s, mut mem) = (race_run(false), RunMemory::default());
    let diffs = [None, Some((10, 2)), Some((3, 0))];
    let mut ws = super::super::integrate_tests::run(false)
        .workspace
        .expect("the integration tests' run has worktrees");
    for (i, d) in diffs.iter().enumerate() {
        let id = format!("fix-c{}", i + 1);
        ws.workers.insert(
            id.clone(),
            WorkerWorkspace {
                path: format!("/p/.crewmux/worktrees/r1/{id}").into(),
                branch: format!("crewmux/r1/{id}"),
                diff: d.map(|(added, removed)| DiffStat {
                    added,
                    removed,
                    files: 1,
                }),
                commits: 1,
                head: None,
                start: None,
                upstreams: Default::default(),
                host: None,
            },
        );
    }
    s.workspace = Some(ws);
    start_all(&mut s, &mut mem);
    for id in ["fix-c1", "fix-c2", "fix-c3"] {
        exited(&mut s, &mut mem, id, 1, 0);
    }
    assert_eq!(ranked_ids(&s), ["fix-c3", "fix-c2", "fix-c1"]);
    assert_eq!(s.races["fix"].pick.as_deref(), Some("fix-c3"));
    assert!(s.races["fix"].ranking[2].why.contains("no change"));
}

#[test]
fn a_race_whose_candidates_all_failed_has_no_pick() {
    let (mut s, mut mem) = (race_run(true), RunMemory::default());
    start_all(&mut s, &mut mem);
    let mut last = vec![];
    for id in ["fix-c1", "fix-c2", "fix-c3"] {
        last = exited(&mut s, &mut mem, id, 1, 2);
    }
    assert!(
        !last.iter().any(|e| matches!(e, Effect::RaceChecks { .. })),
        "nothing to check"
    );
    assert!(s.races["fix"].ranked());
    assert_eq!(s.races["fix"].pick, None);
    assert!(s.left_out_by_race("fix-c1"));
}
