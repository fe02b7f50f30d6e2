//! The dashboard's view layer: UI state, actions and keymaps, the pure update, and the
//! panels with the layout that draws them from a borrowed [`View`]. The app loop (terminal,
//! tmux, timers) lives elsewhere and calls [`map_key`], [`update`] and [`draw`].
//!
//! One turn of the app loop, in order:
//! 1. a key arrives: `if let Some(a) = map_key(&ui, key) { effects = update(&mut ui, &run, a) }`
//!    (a bracketed paste goes to [`paste`]);
//! 2. each [`UiEffect`] is carried out: `Select` → show that worker's output, `Attach` →
//!    suspend and attach to its pane, `Answer`/`Cancel` → the run driver, `Quit` → leave;
//! 3. a new run state arrives: store it, call [`reconcile`]; a new capture of the selected
//!    pane: `lines = capture_to_lines(screen.as_bytes()); ui.output_len = lines.len()`;
//! 4. something changed: `terminal.draw(|f| draw(f, &view))`.
//!
//! ```
//! use crewmux::tui::{draw, UiState, View};
//! fn frame(run: &crewmux::domain::RunState, ui: &UiState) -> ratatui::buffer::Buffer {
//!     let backend = ratatui::backend::TestBackend::new(120, 40);
//!     let mut terminal = ratatui::Terminal::new(backend).unwrap();
//!     let view = View {
//!         run,
//!         output: &[],
//!         now: chrono::Utc::now(), // read by the loop, never by draw
//!         ui,
//!         backend: run.backend.as_str(),
//!         tmux_socket: &run.tmux_socket,
//!         attach_hint: true,
//!         doc: None,
//!     };
//!     terminal.draw(|f| draw(f, &view)).unwrap();
//!     terminal.backend().buffer().clone()
//! }
//! ```

pub mod action;
pub mod app;
pub mod approval;
pub mod attention;
pub mod diff;
pub mod editor;
pub mod home;
pub mod keys;
pub mod md_table;
pub mod merge;
pub mod model;
pub mod mouse;
pub mod panels;
pub mod shell;
pub mod state;
pub mod steer;
pub mod tabs;
pub mod terminal;
pub mod theme;
pub mod update;
pub mod usage;

#[cfg(test)]
mod dead_pane_tests;
#[cfg(test)]
pub(crate) mod fixtures;
#[cfg(test)]
mod flow_snapshot_tests;
#[cfg(test)]
mod mcp_snapshot_tests;
#[cfg(test)]
mod sandbox_snapshot_tests;
#[cfg(test)]
mod snapshot_tests;
#[cfg(test)]
mod steer_tests;
#[cfg(test)]
mod tabs_snapshot_tests;

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::Frame;

pub use action::{map_key, Action};
pub use panels::output::capture_to_lines;
pub use state::{AnswerTarget, Confirm, Focus, InputLine, PendingQuestion, UiState, View};
pub use update::{paste, reconcile, update, UiEffect};

use panels::{clarification, council, footer, header, log, overlay, roster, steer_form, tabbed};

/// The smallest screen the panels are drawn on (columns, rows); below it one centred line
/// asks for a bigger window instead of broken panels.
pub const MIN_SIZE: (u16, u16) = (60, 15);

/// Below [`MIN_SIZE`]: draw the one centred line and return true.
pub fn too_small(frame: &mut Frame, area: Rect) -> bool {
    if area.width >= MIN_SIZE.0 && area.height >= MIN_SIZE.1 {
        return false;
    }
    let text = format!(
        "{}×{} is too small: make the window at least {}×{}",
        area.width, area.height, MIN_SIZE.0, MIN_SIZE.1
    );
    let line = ratatui::text::Line::from(text).centered();
    let y = area.y + area.height / 2;
    frame.render_widget(
        line,
        Rect {
            y,
            height: 1.min(area.height),
            ..area
        },
    );
    true
}

/// From this width the roster and council sit left of the output; below it they stack.
pub const WIDE_MIN_WIDTH: u16 = 140;

/// Where each panel goes; `None` (or a zero height) when the screen has no room for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Areas {
    pub header: Rect,
    pub roster: Rect,
    pub output: Rect,
    pub council: Option<Rect>,
    pub clarification: Option<Rect>,
    pub log: Option<Rect>,
    pub footer: Rect,
}

