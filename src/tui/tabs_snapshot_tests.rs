//! The main area's tabs: keys, stickiness, the council's jumps, and snapshots of each
//! worker tab and run view at 80×24 and 200×60.

use std::path::{Path, PathBuf};

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

use super::fixtures;
use super::model::{Model, Msg};
use super::state::View;
use super::tabs::{markdown_lines, Doc, Tab};
use super::Focus;

const RESULT_MD: &str = "# backend result\n\n## Summary\n\nA **token bucket** per API key in \
`src/limit.rs`; 429 with `Retry-After`.\n\n## Evidence\n\n- `cargo test limit` passes\n- \
see [the spec](docs/limits.md)\n\n```rust\nlet ok = bucket.take(1);\n```\n";

const DIFF: &str = "diff --git a/src/limit.rs b/src/limit.rs\nindex 1a2b3c4..5d6e7f8 100644\n--- a/src/limit.rs\n+++ b/src/limit.rs\n@@ -10,3 +10,4 @@ impl Bucket {\n     fn take(&mut self) -> bool {\n-        self.tokens > 0\n+        self.refill();\n+        self.tokens > 0\n     }\n";

fn key(c: KeyCode) -> Msg {
    Msg::Term(Event::Key(KeyEvent::new(c, KeyModifiers::NONE)))
}

fn model() -> Model {
    let mut m = Model::new(fixtures::done_run(), PathBuf::from("/p/.crewmux/runs/r"));
    m.is_file = |p| p == Path::new("/p/src/limit.rs");
    m.run.project_dir = PathBuf::from("/p");
    m.run.council.verdicts[0]
        .findings
        .push("src/limit.rs: the bucket never refills".into());
    // Recompute what findings name with the project set.
    m.handle(Msg::Driver(crate::lead::Update::Snapshot {
        state: std::sync::Arc::new(m.run.clone()),
        screen: None,
    }));
    m
}

fn with_doc(m: &mut Model, text: &str) {
    let lines = markdown_lines(text);
    m.ui.doc_len = lines.len();
    m.doc = Some(Doc {
        path: m.wanted_doc().unwrap_or_else(|| PathBuf::from("/p/file")),
        stamp: None,
        lines,
        diff_of: None,
        markdown: Some(text.to_string()),
    });
}

fn screen(m: &Model, w: u16, h: u16) -> TestBackend {
    let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
    let view = View {
        run: &m.run,
        output: &m.output,
        now: fixtures::now(),
        ui: &m.ui,
        backend: "tmux",
        tmux_socket: "crewmux",
        attach_hint: true,
        doc: m.doc.as_ref(),
    };
    terminal.draw(|f| super::draw(f, &view)).unwrap();
    terminal.backend().clone()
}

#[test]
fn number_keys_and_brackets_choose_tabs_and_the_choice_sticks_across_workers() {
    let mut m = model();
    m.handle(key(KeyCode::Char('2')));
    assert_eq!((m.ui.tab, m.ui.focus), (Tab::Result, Focus::Output));
    m.handle(key(KeyCode::Char(']')));
    assert_eq!(m.ui.tab, Tab::Diff);
    m.handle(key(KeyCode::Char('[')));
    m.handle(key(KeyCode::Char('[')));
    assert_eq!(m.ui.tab, Tab::Output);
    m.handle(key(KeyCode::Char('[')));
    assert_eq!(m.ui.tab, Tab::Council, "the tabs wrap around");
    m.handle(key(KeyCode::Char('2')));
    let before = m.wanted_doc();
    // Back to the roster, next worker: still the Result tab, of the new worker.
    m.handle(key(KeyCode::Esc));
    m.handle(key(KeyCode::Down));
    assert_eq!(m.ui.tab, Tab::Result);
    assert_ne!(m.wanted_doc(), before);
    assert!(m.wanted_doc().unwrap().ends_with("result.md"));
}

#[test]
fn a_document_scrolls_within_its_lines() {
    let mut m = model();
    m.handle(key(KeyCode::Char('2')));
    with_doc(&mut m, RESULT_MD);
    m.handle(key(KeyCode::PageDown));
    assert!(m.ui.doc_scroll > 0 && m.ui.doc_scroll < m.ui.doc_len);
    m.handle(key(KeyCode::Char('G')));
    assert_eq!(m.ui.doc_scroll, m.ui.doc_len - 1);
    m.handle(key(KeyCode::Char('g')));
    assert_eq!(m.ui.doc_scroll, 0);
}

