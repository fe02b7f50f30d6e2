//! The layer rule of the library, checked: a module may use modules of its own layer or
//! lower ones, never a higher one. The layers, lowest first:
//!
//! | layer | modules | holds |
//! | --- | --- | --- |
//! | 0 domain | `domain`, `error`, `text` | pure types of the field, the library's error, plain text |
//! | 1 engine | `engine` | the pure state machine of a run |
//! | 2 adapters | `backend`, `tmux`, `process`, `store`, `launch`, `providers`, `creds`, `team`, `clarification`, `council`, `logging`, `workspace`, `hosts`, `mcp`, `notify`, `sandbox` | files, processes, tmux, agent CLIs, team files, the clarification gate and waiting detection, the council's critics and report, git worktrees, SSH hosts, the agents' MCP server, notifications, the fence's bwrap argv |
//! | 3 lead | `lead`, `dashboard` | the run's lead (the loop joining engine and adapters) and the dashboard's side of a run (following the lead from its files, sending requests) |
//! | 4 edge | `cli`, `cli_error`, `cli_limits`, `cli_values`, `commands`, `tui`, `sim` | what the binary runs: flags, commands, the dashboard, the simulated agent |
//!
//! Two rules sit on top of the layers:
//! - The concrete multiplexers (`tmux`, `process`, and the `tmux_interface` crate) are reached
//!   through `backend::Multiplexer`; only the modules that build a backend name them.
//! - Only `commands` builds a `Driver` (`Driver::new`): the dashboard gets a running driver.
//!
//! [`ALLOWED`] lists the known exceptions, each with the reason and the change that removes
//! it; an entry that no longer matches anything fails the check, so the list only shrinks.
//!
//! Paths are read from the source text: every `crate::name` and every name in a
//! `crate::{a, b::c}` group. `super::` paths are not read: name other top-level modules by
//! `crate::` paths.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;

