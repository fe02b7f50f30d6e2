//! The main area's tabs: the selected worker's Output, Result (its `result.md`), Diff (its
//! worktree's change against the run's base) and Prompt (its `prompt.md`, what it was told),
//! and the run's Report (`report.md`) and Council (every finding of every critic). The chosen tab sticks while the selection moves between
//! workers. Documents are read by the app loop (never by draw) into a [`Doc`] of styled
//! lines, rendered from markdown once per change of the file.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use ratatui::style::Style;
use ratatui::text::{Line, Span};

use crate::domain::{RunState, WorkerState};

/// Bytes of a document read at most; a longer file is cut and says so on its last line.
pub const MAX_DOC_BYTES: u64 = 1024 * 1024;

/// A tab of the main area. Worker tabs show the selected worker; run tabs the whole run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Tab {
    #[default]
    Output,
    Result,
    Diff,
    Prompt,
    Report,
    Council,
}

impl Tab {
    /// Tab order; tab `n` (1-based) is `ALL[n - 1]`, as the keys `1`–`6` choose them.
    pub const ALL: [Tab; 6] = [
        Tab::Output,
        Tab::Result,
        Tab::Diff,
        Tab::Prompt,
        Tab::Report,
        Tab::Council,
    ];

    /// The tab's name in the tab strip.
    pub fn label(self) -> &'static str {
        match self {
            Tab::Output => "Output",
            Tab::Result => "Result",
            Tab::Diff => "Diff",
            Tab::Prompt => "Prompt",
            Tab::Report => "Report",
            Tab::Council => "Council",
        }
    }

    /// 1-based position, the key that selects it.
    pub fn number(self) -> usize {
        Tab::ALL.iter().position(|t| *t == self).unwrap_or(0) + 1
    }

    /// Tab `n` (1-based), if there is one.
    pub fn nth(n: usize) -> Option<Tab> {
        n.checked_sub(1).and_then(|i| Tab::ALL.get(i).copied())
    }

    /// The next (`forward`) or previous tab, wrapping around.
    pub fn cycle(self, forward: bool) -> Tab {
        let n = Tab::ALL.len();
        let i = self.number() - 1;
        Tab::ALL[if forward {
            (i + 1) % n
        } else {
            (i + n - 1) % n
        }]
    }

    /// The tab shows a document file (scrolled with `UiState::doc_scroll`).
    pub fn is_document(self) -> bool {
        matches!(self, Tab::Result | Tab::Diff | Tab::Prompt | Tab::Report)
    }
}

/// A document as the dashboard shows it: the file it came from, the stamp it had when read
/// (to re-read it when it changes) and its lines, rendered once.
#[derive(Debug, Clone, PartialEq)]
pub struct Doc {
    pub path: PathBuf,
    /// Length in bytes and modification time when read; `None` when the file is missing.
    pub stamp: Option<(u64, SystemTime)>,
    pub lines: Vec<Line<'static>>,
    /// For a diff: the worker, attempt and status it was taken at (a new one is taken when
    /// they change, and every few seconds while the worker runs).
    pub diff_of: Option<String>,
    /// For a markdown file: its text, so the panel can lay out a table wider than itself
    /// as records ([`super::md_table`]); `lines` is the text as `tui-markdown` draws it.
    pub markdown: Option<String>,
}

/// Which file the main area shows: the jumped-to file if one is open, else the tab's
/// document for the selected worker or the run; `None` for Output and Council.
pub fn wanted_doc(
    tab: Tab,
    file: Option<&Path>,
    worker: Option<&WorkerState>,
    run_dir: &Path,
) -> Option<PathBuf> {
    if let Some(f) = file {
        return Some(f.to_path_buf());
    }
    let attempt = |w: &WorkerState| {
        run_dir
            .join("workers")
            .join(&w.id)
            .join(format!("attempt-{}", w.attempt))
    };
    match tab {
        Tab::Result => worker.map(|w| {
            w.result
                .clone()
                .unwrap_or_else(|| attempt(w).join("result.md"))
        }),
        Tab::Prompt => worker.map(|w| attempt(w).join("prompt.md")),
        Tab::Report => Some(run_dir.join("report.md")),
        Tab::Output | Tab::Council | Tab::Diff => None,
    }
}

/// The length and modification time of `path`, or `None` when it cannot be read.
pub fn stamp(path: &Path) -> Option<(u64, SystemTime)> {
    let m = std::fs::metadata(path).ok()?;
    Some((m.len(), m.modified().ok()?))
}

