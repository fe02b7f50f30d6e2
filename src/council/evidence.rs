//! What a worker's result text cites as evidence: commands it ran, file paths it names,
//! test output and code blocks. Pure text scanning shared by the critics.
#![allow(
    clippy::expect_used,
    reason = "regex literals compiled once; a bad one fails every test of this module"
)]

use std::sync::LazyLock;

use regex::Regex;

/// File extensions that make a token a file path (source, build and doc files).
const EXTENSIONS: &[&str] = &[
    "rs", "py", "ts", "tsx", "js", "jsx", "mjs", "go", "java", "kt", "c", "h", "cc", "cpp", "hpp",
    "rb", "php", "cs", "swift", "toml", "yaml", "yml", "json", "md", "sh", "sql", "html", "css",
    "vue", "lock", "cfg", "ini", "txt", "proto", "gradle", "xml",
];

/// Tools whose invocation, at the start of a `$ ` line or a backticked span, is a command.
const TOOLS: &[&str] = &[
    "cargo", "npm", "npx", "pnpm", "yarn", "pytest", "python", "python3", "go", "make", "git",
    "node", "rustc", "ruff", "mypy", "tsc", "jest", "vitest", "bash", "sh", "uv", "pip", "just",
    "deno", "bun", "mvn", "gradle", "dotnet", "ctest", "cmake",
];

/// A line introduced as a proposal or a plan: paths on it may not exist yet.
static PROPOSAL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(?:will|would|should|could|might|may|propose[sd]?|suggest(?:s|ed)?|plan(?:s|ned)?|consider|e\.g\.|for example|such as|let's|needs? to|todo|new file|to be created|create an?|add an?|introduce)\b",
    )
    .expect("proposal regex compiles")
});

static URL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[a-zA-Z][a-zA-Z0-9+.-]*://\S+").expect("url regex compiles"));

static PATH_TOKEN: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[\w./@+*<>{}-]+").expect("path-token regex compiles"));

static LINE_SUFFIX: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?::\d+){1,2}$").expect("line-suffix regex compiles"));

static INLINE_CODE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"`([^`\n]+)`").expect("inline-code regex compiles"));

static TEST_OUTPUT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)test result:|\b\d+ (?:passed|failed|tests? (?:passed|ran|run))\b|\bran \d+ tests?\b|\btests? passed\b|\bexit(?:ed)? (?:code |status |with )?\d+|\b\d+ (?:warnings?|errors?)\b|^\s*(?:PASS|FAIL|ok)\b",
    )
    .expect("test-output regex compiles")
});

/// One file path named in a result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathMention {
    /// The path as written, with a `:line[:col]` suffix and `./` prefix removed.
    pub path: String,
    /// True when the line introduces it as something to create or a proposal.
    pub proposed: bool,
    /// True when it has a directory part (`src/x.rs`); a bare `x.rs` cannot be located.
    pub locatable: bool,
}

/// Everything a result cites.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Evidence {
    /// Commands it shows as run (`$ cargo test`, `` `npm run build` ``), in order.
    pub commands: Vec<String>,
    /// File paths it names, in order, without duplicates.
    pub paths: Vec<PathMention>,
    /// It quotes test or build output (`test result:`, `3 passed`, `exit code 0`).
    pub test_output: bool,
    /// It has a fenced code block.
    pub code_block: bool,
}

impl Evidence {
    /// True when the result cites anything a reviewer could check.
    pub fn any(&self) -> bool {
        !self.commands.is_empty() || !self.paths.is_empty() || self.test_output || self.code_block
    }
}

