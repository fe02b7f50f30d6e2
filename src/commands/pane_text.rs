//! `crewmux pane-text` (hidden): the filter the launch wrapper puts after a CLI that prints
//! JSON events. Every line of stdin is copied as it is to `--raw` (the attempt's
//! `cli-events.jsonl`, read for the result and usage) and printed as readable text on stdout,
//! the pane (`providers::pane_text`). It reads to the end even when stdout is gone, so the
//! CLI never dies of a closed pipe and the raw events are all kept.

use std::io::{BufRead, Write};
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
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let n = input
            .read_until(b'\n', &mut buf)
            .map_err(|e| Error::io(std::path::Path::new("<stdin>"), e))?;
        if n == 0 {
            break;
        }
        if raw_error.is_none() {
            if let Err(e) = raw.write_all(&buf).and_then(|()| raw.flush()) {
                raw_error = Some(e);
            }
        }
        let line = String::from_utf8_lossy(&buf);
        let text = renderer.line(line.trim_end_matches(['\n', '\r']));
        show(&mut out, &text);
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