#[test]
fn enter_on_a_finding_goes_to_the_worker_or_the_file_it_names() {
    let mut m = model();
    m.handle(key(KeyCode::Char('6')));
    let by_worker = m.ui.findings.iter().position(|f| f.worker.is_some());
    let by_file = m.ui.findings.iter().position(|f| f.file.is_some()).unwrap();
    if let Some(i) = by_worker {
        m.ui.finding = i;
        m.handle(key(KeyCode::Enter));
        let named = m.ui.findings[i].worker.clone().unwrap();
        assert_eq!(m.ui.tab, Tab::Result);
        assert_eq!(m.ui.selected_worker(&m.run).unwrap().id, named);
        m.handle(key(KeyCode::Char('6')));
    }
    // ↓ walks the findings; Enter on the one naming a file opens it, Esc comes back.
    for _ in 0..by_file {
        m.handle(key(KeyCode::Down));
    }
    assert_eq!(m.ui.finding, by_file);
    m.handle(key(KeyCode::Enter));
    assert_eq!(m.ui.file.as_deref(), Some(Path::new("/p/src/limit.rs")));
    assert_eq!(m.wanted_doc(), Some(PathBuf::from("/p/src/limit.rs")));
    m.handle(key(KeyCode::Esc));
    assert_eq!((m.ui.file.as_ref(), m.ui.tab), (None, Tab::Council));
}

#[test]
fn the_model_reads_the_wanted_document_once_and_again_when_it_changes() {
    let tmp = tempfile::tempdir().unwrap();
    let mut m = Model::new(fixtures::done_run(), tmp.path().to_path_buf());
    m.handle(key(KeyCode::Char('5')));
    assert!(m.refresh_doc());
    assert!(m.doc.as_ref().unwrap().lines[0]
        .to_string()
        .contains("does not exist yet"));
    std::fs::write(tmp.path().join("report.md"), "# Report\n\nAll **good**.\n").unwrap();
    assert!(m.refresh_doc(), "the report appeared");
    assert!(!m.refresh_doc(), "unchanged: not read again");
    let text: String = m
        .doc
        .as_ref()
        .unwrap()
        .lines
        .iter()
        .map(|l| l.to_string())
        .collect();
    assert!(text.contains("All good."), "{text}");
    m.handle(key(KeyCode::Char('1')));
    assert!(m.refresh_doc(), "Output shows no document");
    assert!(m.doc.is_none());
}

fn tab_screens(tab: char, name: &str) {
    for (w, h) in [(80, 24), (200, 60)] {
        let mut m = model();
        m.handle(key(KeyCode::Char(tab)));
        if m.ui.tab == Tab::Diff {
            let lines = super::diff::colour(DIFF);
            m.ui.doc_len = lines.len();
            m.doc = Some(Doc {
                path: PathBuf::from("/p/.crewmux/worktrees/r/architect"),
                stamp: None,
                lines,
                diff_of: None,
                markdown: None,
            });
        } else if m.ui.tab.is_document() {
            let text = match m.ui.tab {
                Tab::Prompt => "You are a backend engineer.\n\nTask: add per-client rate limiting.\n",
                Tab::Report => "# Report of run 20261130-0600-7f3a\n\n## Workers\n\n| worker | status |\n|---|---|\n| backend | completed |\n",
                _ => RESULT_MD,
            };
            with_doc(&mut m, text);
        } else if m.ui.tab == Tab::Output {
            m.output = fixtures::backend_output();
            m.ui.output_len = m.output.len();
        }
        insta::assert_snapshot!(format!("tab_{name}_{w}x{h}"), screen(&m, w, h));
    }
}

#[test]
fn output_tab_screens() {
    tab_screens('1', "output");
}

#[test]
fn result_tab_screens() {
    tab_screens('2', "result");
}

#[test]
fn prompt_tab_screens() {
    tab_screens('4', "prompt");
}

#[test]
fn report_view_screens() {
    tab_screens('5', "report");
}

#[test]
fn council_view_screens() {
    tab_screens('6', "council");
}

#[test]
fn diff_tab_screens() {
    tab_screens('3', "diff");
}

#[test]
fn a_diff_scrolled_to_its_end_shows_its_last_page_not_only_the_last_new_file() {
    let mut m = model();
    m.handle(key(KeyCode::Char('3')));
    let mut text = DIFF.to_string();
    text.push_str("new file, not yet committed: notes.txt\n");
    let lines = super::diff::colour(&text);
    m.ui.doc_len = lines.len();
    m.doc = Some(Doc {
        path: PathBuf::from("/p/wt"),
        stamp: None,
        lines,
        diff_of: Some("backend#1#running".into()),
        markdown: None,
    });
    // End (as on the Output tab, where it follows the newest line).
    m.handle(key(KeyCode::End));
    let shown = format!("{:?}", screen(&m, 120, 40).buffer());
    assert!(shown.contains("notes.txt"), "{shown}");
    assert!(
        shown.contains("+        self.refill();"),
        "the changes above the last file stay on the page:\n{shown}"
    );
}

