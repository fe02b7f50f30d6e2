//! The footer: a notice (or how to come back after quitting) and the key hints of the
//! active keymap, built from the `Action` tables.

use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;
use unicode_width::UnicodeWidthStr;

use crate::domain::WorkerStatus;
use crate::tui::action::{keymaps, Action, Binding};
use crate::tui::state::{Focus, View};

/// Rows the footer takes.
pub const HEIGHT: u16 = 2;

/// Draw the footer: the notice or the way back after `q`, then the key hints (one row:
/// hints only).
pub fn render(frame: &mut Frame, area: Rect, view: &View) {
    if area.height == 0 {
        return;
    }
    let first = match &view.ui.notice {
        Some(notice) => Line::from(vec![
            Span::styled(" ● ", Style::default().fg(Color::Yellow)),
            Span::styled(
                // Cut at a word, not mid-word where the row ends.
                super::truncate_words(notice, (area.width as usize).saturating_sub(3)),
                Style::default().fg(Color::Yellow),
            ),
        ]),
        None if view.run.status.is_final() => Line::from(Span::styled(
            ended_hint(view.run, area.width as usize),
            Style::default().fg(Color::DarkGray),
        )),
        // While keys are text, `q` types a q: the input's own keys instead.
        None if typing(view) => typing_hint(view, area.width as usize),
        None => quit_hint(&view.run.run_id, area.width as usize),
    };
    let hints = hint_line(view, area.width as usize);
    let lines = if area.height >= 2 {
        vec![first, hints]
    } else {
        vec![hints]
    };
    frame.render_widget(Paragraph::new(lines), area);
}

/// `key word` pairs of the active keymaps' hinted bindings, same words merged (`↑/↓ move`),
/// as many as fit in `width` cells (whole hints only). `Enter attach` only while the
/// selected worker has a pane to attach to.
pub fn hints(view: &View) -> Vec<(String, &'static str)> {
    let mut out: Vec<(String, &'static str)> = Vec::new();
    let maps = keymaps(view.ui);
    let attachable = view.attach_hint
        && view
            .ui
            .selected_worker(view.run)
            .is_some_and(|w| w.pane_id.is_some());
    for b in maps
        .iter()
        .flat_map(|m| m.iter())
        .filter(|b: &&Binding| b.hint && (b.action != Action::Attach || attachable))
        .filter(|b| useful(b.action, view))
    {
        let word = match (b.action, &view.ui.form) {
            (Action::Submit, Some(crate::tui::steer::SteerForm::Add(_))) => "add",
            _ => b.action.hint(),
        };
        match out.iter_mut().find(|(_, w)| *w == word) {
            Some((keys, _)) if !keys.split('/').any(|k| k == b.label.as_ref()) => {
                keys.push('/');
                keys.push_str(&b.label);
            }
            Some(_) => {}
            None => out.push((b.label.to_string(), word)),
        }
    }
    out
}

/// Whether a key's hint is worth its room now. A key that could only say there is nothing
/// to do here (answer with no question, retry a running worker, cancel or type into an
/// ended one) makes room for one that acts; the help overlay still lists every key.
fn useful(action: Action, view: &View) -> bool {
    let selected = view.ui.selected_worker(view.run);
    let live = selected.is_some_and(|w| w.status.is_live());
    match action {
        Action::Answer => view.ui.pending_question(view.run).is_some(),
        Action::NextWaiting => view
            .run
            .workers
            .iter()
            .any(|w| w.status == WorkerStatus::Waiting),
        Action::CancelWorker => live,
        // Text for an ended agent worker goes to its next attempt (the engine's rule).
        Action::SendText => selected.is_some_and(|w| {
            crate::engine::steer::check(
                view.run,
                &crate::engine::steer::Steer::SendText {
                    worker: w.id.clone(),
                    text: "-".into(),
                },
            )
            .is_ok()
        }),
        Action::Retry | Action::EditRetry => selected.is_some_and(|w| w.status.is_terminal()),
        Action::CancelAll => !view.run.status.is_final(),
        _ => true,
    }
}

fn hint_line(view: &View, width: usize) -> Line<'static> {
    let mut spans = vec![Span::raw(" ")];
    if view.ui.confirm.is_none() && !view.ui.help {
        let colour = if view.ui.focus == Focus::Clarification {
            Color::Yellow
        } else {
            Color::Cyan
        };
        let label = match &view.ui.form {
            Some(crate::tui::steer::SteerForm::Add(_)) => "adding a worker",
            Some(crate::tui::steer::SteerForm::Send(_)) => "sending text",
            None => view.ui.focus.label(),
        };
        spans.push(Span::styled(label, Style::default().fg(colour)));
        spans.push(Span::styled(" │ ", Style::default().fg(Color::DarkGray)));
    }
    let mut used: usize = spans.iter().map(|s| s.content.width()).sum();
    let cost = |(keys, word): &(String, &str)| keys.width() + word.width() + 3;
    let mut all = hints(view);
    // `? help` lists the rest: its room is kept first, it goes last.
    let help = all
        .iter()
        .position(|(_, w)| *w == "help")
        .map(|i| all.remove(i));
    used += help.as_ref().map_or(0, cost);
    let mut shown = Vec::new();
    for h in all {
        if used + cost(&h) <= width {
            used += cost(&h);
            shown.push(h);
        }
    }
    shown.extend(help);
    for (keys, word) in shown {
        spans.push(Span::styled(keys, Style::default().fg(Color::Cyan).bold()));
        spans.push(Span::styled(
            format!(" {word}  "),
            Style::default().fg(Color::Gray),
        ));
    }
    Line::from(spans)
}

