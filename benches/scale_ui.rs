//! The latencies a person feels (`paste`, `render`): an answer pasted into a live pane, and
//! a frame of the dashboard drawn with a large roster. Apart from the watcher's scenarios:
//! no run is driven, only a tmux client or the dashboard's drawing is timed.

use std::process::{Command, Stdio};
use std::time::Instant;

use crewmux::tmux::TmuxClient;

use super::scale_run::{plan, team_file};
use super::{Config, Figure};

/// Keypress → answer pasted: `load-buffer` + `paste-buffer` into a live pane (the Enter that
/// follows 50 ms later is not counted: the answer is in the pane by then).
pub fn paste_scenario(figs: &mut Vec<Figure>) {
    let socket = format!("crewmux-bench-{}-paste", std::process::id());
    let c = TmuxClient::new(&socket);
    let _ = Command::new("tmux")
        .args([
            "-L",
            &socket,
            "new-session",
            "-d",
            "-s",
            "p",
            "cat > /dev/null",
        ])
        .stdin(Stdio::null())
        .status();
    let pane = String::from_utf8_lossy(
        &Command::new("tmux")
            .args([
                "-L",
                &socket,
                "display-message",
                "-p",
                "-t",
                "p",
                "#{pane_id}",
            ])
            .output()
            .unwrap()
            .stdout,
    )
    .trim()
    .to_string();
    let mut t = vec![];
    for i in 0..20 {
        let s = Instant::now();
        c.paste_text(&pane, &format!("answer {i}: PostgreSQL, with the count"))
            .unwrap();
        t.push(s.elapsed().as_secs_f64() * 1000.0);
    }
    let _ = c.kill_server();
    t.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let med = t[t.len() / 2];
    figs.push(Figure::new(
        "keypress → answer pasted into a pane (median of 20)",
        "≤ 10 ms",
        med,
        " ms",
        med <= 10.0,
    ));
}

/// Frame render of the dashboard at 200×60 with `workers` rows and 200 output lines.
pub fn render_scenario(cfg: &Config, figs: &mut Vec<Figure>) {
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;
    let tmp = tempfile::tempdir().unwrap();
    let team = team_file(tmp.path(), cfg.workers.max(64), &|_| "true".into());
    let (_store, state) = plan(tmp.path(), "crewmux-bench-render", &team, 64);
    let output: Vec<ratatui::text::Line<'static>> = (0..200)
        .map(|i| {
            ratatui::text::Line::from(format!(
                "[{i:>3}] compiling crate {i} with \x1b[32mgreen\x1b[0m text"
            ))
        })
        .collect();
    let ui = crewmux::tui::state::UiState::default();
    let mut term = Terminal::new(TestBackend::new(200, 60)).unwrap();
    let mut t = vec![];
    for _ in 0..300 {
        let view = crewmux::tui::state::View {
            run: &state,
            output: &output,
            now: chrono::Utc::now(),
            ui: &ui,
            backend: "tmux",
            tmux_socket: "crewmux",
            attach_hint: true,
            doc: None,
        };
        let s = Instant::now();
        term.draw(|f| crewmux::tui::draw(f, &view)).unwrap();
        t.push(s.elapsed().as_secs_f64() * 1000.0);
    }
    t.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let p99 = t[(t.len() * 99) / 100];
    figs.push(Figure::new(
        &format!(
            "frame render p99, {}-row roster + 200 output lines, 200×60",
            cfg.workers.max(64)
        ),
        "≤ 3 ms",
        p99,
        " ms",
        p99 <= 3.0,
    ));
}
