//! What an agent CLI's output says once it has ended: its final answer (the result) and the
//! tokens and cost it reports, read from the CLI's structured output where the provider
//! asks for one (`output` in providers.toml), else the tail of its text output without the
//! lines its `noise_patterns` name. `output.log` itself is never changed.
//!
//! Formats, as the CLIs print them (versions in assets/providers.toml):
//! * `codex-json` (`codex exec --json`): one JSON event a line; each `turn.completed` has
//!   `usage.input_tokens` / `usage.output_tokens`; the answer is the last `item.completed`
//!   whose item is an `agent_message` (codex also writes it to `--output-last-message`).
//!   No cost is reported.
//! * `claude-json` (`claude -p --output-format stream-json --verbose`, or `json`): the last
//!   object with `"type": "result"` has `result`, `total_cost_usd` and `usage`
//!   (`input_tokens` + `cache_creation_input_tokens` + `cache_read_input_tokens`,
//!   `output_tokens`).
//! * `gemini-json` (`gemini --output-format stream-json`): `message` events with
//!   `role: "assistant"` carry the answer in pieces (a `tool_use` starts it over, as gemini's
//!   own `json` output does); the `result` event's `stats` has `input_tokens` and
//!   `output_tokens`. The single-object `json` output (`response`, `stats.models.*.tokens`)
//!   is read too. No cost is reported.

use std::path::Path;

use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How a provider's CLI prints its work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum OutputFormat {
    /// Plain text: the result is the output's tail without noise lines; no usage.
    #[default]
    Text,
    CodexJson,
    ClaudeJson,
    GeminiJson,
}

/// Tokens and cost of one attempt (or a sum of them), as the CLI reported them.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// US dollars, when the CLI reports a cost (claude does).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

impl Usage {
    /// Add `other` (a cost stays `None` only when both are).
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cost_usd = match (self.cost_usd, other.cost_usd) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
        };
    }

    /// `12.3k in / 4.1k out, $0.42` (the cost only when known; see [`dollars`]).
    pub fn short(&self) -> String {
        let mut s = format!(
            "{} in / {} out",
            tokens(self.input_tokens),
            tokens(self.output_tokens)
        );
        if let Some(c) = self.cost_usd {
            s.push_str(&format!(", {}", dollars(c)));
        }
        s
    }
}

/// `$0.42`; a cost under a cent keeps four decimals (`$0.0046`) rather than read `$0.00`.
pub fn dollars(c: f64) -> String {
    if c > 0.0 && c < 0.01 {
        format!("${c:.4}")
    } else {
        format!("${c:.2}")
    }
}

/// `950`, `12.3k`, `4.1M`.
pub fn tokens(n: u64) -> String {
    match n {
        0..=999 => n.to_string(),
        1_000..=999_999 => format!("{:.1}k", n as f64 / 1e3),
        _ => format!("{:.1}M", n as f64 / 1e6),
    }
}

/// File of an attempt's usage, beside `output.log`.
pub const USAGE_FILE: &str = "usage.json";
/// Lines of text output kept as a result when the CLI printed its answer.
pub const RESULT_TAIL_LINES: usize = 400;

/// What the output of one attempt says.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Extracted {
    /// The final answer, when the output has one.
    pub answer: Option<String>,
    pub usage: Option<Usage>,
}

/// Read `text` (the attempt's output, ANSI and crewmux's protocol lines removed) in
/// `format`.
pub fn extract(format: OutputFormat, text: &str) -> Extracted {
    match format {
        OutputFormat::Text => Extracted::default(),
        OutputFormat::CodexJson => codex(text),
        OutputFormat::ClaudeJson => claude(text),
        OutputFormat::GeminiJson => gemini(text),
    }
}

