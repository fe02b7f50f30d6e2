//! Watching a run's panes: one batched tmux call per poll lists the panes (liveness, dead
//! status, change signature), captures the last lines of watched panes that settled, and the
//! focused pane's screen when it moved (docs/tmux.md).

use std::collections::HashMap;
use std::time::Instant;

use tmux_interface::{CapturePane, DisplayMessage, ListPanes, ListSessions, Tmux, TmuxCommand};

use super::panes::SERVER_FORMAT;
use super::{
    parse_panes, same_server, split_pane_ref, PaneRow, TmuxBackend, CAPTURE_LINES, PANE_FORMAT,
};
use crate::backend::{Liveness, Poll, Target};
use crate::error::Error;

impl TmuxBackend {
    /// One poll of `targets` (see `Multiplexer::poll`); `focus` also gets its screen. With
    /// no target, the focused screen alone: no listing, and the screen is handed over when
    /// its text changed.
    pub(super) fn poll_panes(&mut self, targets: &[Target], focus: Option<&Target>) -> Poll {
        // One tmux process per tick: the pane listing, the last lines of the watched panes
        // whose signature moved at the previous tick, and the focused pane's screen.
        let sep = self.client.separator().to_string();
        let listing = !targets.is_empty();
        // The server instance first: a capture is kept only when the pane it read belongs to
        // the instance its reference names (pane ids start over when a server restarts).
        let mut tmux = Tmux::new().add_command(
            DisplayMessage::new()
                .print()
                .message(format!("{sep}S{SERVER_FORMAT}"))
                .build(),
        );
        if listing {
            tmux = tmux.add_command(self.list_panes());
        }
        let pending = if listing {
            std::mem::take(&mut self.pending_tails)
        } else {
            vec![]
        };
        let watched: Vec<String> = pending
            .into_iter()
            .filter(|p| {
                self.may_be_here(p)
                    && targets
                        .iter()
                        .any(|t| t.watch_screen && t.pane_id.as_deref() == Some(p))
            })
            .collect();
        for (i, pane_ref) in watched.iter().enumerate() {
            let pane = split_pane_ref(pane_ref).0.to_string();
            // The capture is named by its place in `watched`, never by the pane's id: tmux
            // passes a `display-message` text through strftime(3) before expanding it as a
            // format, so `%4@…` came back as ` %4@…` (a field width of 4) and the tail of
            // every pane from `%4` on was never matched (docs/tmux.md "Batches").
            tmux = tmux
                .add_command(
                    DisplayMessage::new()
                        .print()
                        .message(format!("{sep}T{i}"))
                        .build(),
                )
                .add_command(
                    CapturePane::new()
                        .stdout()
                        .join()
                        .start_line(format!("-{}", crate::backend::TAIL_LINES))
                        .target_pane(pane)
                        .build(),
                );
        }
        let focus_pane = focus
            .and_then(|f| f.pane_id.clone())
            .filter(|p| self.may_be_here(p));
        if let Some(pane_ref) = &focus_pane {
            let pane = split_pane_ref(pane_ref).0.to_string();
            tmux = tmux
                .add_command(
                    DisplayMessage::new()
                        .print()
                        .message(format!("{sep}F"))
                        .build(),
                )
                .add_command(
                    CapturePane::new()
                        .stdout()
                        .escape_sequences()
                        .join()
                        .start_line(format!("-{CAPTURE_LINES}"))
                        .target_pane(pane)
                        .build(),
                );
        }
        let out = match self.client.run(tmux) {
            Ok(out) => out,
            Err(e @ Error::Timeout { .. }) => return not_answering(targets, &e),
            Err(_) => return self.failed_poll(targets),
        };
        let (server, rows, tail_text, mut screen) = split_batch(&out, &sep, &watched);
        self.server.clone_from(&server);
        let here = |p: &str| server.as_deref().is_some_and(|s| same_server(p, s));
        if !focus_pane.as_deref().is_some_and(here) {
            screen = None;
        }
        if !listing {
            return Poll {
                screen: self.screen_if_new(focus_pane.as_deref(), screen),
                ..Poll::default()
            };
        }
        let listing = rows;
        let mut poll = self.liveness_from(&listing, targets, focus_pane.as_deref(), &mut screen);
        poll.tails = targets
            .iter()
            .map(|t| {
                t.pane_id
                    .as_deref()
                    .filter(|p| here(p))
                    .and_then(|p| tail_text.iter().find(|(id, _)| id == p))
                    .map(|(_, text)| text.clone())
            })
            .collect();
        self.pending_tails = self.changed_panes(&listing, targets, &poll.liveness);
        poll
    }

