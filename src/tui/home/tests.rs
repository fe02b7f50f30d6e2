use std::path::PathBuf;

use chrono::TimeZone;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

use super::*;
use crate::tui::fixtures;

fn key(c: KeyCode) -> KeyEvent {
    KeyEvent::new(c, KeyModifiers::NONE)
}

fn rows() -> Vec<RunRow> {
    let mut done = RunRow::from_state(&fixtures::done_run());
    done.id = "20261130-0600-7f3a".into();
    let mut live = RunRow::from_state(&fixtures::crazy_run());
    live.id = "20261130-0700-1b2c".into();
    live.problem =
        "Make the export page stream large CSV files instead of building them in memory".into();
    live.created_at = Some(Utc.with_ymd_and_hms(2026, 11, 30, 7, 0, 0).unwrap());
    let broken = RunRow {
        id: "20261129-2300-dead".into(),
        project: PathBuf::from("/p"),
        problem: String::new(),
        status: None,
        council: None,
        done: 0,
        total: 0,
        created_at: None,
        error: Some("state.json: expected value at line 1 column 1".into()),
        lead_gone: false,
    };
    vec![live, done, broken]
}

fn home() -> Home {
    let mut h = Home::new(PathBuf::from("/home/ada/shop"), false, rows());
    h.providers = vec!["claude".into(), "codex".into()];
    h
}

fn screen(h: &Home, w: u16, ht: u16) -> TestBackend {
    let mut t = Terminal::new(TestBackend::new(w, ht)).unwrap();
    let now = Utc.with_ymd_and_hms(2026, 11, 30, 7, 12, 0).unwrap();
    t.draw(|f| view::draw(f, h, now)).unwrap();
    t.backend().clone()
}

#[test]
fn enter_opens_the_selected_run_and_q_quits() {
    let mut h = home();
    h.key(key(KeyCode::Down));
    assert_eq!(
        h.key(key(KeyCode::Enter)),
        Some(HomeExit::Open {
            project: h.rows[1].project.clone(),
            id: "20261130-0600-7f3a".into()
        })
    );
    assert_eq!(h.key(key(KeyCode::Esc)), Some(HomeExit::Quit));
}

#[test]
fn an_unreadable_run_is_listed_but_not_opened() {
    let mut h = home();
    h.key(key(KeyCode::End));
    assert_eq!(h.key(key(KeyCode::Enter)), None);
    assert!(h.notice.as_deref().unwrap().contains("cannot be opened"));
}

#[test]
fn x_cleans_a_finished_run_only_after_y() {
    let mut h = home();
    assert_eq!(h.key(key(KeyCode::Char('x'))), None);
    assert!(!h.confirm_clean, "a running run is not cleaned");
    assert!(h.notice.as_deref().unwrap().contains("has not finished"));
    h.key(key(KeyCode::Down));
    h.key(key(KeyCode::Char('x')));
    assert!(h.confirm_clean);
    assert_eq!(h.key(key(KeyCode::Char('n'))), None);
    assert!(!h.confirm_clean);
    h.key(key(KeyCode::Char('x')));
    assert_eq!(
        h.key(key(KeyCode::Char('y'))),
        Some(HomeExit::Clean {
            project: h.rows[1].project.clone(),
            id: "20261130-0600-7f3a".into()
        })
    );
}

#[test]
fn the_new_run_form_takes_a_multi_line_problem_a_mode_and_a_provider() {
    let mut h = home();
    h.key(key(KeyCode::Char('n')));
    assert!(h.form.is_some());
    assert_eq!(h.key(key(KeyCode::Char('s'))), None);
    for c in "Fix the".chars() {
        h.key(key(KeyCode::Char(c)));
    }
    h.key(key(KeyCode::Enter));
    h.paste("login bug");
    assert_eq!(h.form.as_ref().unwrap().problem, "sFix the\nlogin bug");
    h.key(key(KeyCode::Tab));
    // The form starts at `solo`, as `crewmux run` without `--mode`; ← goes to `ccg`.
    h.key(key(KeyCode::Left));
    // Team → team file (left empty) → provider.
    h.key(key(KeyCode::Tab));
    h.key(key(KeyCode::Tab));
    h.key(key(KeyCode::Right));
    h.key(key(KeyCode::Right));
    let exit = h.key(KeyEvent::new(KeyCode::Char('s'), KeyModifiers::CONTROL));
    assert_eq!(
        exit,
        Some(HomeExit::New(NewRun {
            problem: "sFix the\nlogin bug".into(),
            mode: ModeChoice::Builtin("ccg"),
            provider: Some("codex".into()),
            hosts: vec![],
            base: None,
            include_uncommitted: false,
            project: None,
        }))
    );
    assert!(h.form.is_none());
}

