//! The simulated agent's behaviour (flags + prompt directives) and its deterministic script.

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;

use super::SimAgentArgs;

/// The sim agent's resolved behaviour.
#[derive(Debug, Clone, PartialEq)]
pub struct Behaviour {
    pub role: String,
    pub seed: u64,
    pub lines: u32,
    /// Delay between lines, ms.
    pub delay_ms: u64,
    pub exit_code: i32,
    pub fail_first: bool,
    pub ask: Option<String>,
    pub ask_default: Option<String>,
    /// Seconds to wait for an answer.
    pub ask_timeout_s: u64,
    pub fail_with: Option<String>,
    pub no_result: bool,
}

impl Behaviour {
    /// Flags first, then every `sim: key[=value]` line of the prompt overrides them.
    pub fn from_args_and_prompt(args: &SimAgentArgs, prompt: &str) -> Self {
        let mut b = Behaviour {
            role: role_of(prompt),
            seed: args.seed,
            lines: args.lines,
            delay_ms: args.line_delay_ms,
            exit_code: args.exit_code,
            fail_first: args.fail_first,
            ask: args.ask.clone(),
            ask_default: args.ask_default.clone(),
            ask_timeout_s: args.ask_timeout,
            fail_with: args.fail_with.clone(),
            no_result: args.no_result,
        };
        for line in prompt.lines() {
            let Some(rest) = super::directive(line) else {
                continue;
            };
            let rest = rest.trim();
            let (key, value) = match rest.split_once('=') {
                Some((k, v)) => (k.trim(), Some(v.trim().to_string())),
                None => (rest, None),
            };
            let num = |v: &Option<String>| v.as_deref().and_then(|s| s.parse::<u64>().ok());
            match key {
                "lines" => b.lines = num(&value).map(|n| n as u32).unwrap_or(b.lines),
                "delay-ms" => b.delay_ms = num(&value).unwrap_or(b.delay_ms),
                "exit" => {
                    b.exit_code = value
                        .as_deref()
                        .and_then(|s| s.parse().ok())
                        .unwrap_or(b.exit_code)
                }
                "fail-first" => b.fail_first = true,
                "ask" => b.ask = value,
                "ask-default" => b.ask_default = value,
                "ask-timeout" => b.ask_timeout_s = num(&value).unwrap_or(b.ask_timeout_s),
                "fail-with" => b.fail_with = value,
                "no-result" => b.no_result = true,
                "seed" => b.seed = num(&value).unwrap_or(b.seed),
                _ => {}
            }
        }
        b
    }
}

/// Who the agent is: a `Role:` line of the prompt, else the worker id crewmux gives it
/// (`$CREWMUX_WORKER`), else `agent`.
fn role_of(prompt: &str) -> String {
    prompt
        .lines()
        .find_map(|l| l.trim().strip_prefix("Role:").map(|r| r.trim().to_string()))
        .filter(|r| !r.is_empty())
        .or_else(|| {
            std::env::var("CREWMUX_WORKER")
                .ok()
                .filter(|w| !w.is_empty())
        })
        .unwrap_or_else(|| "agent".to_string())
}

const STEPS: &[&str] = &[
    "reading the project layout",
    "scanning the build files",
    "mapping the modules that the task touches",
    "listing the public entry points",
    "tracing the data flow through the request path",
    "checking error handling on the failure paths",
    "reviewing the test suite for gaps",
    "drafting the change plan",
    "estimating the blast radius of each step",
    "cross-checking assumptions against the code",
    "ordering the steps by dependency",
    "writing down the verification commands",
    "summarising risks and open questions",
    "preparing the result",
];

/// The progress lines: `lines` entries from a fixed bank, shuffled by the seed and the
/// prompt so that every worker streams a different but repeatable script.
pub fn progress_lines(b: &Behaviour, prompt: &str) -> Vec<String> {
    let mut rng = StdRng::seed_from_u64(b.seed ^ fnv(prompt));
    let mut bank: Vec<&str> = STEPS.to_vec();
    bank.shuffle(&mut rng);
    (0..b.lines as usize)
        .map(|i| {
            let step = bank[i % bank.len()];
            format!("[{:>2}/{}] {}: {step}", i + 1, b.lines, b.role)
        })
        .collect()
}

fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf29ce484222325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100000001b3)
    })
}

/// What the sim agent saw of its working directory: a few real file names and the
/// verification command its build files imply (none when it found no build file), so that
/// its result cites only things that exist.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProjectFacts {
    pub files: Vec<String>,
    pub verify: Option<String>,
}

impl ProjectFacts {
    /// Look at `dir`: up to three top-level files, sorted, and the verify command of the
    /// first build file found (`Cargo.toml` → `cargo check`, `package.json` → `npm test`,
    /// `pyproject.toml` → `pytest`, `go.mod` → `go build ./...`, `Makefile` → `make`).
    pub fn scan(dir: &std::path::Path) -> Self {
        let mut files: Vec<String> = std::fs::read_dir(dir)
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .filter(|e| e.file_type().map(|t| t.is_file()).unwrap_or(false))
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| !n.starts_with('.') && n.contains('.'))
                    .collect()
            })
            .unwrap_or_default();
        files.sort();
        files.truncate(3);
        let verify = [
            ("Cargo.toml", "cargo check"),
            ("package.json", "npm test"),
            ("pyproject.toml", "pytest"),
            ("go.mod", "go build ./..."),
            ("Makefile", "make"),
        ]
        .iter()
        .find(|(f, _)| dir.join(f).exists())
        .map(|(_, c)| c.to_string());
        ProjectFacts { files, verify }
    }
}

/// The result file's markdown: summary, evidence (only files and commands that exist), an
/// outline of the plan, the answer (if asked), next steps.
pub fn result_markdown(
    b: &Behaviour,
    prompt: &str,
    answer: Option<&str>,
    facts: &ProjectFacts,
) -> String {
    let task = prompt
        .lines()
        .skip_while(|l| !l.starts_with("Task:"))
        .map(|l| l.trim_start_matches("Task:").trim())
        .find(|l| !l.is_empty())
        .unwrap_or("the task");
    let mut md = format!(
        "# {} result\n\n## Summary\n\nAnalysed {task}. The plan below is ordered by dependency; \
         each step says how to check it.\n\n## Evidence\n\n- Read the prompt ({} bytes)\n",
        b.role,
        prompt.len(),
    );
    for f in &facts.files {
        md.push_str(&format!("- Read `{f}`\n"));
    }
    if let Some(c) = &facts.verify {
        md.push_str(&format!("- Verify with `{c}`\n"));
    }
    md.push_str(&format!(
        "\n## Outline\n\n```text\n1. map what the change touches ({} steps reviewed)\n\
         2. make the change behind a flag\n3. check it, then review it with the security track\n```\n",
        b.lines
    ));
    if let Some(a) = answer {
        md.push_str(&format!("\n## Clarification\n\nAnswer received: {a}\n"));
    }
    md.push_str("\n## Next steps\n\n1. Apply the outline in order.\n2. Re-run the checks.\n");
    md
}
