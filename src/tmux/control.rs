//! The tmux control-mode protocol (tmux(1) "CONTROL MODE"), read from raw bytes.
//!
//! A control client (`tmux -C`) writes one command per line on its stdin; the server
//! answers each command with an output block and sends notifications between blocks:
//!
//! ```text
//! %begin 1796055543 269 1        time, command number, flags
//! before                         the command's output, raw bytes, unescaped
//! %end 1796055543 269 1          or %error with the same three arguments
//! %window-add @1                 a notification: never inside a block
//! %output %1 caf\303             pane output, bytes < 32 and `\` as octal `\ooo`
//! ```
//!
//! What this reader relies on, each seen in the captures under
//! `tests/fixtures/control/` (tmux 3.3a):
//! - a block ends at the first `%end`/`%error` line whose three arguments equal its
//!   `%begin`'s; lines inside a block are output even when they start with `%` (a
//!   `list-panes` row starts with `%1`);
//! - flags is 1 for a command read from this client's stdin and 0 for anything else (the
//!   command the client was started with, hooks), so replies are matched to the commands
//!   sent, in order, by the blocks with flags 1 and their command numbers;
//! - each command of a line gets its own block, but a line that does not parse gets one
//!   `%error` block: a caller sends one command a line;
//! - `%output` splits a multi-byte character across lines whenever the pane's program
//!   wrote it in two pieces, and bytes ≥ 0x80 are sent as they are: output is bytes,
//!   joined per pane before it is decoded ([`PaneText`]);
//! - `%exit [reason]` is the last line (it may have no newline); the client then ends.

/// One complete thing the server said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The output block of one command.
    Reply(Reply),
    /// A notification (between blocks).
    Notification(Notification),
}

/// The output block of one command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The server's command number (`%begin`'s second argument).
    pub number: u64,
    /// True for a command this client sent on its stdin (`%begin`'s flags is 1).
    pub from_client: bool,
    /// False when the block ended with `%error`.
    pub ok: bool,
    /// The output lines, each ending with `\n`, bytes as tmux wrote them.
    pub output: Vec<u8>,
}

impl Reply {
    /// The output as text (invalid UTF-8 replaced by U+FFFD).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.output).into_owned()
    }
}

/// A notification; those crewmux does not act on keep their name and arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notification {
    /// `%output %<pane> <bytes>` (or `%extended-output %<pane> <age> ... : <bytes>`): what a
    /// pane printed, unescaped.
    Output { pane: String, bytes: Vec<u8> },
    /// `%exit [reason]`: the server is ending this client.
    Exit { reason: Option<String> },
    /// Any other notification, e.g. `%window-add` with `@1`.
    Other { name: String, args: String },
}

/// The reader's state between lines: the block being read, if any.
#[derive(Debug, Default)]
pub struct Reader {
    open: Option<Open>,
}

#[derive(Debug)]
struct Open {
    /// `%begin`'s three arguments as written, which `%end`/`%error` repeat.
    args: Vec<u8>,
    number: u64,
    from_client: bool,
    output: Vec<u8>,
}

impl Reader {
    /// Feed one line (without its `\n`; a trailing `\r` is kept, tmux does not send one).
    /// Returns the block it completes or the notification it is, `None` otherwise.
    pub fn line(&mut self, line: &[u8]) -> Option<Event> {
        if let Some(open) = self.open.as_mut() {
            let end = line
                .strip_prefix(b"%end ")
                .map(|a| (a, true))
                .or_else(|| line.strip_prefix(b"%error ").map(|a| (a, false)));
            if let Some((args, ok)) = end {
                if args == open.args.as_slice() {
                    let open = self.open.take()?;
                    return Some(Event::Reply(Reply {
                        number: open.number,
                        from_client: open.from_client,
                        ok,
                        output: open.output,
                    }));
                }
            }
            open.output.extend_from_slice(line);
            open.output.push(b'\n');
            return None;
        }
        if let Some(args) = line.strip_prefix(b"%begin ") {
            let fields: Vec<&[u8]> = args.split(|b| *b == b' ').collect();
            let number = fields
                .get(1)
                .and_then(|n| std::str::from_utf8(n).ok())
                .and_then(|n| n.parse().ok());
            if let (3, Some(number)) = (fields.len(), number) {
                self.open = Some(Open {
                    args: args.to_vec(),
                    number,
                    from_client: fields[2] == b"1",
                    output: vec![],
                });
                return None;
            }
        }
        notification(line).map(Event::Notification)
    }
}