#[test]
fn with_ssh_hosts_the_form_can_spread_the_run_over_them() {
    let mut h = home();
    h.hosts = vec![vec![], vec!["box".into(), "local".into()]];
    h.key(key(KeyCode::Char('n')));
    h.paste("Fix it");
    // problem → team → team file → provider → base → uncommitted → hosts; → picks
    // "every host and local".
    for _ in 0..6 {
        h.key(key(KeyCode::Tab));
    }
    h.key(key(KeyCode::Right));
    insta::assert_snapshot!("home_new_run_with_hosts_80x24", screen(&h, 80, 24));
    let exit = h.key(key(KeyCode::Enter));
    let Some(HomeExit::New(run)) = exit else {
        panic!("{exit:?}")
    };
    assert_eq!(run.hosts, ["box", "local"]);
    // Without hosts the form has no hosts field: Tab comes back to the problem.
    let mut h = home();
    h.key(key(KeyCode::Char('n')));
    for _ in 0..6 {
        h.key(key(KeyCode::Tab));
    }
    assert_eq!(h.form.as_ref().unwrap().field, FormField::Problem);
}

#[test]
fn the_form_starts_at_the_default_mode_which_the_config_file_sets() {
    let mut h = home();
    h.key(key(KeyCode::Char('n')));
    let mode = h.form.as_ref().unwrap().mode;
    assert_eq!(h.modes[mode], ModeChoice::Builtin("solo"));
    h.key(key(KeyCode::Esc));
    h.set_default_mode("ccg");
    h.key(key(KeyCode::Char('n')));
    let mode = h.form.as_ref().unwrap().mode;
    assert_eq!(h.modes[mode], ModeChoice::Builtin("ccg"));
}

#[test]
fn a_refused_start_gives_the_typed_form_back_and_a_started_one_does_not() {
    let mut h = home();
    h.key(key(KeyCode::Char('n')));
    h.paste("Fix the login bug");
    h.key(key(KeyCode::Tab));
    h.key(key(KeyCode::Right));
    let Some(HomeExit::New(_)) = h.key(KeyEvent::new(KeyCode::Char('s'), KeyModifiers::CONTROL))
    else {
        panic!("the form starts a run")
    };
    // The caller's start was refused: `n` brings the same form back.
    h.key(key(KeyCode::Char('n')));
    let form = h.form.clone().unwrap();
    assert_eq!(form.problem, "Fix the login bug");
    assert_eq!(h.modes[form.mode], ModeChoice::Builtin("crazy"));
    h.key(KeyEvent::new(KeyCode::Char('s'), KeyModifiers::CONTROL));
    h.started();
    h.key(key(KeyCode::Char('n')));
    assert_eq!(h.form.as_ref().unwrap().problem, "");
}

#[test]
fn while_the_agent_clis_are_checked_the_form_says_so() {
    let mut h = Home::new(PathBuf::from("/home/ada/shop"), false, vec![]);
    h.probing = true;
    h.key(key(KeyCode::Char('n')));
    let text = format!("{:?}", screen(&h, 100, 24));
    assert!(text.contains("checking the agent CLIs"), "{text}");
    h.probing = false;
    h.providers = vec!["sim".into()];
    let text = format!("{:?}", screen(&h, 100, 24));
    assert!(!text.contains("checking the agent CLIs"), "{text}");
}

#[test]
fn a_long_notice_is_wrapped_so_its_end_shows() {
    let mut h = Home::new(PathBuf::from("/home/ada/shop"), false, vec![]);
    h.notice = Some(format!(
        "no agent CLI can run workers {}: install or log in to one, or pick the provider sim",
        "`architect`, `backend`, `frontend`, `security`, `testing`, `synthesis`"
    ));
    insta::assert_snapshot!("home_long_notice_80x24", screen(&h, 80, 24));
    let text = format!("{:?}", screen(&h, 80, 24));
    assert!(text.contains("pick the provider sim"), "{text}");
}

#[test]
fn an_empty_problem_is_not_started() {
    let mut h = home();
    h.key(key(KeyCode::Char('n')));
    h.key(key(KeyCode::Tab));
    assert_eq!(h.key(key(KeyCode::Enter)), None);
    assert!(h.notice.as_deref().unwrap().contains("type the problem"));
    assert_eq!(h.key(key(KeyCode::Esc)), None);
    assert!(h.form.is_none());
}