/// Scan a result text for evidence.
pub fn scan(text: &str) -> Evidence {
    let mut evidence = Evidence::default();
    let mut in_shell_block = false;
    for raw in text.lines() {
        let line = raw.trim_end_matches('\r');
        let trimmed = line.trim();
        if let Some(lang) = trimmed.strip_prefix("```") {
            evidence.code_block = true;
            in_shell_block = !in_shell_block
                && matches!(lang.trim(), "sh" | "bash" | "shell" | "console" | "zsh");
            continue;
        }
        if TEST_OUTPUT.is_match(line) {
            evidence.test_output = true;
        }
        if let Some(cmd) = trimmed.strip_prefix("$ ") {
            push_unique(&mut evidence.commands, cmd.trim());
        } else if in_shell_block && starts_with_tool(trimmed) {
            push_unique(&mut evidence.commands, trimmed);
        }
        for cap in INLINE_CODE.captures_iter(line) {
            let span = cap[1].trim();
            if starts_with_tool(span) {
                push_unique(&mut evidence.commands, span);
            }
        }
        let proposed = PROPOSAL.is_match(line);
        let without_urls = URL.replace_all(line, " ");
        for token in PATH_TOKEN.find_iter(&without_urls) {
            if let Some(mention) = path_mention(token.as_str(), proposed) {
                if !evidence.paths.iter().any(|p| p.path == mention.path) {
                    evidence.paths.push(mention);
                }
            }
        }
    }
    evidence
}

static CRATE_PATH: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\bcrate((?:::[a-z_][a-z0-9_]*)+)").expect("crate-path regex compiles")
});

/// Rust module paths a result names (`crate::store::atomic::write`) with the files that
/// would define their first module: `src/store.rs` or `src/store/mod.rs`. A module that
/// has neither is an invented API. Returns `(path as written, alternatives)`, deduplicated.
pub fn module_requirements(text: &str) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for cap in CRATE_PATH.captures_iter(text) {
        let Some(first) = cap[1].trim_start_matches("::").split("::").next() else {
            continue;
        };
        let written = format!("crate{}", &cap[1]);
        let alternatives = vec![format!("src/{first}.rs"), format!("src/{first}/mod.rs")];
        if !out.iter().any(|(_, alt)| *alt == alternatives) {
            out.push((written, alternatives));
        }
    }
    out
}

/// The relative paths a command needs (its project manifest and any path arguments),
/// e.g. `cargo test --test api` → `Cargo.toml`, `tests/api.rs`. Each entry lists
/// alternatives: the requirement holds when any one exists.
pub fn command_requirements(command: &str) -> Vec<Vec<String>> {
    let argv: Vec<&str> = command.split_whitespace().collect();
    let Some(tool) = argv.first() else {
        return Vec::new();
    };
    let mut needs: Vec<Vec<String>> = Vec::new();
    let one = |p: &str| vec![p.to_string()];
    match *tool {
        "cargo" => {
            needs.push(one("Cargo.toml"));
            if let Some(pos) = argv.iter().position(|a| *a == "--test") {
                if let Some(name) = argv.get(pos + 1) {
                    needs.push(vec![
                        format!("tests/{name}.rs"),
                        format!("tests/{name}/main.rs"),
                    ]);
                }
            }
        }
        "npm" | "pnpm" | "yarn" | "npx" => needs.push(one("package.json")),
        "make" => needs.push(vec![
            "Makefile".into(),
            "makefile".into(),
            "GNUmakefile".into(),
        ]),
        "go" => needs.push(one("go.mod")),
        "just" => needs.push(vec!["justfile".into(), "Justfile".into()]),
        _ => {}
    }
    for arg in argv.iter().skip(if tool.starts_with("./") { 0 } else { 1 }) {
        if arg.starts_with('-') {
            continue;
        }
        if let Some(mention) = path_mention(arg, false) {
            if mention.locatable {
                needs.push(vec![mention.path]);
            }
        }
    }
    needs
}

fn starts_with_tool(span: &str) -> bool {
    let first = span.split_whitespace().next().unwrap_or("");
    TOOLS.contains(&first) || (first.starts_with("./") && first.len() > 2)
}

fn push_unique(list: &mut Vec<String>, item: &str) {
    if !item.is_empty() && !list.iter().any(|c| c == item) {
        list.push(item.to_string());
    }
}