/// Read `path` (at most [`MAX_DOC_BYTES`]) into a [`Doc`]: markdown files (`.md`) rendered,
/// other files as plain lines; an attempt's `prompt.md` without the simulated agent's
/// `sim:` directives ([`crate::sim::without_directives`]). A missing file gives a one-line explanation naming it.
pub fn load(path: &Path) -> Doc {
    use std::io::Read;
    let stamp = stamp(path);
    let mut markdown = None;
    let lines = match std::fs::File::open(path) {
        Ok(f) => {
            let mut bytes = Vec::new();
            let read = f.take(MAX_DOC_BYTES).read_to_end(&mut bytes);
            let mut text = String::from_utf8_lossy(&bytes).into_owned();
            if let Err(e) = read {
                text.push_str(&format!("\n\n(reading stopped: {e})"));
            }
            // A prompt's `sim:` lines steer the simulated agent (its question, its default
            // answer): the person reads the prompt without them.
            if path.file_name().is_some_and(|n| n == "prompt.md") {
                text = crate::sim::without_directives(&text);
            }
            let cut = stamp.is_some_and(|(len, _)| len > MAX_DOC_BYTES);
            let is_md = path.extension().is_some_and(|e| e == "md");
            let mut lines = if is_md {
                markdown_lines(&text)
            } else {
                text.lines().map(|l| Line::from(l.to_string())).collect()
            };
            if cut {
                lines.push(Line::from(format!(
                    "… cut at {} KiB: open {} to read the rest",
                    MAX_DOC_BYTES / 1024,
                    path.display()
                )));
            }
            if is_md && !cut {
                markdown = Some(text);
            }
            lines
        }
        Err(_) => vec![Line::from(format!("{} does not exist yet", path.display()))],
    };
    Doc {
        path: path.to_path_buf(),
        stamp,
        lines,
        diff_of: None,
        markdown,
    }
}

/// Render markdown into owned styled lines (headings, emphasis, lists, code blocks, quotes)
/// with `tui-markdown` (pulldown-cmark underneath).
pub fn markdown_lines(text: &str) -> Vec<Line<'static>> {
    let rendered = tui_markdown::from_str(text);
    rendered
        .lines
        .into_iter()
        .map(|l| {
            let style: Style = l.style;
            Line::from(
                l.spans
                    .into_iter()
                    .map(|s| Span::styled(s.content.into_owned(), s.style))
                    .collect::<Vec<_>>(),
            )
            .style(style)
            .alignment(l.alignment.unwrap_or(ratatui::layout::Alignment::Left))
        })
        .collect()
}

/// One finding of the Council view: its critic and what it names that Enter can jump to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// Index into `council.verdicts`.
    pub verdict: usize,
    pub text: String,
    /// A worker of the run the finding names (a whole word equal to a worker id).
    pub worker: Option<String>,
    /// A file the finding names (a word with a `/` or an extension that exists under the
    /// project or the run directory), as an absolute path.
    pub file: Option<PathBuf>,
}

/// Every finding of every critic, in verdict order, each with the worker or file it names.
/// `exists` says whether a path is a file (the app passes the filesystem; tests a fake).
pub fn findings(run: &RunState, run_dir: &Path, exists: &dyn Fn(&Path) -> bool) -> Vec<Finding> {
    let mut out = Vec::new();
    for (i, v) in run.council.verdicts.iter().enumerate() {
        for f in &v.findings {
            out.push(Finding {
                verdict: i,
                text: f.clone(),
                worker: named_worker(run, f),
                file: named_file(f, &[&run.project_dir, run_dir], exists),
            });
        }
    }
    out
}

fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| c.is_whitespace() || matches!(c, '`' | '"' | '\'' | '(' | ')' | ',' | ';'))
        .map(|w| w.trim_end_matches(['.', ':', '!', '?']))
        .filter(|w| !w.is_empty())
}

fn named_worker(run: &RunState, text: &str) -> Option<String> {
    words(text).find_map(|w| run.worker(w).map(|x| x.id.clone()))
}

fn named_file(text: &str, roots: &[&Path], exists: &dyn Fn(&Path) -> bool) -> Option<PathBuf> {
    for w in words(text) {
        let w = w.split(':').next().unwrap_or(w);
        if !(w.contains('/') || w.contains('.')) || w.starts_with("http") {
            continue;
        }
        let p = Path::new(w);
        if p.is_absolute() && exists(p) {
            return Some(p.to_path_buf());
        }
        for root in roots {
            let full = root.join(p);
            if exists(&full) {
                return Some(full);
            }
        }
    }
    None
}

#[cfg(test)]
#[path = "tabs_tests.rs"]
mod tests;