    /// A poll whose batch failed: no server or no session, and every pane is gone. A
    /// capture of a pane that has just been removed also fails, so the listing is tried
    /// alone before deciding.
    fn failed_poll(&mut self, targets: &[Target]) -> Poll {
        match self.client.run(Tmux::new().add_command(self.list_panes())) {
            Ok(out) => self.liveness_from(&out, targets, None, &mut None),
            Err(e @ Error::Timeout { .. }) => not_answering(targets, &e),
            Err(e) => Poll {
                liveness: vec![Liveness::Gone; targets.len()],
                screen: None,
                tails: vec![],
                server_down: Some(self.why_gone(&tmux_said(&e))),
                unanswered: false,
                hosts_down: Default::default(),
            },
        }
    }

    /// `screen` of `pane` when its text is not the one last handed over (a poll without
    /// the listing has no signature to go by).
    fn screen_if_new(&mut self, pane: Option<&str>, screen: Option<String>) -> Option<String> {
        use std::hash::{Hash, Hasher};
        let (pane, screen) = (pane?, screen?);
        let mut h = std::collections::hash_map::DefaultHasher::new();
        screen.hash(&mut h);
        let sig = format!("text {:016x}", h.finish());
        (self.last_sig.insert(pane.to_string(), sig.clone()) != Some(sig)).then_some(screen)
    }