/// The agent CLI's own id of the conversation `text` (an attempt's output) belongs to, the
/// one its resume takes: Codex's `thread.started` `thread_id` (codex-cli 0.171.0 `exec
/// --json`), Claude Code's `session_id` on its events (2.1.197 `stream-json`: the
/// `system`/`init` event first), Gemini CLI's `init` event `session_id` (0.61.0
/// `stream-json`). `None` for text output or when no event names one.
pub fn session_id(format: OutputFormat, text: &str) -> Option<String> {
    let pick = |v: &Value, field: &str| {
        v.get(field)
            .and_then(Value::as_str)
            .filter(|s| !s.trim().is_empty())
            .map(str::to_string)
    };
    let kind = |v: &Value| v.get("type").and_then(Value::as_str).map(str::to_string);
    objects(text).iter().find_map(|v| match format {
        OutputFormat::Text => None,
        OutputFormat::CodexJson if kind(v).as_deref() == Some("thread.started") => {
            pick(v, "thread_id")
        }
        OutputFormat::ClaudeJson => pick(v, "session_id"),
        OutputFormat::GeminiJson if kind(v).as_deref() == Some("init") => pick(v, "session_id"),
        _ => None,
    })
}

/// The result text of an attempt: the structured answer, else the last
/// [`RESULT_TAIL_LINES`] lines that no `noise` pattern matches (JSON event lines of a
/// structured format are dropped too). `None` when nothing is left.
pub fn result_text(format: OutputFormat, noise: &[Regex], text: &str) -> Option<String> {
    if let Some(a) = extract(format, text)
        .answer
        .filter(|a| !a.trim().is_empty())
    {
        return Some(format!("{}\n", a.trim_end()));
    }
    let structured = format != OutputFormat::Text;
    let kept: Vec<&str> = text
        .lines()
        .filter(|l| !noise.iter().any(|r| r.is_match(l)))
        .filter(|l| !(structured && l.trim_start().starts_with('{')))
        .collect();
    let tail = kept[kept.len().saturating_sub(RESULT_TAIL_LINES)..].join("\n");
    (!tail.trim().is_empty()).then(|| format!("{}\n", tail.trim_end()))
}

/// Write `usage.json` in `attempt_dir` when `text` reports usage. Errors are logged only.
pub fn record_usage(format: OutputFormat, text: &str, attempt_dir: &Path) {
    let Some(u) = extract(format, text).usage else {
        return;
    };
    let path = attempt_dir.join(USAGE_FILE);
    match serde_json::to_vec(&u) {
        Ok(json) => {
            if let Err(e) = crate::store::write_atomic(&path, &json) {
                tracing::warn!("could not write {}: {e}", path.display());
            }
        }
        Err(e) => tracing::warn!("usage: {e}"),
    }
}

/// The usage of one attempt, if it reported any.
pub fn read_usage(attempt_dir: &Path) -> Option<Usage> {
    let text = std::fs::read_to_string(attempt_dir.join(USAGE_FILE)).ok()?;
    serde_json::from_str(&text).ok()
}

/// Every JSON object in `text`: one a line, or one spread over lines from a line that
/// starts with `{` (gemini's `json` output is pretty-printed).
fn objects(text: &str) -> Vec<Value> {
    let mut out = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i].trim_start();
        if l.starts_with('{') {
            if let Ok(v) = serde_json::from_str::<Value>(l) {
                out.push(v);
            } else {
                let rest = lines[i..].join("\n");
                let mut it = serde_json::Deserializer::from_str(&rest).into_iter::<Value>();
                if let Some(Ok(v)) = it.next() {
                    let used = rest[..it.byte_offset()].lines().count().max(1);
                    out.push(v);
                    i += used;
                    continue;
                }
            }
        }
        i += 1;
    }
    out
}