#[test]
fn team_files_of_the_project_are_offered_as_modes() {
    let tmp = tempfile::tempdir().unwrap();
    let teams = tmp.path().join(".crewmux/teams");
    std::fs::create_dir_all(&teams).unwrap();
    std::fs::write(teams.join("review.toml"), "name = \"review\"\n").unwrap();
    std::fs::write(teams.join("notes.txt"), "").unwrap();
    let m = modes(tmp.path());
    let labels: Vec<String> = m.iter().map(|c| c.label(tmp.path())).collect();
    assert_eq!(
        labels,
        ["crazy", "ccg", "solo", "team .crewmux/teams/review.toml"]
    );
}

#[test]
fn rows_come_newest_first_and_a_corrupt_state_is_shown() {
    let tmp = tempfile::tempdir().unwrap();
    let root = crate::store::runs_root(tmp.path());
    for (id, hour) in [("20261130-0600-aaaa", 6), ("20261130-0800-bbbb", 8)] {
        let mut s = fixtures::done_run();
        s.run_id = id.into();
        s.created_at = Utc.with_ymd_and_hms(2026, 11, 30, hour, 0, 0).unwrap();
        let store = crate::store::RunStore::at(root.join(id));
        std::fs::create_dir_all(store.dir()).unwrap();
        store.save_state(&s).unwrap();
    }
    std::fs::create_dir_all(root.join("20261130-0900-cccc")).unwrap();
    std::fs::write(root.join("20261130-0900-cccc/state.json"), "{").unwrap();
    let r = load_rows(&[tmp.path().to_path_buf()]);
    let ids: Vec<&str> = r.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "20261130-0800-bbbb",
            "20261130-0600-aaaa",
            "20261130-0900-cccc"
        ]
    );
    assert!(r[2].error.is_some());
}

#[test]
fn ages_are_short() {
    let now = Utc.with_ymd_and_hms(2026, 11, 30, 7, 0, 0).unwrap();
    let ago = |s| Some(now - chrono::Duration::seconds(s));
    assert_eq!(view::age(ago(5), now), "5s");
    assert_eq!(view::age(ago(300), now), "5m");
    assert_eq!(view::age(ago(7200), now), "2h");
    assert_eq!(view::age(ago(3 * 86400), now), "3d");
    assert_eq!(view::age(None, now), "—");
}

#[test]
fn home_screens() {
    let mut h = home();
    insta::assert_snapshot!("home_80x24", screen(&h, 80, 24));
    insta::assert_snapshot!("home_200x60", screen(&h, 200, 60));
    h.all = true;
    insta::assert_snapshot!("home_all_120x30", screen(&h, 120, 30));
    h.all = false;
    h.key(key(KeyCode::Char('n')));
    h.paste("Fix the login bug\nafter the session expires");
    insta::assert_snapshot!("home_new_run_80x24", screen(&h, 80, 24));
    let mut empty = Home::new(PathBuf::from("/home/ada/shop"), false, vec![]);
    empty.notice = Some("no run yet: n starts one".into());
    insta::assert_snapshot!("home_empty_80x24", screen(&empty, 80, 24));
}

#[test]
fn a_refusal_in_the_form_names_the_forms_fix_not_flags() {
    let cli = "no agent CLI can run worker `solo` (codex not installed); or pass --allow-sim-fallback (or --provider sim) to use the simulated agent";
    let said = super::refusal_for_the_form(cli);
    assert!(!said.contains("--"), "{said}");
    assert!(
        said.ends_with("or choose Provider sim in this form to use the simulated agent"),
        "{said}"
    );
    let missing = "worker `a`: provider `codex` is chosen but `codex` is not on PATH: install it with `npm i -g @openai/codex`, or pass --allow-sim-fallback";
    let said = super::refusal_for_the_form(missing);
    assert!(
        said.ends_with("or choose Provider sim in this form") && !said.contains("--allow"),
        "{said}"
    );
}

