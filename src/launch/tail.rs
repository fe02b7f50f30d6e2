//! Reading what an attempt printed with bounded memory, whatever it printed: one 1 GB line,
//! a progress bar redrawn with `\r` a million times, or an endless stream. The reader keeps
//! the last `keep_bytes` of whole lines, and of a line longer than `line_bytes` only its last
//! `line_bytes` (said in the line); of a `\r`-redrawn line only the last frame, as a terminal
//! shows it. Memory is about `keep_bytes + 2 × line_bytes` plus one 64 KiB read buffer.

use std::collections::VecDeque;
use std::io::Read;
use std::path::Path;

/// The end of a text, with what was left out.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Tail {
    /// The kept lines, joined with `\n` (lossy UTF-8); a line cut at its start begins with
    /// `[… N bytes of this line cut] `.
    pub text: String,
    /// Bytes of the input in lines (or parts of lines) that are not in `text`; frames a
    /// `\r` redrew are not counted (a terminal would not show them either).
    pub cut_bytes: u64,
    /// Bytes read.
    pub total_bytes: u64,
}

/// The tail of `reader` (see the module doc).
///
/// # Errors
/// A read error of `reader`.
pub fn tail_of_reader(
    mut reader: impl Read,
    keep_bytes: usize,
    line_bytes: usize,
) -> std::io::Result<Tail> {
    let mut t = Tailer::new(keep_bytes, line_bytes.max(1));
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        t.feed(&buf[..n]);
    }
    Ok(t.finish())
}

/// The tail of the file at `path` (see the module doc).
///
/// # Errors
/// The file cannot be opened or read.
pub fn tail_of_file(path: &Path, keep_bytes: usize, line_bytes: usize) -> std::io::Result<Tail> {
    tail_of_reader(std::fs::File::open(path)?, keep_bytes, line_bytes)
}

/// At most the first `max_bytes` of the file at `path` (lossy UTF-8, cut at a line end when
/// there is one in the last quarter), and when it is longer a last line saying how much more
/// there is and where. For documents (a result, a report) whose start matters most.
///
/// # Errors
/// The file cannot be opened or read.
pub fn head_of_file(path: &Path, max_bytes: usize) -> std::io::Result<String> {
    let mut f = std::fs::File::open(path)?;
    let total = f.metadata()?.len();
    let mut buf = Vec::with_capacity(max_bytes.min(total as usize));
    f.by_ref().take(max_bytes as u64).read_to_end(&mut buf)?;
    if (buf.len() as u64) < total {
        if let Some(nl) = buf.iter().rposition(|&b| b == b'\n') {
            if nl >= buf.len() - buf.len() / 4 {
                buf.truncate(nl + 1);
            }
        }
        let mut text = String::from_utf8_lossy(&buf).into_owned();
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!(
            "[… cut: the other {} of {total} bytes are in {}]\n",
            total - buf.len() as u64,
            path.display()
        ));
        return Ok(text);
    }
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// The most of a document (a worker's result file) read into memory, bytes: the critics,
/// the report and a downstream's prompt see its start, and a line says where the rest is.
pub const DOCUMENT_BYTES: usize = 1 << 20;

/// [`head_of_file`] with [`DOCUMENT_BYTES`]: how a worker's result file is read.
///
/// # Errors
/// The file cannot be opened or read.
pub fn read_document(path: &Path) -> std::io::Result<String> {
    head_of_file(path, DOCUMENT_BYTES)
}

struct Tailer {
    keep_bytes: usize,
    line_bytes: usize,
    lines: VecDeque<Vec<u8>>,
    kept: usize,
    cur: Vec<u8>,
    /// Bytes cut from the front of `cur`.
    cur_cut: u64,
    /// A `\r` was read and the next byte decides: `\n` ends the line, anything else starts
    /// a new frame of it.
    pending_cr: bool,
    cut: u64,
    total: u64,
}

impl Tailer {
    fn new(keep_bytes: usize, line_bytes: usize) -> Self {
        Tailer {
            keep_bytes,
            line_bytes,
            lines: VecDeque::new(),
            kept: 0,
            cur: Vec::new(),
            cur_cut: 0,
            pending_cr: false,
            cut: 0,
            total: 0,
        }
    }

    fn feed(&mut self, bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let mut rest = bytes;
        while !rest.is_empty() {
            if self.pending_cr {
                self.pending_cr = false;
                if rest[0] != b'\n' {
                    // A redraw: the frame so far is replaced (and not counted as cut).
                    self.cur.clear();
                    self.cut -= self.cur_cut;
                    self.cur_cut = 0;
                }
            }
            match rest.iter().position(|&b| b == b'\n' || b == b'\r') {
                None => {
                    self.push_bytes(rest);
                    rest = &[];
                }
                Some(i) => {
                    self.push_bytes(&rest[..i]);
                    if rest[i] == b'\n' {
                        self.end_line();
                    } else {
                        self.pending_cr = true;
                    }
                    rest = &rest[i + 1..];
                }
            }
        }
    }

