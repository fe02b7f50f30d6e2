//! Hand-made run states for the dashboard's tests and snapshots: the `crazy` team in mixed
//! statuses, a council with pass/warn/fail, and a pending run-level clarification.

use std::path::PathBuf;

use chrono::{DateTime, Duration, TimeZone, Utc};
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};

use crate::domain::{
    BackendKind, ClarificationGate, ClarificationState, Council, CriticVerdict, RunState,
    RunStatus, Stage, Verdict, WorkerKind, WorkerState, WorkerStatus,
};

pub const RUN_ID: &str = "20261130-0600-7f3a";

/// The fixed "now" of every fixture: 12 min 34 s after the run was created.
pub fn now() -> DateTime<Utc> {
    t0() + Duration::seconds(12 * 60 + 34)
}

fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 30, 6, 0, 0).unwrap()
}

fn at(secs: i64) -> Option<DateTime<Utc>> {
    Some(t0() + Duration::seconds(secs))
}

/// A worker of the `crazy` team in `status`, started 5 s into the run.
pub fn worker(id: &str, role: &str, status: WorkerStatus) -> WorkerState {
    WorkerState {
        id: id.into(),
        role: role.into(),
        provider: "sim".into(),
        model: None,
        kind: WorkerKind::Worker,
        stage: Stage::TeamExec,
        round: 0,
        status,
        reason: None,
        attempt: 1,
        max_attempts: 2,
        exit_code: None,
        started_at: at(5),
        ended_at: None,
        pane_id: None,
        pid: None,
        result: None,
        question: None,
        pending: None,
        progress: None,
        signal: None,
        timeout_s: Some(900),
        idle_timeout_s: Some(300),
        artifacts: vec!["result.md".into()],
        task: String::new(),
        command: None,
        cwd: None,
        order: 0,
        host: None,
        moved_from: None,
        flow: Default::default(),
    }
}

fn verdict(critic: &str, v: Verdict, confidence: f64, findings: &[&str]) -> CriticVerdict {
    CriticVerdict {
        critic: critic.into(),
        verdict: v,
        confidence,
        findings: findings.iter().map(|s| s.to_string()).collect(),
    }
}

/// The whole mix: a running `crazy` team in team-verify with five workers (running;
/// waiting with a question; completed exit 0; failed exit 1 on attempt 2/2; crashed), a
/// council with pass/warn/fail, and a pending run-level clarification.
#[allow(
    clippy::too_many_lines,
    reason = "one scripted fixture run, read top to bottom"
)]
pub fn crazy_run() -> RunState {
    let mut architect = worker("architect", "software-architect", WorkerStatus::Completed);
    architect.exit_code = Some(0);
    architect.ended_at = at(95);
    architect.pane_id = Some("%1".into());
    architect.result =
        Some(format!(".crewmux/runs/{RUN_ID}/workers/architect/attempt-1/result.md").into());

    let mut backend = worker("backend", "backend-engineer", WorkerStatus::Running);
    backend.provider = "codex".into();
    backend.pane_id = Some("%2".into());
    backend.started_at = at(34);

    let mut frontend = worker("frontend", "frontend-engineer", WorkerStatus::Waiting);
    frontend.provider = "claude".into();
    frontend.pane_id = Some("%3".into());
    frontend.question = Some(
        "The dashboard has two date pickers (react-datepicker and a home-made one). \
         Which one should the rate-limit settings page use?"
            .into(),
    );

    let mut security = worker("security", "security-reviewer", WorkerStatus::Failed);
    security.provider = "gemini".into();
    security.attempt = 2;
    security.exit_code = Some(1);
    security.started_at = at(130);
    security.ended_at = at(301);
    security.pane_id = Some("%6".into());
    security.reason = Some("exit code 1".into());

    let mut testing = worker("testing", "test-engineer", WorkerStatus::Crashed);
    testing.ended_at = at(412);
    testing.pane_id = Some("%5".into());
    testing.reason = Some("pane vanished with no exit code".into());

    RunState {
        schema_version: crate::domain::SCHEMA_VERSION,
        run_id: RUN_ID.into(),
        problem: "Add per-client rate limiting to the public REST API: configurable limits per \
                  API key, 429 responses with Retry-After, a settings page, and tests"
            .into(),
        team: "crazy".into(),
        project_dir: PathBuf::from("/home/dev/shop"),
        run_dir: PathBuf::from(format!("/home/dev/shop/.crewmux/runs/{RUN_ID}")),
        stage: Stage::TeamVerify,
        status: RunStatus::Running,
        reason: None,
        backend: BackendKind::Tmux,
        tmux_socket: "crewmux".into(),
        session: format!("crewmux-{RUN_ID}"),
        parallel: 5,
        host_slots: Default::default(),
        fix_round: 0,
        max_fix_rounds: 1,
        workers: vec![architect, backend, frontend, security, testing],
        dispatches: vec![],
        council_history: vec![],
        workspace: None,
        routing: Default::default(),
        hosts_not_answering: Default::default(),
        inbox_read: None,
        inputs: Default::default(),
        budget: None,
        council: Council::from_verdicts(vec![
            verdict(
                "skeptic",
                Verdict::Pass,
                0.83,
                &["every result names the files it changed"],
            ),
            verdict(
                "hallucination-auditor",
                Verdict::Warn,
                0.64,
                &[
                    "backend cites `RateLimiter::acquire_many`, which no result defines",
                    "frontend mentions a settings route that is not in the router",
                ],
            ),
            verdict(
                "evidence-completeness",
                Verdict::Fail,
                0.91,
                &[
                    "security: no result.md (exit 1 on attempt 2/2)",
                    "testing: crashed before writing result.md",
                    "no test output quoted by any worker",
                ],
            ),
        ]),
        clarification: ClarificationState {
            pending: true,
            prompt: Some(
                "Which limits should apply by default — per API key, per IP, or both — and \
                 what should happen to requests over the limit (reject with 429, or queue)?"
                    .into(),
            ),
            gate: Some(ClarificationGate {
                requires_clarification: true,
                intent_class: "config".into(),
                missing_slots: vec!["scope".into()],
                prompt: None,
                confidence: 0.72,
            }),
            answers: vec![],
            questions: vec![],
            worker_answers: vec![],
            always_allowed: vec![],
        },
        clarify: true,
        checks: vec![],
        critics: vec![],
        fixer: None,
        sandbox: Default::default(),
        report: None,
        races: Default::default(),
        created_at: t0(),
        updated_at: now(),
    }
}