#[test]
fn an_unreadable_run_is_listed_by_the_date_its_id_gives() {
    let tmp = tempfile::tempdir().unwrap();
    let root = crate::store::runs_root(tmp.path());
    let mut older = fixtures::done_run();
    older.run_id = "20261130-060000-aaaa".into();
    older.created_at = Utc.with_ymd_and_hms(2026, 11, 30, 6, 0, 0).unwrap();
    let mut newer = older.clone();
    newer.run_id = "20261130-080000-cccc".into();
    newer.created_at = Utc.with_ymd_and_hms(2026, 11, 30, 8, 0, 0).unwrap();
    for s in [&older, &newer] {
        let dir = root.join(&s.run_id);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("state.json"), serde_json::to_vec(s).unwrap()).unwrap();
    }
    let broken = root.join("20261130-070000-bbbb");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(broken.join("state.json"), "{ not json").unwrap();
    let rows = load_rows(&[tmp.path().to_path_buf()]);
    let ids: Vec<&str> = rows.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "20261130-080000-cccc",
            "20261130-070000-bbbb",
            "20261130-060000-aaaa"
        ],
        "{rows:?}"
    );
    assert!(rows[1].error.is_some());
}

/// `x` asks with the very command it runs (`crewmux clean --run ID --purge`), so the home
/// screen and the command line are one rule, said the same way.
#[test]
fn the_clean_confirmation_names_the_command_it_runs() {
    let mut h = home();
    h.key(key(KeyCode::Down));
    h.key(key(KeyCode::Char('x')));
    assert!(h.confirm_clean);
    let shown = format!("{:?}", screen(&h, 80, 24));
    assert!(
        shown.contains("crewmux clean --run 20261130-0600-7f3a --purge"),
        "{shown}"
    );
    insta::assert_snapshot!("home_clean_confirm_80x24", screen(&h, 80, 24));
}

#[test]
fn the_form_offers_the_projects_and_examples_team_files_and_takes_a_typed_path() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path();
    std::fs::create_dir_all(p.join("examples")).unwrap();
    std::fs::create_dir_all(p.join(".crewmux/teams")).unwrap();
    std::fs::write(p.join(".crewmux/teams/review.toml"), "").unwrap();
    std::fs::write(p.join("examples/pipeline.toml"), "[[worker]]\n").unwrap();
    // At the top, only a TOML file with workers is a team.
    std::fs::write(
        p.join("team.toml"),
        "name = \"t\"\n\n[[worker]]\nid = \"a\"\n",
    )
    .unwrap();
    std::fs::write(p.join("pyproject.toml"), "[project]\nname = \"x\"\n").unwrap();
    let mut h = Home::new(p.to_path_buf(), false, vec![]);
    let labels: Vec<String> = h.modes.iter().map(|m| m.label(p)).collect();
    assert_eq!(
        labels,
        [
            "crazy",
            "ccg",
            "solo",
            "team .crewmux/teams/review.toml",
            "team examples/pipeline.toml",
            "team team.toml"
        ]
    );
    h.key(key(KeyCode::Char('n')));
    h.paste("Fix it");
    h.key(key(KeyCode::Tab));
    h.key(key(KeyCode::Right));
    h.key(key(KeyCode::Right));
    let Some(HomeExit::New(run)) = h.key(key(KeyCode::Enter)) else {
        panic!("Enter on the team field starts")
    };
    assert_eq!(
        run.mode,
        ModeChoice::TeamFile(p.join("examples/pipeline.toml"))
    );
    // A typed path wins over the choice, relative to the project; base and uncommitted too.
    h.started();
    h.key(key(KeyCode::Char('n')));
    h.paste("Fix it");
    h.key(key(KeyCode::Tab));
    h.key(key(KeyCode::Tab));
    h.paste("teams/mine.toml\n");
    h.key(key(KeyCode::Tab));
    h.key(key(KeyCode::Tab));
    for c in "main~1".chars() {
        h.key(key(KeyCode::Char(c)));
    }
    h.key(key(KeyCode::Backspace));
    h.key(key(KeyCode::Char('2')));
    h.key(key(KeyCode::Tab));
    h.key(key(KeyCode::Char(' ')));
    let Some(HomeExit::New(run)) = h.key(key(KeyCode::Enter)) else {
        panic!("Enter on the uncommitted field starts")
    };
    assert_eq!(run.mode, ModeChoice::TeamFile(p.join("teams/mine.toml")));
    assert_eq!(run.base.as_deref(), Some("main~2"));
    assert!(run.include_uncommitted);
}

