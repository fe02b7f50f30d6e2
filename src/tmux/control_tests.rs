//! The reader on control-mode output captured from tmux 3.3a (`tests/fixtures/control/`):
//! `session.raw` is a client attached with output on, whose pane printed `é` in two
//! writes and a raw 0xFF byte; `server-killed.raw` ends with the server killed.

use super::*;

const SESSION: &[u8] = include_bytes!("../../tests/fixtures/control/session.raw");
const SERVER_KILLED: &[u8] = include_bytes!("../../tests/fixtures/control/server-killed.raw");

fn events(raw: &[u8]) -> Vec<Event> {
    let mut r = Reader::default();
    let mut body = raw;
    // The last line may have no newline (`%exit` right before the client ends).
    if body.ends_with(b"\n") {
        body = &body[..body.len() - 1];
    }
    body.split(|b| *b == b'\n')
        .filter_map(|l| r.line(l))
        .collect()
}

fn replies(ev: &[Event]) -> Vec<&Reply> {
    ev.iter()
        .filter_map(|e| match e {
            Event::Reply(r) if r.from_client => Some(r),
            _ => None,
        })
        .collect()
}

#[test]
fn blocks_pair_with_their_commands_in_order_and_errors_are_replies() {
    let ev = events(SESSION);
    let r = replies(&ev);
    let summary: Vec<(bool, String)> = r
        .iter()
        .map(|r| (r.ok, r.text().lines().next().unwrap_or("").to_string()))
        .collect();
    assert_eq!(
        summary,
        vec![
            (true, "before".to_string()),
            (true, "%1".to_string()),
            (true, "%0\t0\tbash".to_string()),
            (true, "café done  tab  bs\\ end".to_string()),
            (false, "can't find window: nosuch".to_string()),
            (
                false,
                "parse error: unknown command: bogus-command".to_string()
            ),
            (true, "after".to_string()),
        ]
    );
    // Command numbers rise; the block of the command the client started with (flags 0)
    // is not one of the replies.
    assert!(r.windows(2).all(|w| w[0].number < w[1].number));
    let started_with = ev
        .iter()
        .filter(|e| matches!(e, Event::Reply(r) if !r.from_client))
        .count();
    assert_eq!(started_with, 1);
}

#[test]
fn output_lines_starting_with_percent_stay_inside_their_block() {
    let ev = events(SESSION);
    let listing = replies(&ev)[2];
    assert_eq!(listing.text(), "%0\t0\tbash\n%1\t0\tw1\n");
}

#[test]
fn notifications_between_blocks_are_told_apart_from_replies() {
    let ev = events(SESSION);
    let names: Vec<String> = ev
        .iter()
        .filter_map(|e| match e {
            Event::Notification(Notification::Other { name, args }) => {
                Some(format!("{name} {args}"))
            }
            _ => None,
        })
        .collect();
    assert_eq!(names, vec!["session-changed $0 run", "window-add @1"]);
    // The window-add came between the reply to new-window and the one to list-panes.
    let at = |f: &dyn Fn(&Event) -> bool| ev.iter().position(f).unwrap();
    let window_add = at(
        &|e| matches!(e, Event::Notification(Notification::Other { name, .. }) if name == "window-add"),
    );
    let new_window = at(&|e| matches!(e, Event::Reply(r) if r.text() == "%1\n"));
    let listing = at(&|e| matches!(e, Event::Reply(r) if r.text().starts_with("%0\t")));
    assert!(new_window < window_add && window_add < listing);
    assert!(matches!(
        ev.last(),
        Some(Event::Notification(Notification::Exit { reason: None }))
    ));
}

#[test]
fn a_character_split_across_output_lines_is_joined_and_raw_bytes_survive() {
    let ev = events(SESSION);
    let pieces: Vec<Vec<u8>> = ev
        .iter()
        .filter_map(|e| match e {
            Event::Notification(Notification::Output { pane, bytes }) if pane == "%1" => {
                Some(bytes.clone())
            }
            _ => None,
        })
        .collect();
    assert_eq!(pieces.len(), 3);
    // The split is real: the first piece ends with the first byte of `é`.
    assert_eq!(pieces[0], b"caf\xc3");
    assert!(std::str::from_utf8(&pieces[0]).is_err());
    assert_eq!(
        pieces[1],
        b"\xa9 done \xff tab\tbs\\ end\r\n".to_vec(),
        "octal escapes undone, raw bytes as sent"
    );
    let mut text = PaneText::default();
    let got: Vec<String> = pieces.iter().map(|p| text.push(p)).collect();
    assert_eq!(got[0], "caf");
    assert_eq!(got[1], "é done \u{fffd} tab\tbs\\ end\r\n");
    assert_eq!(got[2], "line2\r\r\n");
}

#[test]
fn a_killed_server_ends_with_exit_after_the_last_reply() {
    let ev = events(SERVER_KILLED);
    let r = replies(&ev);
    assert_eq!(r.len(), 4);
    assert_eq!(r[0].text(), "one\n");
    assert_eq!(r[1].output, b"", "set-buffer answers with an empty block");
    assert!(matches!(
        ev.last(),
        Some(Event::Notification(Notification::Exit { reason: None }))
    ));
}

#[test]
fn an_end_with_other_arguments_does_not_close_the_block() {
    let mut r = Reader::default();
    assert_eq!(r.line(b"%begin 10 7 1"), None);
    // A pane that printed an %end line of another command: output, not the end.
    assert_eq!(r.line(b"%end 10 6 1"), None);
    let Some(Event::Reply(reply)) = r.line(b"%end 10 7 1") else {
        panic!("the block should end");
    };
    assert_eq!(reply.output, b"%end 10 6 1\n");
    assert_eq!(reply.number, 7);
}

#[test]
fn unescape_takes_three_octal_digits_only() {
    assert_eq!(unescape(b"a\\015\\012b"), b"a\r\nb");
    assert_eq!(unescape(b"\\134x"), b"\\x");
    assert_eq!(unescape(b"end\\"), b"end\\");
    assert_eq!(unescape(b"\\9xy\\01"), b"\\9xy\\01");
}

#[test]
fn extended_output_and_exit_reasons_parse() {
    let mut r = Reader::default();
    assert_eq!(
        r.line(b"%extended-output %3 120 : hi\\012"),
        Some(Event::Notification(Notification::Output {
            pane: "%3".into(),
            bytes: b"hi\n".to_vec()
        }))
    );
    assert_eq!(
        r.line(b"%exit server exited"),
        Some(Event::Notification(Notification::Exit {
            reason: Some("server exited".into())
        }))
    );
}

#[test]
fn line_quoting_escapes_control_characters_and_refuses_nul() {
    assert_eq!(quote_line_arg("plain").unwrap(), "'plain'");
    assert_eq!(
        quote_line_arg("a\nb\t\"$x\"\u{1}").unwrap(),
        "\"a\\nb\\t\\\"\\$x\\\"\\001\""
    );
    assert!(quote_line_arg("a\0b").is_err());
}