/// Lay the panels out on `area`. Wide screens: roster over council on the left, output on
/// the right, clarification and log below. Narrow screens stack roster, clarification,
/// output, then council and log side by side when there are rows to spare; at 80×24 the
/// council and log give way first (the header still shows the council status).
pub fn layout(area: Rect, view: &View) -> Areas {
    let [header_area, body, footer_area] = Layout::vertical([
        Constraint::Length(header::HEIGHT),
        Constraint::Fill(1),
        Constraint::Length(footer::HEIGHT),
    ])
    .areas(area);
    let clar_h = clarification::wanted_height(view, body.width);
    let roster_h = roster::wanted_height(view.run);
    let some = |r: Rect| (r.height > 0).then_some(r);

    if area.width >= WIDE_MIN_WIDTH {
        let clar_h = clar_h.min(body.height / 3);
        let log_h = if body.height >= 30 {
            (body.height / 5).clamp(6, 12)
        } else if body.height >= 20 {
            5
        } else {
            0
        };
        let [main, clar, log_area] = Layout::vertical([
            Constraint::Fill(1),
            Constraint::Length(clar_h),
            Constraint::Length(log_h),
        ])
        .areas(body);
        let roster_w = (area.width * 2 / 5).clamp(70, 96);
        let [left, output_area] =
            Layout::horizontal([Constraint::Length(roster_w), Constraint::Fill(1)]).areas(main);
        let roster_h = roster_h.min(left.height * 3 / 5).max(4.min(left.height));
        let [roster_area, council_area] =
            Layout::vertical([Constraint::Length(roster_h), Constraint::Fill(1)]).areas(left);
        Areas {
            header: header_area,
            roster: roster_area,
            output: output_area,
            council: (council_area.height >= 3).then_some(council_area),
            clarification: some(clar),
            log: some(log_area),
            footer: footer_area,
        }
    } else {
        let h = body.height;
        let roster_h = roster_h.min((h / 2).max(4));
        let clar_h = clar_h.min(h / 3);
        let remaining = h.saturating_sub(roster_h + clar_h);
        let bottom_h = if remaining >= 14 {
            (remaining * 2 / 5).clamp(6, 12)
        } else {
            0
        };
        let [roster_area, clar, output_area, bottom] = Layout::vertical([
            Constraint::Length(roster_h),
            Constraint::Length(clar_h),
            Constraint::Fill(1),
            Constraint::Length(bottom_h),
        ])
        .areas(body);
        let [council_area, log_area] =
            Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)])
                .areas(bottom);
        Areas {
            header: header_area,
            roster: roster_area,
            output: output_area,
            council: some(council_area),
            clarification: some(clar),
            log: some(log_area),
            footer: footer_area,
        }
    }
}

/// Draw one frame of the dashboard from `view`. Pure: reads only `view` (and tui-logger's
/// in-memory event buffer for the log panel); never the clock, the filesystem or tmux.
pub fn draw(frame: &mut Frame, view: &View) {
    if too_small(frame, frame.area()) {
        return;
    }
    let areas = draw_panels(frame, view);
    // The worker's own output keeps the colours it printed.
    let keep = (view.ui.tab == tabs::Tab::Output && view.ui.file.is_none())
        .then(|| ratatui::widgets::Block::bordered().inner(areas.output));
    let area = frame.area();
    view.ui.theme.apply(frame.buffer_mut(), area, keep);
}

fn draw_panels(frame: &mut Frame, view: &View) -> Areas {
    let areas = layout(frame.area(), view);
    header::render(frame, areas.header, view);
    roster::render(frame, areas.roster, view);
    tabbed::render(frame, areas.output, view);
    if let Some(a) = areas.council {
        council::render(frame, a, view);
    }
    if let Some(a) = areas.clarification {
        clarification::render(frame, a, view);
    }
    if let Some(a) = areas.log {
        log::render(frame, a, view);
    }
    footer::render(frame, areas.footer, view);
    if view.ui.help {
        overlay::render_help(frame, frame.area(), view);
    }
    if view.ui.confirm.is_some() {
        overlay::render_confirm(frame, frame.area(), view);
    }
    if view.ui.form.is_some() {
        steer_form::render(frame, frame.area(), view);
    }
    areas
}