#[test]
fn r_runs_the_selected_run_again_with_its_team_provider_base_and_hosts() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path();
    std::fs::create_dir_all(p.join("examples")).unwrap();
    std::fs::write(p.join("examples/pipeline.toml"), "").unwrap();
    let save = |id: &str, source: &str, provider: Option<&str>, hosts: &[&str], base: &str| {
        let store = crate::store::RunStore::create(p, id).unwrap();
        let mut s = fixtures::done_run();
        s.run_id = id.into();
        s.project_dir = p.to_path_buf();
        s.problem = format!("problem of {id}");
        s.workspace = Some(crate::domain::RunWorkspace {
            repo: p.to_path_buf(),
            prefix: "".into(),
            base: "abc".into(),
            base_ref: base.into(),
            user_branch: None,
            uncommitted: true,
            root: p.join(".crewmux/worktrees").join(id),
            copy: vec![],
            setup: None,
            workers: Default::default(),
            pending: vec![],
            integration: None,
            integrated_round: None,
        });
        store.save_state(&s).unwrap();
        store
            .write_manifest(&serde_json::json!({
                "team": {"source": source},
                "provider": provider,
                "hosts": hosts,
            }))
            .unwrap();
    };
    save(
        "20261201-100000-aaaa",
        "mode:ccg",
        Some("codex"),
        &[],
        "HEAD",
    );
    let file = p.join("examples/pipeline.toml");
    save(
        "20261201-110000-bbbb",
        &file.display().to_string(),
        None,
        &["box", "local"],
        "main",
    );
    let other = p.join("elsewhere.toml");
    save(
        "20261201-120000-cccc",
        &other.display().to_string(),
        None,
        &["gone"],
        "HEAD",
    );
    let mut h = Home::new(p.to_path_buf(), false, load_rows(&[p.to_path_buf()]));
    h.providers = vec!["claude".into(), "codex".into()];
    h.hosts = vec![vec![], vec!["box".into(), "local".into()]];
    // Newest first: cccc, bbbb, aaaa.
    h.selected = 2;
    h.key(key(KeyCode::Char('r')));
    let Some(HomeExit::New(run)) = h.key(KeyEvent::new(KeyCode::Char('s'), KeyModifiers::CONTROL))
    else {
        panic!("the filled form starts")
    };
    assert_eq!(run.problem, "problem of 20261201-100000-aaaa");
    assert_eq!(run.mode, ModeChoice::Builtin("ccg"));
    assert_eq!(run.provider.as_deref(), Some("codex"));
    assert_eq!(run.base, None);
    assert!(run.include_uncommitted);
    h.started();
    h.selected = 1;
    h.key(key(KeyCode::Char('r')));
    let text = format!("{:?}", screen(&h, 100, 26));
    assert!(text.contains("Run again: 20261201-110000-bbbb"), "{text}");
    let Some(HomeExit::New(run)) = h.key(KeyEvent::new(KeyCode::Char('s'), KeyModifiers::CONTROL))
    else {
        panic!("the filled form starts")
    };
    assert_eq!(run.mode, ModeChoice::TeamFile(file));
    assert_eq!(run.hosts, ["box", "local"]);
    assert_eq!(run.base.as_deref(), Some("main"));
    h.started();
    // A team file that is not offered goes in the path field; hosts not offered say so.
    h.selected = 0;
    h.key(key(KeyCode::Char('r')));
    let form = h.form.clone().unwrap();
    assert_eq!(form.team_path, other.display().to_string());
    assert!(
        h.notice.as_deref().unwrap().contains("spread over gone"),
        "{:?}",
        h.notice
    );
    let Some(HomeExit::New(run)) = h.key(KeyEvent::new(KeyCode::Char('s'), KeyModifiers::CONTROL))
    else {
        panic!("the filled form starts")
    };
    assert_eq!(run.mode, ModeChoice::TeamFile(other));
    assert!(run.hosts.is_empty());
}

#[test]
fn r_on_a_run_without_a_manifest_says_why() {
    let tmp = tempfile::tempdir().unwrap();
    let store = crate::store::RunStore::create(tmp.path(), "20261201-100000-aaaa").unwrap();
    let mut s = fixtures::done_run();
    s.run_id = "20261201-100000-aaaa".into();
    s.project_dir = tmp.path().to_path_buf();
    store.save_state(&s).unwrap();
    let mut h = Home::new(
        tmp.path().to_path_buf(),
        false,
        load_rows(&[tmp.path().to_path_buf()]),
    );
    h.key(key(KeyCode::Char('r')));
    assert!(h.form.is_none());
    let notice = h.notice.clone().unwrap();
    assert!(
        notice.starts_with("20261201-100000-aaaa cannot be run again: ")
            && notice.contains("manifest.json"),
        "{notice}"
    );
}