/// What to do once the run has ended, in the longest wording that fits `width` (the
/// shortest cut at a word).
fn ended_hint(run: &crate::domain::RunState, width: usize) -> String {
    let (status, id) = (run.status.as_str(), &run.run_id);
    let said = [
        format!(" run {status} · q leaves the dashboard · crewmux status {id} shows it later"),
        format!(" run {status} · q leaves · crewmux status {id} shows it later"),
        format!(" run {status} · q leaves · later: crewmux status {id}"),
    ];
    let fits = said.iter().find(|s| s.width() <= width);
    super::truncate_words(fits.unwrap_or(&said[2]), width)
}

/// Whether printable keys are text now: the answer input line or a steering form, with no
/// dialog over it.
fn typing(view: &View) -> bool {
    (view.ui.focus == Focus::Clarification || view.ui.form.is_some())
        && view.ui.confirm.is_none()
        && !view.ui.help
}

/// The keys of the input being typed in (as bound now), in the longest wording that fits:
/// `Enter sends the answer · Esc leaves the input, keeping the text`; a form's
/// `C-s sends · Esc cancels, nothing sent`.
fn typing_hint(view: &View, width: usize) -> Line<'static> {
    let label = |action: Action| {
        keymaps(view.ui)
            .iter()
            .flat_map(|m| m.iter())
            .find(|b| b.action == action)
            .map(|b| b.label.to_string())
    };
    let submit = label(Action::Submit).unwrap_or_else(|| "Enter".into());
    let back = label(Action::Back).unwrap_or_else(|| "Esc".into());
    let (sends, leaves) = match view.ui.form {
        Some(crate::tui::steer::SteerForm::Add(_)) => ("adds the worker", "cancels, nothing sent"),
        Some(crate::tui::steer::SteerForm::Send(_)) => ("sends the text", "cancels, nothing sent"),
        None => ("sends the answer", "leaves the input, keeping the text"),
    };
    let short = leaves.split(',').next().unwrap_or(leaves);
    let words = [
        (sends, leaves, " · every other key types"),
        (sends, short, ""),
        (sends.split(' ').next().unwrap_or(sends), short, ""),
    ];
    let key = Style::default().fg(Color::Cyan).bold();
    let dim = Style::default().fg(Color::DarkGray);
    let fits = |(s, l, t): &(&str, &str, &str)| {
        submit.width() + back.width() + s.width() + l.width() + t.width() + 6 <= width
    };
    let (s, l, t) = words.iter().find(|w| fits(w)).unwrap_or(&words[2]);
    Line::from(vec![
        Span::raw(" "),
        Span::styled(submit, key),
        Span::styled(format!(" {s} · "), dim),
        Span::styled(back, key),
        Span::styled(format!(" {l}{t}"), dim),
    ])
}

