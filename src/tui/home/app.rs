//! The home screen's loop: terminal input from crossterm's event stream, the run list
//! re-read every [`REFRESH`], and the ending signals; returns what the person chose.

use std::time::Duration;

use crossterm::event::{Event, EventStream};
use futures_util::StreamExt;

use super::{Home, HomeExit};
use crate::error::{Error, IoContext, Result};
use crate::tui::model::Msg;
use crate::tui::terminal::TerminalGuard;

/// How often the list of runs is read again (statuses of live runs move).
pub const REFRESH: Duration = Duration::from_secs(2);

/// Show `home` until the person opens, cleans or starts a run, or quits. `refresh` brings
/// `home` up to date (the rows read again, the providers once probed) every [`REFRESH`].
///
/// # Errors
/// The terminal cannot be set up or read.
pub fn run(home: &mut Home, refresh: &dyn Fn(&mut Home)) -> Result<HomeExit> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .on("cannot start the home screen's runtime")?;
    rt.block_on(async {
        let (tx, mut signals) = tokio::sync::mpsc::unbounded_channel::<Msg>();
        crate::tui::terminal::forward_signals(tx)?;
        let mut guard = TerminalGuard::enter()?;
        let mut input = EventStream::new();
        let mut tick = tokio::time::interval(REFRESH);
        loop {
            let now = chrono::Utc::now();
            guard
                .terminal
                .draw(|f| super::view::draw(f, home, now))
                .on("drawing the home screen")?;
            tokio::select! {
                ev = input.next() => match ev {
                    Some(Ok(Event::Key(k))) => {
                        if let Some(exit) = home.key(k) {
                            return Ok(exit);
                        }
                    }
                    Some(Ok(Event::Paste(text))) => home.paste(&text),
                    Some(Ok(_)) => {}
                    Some(Err(e)) => return Err(Error::system("reading the terminal", e)),
                    None => return Ok(HomeExit::Quit),
                },
                _ = tick.tick() => {
                    let selected = home.selected_row().map(|r| r.id.clone());
                    refresh(home);
                    if let Some(id) = selected {
                        if let Some(i) = home.rows.iter().position(|r| r.id == id) {
                            home.selected = i;
                        }
                    }
                    home.selected = home.selected.min(home.rows.len().saturating_sub(1));
                }
                Some(_) = signals.recv() => return Ok(HomeExit::Quit),
            }
        }
    })
}