/// A token that names a file: `dir/name.ext`, `name.ext`, or `dir/` with a known first
/// segment. Absolute paths, `~`, globs, placeholders (`path/to/...`, `<...>`) and
/// fractions like `and/or` are not paths to check.
fn path_mention(token: &str, proposed: bool) -> Option<PathMention> {
    let token = token.trim_end_matches(['.', ',', ';', ':']);
    let token = LINE_SUFFIX.replace(token, "");
    let token = token.trim_end_matches(['.', ',', ':']);
    let token = token.strip_prefix("./").unwrap_or(token);
    if token.is_empty()
        || token.starts_with('/')
        || token.starts_with("..")
        || token.contains("//")
        || token.contains("path/to")
        || token.contains("...")
        || token.contains(['*', '<', '>', '{', '}'])
    {
        return None;
    }
    let last = token.rsplit('/').next().unwrap_or(token);
    let has_ext = last
        .rsplit_once('.')
        .is_some_and(|(stem, ext)| !stem.is_empty() && EXTENSIONS.contains(&ext));
    let has_dir = token.contains('/');
    let known_dir = matches!(
        token.split('/').next(),
        Some("src" | "tests" | "test" | "lib" | "docs" | "examples" | "benches" | "crates")
    );
    if has_ext || (has_dir && known_dir) {
        Some(PathMention {
            path: token.trim_end_matches('/').to_string(),
            proposed,
            locatable: has_dir,
        })
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_commands_paths_and_test_output() {
        let text = "I changed src/parser.rs:42 and `tests/parse.rs`.\n\n```sh\ncargo test --test parse\n```\n\n$ cargo clippy\n\ntest result: ok. 12 passed; 0 failed\nSee https://example.com/a/b.rs for background.\n";
        let ev = scan(text);
        assert_eq!(ev.commands, vec!["cargo test --test parse", "cargo clippy"]);
        let paths: Vec<&str> = ev.paths.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(paths, vec!["src/parser.rs", "tests/parse.rs"]);
        assert!(ev.test_output && ev.code_block && ev.any());
    }

    #[test]
    fn plain_prose_cites_nothing() {
        let ev = scan("Everything works now and/or it is done. I/O is fine, 1/2 of it.");
        assert!(!ev.any(), "{ev:?}");
    }

    #[test]
    fn proposals_and_bare_names_are_marked() {
        let ev = scan("We should create src/auth/oauth.rs.\nEdited main.rs");
        assert_eq!(
            ev.paths,
            vec![
                PathMention {
                    path: "src/auth/oauth.rs".into(),
                    proposed: true,
                    locatable: true
                },
                PathMention {
                    path: "main.rs".into(),
                    proposed: false,
                    locatable: false
                },
            ]
        );
    }

    #[test]
    fn absolute_paths_globs_and_placeholders_are_skipped() {
        let ev = scan("Read /etc/passwd, ~/x.rs, src/*.rs and path/to/file.rs");
        assert!(ev.paths.is_empty(), "{:?}", ev.paths);
    }

    #[test]
    fn module_paths_need_their_first_module_file() {
        let reqs =
            module_requirements("Call `crate::store::atomic::write` and crate::store::lock.");
        assert_eq!(
            reqs,
            vec![(
                "crate::store::atomic::write".to_string(),
                vec!["src/store.rs".to_string(), "src/store/mod.rs".to_string()]
            )]
        );
        assert!(module_requirements("the crate is fine").is_empty());
    }

    #[test]
    fn command_requirements_name_manifests_and_paths() {
        assert_eq!(
            command_requirements("cargo test --test api"),
            vec![
                vec!["Cargo.toml".to_string()],
                vec!["tests/api.rs".to_string(), "tests/api/main.rs".to_string()]
            ]
        );
        assert_eq!(
            command_requirements("pytest tests/test_api.py -q"),
            vec![vec!["tests/test_api.py".to_string()]]
        );
        assert_eq!(
            command_requirements("./scripts/ci.sh"),
            vec![vec!["scripts/ci.sh".to_string()]]
        );
        assert!(command_requirements("git status").is_empty());
    }
}
