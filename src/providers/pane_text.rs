//! What a person sees of a CLI that prints JSON events (`output` other than `text`): each
//! event line as readable text, in the pane, in `output.log` and in the dashboard, while
//! the raw events are kept in the attempt's [`EVENTS_FILE`] for the result and usage
//! (`providers::output`). The launch wrapper pipes the CLI's stdout through
//! `crewmux pane-text`, which feeds every line to a [`Renderer`].
//!
//! What is shown: the agent's messages, its tool calls (one line each, cut to
//! [`TOOL_CHARS`]), errors and retries (whole, so stall and rate-limit patterns still match
//! them) and the closing usage line. Session set-up, echoed prompts and tool output bodies
//! are left out. A line that is not a JSON object is shown as it is.

use serde_json::Value;

use super::output::{OutputFormat, Usage};

/// File of an attempt's raw stdout when it was rendered, beside `output.log`.
pub const EVENTS_FILE: &str = "cli-events.jsonl";
/// Characters of a tool call or tool result shown.
pub const TOOL_CHARS: usize = 100;

/// Turns one CLI's event lines into text. Keeps the little state streaming needs: gemini
/// sends its answer in delta pieces, shown on one line until another event comes.
#[derive(Debug)]
pub struct Renderer {
    format: OutputFormat,
    /// A delta run is open (its text is on screen without its newline yet).
    open: bool,
}

impl Renderer {
    pub fn new(format: OutputFormat) -> Self {
        Renderer {
            format,
            open: false,
        }
    }

    /// The text to print for one line of the CLI's stdout (without its newline); ends with
    /// a newline unless a delta run stays open. "" when the line shows nothing.
    pub fn line(&mut self, line: &str) -> String {
        let parsed = line
            .trim_start()
            .starts_with('{')
            .then(|| serde_json::from_str::<Value>(line).ok())
            .flatten();
        let Some(v) = parsed else {
            return self.close_then(format!("{line}\n"));
        };
        let shown = match self.format {
            OutputFormat::Text => Shown::Lines(vec![line.to_string()]),
            OutputFormat::CodexJson => codex(&v),
            OutputFormat::ClaudeJson => claude(&v),
            OutputFormat::GeminiJson => gemini(&v),
        };
        match shown {
            Shown::Nothing => String::new(),
            Shown::Delta(piece) => {
                self.open = true;
                piece
            }
            Shown::Lines(lines) if lines.is_empty() => String::new(),
            Shown::Lines(lines) => self.close_then(lines.join("\n") + "\n"),
        }
    }

    /// What to print at the end of the stream: the newline of an open delta run.
    pub fn finish(&mut self) -> String {
        self.close_then(String::new())
    }

    fn close_then(&mut self, text: String) -> String {
        if std::mem::take(&mut self.open) {
            format!("\n{text}")
        } else {
            text
        }
    }
}

enum Shown {
    Nothing,
    /// A piece of a message streamed in parts.
    Delta(String),
    Lines(Vec<String>),
}

fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// One line, cut to [`TOOL_CHARS`] characters.
fn cut(text: &str) -> String {
    let one = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match one.char_indices().nth(TOOL_CHARS) {
        Some((i, _)) => format!("{}…", &one[..i]),
        None => one,
    }
}

/// The most telling argument of a tool call: a command, path, pattern or URL, else the
/// whole input as JSON.
fn tool_arg(input: &Value) -> String {
    [
        "command",
        "file_path",
        "path",
        "absolute_path",
        "pattern",
        "url",
        "query",
        "description",
    ]
    .iter()
    .find_map(|k| input.get(*k).and_then(Value::as_str))
    .map_or_else(|| input.to_string(), str::to_string)
}

fn usage_line(u: &Usage) -> String {
    format!("── {}", u.short())
}