#[test]
fn a_too_small_screen_asks_for_a_bigger_window() {
    let m = model();
    insta::assert_snapshot!("too_small_50x12", screen(&m, 50, 12));
    let text = format!("{:?}", screen(&m, 59, 30).buffer());
    assert!(
        text.contains("too small"),
        "59 columns are below the minimum"
    );
    let text = format!("{:?}", screen(&m, 60, 15).buffer());
    assert!(!text.contains("too small"), "60×15 draws the panels");
}

fn mouse(kind: crossterm::event::MouseEventKind, column: u16, row: u16) -> Msg {
    Msg::Term(Event::Mouse(crossterm::event::MouseEvent {
        kind,
        column,
        row,
        modifiers: KeyModifiers::NONE,
    }))
}

#[test]
fn a_click_selects_a_worker_a_tab_or_a_panel_and_the_wheel_scrolls() {
    use crossterm::event::{MouseButton, MouseEventKind as K};
    let mut m = model();
    m.size = ratatui::layout::Rect::new(0, 0, 120, 40);
    let a = m.areas();
    // The roster: border, header, then the workers; the third row is the third worker.
    let step = m.handle(mouse(
        K::Down(MouseButton::Left),
        a.roster.x + 5,
        a.roster.y + 4,
    ));
    let third = m.run.workers[2].id.clone();
    assert_eq!(m.ui.selected, 2);
    assert_eq!(
        step.effects,
        vec![super::update::UiEffect::Select { worker_id: third }]
    );
    // The tab strip: " 1 Output " is 10 cells, then " 2 Result ".
    m.handle(mouse(
        K::Down(MouseButton::Left),
        a.output.x + 12,
        a.output.y,
    ));
    assert_eq!((m.ui.tab, m.ui.focus), (Tab::Result, Focus::Output));
    // The council panel takes the focus on a click.
    let council = a.council.expect("120×40 has a council panel");
    m.handle(mouse(
        K::Down(MouseButton::Left),
        council.x + 2,
        council.y + 1,
    ));
    assert_eq!(m.ui.focus, Focus::Council);
    // The wheel over the Result document scrolls it three lines a notch.
    with_doc(&mut m, RESULT_MD);
    m.handle(mouse(K::ScrollDown, a.output.x + 5, a.output.y + 5));
    assert_eq!((m.ui.focus, m.ui.doc_scroll), (Focus::Output, 3));
    m.handle(mouse(K::ScrollUp, a.output.x + 5, a.output.y + 5));
    assert_eq!(m.ui.doc_scroll, 0);
    // The wheel over the roster moves the selection one worker a notch.
    m.handle(mouse(K::ScrollUp, a.roster.x + 5, a.roster.y + 3));
    assert_eq!(m.ui.selected, 1);
}

#[test]
fn a_long_output_line_wraps_so_its_end_is_visible_and_w_cuts_it() {
    let mut m = model();
    let long = format!("{} ERROR: disk full", "x".repeat(300));
    m.output = vec![
        ratatui::text::Line::from("first"),
        ratatui::text::Line::from(long),
    ];
    m.ui.output_len = 2;
    let shown = format!("{:?}", screen(&m, 120, 40).buffer());
    assert!(shown.contains("ERROR: disk full"), "{shown}");
    m.handle(key(KeyCode::Char('w')));
    assert!(m.ui.nowrap);
    let shown = format!("{:?}", screen(&m, 120, 40).buffer());
    assert!(!shown.contains("ERROR: disk full"));
    m.handle(key(KeyCode::Char('w')));
    assert!(!m.ui.nowrap);
}

/// A report's table wider than the panel at 88 columns is one record per row, never a row
/// the wrap breaks mid-cell; the table that fits at 200 columns stays a table.
#[test]
fn a_wide_report_table_stays_readable_at_88_columns() {
    const REPORT: &str = "# Report of run 20261130-0600-7f3a\n\n## Workers\n\n\
| worker | status | attempts | summary |\n|---|---|---|---|\n\
| backend | completed | 1 | token bucket per API key in src/limit.rs, 429 with Retry-After |\n\
| frontend | completed | 2 | the settings page shows each client's limit and what is left |\n\n\
Merge with `crewmux merge 20261130-0600-7f3a`.\n";
    for (w, h) in [(88, 30), (200, 40)] {
        let mut m = model();
        m.handle(key(KeyCode::Char('5')));
        with_doc(&mut m, REPORT);
        let shown = format!("{:?}", screen(&m, w, h));
        if w == 88 {
            assert!(shown.contains("▸ worker: backend"), "{shown}");
            assert!(!shown.contains("┌"), "no table to break: {shown}");
        } else {
            assert!(shown.contains("┌"), "a table that fits stays one: {shown}");
        }
        insta::assert_snapshot!(format!("tab_report_wide_table_{w}x{h}"), screen(&m, w, h));
    }
}