fn num(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

fn codex(text: &str) -> Extracted {
    let mut usage: Option<Usage> = None;
    let mut answer = None;
    for v in objects(text) {
        match v.get("type").and_then(Value::as_str) {
            Some("turn.completed") => {
                let u = &v["usage"];
                usage.get_or_insert_with(Usage::default).add(&Usage {
                    input_tokens: num(u, "input_tokens"),
                    output_tokens: num(u, "output_tokens"),
                    cost_usd: None,
                });
            }
            Some("item.completed") if v["item"]["type"] == "agent_message" => {
                answer = v["item"]["text"].as_str().map(str::to_string);
            }
            _ => {}
        }
    }
    Extracted { answer, usage }
}

fn claude(text: &str) -> Extracted {
    let Some(r) = objects(text)
        .into_iter()
        .rev()
        .find(|v| v.get("type").and_then(Value::as_str) == Some("result"))
    else {
        return Extracted::default();
    };
    let u = &r["usage"];
    let usage = Usage {
        input_tokens: num(u, "input_tokens")
            + num(u, "cache_creation_input_tokens")
            + num(u, "cache_read_input_tokens"),
        output_tokens: num(u, "output_tokens"),
        cost_usd: r.get("total_cost_usd").and_then(Value::as_f64),
    };
    let ok = r.get("is_error").and_then(Value::as_bool) != Some(true);
    Extracted {
        answer: r["result"].as_str().filter(|_| ok).map(str::to_string),
        usage: Some(usage),
    }
}

fn gemini(text: &str) -> Extracted {
    let mut answer = String::new();
    let mut seen_answer = false;
    let mut usage = None;
    for v in objects(text) {
        match v.get("type").and_then(Value::as_str) {
            Some("message") if v["role"] == "assistant" => {
                if let Some(c) = v["content"].as_str() {
                    if v.get("delta").and_then(Value::as_bool) != Some(true) {
                        answer.clear();
                    }
                    answer.push_str(c);
                    seen_answer = true;
                }
            }
            Some("tool_use") => answer.clear(),
            Some("result") => {
                let s = &v["stats"];
                usage = Some(Usage {
                    input_tokens: num(s, "input_tokens"),
                    output_tokens: num(s, "output_tokens"),
                    cost_usd: None,
                });
            }
            None if v.get("response").is_some() || v.get("stats").is_some() => {
                // The single-object `json` output.
                if let Some(r) = v["response"].as_str() {
                    answer = r.to_string();
                    seen_answer = true;
                }
                let mut u = Usage::default();
                if let Some(models) = v["stats"]["models"].as_object() {
                    for m in models.values() {
                        let t = &m["tokens"];
                        u.input_tokens += num(t, "prompt");
                        u.output_tokens += num(t, "candidates") + num(t, "thoughts");
                    }
                    usage = Some(u);
                }
            }
            _ => {}
        }
    }
    Extracted {
        answer: seen_answer.then_some(answer),
        usage,
    }
}

#[cfg(test)]
#[path = "output_tests.rs"]
mod tests;

/// Usage of every worker of a run (summed over its attempts, read from each attempt's
/// `usage.json` under `run_dir/workers/<id>/attempt-<n>/`) and of the whole run. Workers
/// whose CLI reported nothing are absent; the total is `None` when none reported.
pub fn run_usage(
    state: &crate::domain::RunState,
) -> (std::collections::BTreeMap<String, Usage>, Option<Usage>) {
    let mut per = std::collections::BTreeMap::new();
    let mut total: Option<Usage> = None;
    for w in &state.workers {
        let dir = state.run_dir.join("workers").join(&w.id);
        let mut sum: Option<Usage> = None;
        for n in 1..=w.attempt {
            if let Some(u) = read_usage(&dir.join(format!("attempt-{n}"))) {
                sum.get_or_insert_with(Usage::default).add(&u);
            }
        }
        if let Some(u) = sum {
            total.get_or_insert_with(Usage::default).add(&u);
            per.insert(w.id.clone(), u);
        }
    }
    (per, total)
}

/// The `## Usage` section of `report.md`: tokens and cost per worker and for the run, as
/// the CLIs reported them; "" when none did.
pub fn usage_markdown(state: &crate::domain::RunState) -> String {
    let (per, total) = run_usage(state);
    let Some(total) = total else {
        return String::new();
    };
    let cost = |u: &Usage| u.cost_usd.map_or("-".to_string(), |c| format!("${c:.4}"));
    let mut out = String::from(
        "\n## Usage\n\n| worker | provider | tokens in | tokens out | cost |\n| --- | --- | --- | --- | --- |\n",
    );
    for w in &state.workers {
        if let Some(u) = per.get(&w.id) {
            out.push_str(&format!(
                "| {} | {} | {} | {} | {} |\n",
                w.id,
                w.provider,
                u.input_tokens,
                u.output_tokens,
                cost(u)
            ));
        }
    }
    out.push_str(&format!(
        "| **run** | | {} | {} | {} |\n",
        total.input_tokens,
        total.output_tokens,
        cost(&total)
    ));
    out
}