fn codex(v: &Value) -> Shown {
    let item = &v["item"];
    match (s(v, "type"), s(item, "type")) {
        ("item.completed", "agent_message") => Shown::Lines(vec![s(item, "text").to_string()]),
        ("item.completed", "reasoning") => {
            Shown::Lines(vec![format!("· {}", cut(s(item, "text")))])
        }
        ("item.started", "command_execution") => {
            Shown::Lines(vec![format!("$ {}", cut(s(item, "command")))])
        }
        ("item.completed", "command_execution") => match item["exit_code"].as_i64() {
            Some(0) | None => Shown::Nothing,
            Some(c) => Shown::Lines(vec![format!("  exit {c}")]),
        },
        ("item.completed", "file_change") => Shown::Lines(
            item["changes"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| format!("✎ {} {}", s(c, "kind"), s(c, "path")))
                .collect(),
        ),
        ("item.completed", "mcp_tool_call") => {
            Shown::Lines(vec![format!("→ {}.{}", s(item, "server"), s(item, "tool"))])
        }
        ("item.completed", "web_search") => {
            Shown::Lines(vec![format!("→ search {}", cut(s(item, "query")))])
        }
        ("item.completed", "error") => Shown::Lines(vec![format!("error: {}", s(item, "message"))]),
        ("error", _) => Shown::Lines(vec![format!("error: {}", s(v, "message"))]),
        ("turn.failed", _) => Shown::Lines(vec![format!("error: {}", s(&v["error"], "message"))]),
        ("turn.completed", _) => {
            let u = &v["usage"];
            Shown::Lines(vec![usage_line(&Usage {
                input_tokens: u["input_tokens"].as_u64().unwrap_or(0),
                output_tokens: u["output_tokens"].as_u64().unwrap_or(0),
                cost_usd: None,
            })])
        }
        _ => Shown::Nothing,
    }
}

fn claude(v: &Value) -> Shown {
    match (s(v, "type"), s(v, "subtype")) {
        ("assistant", _) => Shown::Lines(
            v["message"]["content"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|block| match s(block, "type") {
                    "text" => Some(s(block, "text").to_string()),
                    "tool_use" => Some(format!(
                        "→ {}: {}",
                        s(block, "name"),
                        cut(&tool_arg(&block["input"]))
                    )),
                    _ => None,
                })
                .collect(),
        ),
        ("user", _) => Shown::Lines(
            v["message"]["content"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|b| s(b, "type") == "tool_result" && b["is_error"] == true)
                .map(|b| format!("  failed: {}", cut(&content_text(&b["content"]))))
                .collect(),
        ),
        ("system", "api_retry") => Shown::Lines(vec![format!(
            "retrying the API (attempt {}/{}): {}",
            v["attempt"],
            v["max_retries"],
            v.get("error").map_or(String::new(), |e| e
                .as_str()
                .map_or(e.to_string(), str::to_string))
        )]),
        ("result", _) => {
            let extracted = super::output::extract(OutputFormat::ClaudeJson, &v.to_string());
            let mut lines = Vec::new();
            if v["is_error"] == true {
                lines.push(format!("error: {}", s(v, "result")));
            }
            if let Some(u) = extracted.usage {
                lines.push(usage_line(&u));
            }
            Shown::Lines(lines)
        }
        _ => Shown::Nothing,
    }
}

fn content_text(c: &Value) -> String {
    match c {
        Value::String(t) => t.clone(),
        Value::Array(parts) => parts
            .iter()
            .map(|p| s(p, "text"))
            .collect::<Vec<_>>()
            .join(" "),
        other => other.to_string(),
    }
}

fn gemini(v: &Value) -> Shown {
    match s(v, "type") {
        "message" if s(v, "role") == "assistant" => {
            if v["delta"] == true {
                Shown::Delta(s(v, "content").to_string())
            } else {
                Shown::Lines(vec![s(v, "content").to_string()])
            }
        }
        "tool_use" => Shown::Lines(vec![format!(
            "→ {}: {}",
            s(v, "tool_name"),
            cut(&tool_arg(&v["parameters"]))
        )]),
        "tool_result" if s(v, "status") != "success" => Shown::Lines(vec![format!(
            "  failed: {}",
            cut(&v["error"]
                .get("message")
                .and_then(Value::as_str)
                .map_or_else(|| v["error"].to_string(), str::to_string))
        )]),
        "error" => Shown::Lines(vec![format!("error: {}", s(v, "message"))]),
        "result" => {
            let mut lines = Vec::new();
            if s(v, "status") == "error" {
                lines.push(format!("error: {}", s(&v["error"], "message")));
            }
            let st = &v["stats"];
            lines.push(usage_line(&Usage {
                input_tokens: st["input_tokens"].as_u64().unwrap_or(0),
                output_tokens: st["output_tokens"].as_u64().unwrap_or(0),
                cost_usd: None,
            }));
            Shown::Lines(lines)
        }
        _ => Shown::Nothing,
    }
}

#[cfg(test)]
#[path = "pane_text_tests.rs"]
mod tests;
