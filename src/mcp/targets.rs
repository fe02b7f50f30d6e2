//! What an approval request acts on, for `policy = "auto"` (docs/mcp.md "Approvals"): the
//! paths a tool's input names, and whether they all lie inside the worker's own worktree.
//!
//! The tool names and their path fields are Claude Code's (2.1.197, the input schemas its
//! binary sends `--permission-prompt-tool`): `Read`, `Write`, `Edit`, `MultiEdit` take
//! `file_path`; `NotebookEdit` and `NotebookRead` take `notebook_path`; `Glob`, `Grep` and
//! `LS` take an optional `path` (absent: the working directory). Any other tool — `Bash`,
//! `WebFetch`, another server's MCP tool — has no target crewmux can tell.

use std::path::{Component, Path, PathBuf};

/// The paths `tool` with `input` reads or writes, as the input gives them; `Some(vec![])`
/// for a search tool with no `path` (it searches the working directory, given as `.`);
/// `None` when its target cannot be told (a shell command, an unknown tool, a path field
/// that is missing or not a string).
pub fn of(tool: &str, input: &serde_json::Value) -> Option<Vec<String>> {
    let field = |name: &str| input.get(name).and_then(|v| v.as_str()).map(str::to_string);
    match tool {
        "Read" | "Write" | "Edit" | "MultiEdit" => field("file_path").map(|p| vec![p]),
        "NotebookEdit" | "NotebookRead" => field("notebook_path").map(|p| vec![p]),
        "Glob" | "Grep" | "LS" => match input.get("path") {
            None | Some(serde_json::Value::Null) => Some(vec![".".into()]),
            Some(v) => v.as_str().map(|p| vec![p.to_string()]),
        },
        _ => None,
    }
}

/// What `tool` with `input` asks to do, in a few words for the person: the command a
/// shell tool runs, the path a file tool reads or writes, the address a fetch reads, else
/// the input as one line of JSON. Cut to `max` characters.
pub fn describe(tool: &str, input: &serde_json::Value, max: usize) -> String {
    let field = |name: &str| input.get(name).and_then(|v| v.as_str());
    let said = match (
        tool,
        field("command"),
        field("file_path"),
        field("notebook_path"),
    ) {
        (_, Some(cmd), _, _) => format!("{tool} wants to run: {cmd}"),
        ("Read", _, Some(p), _) => format!("{tool} wants to read {p}"),
        (_, _, Some(p), _) | (_, _, _, Some(p)) => format!("{tool} wants to change {p}"),
        _ => match (field("url"), field("path"), field("query")) {
            (Some(u), _, _) => format!("{tool} wants to fetch {u}"),
            (_, Some(p), _) => format!("{tool} wants to look in {p}"),
            (_, _, Some(q)) => format!("{tool} wants to search for: {q}"),
            _ => format!("{tool} wants to run with {input}"),
        },
    };
    let one_line = said.replace(['\n', '\r'], " ");
    super::server::cut_chars(&one_line, max)
}

pub use crate::domain::clarification::Reach;

/// Where `targets` lie against `root` (the worker's worktree), a relative path read from
/// `cwd` (the agent's working directory). A path is inside when, with `.` and `..` taken
/// away and symbolic links followed as far as the path exists, it is `root` or under it
/// (so `src/../../x` and a link inside pointing out are outside).
pub fn reach(targets: Option<&[String]>, root: &Path, cwd: &Path) -> Reach {
    let Some(targets) = targets else {
        return Reach::Unknown;
    };
    if targets.is_empty() {
        return Reach::Unknown;
    }
    let root = resolved(root);
    for t in targets {
        let p = Path::new(t);
        let abs = if p.is_absolute() {
            p.to_path_buf()
        } else {
            cwd.join(p)
        };
        if !resolved(&abs).starts_with(&root) {
            return Reach::Outside(t.clone());
        }
    }
    Reach::Inside
}

/// `path` with `.`/`..` taken away lexically, then its longest existing ancestor's
/// symbolic links followed (`canonicalize`) and the rest put back.
fn resolved(path: &Path) -> PathBuf {
    let mut clean = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                clean.pop();
            }
            Component::CurDir => {}
            other => clean.push(other.as_os_str()),
        }
    }
    let mut head = clean.clone();
    let mut tail = vec![];
    loop {
        if let Ok(real) = head.canonicalize() {
            let mut out = real;
            out.extend(tail.iter().rev());
            return out;
        }
        match (head.file_name().map(|n| n.to_os_string()), head.parent()) {
            (Some(name), Some(parent)) => {
                tail.push(name);
                head = parent.to_path_buf();
            }
            _ => return clean,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_paths_of_claude_codes_file_tools_and_none_for_a_shell_command() {
        assert_eq!(
            of("Write", &json!({"file_path": "/w/a.rs", "content": "x"})),
            Some(vec!["/w/a.rs".to_string()])
        );
        assert_eq!(
            of("NotebookEdit", &json!({"notebook_path": "n.ipynb"})),
            Some(vec!["n.ipynb".to_string()])
        );
        assert_eq!(of("Grep", &json!({"pattern": "x"})), Some(vec![".".into()]));
        assert_eq!(of("Bash", &json!({"command": "rm -rf /"})), None);
        assert_eq!(of("Edit", &json!({"old_string": "a"})), None);
        assert_eq!(of("mcp__github__create_issue", &json!({})), None);
    }

    #[test]
    fn a_request_is_described_by_its_command_path_or_address() {
        let d = |tool: &str, v: serde_json::Value| describe(tool, &v, 60);
        assert_eq!(
            d("Bash", json!({"command": "npm install\nnpm test"})),
            "Bash wants to run: npm install npm test"
        );
        assert_eq!(
            d("Write", json!({"file_path": "/w/a.rs"})),
            "Write wants to change /w/a.rs"
        );
        assert_eq!(
            d("Read", json!({"file_path": "/etc/hosts"})),
            "Read wants to read /etc/hosts"
        );
        assert_eq!(
            d("WebFetch", json!({"url": "https://x.org"})),
            "WebFetch wants to fetch https://x.org"
        );
        assert_eq!(
            d("mcp__x__y", json!({"a": 1})),
            "mcp__x__y wants to run with {\"a\":1}"
        );
        assert_eq!(
            d("Bash", json!({"command": "x".repeat(100)}))
                .chars()
                .count(),
            60
        );
    }

    #[test]
    fn inside_outside_dot_dot_and_a_link_that_leads_out() {
        let top = tempfile::tempdir().unwrap();
        let wt = top.path().join("wt");
        std::fs::create_dir_all(wt.join("src")).unwrap();
        let out = top.path().join("elsewhere");
        std::fs::create_dir_all(&out).unwrap();
        std::os::unix::fs::symlink(&out, wt.join("link")).unwrap();
        let t = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let r = |v: &[&str]| reach(Some(&t(v)), &wt, &wt.join("src"));
        let abs = wt.join("src/new.rs").display().to_string();
        assert_eq!(r(&[&abs, "main.rs", "."]), Reach::Inside);
        assert_eq!(
            r(&["../../elsewhere/x"]),
            Reach::Outside("../../elsewhere/x".into())
        );
        assert_eq!(r(&["/etc/passwd"]), Reach::Outside("/etc/passwd".into()));
        assert_eq!(r(&["../link/x"]), Reach::Outside("../link/x".into()));
        assert_eq!(r(&["not/made/yet.rs"]), Reach::Inside);
        assert_eq!(reach(None, &wt, &wt), Reach::Unknown);
    }
}