/// How to come back after quitting, in the longest wording that fits `width`.
fn quit_hint(run_id: &str, width: usize) -> Line<'static> {
    let dim = Style::default().fg(Color::DarkGray);
    let command = format!("crewmux attach {run_id}");
    let lead = [
        " q leaves the dashboard; the run goes on · come back with ",
        " q: the run goes on · back with ",
        " back: ",
    ]
    .into_iter()
    .find(|l| l.width() + command.width() <= width)
    .unwrap_or(" ");
    Line::from(vec![
        Span::styled(lead, dim),
        Span::styled(command, Style::default().fg(Color::Cyan)),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::fixtures;
    use crate::tui::state::UiState;

    fn words(run: &crate::domain::RunState, selected: usize) -> Vec<&'static str> {
        let ui = UiState {
            selected,
            ..UiState::default()
        };
        hints(&fixtures::view(run, &ui, &[]))
            .into_iter()
            .map(|(_, w)| w)
            .collect()
    }

    #[test]
    fn the_hints_offer_what_the_selected_worker_and_the_run_allow() {
        let run = fixtures::crazy_run();
        // architect completed, backend running; frontend waits on a question.
        let ended = words(&run, 0);
        assert!(ended.contains(&"retry"), "{ended:?}");
        // Text for an ended agent worker goes to its next attempt.
        assert!(
            !ended.contains(&"cancel") && ended.contains(&"send text"),
            "{ended:?}"
        );
        assert!(
            ended.contains(&"answer") && ended.contains(&"next waiting"),
            "{ended:?}"
        );
        let running = words(&run, 1);
        assert!(
            running.contains(&"cancel") && running.contains(&"send text"),
            "{running:?}"
        );
        assert!(!running.contains(&"retry"), "{running:?}");
        // A finished run: nothing to answer, wait for or cancel.
        let done = words(&fixtures::done_run(), 0);
        for gone in ["answer", "next waiting", "cancel run", "cancel"] {
            assert!(!done.contains(&gone), "{gone}: {done:?}");
        }
        // Its ended agent worker can be retried or sent a line for its next attempt.
        assert!(
            done.contains(&"retry") && done.contains(&"send text"),
            "{done:?}"
        );
    }

    #[test]
    fn a_long_notice_is_cut_at_a_word_at_80_columns() {
        let run = fixtures::crazy_run();
        let ui = UiState {
            notice: Some(
                "host box does not answer (no reply for 5 s); its workers' state is unknown until it does"
                    .into(),
            ),
            ..UiState::default()
        };
        let view = fixtures::view(&run, &ui, &[]);
        let mut terminal =
            ratatui::Terminal::new(ratatui::backend::TestBackend::new(80, HEIGHT)).unwrap();
        terminal.draw(|f| render(f, f.area(), &view)).unwrap();
        let text = format!("{}", terminal.backend());
        let first = text.lines().next().unwrap();
        assert!(
            first.contains("its workers' state is unknown…") && !first.contains("unknown un"),
            "{first}"
        );
        insta::assert_snapshot!(terminal.backend());
    }

    #[test]
    fn while_typing_an_answer_the_footer_shows_the_inputs_keys_not_q() {
        let run = fixtures::crazy_run();
        let ui = UiState {
            focus: Focus::Clarification,
            ..UiState::default()
        };
        let view = fixtures::view(&run, &ui, &[]);
        let mut terminal =
            ratatui::Terminal::new(ratatui::backend::TestBackend::new(100, HEIGHT)).unwrap();
        terminal.draw(|f| render(f, f.area(), &view)).unwrap();
        let text = format!("{}", terminal.backend());
        let first = text.lines().next().unwrap();
        assert!(
            first.contains("Enter sends the answer · Esc leaves the input")
                && !text.contains("q quits"),
            "{text}"
        );
        insta::assert_snapshot!(terminal.backend());
        // Narrow: shorter words, still the keys.
        let line = typing_hint(&view, 40);
        let said: String = line.spans.iter().map(|s| s.content.as_ref()).collect();
        assert_eq!(said, " Enter sends · Esc leaves the input");
        // Out of the input, the way back again.
        let ui = UiState::default();
        let view = fixtures::view(&run, &ui, &[]);
        let mut terminal =
            ratatui::Terminal::new(ratatui::backend::TestBackend::new(100, HEIGHT)).unwrap();
        terminal.draw(|f| render(f, f.area(), &view)).unwrap();
        assert!(format!("{}", terminal.backend()).contains("q leaves the dashboard"));
    }
}