    fn list_panes(&self) -> TmuxCommand<'static> {
        ListPanes::new()
            .session()
            .target(self.target_session())
            .format(PANE_FORMAT)
            .build()
    }

    /// Live, watched panes that settled at a new signature; their last lines are captured in
    /// the next tick's batch (none when nothing changed, and none while panes stay busy).
    fn changed_panes(
        &mut self,
        listing: &str,
        targets: &[Target],
        liveness: &[Liveness],
    ) -> Vec<String> {
        let rows = parse_panes(listing);
        let sig: HashMap<&str, &str> = rows
            .iter()
            .map(|r| (r.pane_id.as_str(), r.signature.as_str()))
            .collect();
        let mut want = vec![];
        for (i, t) in targets.iter().enumerate() {
            let (Some(pane), true, Some(Liveness::Alive)) =
                (t.pane_id.as_deref(), t.watch_screen, liveness.get(i))
            else {
                continue;
            };
            let now = sig.get(split_pane_ref(pane).0).copied().unwrap_or_default();
            // A question only matters once the screen holds still: capture a pane that did
            // not move since the previous poll and was not captured at this signature yet.
            // A busy pane (a spinner, streaming output) is never captured.
            let still = self.seen_sig.get(pane).map(String::as_str) == Some(now);
            self.seen_sig.insert(pane.to_string(), now.to_string());
            if still && self.tail_sig.get(pane).map(String::as_str) != Some(now) {
                self.tail_sig.insert(pane.to_string(), now.to_string());
                want.push(pane.to_string());
            }
        }
        want
    }

    fn liveness_from(
        &mut self,
        listing: &str,
        targets: &[Target],
        focus_pane: Option<&str>,
        screen: &mut Option<String>,
    ) -> Poll {
        let rows = parse_panes(listing);
        let by_id: HashMap<&str, &PaneRow> = rows.iter().map(|r| (r.pane_id.as_str(), r)).collect();
        let mut lost_sigchld = false;
        let liveness = targets
            .iter()
            .map(|t| {
                match t.pane_id.as_deref().and_then(|p| {
                    let row = by_id.get(split_pane_ref(p).0)?;
                    // The same id on another server instance is another pane.
                    same_server(p, &row.server).then_some(row)
                }) {
                    None => Liveness::Gone,
                    Some(r) if r.dead => {
                        if r.dead_status.is_none() {
                            lost_sigchld = true;
                        }
                        Liveness::Dead {
                            status: r.dead_status,
                        }
                    }
                    Some(_) => Liveness::Alive,
                }
            })
            .collect();
        // tmux < 3.6 (libutempter builds) can lose a dying pane's SIGCHLD: kick the server
        // when a dead pane has no status, and every 2 s as a backstop (docs/tmux.md).
        if lost_sigchld || self.last_kick.elapsed().as_millis() > 2000 {
            if let Some(pid) = rows.first().map(|r| r.server_pid) {
                self.client.kick_sigchld(pid);
            }
            self.last_kick = Instant::now();
        }
        // Hand the screen over only when the focused pane's signature moved.
        let screen = match (focus_pane, screen.take()) {
            (Some(p), Some(s)) => {
                let sig = by_id
                    .get(split_pane_ref(p).0)
                    .map(|r| r.signature.clone())
                    .unwrap_or_default();
                let changed = self.last_sig.get(p) != Some(&sig);
                self.last_sig.insert(p.to_string(), sig);
                changed.then_some(s)
            }
            _ => None,
        };
        Poll {
            liveness,
            screen,
            tails: vec![],
            server_down: None,
            unanswered: false,
            hosts_down: Default::default(),
        }
    }

    /// Why the run's panes are gone, for the person: the whole server, or only the run's
    /// session (killed by hand or by `kill-session`), told apart by asking the server.
    fn why_gone(&self, error: &str) -> String {
        let socket = self.client.socket();
        if self
            .client
            .run(Tmux::new().add_command(ListSessions::new().build()))
            .is_ok()
        {
            format!(
                "the tmux session {} on socket {socket} was killed; its workers are marked crashed",
                self.session
            )
        } else {
            format!(
                "the tmux server on socket {socket} is gone ({error}); its workers are marked crashed"
            )
        }
    }
}

/// What tmux itself said of a failed call (`no server running on …`), without the whole
/// command line it was given: that is what a person reads in the log.
fn tmux_said(e: &Error) -> String {
    match e {
        Error::Tmux { stderr, .. } if !stderr.trim().is_empty() => stderr.trim().to_string(),
        other => other.to_string(),
    }
}

/// A poll of a server that did not answer in time: a target whose wrapper pid is known is
/// alive or gone by that pid (so a cancel still sees its attempts end), any other is
/// `Unknown` and decided at a later poll.
fn not_answering(targets: &[Target], e: &Error) -> Poll {
    Poll {
        liveness: targets
            .iter()
            .map(|t| match t.pid {
                Some(pid) if crate::backend::pid_alive(pid) => Liveness::Alive,
                Some(_) => Liveness::Gone,
                None => Liveness::Unknown,
            })
            .collect(),
        screen: None,
        tails: vec![],
        server_down: Some(format!("{e}; worker liveness unknown meanwhile")),
        unanswered: true,
        hosts_down: Default::default(),
    }
}

/// A dead pane's screen without tmux's `Pane is dead (status N, <time>)` line and the blank
/// rows above it, so the output panel ends with the agent's last lines (the status is shown
/// in the roster).
fn without_dead_banner(screen: &str) -> String {
    let mut lines: Vec<&str> = screen.lines().collect();
    if lines
        .last()
        .is_some_and(|l| crate::launch::strip_ansi(l).starts_with("Pane is dead"))
    {
        lines.pop();
        while lines.last().is_some_and(|l| l.trim().is_empty()) {
            lines.pop();
        }
    }
    lines.join("\n")
}

