//! Snapshot of the roster's flow notes: a worker queued after its upstreams, one skipped
//! because an upstream failed, one waiting out a retry back-off and one rate-limited.

use chrono::Duration;
use ratatui::backend::TestBackend;
use ratatui::Terminal;

use super::fixtures::{self, worker};
use super::panels::roster;
use super::UiState;
use crate::domain::{UpstreamPolicy, WorkerStatus};

#[test]
fn roster_shows_queued_skipped_backoff_and_rate_limited_workers() {
    let mut run = fixtures::crazy_run();
    let mut plan = worker("plan", "architect", WorkerStatus::Running);
    plan.flow.rate_limited = Some("429 Too Many Requests".into());
    let mut build = worker("build", "backend-engineer", WorkerStatus::Pending);
    build.flow.after = vec!["plan".into()];
    let mut docs = worker("docs", "architect", WorkerStatus::Failed);
    docs.reason = Some("exit code 2".into());
    let mut web = worker("web", "frontend-designer", WorkerStatus::Skipped);
    web.flow.after = vec!["docs".into()];
    web.reason = Some("upstream docs failed".into());
    let mut review = worker("review", "reviewer", WorkerStatus::Pending);
    review.flow.after = vec!["build".into(), "web".into()];
    review.flow.on_upstream_failure = UpstreamPolicy::Run;
    let mut retry = worker("retry", "testing-engineer", WorkerStatus::Pending);
    retry.attempt = 1;
    retry.flow.retry_at = Some(fixtures::now() + Duration::seconds(42));
    for w in [&mut build, &mut web, &mut review] {
        (w.attempt, w.started_at, w.ended_at) = (0, None, None);
    }
    retry.started_at = None;
    run.workers = vec![plan, build, docs, web, review, retry];
    let ui = UiState::default();
    let view = crate::tui::fixtures::view(&run, &ui, &[]);
    let mut terminal = Terminal::new(TestBackend::new(110, 9)).unwrap();
    terminal
        .draw(|f| roster::render(f, f.area(), &view))
        .unwrap();
    insta::assert_snapshot!(terminal.backend().clone());
}

#[test]
fn roster_shows_a_worker_parked_on_its_providers_usage_limit() {
    use chrono::TimeZone;
    let mut run = fixtures::crazy_run();
    let running = worker("plan", "architect", WorkerStatus::Running);
    let mut parked = worker("build", "backend-engineer", WorkerStatus::Pending);
    parked.attempt = 1;
    parked.max_attempts = 3;
    parked.provider = "claude".into();
    // 15:04 on the fixture's own day in this machine's zone, whatever that zone is.
    let day = fixtures::now().with_timezone(&chrono::Local).date_naive();
    let until = chrono::Local
        .from_local_datetime(&day.and_hms_opt(15, 4, 0).unwrap())
        .earliest()
        .unwrap()
        .with_timezone(&chrono::Utc);
    parked.flow.retry_at = Some(until);
    parked.flow.parked = Some(crate::domain::Parked {
        until,
        provider: "claude".into(),
        line: "You've hit your session limit · resets 3:04pm (UTC)".into(),
    });
    run.workers = vec![running, parked];
    let ui = UiState::default();
    let view = crate::tui::fixtures::view(&run, &ui, &[]);
    let mut terminal = Terminal::new(TestBackend::new(110, 5)).unwrap();
    terminal
        .draw(|f| roster::render(f, f.area(), &view))
        .unwrap();
    insta::assert_snapshot!(terminal.backend().clone());
}

#[test]
fn roster_shows_a_races_candidates_with_their_rank_and_the_pick() {
    use crate::domain::{Candidate, Race, Ranked};
    let mut run = fixtures::crazy_run();
    let mut rows = vec![];
    let whys = [
        (3, "completed · checks 0/1 · +1 −0 in 1 file"),
        (2, "completed · checks 1/1 · +4 −0 in 2 files"),
        (1, "completed · checks 1/1 · +1 −0 in 1 file"),
    ];
    let mut ranking = vec![];
    for (n, (rank, why)) in (1..=3).zip(whys) {
        let id = format!("fix-c{n}");
        let mut w = worker(&id, "backend-engineer", WorkerStatus::Completed);
        w.provider = ["codex", "claude", "gemini"][n as usize - 1].into();
        w.exit_code = Some(0);
        w.flow.candidate = Some(Candidate {
            task: "fix".into(),
            n,
            of: 3,
        });
        ranking.push(Ranked {
            id: id.clone(),
            rank,
            why: why.into(),
        });
        rows.push(w);
    }
    ranking.sort_by_key(|r| r.rank);
    run.races.insert(
        "fix".into(),
        Race {
            candidates: rows.iter().map(|w| w.id.clone()).collect(),
            checked: Default::default(),
            ranking,
            pick: Some("fix-c3".into()),
        },
    );
    run.workers = rows;
    let ui = UiState::default();
    let view = crate::tui::fixtures::view(&run, &ui, &[]);
    let mut terminal = Terminal::new(TestBackend::new(120, 6)).unwrap();
    terminal
        .draw(|f| roster::render(f, f.area(), &view))
        .unwrap();
    insta::assert_snapshot!(terminal.backend().clone());
}

#[test]
fn a_narrow_roster_gives_the_roles_room_to_the_race_and_parking_notes() {
    use crate::domain::Candidate;
    let mut run = fixtures::crazy_run();
    let mut rows = vec![];
    for n in 1..=2 {
        let mut w = worker(
            &format!("fix-c{n}"),
            "backend-engineer",
            WorkerStatus::Running,
        );
        w.flow.candidate = Some(Candidate {
            task: "fix".into(),
            n,
            of: 2,
        });
        rows.push(w);
    }
    run.workers = rows;
    let ui = UiState::default();
    let view = crate::tui::fixtures::view(&run, &ui, &[]);
    // The wide layout's roster: at most 96 columns beside the output.
    let mut terminal = Terminal::new(TestBackend::new(96, 5)).unwrap();
    terminal
        .draw(|f| roster::render(f, f.area(), &view))
        .unwrap();
    insta::assert_snapshot!(terminal.backend().clone());
}
