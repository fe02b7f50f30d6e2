//! `crewmux pane-text` (hidden): the filter the launch wrapper puts after a CLI that prints
//! JSON events. Every line of stdin is copied as it is to `--raw` (the attempt's
//! `cli-events.jsonl`, read for the result and usage) and printed as readable text on stdout,
//! the pane (`providers::pane_text`). It reads to the end even when stdout is gone, so the
//! CLI never dies of a closed pipe and the raw events are all kept.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use crate::error::{Error, Result};
use crate::providers::output::OutputFormat;
use crate::providers::pane_text::Renderer;

#[derive(Debug, Args, Clone)]
pub struct PaneTextArgs {
    /// The CLI's output format: codex-json, claude-json or gemini-json.
    #[arg(long, value_parser = parse_format)]
    pub format: OutputFormat,
    /// File the raw lines are written to (created or truncated).
    #[arg(long)]
    pub raw: PathBuf,
}

fn parse_format(s: &str) -> std::result::Result<OutputFormat, String> {
    serde_json::from_value(serde_json::Value::String(s.to_string())).map_err(|_| {
        format!("unknown output format `{s}`: use codex-json, claude-json or gemini-json")
    })
}

/// Copy stdin to `--raw` and its rendering to stdout until stdin ends; exit 0.
///
/// # Errors
/// The raw file cannot be opened or written (then the line is still rendered: losing the
/// pane's view is worse than losing the copy, and the failure is returned at the end).
pub fn run(args: &PaneTextArgs) -> Result<i32> {
    // Truncated: a launch that is started again keeps only its own events.
    let mut raw = std::fs::File::create(&args.raw).map_err(|e| Error::io(&args.raw, e))?;
    let mut renderer = Renderer::new(args.format);
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut out = Some(std::io::stdout().lock());
    let mut raw_error = None;
    let mut keep_raw = |bytes: &[u8]| {
        if raw_error.is_none() {
            if let Err(e) = raw.write_all(bytes).and_then(|()| raw.flush()) {
                raw_error = Some(e);
            }
        }
    };
    let mut reader = LineReader::default();
    while let Some(piece) = reader
        .next(&mut input)
        .map_err(|e| Error::io(std::path::Path::new("<stdin>"), e))?
    {
        match piece {
            Piece::Part(bytes) => keep_raw(bytes),
            Piece::Line(bytes) => {
                keep_raw(bytes);
                let line = String::from_utf8_lossy(bytes);
                let text = renderer.line(line.trim_end_matches(['\n', '\r']));
                show(&mut out, &text);
            }
            Piece::LongLineEnd(bytes, total) => {
                keep_raw(bytes);
                show(
                    &mut out,
                    &format!("[crewmux: an output line of {total} bytes is not shown]\n"),
                );
            }
        }
    }
    show(&mut out, &renderer.finish());
    match raw_error {
        Some(e) => Err(Error::io(&args.raw, e)),
        None => Ok(0),
    }
}

/// Print and flush `text`; after a failed write (the pane is gone) print nothing more.
fn show(out: &mut Option<std::io::StdoutLock<'_>>, text: &str) {
    if text.is_empty() {
        return;
    }
    if let Some(o) = out {
        if o.write_all(text.as_bytes())
            .and_then(|()| o.flush())
            .is_err()
        {
            *out = None;
        }
    }
}

/// The longest line held in memory to be rendered, bytes; a longer one is copied to the raw
/// file in pieces and named in the pane by its size (a JSON event that long is not a
/// message a person reads, and holding it whole would cost its size in memory).
pub const LINE_MAX_BYTES: usize = 8 << 20;

/// What [`LineReader::next`] read.
enum Piece<'a> {
    /// A whole line (with its `\n` when it had one) of at most [`LINE_MAX_BYTES`].
    Line(&'a [u8]),
    /// A piece of a line longer than [`LINE_MAX_BYTES`].
    Part(&'a [u8]),
    /// The last piece of a long line, and the line's length in bytes.
    LongLineEnd(&'a [u8], u64),
}

/// Lines of a reader with at most [`LINE_MAX_BYTES`] held at once.
#[derive(Default)]
struct LineReader {
    buf: Vec<u8>,
    /// Bytes of the current line already handed out as parts (0: not a long line).
    handed: u64,
}

impl LineReader {
    /// The next piece, `None` at the end of `input`.
    fn next(&mut self, input: &mut impl std::io::BufRead) -> std::io::Result<Option<Piece<'_>>> {
        self.buf.clear();
        loop {
            let avail = match input.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if avail.is_empty() {
                return Ok(self.end_piece());
            }
            let room = LINE_MAX_BYTES - self.buf.len();
            let (take, done) = match avail.iter().take(room).position(|&b| b == b'\n') {
                Some(i) => (i + 1, true),
                None => (avail.len().min(room), false),
            };
            self.buf.extend_from_slice(&avail[..take]);
            input.consume(take);
            if done {
                return Ok(self.end_piece());
            }
            if self.buf.len() == LINE_MAX_BYTES {
                self.handed += self.buf.len() as u64;
                return Ok(Some(Piece::Part(&self.buf)));
            }
        }
    }

    /// The line read so far as the end of a line (`None` when nothing was read).
    fn end_piece(&mut self) -> Option<Piece<'_>> {
        if self.handed > 0 {
            let total = self.handed + self.buf.len() as u64;
            self.handed = 0;
            return Some(Piece::LongLineEnd(&self.buf, total));
        }
        (!self.buf.is_empty()).then_some(Piece::Line(&self.buf))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(input: &[u8]) -> Vec<String> {
        let mut r = LineReader::default();
        let mut input = std::io::BufReader::with_capacity(4096, input);
        let mut out = vec![];
        while let Some(p) = r.next(&mut input).unwrap() {
            out.push(match p {
                Piece::Line(b) => format!("line {}", b.len()),
                Piece::Part(b) => format!("part {}", b.len()),
                Piece::LongLineEnd(b, total) => format!("end {} of {total}", b.len()),
            });
        }
        out
    }

    #[test]
    fn lines_come_whole_and_a_line_over_the_cap_comes_in_pieces() {
        assert_eq!(pieces(b"a\nbc\nlast"), ["line 2", "line 3", "line 4"]);
        let mut long = vec![b'x'; 2 * LINE_MAX_BYTES + 5];
        long.extend_from_slice(b"\nnext\n");
        let want = [
            format!("part {LINE_MAX_BYTES}"),
            format!("part {LINE_MAX_BYTES}"),
            format!("end 6 of {}", 2 * LINE_MAX_BYTES + 6),
            "line 5".to_string(),
        ];
        assert_eq!(pieces(&long), want);
    }
}