/// One batched poll's output: the server instance (its `S` line), the pane listing,
/// `(pane reference, last lines)` of each tail capture, and the focused screen.
type Batch = (
    Option<String>,
    String,
    Vec<(String, String)>,
    Option<String>,
);

/// Split one batched poll's output (see [`Batch`]; dead-pane banners removed); the tail
/// captures are marked `T<n>`, `n` the place of their pane in `watched`.
fn split_batch(out: &str, sep: &str, watched: &[String]) -> Batch {
    let mut server = None;
    let mut listing = String::new();
    let mut tails: Vec<(String, String)> = vec![];
    let mut screen: Option<String> = None;
    enum Part {
        Listing,
        Tail(usize),
        Screen,
    }
    let mut part = Part::Listing;
    let mut buf = String::new();
    fn flush(
        part: &Part,
        buf: &mut String,
        listing: &mut String,
        tails: &mut [(String, String)],
        screen: &mut Option<String>,
    ) {
        let text = std::mem::take(buf);
        match part {
            Part::Listing => *listing = text,
            Part::Tail(i) => tails[*i].1 = without_dead_banner(&text),
            Part::Screen => *screen = Some(without_dead_banner(&text)),
        }
    }
    for line in out.split_inclusive('\n') {
        let bare = line.trim_end_matches('\n');
        if let Some(rest) = bare.strip_prefix(sep) {
            if let Some(s) = rest.strip_prefix('S') {
                server = Some(s.to_string());
                continue;
            }
            flush(&part, &mut buf, &mut listing, &mut tails, &mut screen);
            part = match rest.strip_prefix('T') {
                Some(n) => {
                    let pane = n
                        .parse::<usize>()
                        .ok()
                        .and_then(|n| watched.get(n))
                        .cloned()
                        .unwrap_or_default();
                    tails.push((pane, String::new()));
                    Part::Tail(tails.len() - 1)
                }
                None => Part::Screen,
            };
            continue;
        }
        buf.push_str(line);
    }
    flush(&part, &mut buf, &mut listing, &mut tails, &mut screen);
    (server, listing, tails, screen)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_gone_server_is_named_by_what_tmux_said_not_by_the_command_line() {
        let e = crate::error::Error::Tmux {
            args: vec![
                "-L".into(),
                "s".into(),
                "list-panes".into(),
                "-F".into(),
                "#{pane_id} #{history_size}".into(),
            ],
            stderr: "no server running on /tmp/tmux-0/s\n".into(),
        };
        assert_eq!(super::tmux_said(&e), "no server running on /tmp/tmux-0/s");
    }

    #[test]
    fn a_batch_splits_into_listing_tails_and_screen() {
        let out = "SEPS42.1700000000\n%1\tx\n%12\ty\nSEPT1\nprompt? (y/n)\nSEPF\nscreen line\n";
        let watched = [
            "%1@42.1700000000".to_string(),
            "%12@42.1700000000".to_string(),
        ];
        let (server, listing, tails, screen) = super::split_batch(out, "SEP", &watched);
        assert_eq!(server.as_deref(), Some("42.1700000000"));
        assert_eq!(listing, "%1\tx\n%12\ty\n");
        assert_eq!(
            tails,
            vec![("%12@42.1700000000".to_string(), "prompt? (y/n)".to_string())]
        );
        assert_eq!(screen.as_deref(), Some("screen line"));
    }

    #[test]
    fn the_dead_banner_and_the_gap_above_it_are_dropped() {
        let s = "out 1\nout 2\n\n\n\nPane is dead (status 0, Mon Nov 30 07:11:03 2026)\n";
        assert_eq!(super::without_dead_banner(s), "out 1\nout 2");
        assert_eq!(super::without_dead_banner("live\n\n"), "live\n");
    }
}