/// [`crazy_run`] with the run-level question answered: the waiting worker's question shows.
pub fn crazy_run_worker_question() -> RunState {
    let mut run = crazy_run();
    run.clarification.pending = false;
    run.clarification.prompt = None;
    run.clarification.answers = vec!["per API key, reject with 429".into()];
    run
}

/// A run that finished well: every worker completed, council ok, stage done.
pub fn done_run() -> RunState {
    let mut run = crazy_run_worker_question();
    for (i, w) in run.workers.iter_mut().enumerate() {
        w.status = WorkerStatus::Completed;
        w.exit_code = Some(0);
        w.question = None;
        w.reason = None;
        w.ended_at = at(200 + 40 * i as i64);
    }
    run.stage = Stage::Done;
    run.status = RunStatus::Done;
    run.fix_round = 1;
    run.council = Council::from_verdicts(vec![
        verdict("skeptic", Verdict::Pass, 0.83, &[]),
        verdict("hallucination-auditor", Verdict::Pass, 0.78, &[]),
        verdict("evidence-completeness", Verdict::Pass, 0.9, &[]),
    ]);
    run
}

/// A run halted at team-plan by the gate: nothing launched, council pending.
pub fn halted_run() -> RunState {
    let mut run = crazy_run();
    run.problem = "fix it".into();
    run.stage = Stage::TeamPlan;
    run.status = RunStatus::Halted;
    run.council = Council::default();
    run.clarification.prompt =
        Some("What should be fixed, and where (file, module or command)?".into());
    for w in &mut run.workers {
        *w = worker(&w.id, &w.role, WorkerStatus::Pending);
        w.attempt = 0;
        w.started_at = None;
    }
    run
}

/// Plausible sim-agent output of the `backend` worker as styled lines (what
/// `capture_to_lines` yields for a coloured capture).
/// The view a test draws: `run`, `ui` and the output lines of the selected worker, at
/// [`now`], on the tmux backend's `crewmux` socket.
pub fn view<'a>(
    run: &'a RunState,
    ui: &'a crate::tui::state::UiState,
    output: &'a [Line<'static>],
) -> crate::tui::state::View<'a> {
    crate::tui::state::View {
        run,
        output,
        now: now(),
        ui,
        backend: "tmux",
        tmux_socket: "crewmux",
        attach_hint: true,
        doc: None,
    }
}

pub fn backend_output() -> Vec<Line<'static>> {
    let dim = Style::default().fg(Color::DarkGray);
    let ok = Style::default().fg(Color::Green);
    let mut lines: Vec<Line<'static>> = vec![
        Line::from(vec![
            Span::styled("[sim] ", dim),
            Span::raw("reading prompt.md (2841 bytes)"),
        ]),
        Line::from(vec![
            Span::styled("[sim] ", dim),
            Span::raw("planning: token bucket per API key in middleware"),
        ]),
    ];
    for (i, file) in [
        "src/api/mod.rs",
        "src/api/limits.rs",
        "src/api/errors.rs",
        "src/config.rs",
    ]
    .iter()
    .enumerate()
    {
        lines.push(Line::from(vec![
            Span::styled("[sim] ", dim),
            Span::raw(format!("step {}/8: editing {file}", i + 1)),
        ]));
        lines.push(Line::from(vec![
            Span::raw("      "),
            Span::styled(format!("+{} -{}", 12 * (i + 1), i), ok),
        ]));
    }
    lines.push(Line::from(vec![
        Span::styled("[sim] ", dim),
        Span::raw("step 5/8: running cargo test -p api limits"),
    ]));
    lines.push(Line::from(Span::styled(
        "test limits::bucket_refills_after_window ... ok",
        ok,
    )));
    lines.push(Line::from(Span::styled(
        "test limits::returns_429_with_retry_after ... ok",
        ok,
    )));
    lines.push(Line::from(vec![
        Span::styled("[sim] ", dim),
        Span::raw("step 6/8: writing docs/rate-limits.md"),
    ]));
    lines
}