static SINGLE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\bcrate::([a-z_][a-z0-9_]*)").expect("valid regex"));
static GROUP: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\bcrate::\{").expect("valid regex"));
static TMUX_INTERFACE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\btmux_interface::").expect("valid regex"));

/// Each top-level module of `src/` and its layer (0 = lowest).
const LAYERS: &[(&str, u8)] = &[
    ("domain", 0),
    ("error", 0),
    ("text", 0),
    ("engine", 1),
    ("backend", 2),
    ("tmux", 2),
    ("process", 2),
    ("store", 2),
    ("launch", 2),
    ("providers", 2),
    ("creds", 2),
    ("team", 2),
    ("clarification", 2),
    ("council", 2),
    ("logging", 2),
    ("workspace", 2),
    ("hosts", 2),
    ("mcp", 2),
    ("notify", 2),
    ("sandbox", 2),
    ("lead", 3),
    ("dashboard", 3),
    ("cli", 4),
    ("cli_error", 4),
    ("cli_limits", 4),
    ("cli_values", 4),
    ("commands", 4),
    ("config", 4),
    ("tui", 4),
    ("sim", 4),
];

const LAYER_NAMES: [&str; 5] = ["domain", "engine", "adapters", "lead", "edge"];

/// Targets reached only through `backend::Multiplexer`, and the files that may name them
/// (path prefixes under `src/`).
const SEALED: &[&str] = &["tmux", "process", "tmux_interface"];
const SEALED_USERS: &[&str] = &[
    "src/tmux/",
    "src/process/",
    "src/backend/",
    // Builds the backend of a run with workers on SSH hosts (tmux through ssh).
    "src/hosts/",
    // Builds the backend the person chose.
    "src/commands/drive.rs",
    // Probes for tmux to pick the default backend.
    "src/commands/plan.rs",
];

/// Files that may build a `Driver`.
const DRIVER_BUILDERS: &[&str] = &["src/lead/", "src/commands/"];

/// Known exceptions: (file, target, reason). Remove an entry with the change that fixes it.
const ALLOWED: &[(&str, &str, &str)] = &[];

fn layer(module: &str) -> Option<u8> {
    LAYERS.iter().find(|(m, _)| *m == module).map(|(_, l)| *l)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Source text without `//` comments (doc comments included), so prose cannot count.
fn code_of(text: &str) -> String {
    text.lines()
        .map(|l| l.find("//").map_or(l, |i| &l[..i]))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The top-level modules a source text names through `crate::`.
fn crate_targets(code: &str) -> BTreeSet<String> {
    let mut out: BTreeSet<String> = SINGLE
        .captures_iter(code)
        .map(|c| c[1].to_string())
        .collect();
    for m in GROUP.find_iter(code) {
        let mut depth = 1;
        let mut item = String::new();
        let mut items = Vec::new();
        for ch in code[m.end()..].chars() {
            match ch {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 1 => items.push(std::mem::take(&mut item)),
                _ => {}
            }
            if depth == 0 {
                items.push(std::mem::take(&mut item));
                break;
            }
            if depth == 1 && ch != ',' {
                item.push(ch);
            }
        }
        for it in items {
            let name: String = it
                .trim()
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() && name != "self" {
                out.insert(name);
            }
        }
    }
    out
}

/// One finding of the check: `file` uses `target` against `rule`.
struct Finding {
    file: String,
    target: String,
    rule: String,
}

fn findings_of(rel: &str, code: &str) -> Vec<Finding> {
    let mut out = Vec::new();
    let module = rel
        .trim_start_matches("src/")
        .trim_end_matches(".rs")
        .split('/')
        .next()
        .unwrap_or_default()
        .to_string();
    let mut push = |target: &str, rule: String| {
        out.push(Finding {
            file: rel.to_string(),
            target: target.to_string(),
            rule,
        })
    };
    let targets = crate_targets(code);
    if let Some(own) = layer(&module) {
        for t in &targets {
            match layer(t) {
                Some(l) if l > own => push(
                    t,
                    format!(
                        "layer {} ({}) uses layer {} ({})",
                        own, LAYER_NAMES[own as usize], l, LAYER_NAMES[l as usize]
                    ),
                ),
                // Not a module: an item at the crate root (an exported macro).
                Some(_) | None => {}
            }
        }
    }
    if !SEALED_USERS.iter().any(|p| rel.starts_with(p)) {
        for s in SEALED {
            let named = if *s == "tmux_interface" {
                TMUX_INTERFACE.is_match(code)
            } else {
                targets.contains(*s)
            };
            if named {
                push(
                    s,
                    "a concrete multiplexer outside backend::Multiplexer".into(),
                );
            }
        }
    }
    if !DRIVER_BUILDERS.iter().any(|p| rel.starts_with(p)) && code.contains("Driver::new(") {
        push("Driver::new", "only commands build a Driver".into());
    }
    out
}

#[test]
fn no_module_uses_a_higher_layer() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    files.sort();
    let mut bad = Vec::new();
    let mut used_allowances = BTreeSet::new();
    for path in &files {
        let rel = path
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .to_string();
        if rel == "src/lib.rs" || rel == "src/main.rs" {
            continue;
        }
        let module = rel.trim_start_matches("src/").trim_end_matches(".rs");
        let module = module.split('/').next().unwrap_or_default();
        assert!(
            layer(module).is_some(),
            "{rel}: module `{module}` has no layer: add it to LAYERS in {}",
            file!()
        );
        let code = code_of(&std::fs::read_to_string(path).unwrap());
        for f in findings_of(&rel, &code) {
            match ALLOWED
                .iter()
                .position(|(file, target, _)| *file == f.file && *target == f.target)
            {
                Some(i) => {
                    used_allowances.insert(i);
                }
                None => bad.push(format!("{}: uses `{}`: {}", f.file, f.target, f.rule)),
            }
        }
    }
    assert!(bad.is_empty(), "layer rule broken:\n{}", bad.join("\n"));
    let stale: Vec<String> = ALLOWED
        .iter()
        .enumerate()
        .filter(|(i, _)| !used_allowances.contains(i))
        .map(|(_, (file, target, _))| format!("{file} -> {target}"))
        .collect();
    assert!(
        stale.is_empty(),
        "fixed, so remove from ALLOWED in {}: {stale:?}",
        file!()
    );
}

#[test]
fn the_check_sees_single_and_grouped_paths_and_ignores_comments() {
    let code = code_of(
        "use crate::domain::Worker;\nuse crate::{engine::{a, b}, store};\n// crate::tui in prose\nlet x = crate::error::Error::Other;",
    );
    let t: Vec<String> = crate_targets(&code).into_iter().collect();
    assert_eq!(t, ["domain", "engine", "error", "store"]);
    let f = findings_of("src/engine/x.rs", "use crate::{domain, lead::Update};");
    assert_eq!(f.len(), 1);
    assert_eq!(
        (f[0].target.as_str(), f[0].file.as_str()),
        ("lead", "src/engine/x.rs")
    );
    let f = findings_of("src/tui/x.rs", "let c = tmux_interface::Tmux::new();");
    assert_eq!(f.len(), 1, "sealed multiplexer");
    assert!(findings_of("src/commands/drive.rs", "use crate::tmux::TmuxBackend;").is_empty());
}