    fn push_bytes(&mut self, b: &[u8]) {
        self.cur.extend_from_slice(b);
        if self.cur.len() > 2 * self.line_bytes {
            self.trim_line();
        }
    }

    /// Keep the last `line_bytes` of the current line.
    fn trim_line(&mut self) {
        if self.cur.len() > self.line_bytes {
            let drop = self.cur.len() - self.line_bytes;
            self.cur.drain(..drop);
            self.cur_cut += drop as u64;
            self.cut += drop as u64;
        }
    }

    fn end_line(&mut self) {
        self.trim_line();
        let mut line = std::mem::take(&mut self.cur);
        if self.cur_cut > 0 {
            let mut marked = format!("[… {} bytes of this line cut] ", self.cur_cut).into_bytes();
            marked.append(&mut line);
            line = marked;
        }
        self.cur_cut = 0;
        self.kept += line.len() + 1;
        self.lines.push_back(line);
        while self.kept > self.keep_bytes && self.lines.len() > 1 {
            if let Some(old) = self.lines.pop_front() {
                self.kept -= old.len() + 1;
                self.cut += old.len() as u64 + 1;
            }
        }
    }

    fn finish(mut self) -> Tail {
        if !self.cur.is_empty() {
            self.end_line();
        }
        let mut bytes = Vec::with_capacity(self.kept);
        for (i, l) in self.lines.iter().enumerate() {
            if i > 0 {
                bytes.push(b'\n');
            }
            bytes.extend_from_slice(l);
        }
        Tail {
            text: String::from_utf8_lossy(&bytes).into_owned(),
            cut_bytes: self.cut,
            total_bytes: self.total,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tail(input: &[u8], keep: usize, line: usize) -> Tail {
        tail_of_reader(input, keep, line).unwrap()
    }

    #[test]
    fn short_text_is_kept_whole() {
        let t = tail(b"one\ntwo\n", 100, 100);
        assert_eq!(t.text, "one\ntwo");
        assert_eq!((t.cut_bytes, t.total_bytes), (0, 8));
    }

    #[test]
    fn only_the_last_frame_of_a_redrawn_line_is_kept() {
        let t = tail(b"start\n 10%\r 50%\r100%\r\ndone\r\n", 100, 100);
        assert_eq!(t.text, "start\n100%\ndone");
        let t = tail(b"a\rb", 100, 100);
        assert_eq!(t.text, "b");
        // A `\r` at the end of one read and `\n` at the start of the next is one line end.
        let mut tl = Tailer::new(100, 100);
        tl.feed(b"x 1\r");
        tl.feed(b"\ny 2");
        assert_eq!(tl.finish().text, "x 1\ny 2");
    }

    #[test]
    fn a_huge_line_keeps_its_end_and_says_the_cut() {
        let mut input = vec![b'x'; 10_000];
        input.extend_from_slice(b"END\n");
        let t = tail(&input, 1000, 100);
        assert!(
            t.text.starts_with("[… 9903 bytes of this line cut] "),
            "{}",
            &t.text[..40]
        );
        assert!(t.text.ends_with("xxEND"));
        assert_eq!(t.cut_bytes, 9903);
    }

    #[test]
    fn old_lines_go_first_and_are_counted() {
        let input: Vec<u8> = (0..100)
            .flat_map(|i| format!("line {i:03}\n").into_bytes())
            .collect();
        let t = tail(&input, 50, 100);
        assert_eq!(t.text, "line 095\nline 096\nline 097\nline 098\nline 099");
        assert_eq!(t.cut_bytes, 95 * 9);
        assert_eq!(t.total_bytes, 900);
    }

    #[test]
    fn a_long_stream_read_in_pieces_stays_bounded() {
        // 64 MiB on one line, fed through the reader: the kept text stays at the line cap.
        struct Zeros(u64);
        impl Read for Zeros {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                let n = (buf.len() as u64).min(self.0) as usize;
                buf[..n].fill(b'z');
                self.0 -= n as u64;
                Ok(n)
            }
        }
        let t = tail_of_reader(Zeros(64 << 20), 4096, 1024).unwrap();
        assert!(t.text.len() < 1100, "{}", t.text.len());
        assert_eq!(t.total_bytes, 64 << 20);
        assert_eq!(t.cut_bytes, (64 << 20) - 1024);
    }

    #[test]
    fn the_head_of_a_long_document_says_where_the_rest_is() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("result.md");
        std::fs::write(&p, "# title\nbody line\nmore\n").unwrap();
        assert_eq!(head_of_file(&p, 100).unwrap(), "# title\nbody line\nmore\n");
        let h = head_of_file(&p, 20).unwrap();
        assert!(
            h.starts_with("# title\nbody line\n[… cut: the other 5 of 23 bytes are in "),
            "{h}"
        );
    }
}