/// A line outside a block: a notification, or `None` for a line that is not one (tmux
/// sends none; an empty line is skipped).
fn notification(line: &[u8]) -> Option<Notification> {
    let rest = line.strip_prefix(b"%")?;
    let (name, args) = match rest.iter().position(|b| *b == b' ') {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, &b""[..]),
    };
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    Some(match name {
        b"output" => {
            let (pane, value) = split_word(args);
            Notification::Output {
                pane: text(pane),
                bytes: unescape(value),
            }
        }
        b"extended-output" => {
            let (pane, rest) = split_word(args);
            // `%extended-output %1 <age> ... : <value>`: the value follows the first " : ".
            let value = rest
                .windows(3)
                .position(|w| w == b" : ")
                .map_or(&b""[..], |i| &rest[i + 3..]);
            Notification::Output {
                pane: text(pane),
                bytes: unescape(value),
            }
        }
        b"exit" => Notification::Exit {
            reason: (!args.is_empty()).then(|| text(args)),
        },
        _ => Notification::Other {
            name: text(name),
            args: text(args),
        },
    })
}

fn split_word(b: &[u8]) -> (&[u8], &[u8]) {
    match b.iter().position(|c| *c == b' ') {
        Some(i) => (&b[..i], &b[i + 1..]),
        None => (b, &b""[..]),
    }
}

/// Undo `%output`'s escaping: `\ooo` (three octal digits) is one byte; anything else,
/// including a `\` not followed by three octal digits, is kept as it is.
pub fn unescape(value: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(value.len());
    let mut i = 0;
    while i < value.len() {
        let octal = value
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)) && d[0] <= b'3');
        match (value[i], octal) {
            (b'\\', Some(d)) => {
                out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                i += 4;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    out
}

/// One pane's output decoded as it arrives: bytes are joined before decoding, so a
/// character split across two `%output` lines comes out whole; an incomplete character at
/// the end waits for the next piece; invalid bytes become U+FFFD.
#[derive(Debug, Default)]
pub struct PaneText {
    pending: Vec<u8>,
}

impl PaneText {
    /// Add `bytes`; returns the text now complete.
    pub fn push(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        let mut text = String::new();
        loop {
            match std::str::from_utf8(&self.pending) {
                Ok(s) => {
                    text.push_str(s);
                    self.pending.clear();
                    return text;
                }
                Err(e) => {
                    let good = e.valid_up_to();
                    text.push_str(&String::from_utf8_lossy(&self.pending[..good]));
                    match e.error_len() {
                        // Cut off at the end: keep the start of the character for later.
                        None => {
                            self.pending.drain(..good);
                            return text;
                        }
                        Some(bad) => {
                            text.push(char::REPLACEMENT_CHARACTER);
                            self.pending.drain(..good + bad);
                        }
                    }
                }
            }
        }
    }
}

/// Quote one argument for a control-mode command line: like [`super::command_line::tmux_quote`],
/// but any control character (a newline would end the line) is written as an escape inside
/// double quotes (`\n`, `\t`, `\r`, else `\ooo` octal: tmux(1) "PARSING SYNTAX"), so any
/// text without NUL fits on one line.
///
/// # Errors
/// The text has a NUL byte (tmux's command language cannot carry it).
pub fn quote_line_arg(arg: &str) -> Result<String, String> {
    if arg.contains('\0') {
        return Err("a NUL byte cannot be sent to tmux".into());
    }
    if !arg.chars().any(char::is_control) {
        return Ok(super::command_line::tmux_quote(arg));
    }
    let mut s = String::from("\"");
    for c in arg.chars() {
        match c {
            '\\' | '"' | '$' | '~' => {
                s.push('\\');
                s.push(c);
            }
            '\n' => s.push_str("\\n"),
            '\t' => s.push_str("\\t"),
            '\r' => s.push_str("\\r"),
            c if c.is_control() => {
                let mut buf = [0u8; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    s.push_str(&format!("\\{b:03o}"));
                }
            }
            c => s.push(c),
        }
    }
    s.push('"');
    Ok(s)
}

#[cfg(test)]
#[path = "control_tests.rs"]
mod tests;
