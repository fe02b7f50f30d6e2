//! Reading an auth probe's output: authenticated, not authenticated or unknown, by the OMG
//! seed's rules plus each provider's own patterns.
#![allow(
    clippy::expect_used,
    reason = "regex literals compiled once; a bad one fails every test of this module"
)]

use std::sync::LazyLock;

use regex::Regex;

use super::health::AuthState;
use super::spec::compile;

static ANSI: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07").expect("valid"));

/// Phrases meaning "logged out" (the OMG seed's `_check_tool_auth`).
const NOT_MARKERS: [&str; 3] = ["not logged", "not authenticated", "login required"];
/// Phrases meaning "this CLI has no such status command" (same source).
const UNSUPPORTED_MARKERS: [&str; 4] = [
    "unknown command",
    "unrecognized",
    "invalid choice",
    "did you mean",
];

/// Map an auth probe's exit code and output to a state, following the OMG seed:
/// exit 0 → authenticated unless the output says logged out; non-zero → `unknown` when the
/// output says the subcommand does not exist, `not-authenticated` when it mentions login,
/// else `unknown`. A provider's `not_patterns` count as "logged out" and, when it has
/// `ok_patterns`, an exit 0 matching none of them is `unknown` rather than authenticated.
pub fn classify_probe(
    exit_code: Option<i32>,
    output: &str,
    not_patterns: &[String],
    ok_patterns: &[String],
) -> (AuthState, String) {
    let low = ANSI.replace_all(output, "").to_lowercase();
    let matches = |ps: &[String]| {
        ps.iter()
            .any(|p| compile(p).is_ok_and(|r| r.is_match(&low)))
    };
    let logged_out = NOT_MARKERS.iter().any(|m| low.contains(m)) || matches(not_patterns);
    // The line that says why: one matching a marker or pattern, else the first with text.
    let line_matches = |l: &str| {
        NOT_MARKERS
            .iter()
            .chain(UNSUPPORTED_MARKERS.iter())
            .any(|m| l.contains(m))
            || l.contains("login")
            || not_patterns
                .iter()
                .chain(ok_patterns)
                .any(|p| compile(p).is_ok_and(|r| r.is_match(l)))
    };
    let texty = |l: &&str| !l.is_empty() && l.chars().any(char::is_alphanumeric);
    let lines: Vec<&str> = low.lines().map(str::trim).filter(texty).collect();
    let first_line = lines
        .iter()
        .find(|l| line_matches(l))
        .or(lines.first())
        .map_or(String::new(), |l| l.chars().take(80).collect());
    match exit_code {
        Some(0) => {
            if logged_out {
                (
                    AuthState::NotAuthenticated,
                    format!("status says: {}", in_words(&first_line)),
                )
            } else if !ok_patterns.is_empty() && !matches(ok_patterns) {
                (
                    AuthState::Unknown,
                    format!("unrecognised status: {first_line}"),
                )
            } else {
                (
                    AuthState::Authenticated,
                    "status command reports a login".into(),
                )
            }
        }
        code => {
            let code = code.map_or("signal".to_string(), |c| c.to_string());
            if UNSUPPORTED_MARKERS.iter().any(|m| low.contains(m)) {
                (
                    AuthState::Unknown,
                    "auth status command is unavailable".into(),
                )
            } else if logged_out || low.contains("login") {
                (
                    AuthState::NotAuthenticated,
                    format!("status says: {}", in_words(&first_line)),
                )
            } else {
                (
                    AuthState::Unknown,
                    format!("unable to verify auth (exit {code})"),
                )
            }
        }
    }
}

/// A `"key": value,` line of a JSON status (e.g. `claude auth status` prints
/// `"loggedIn": false`) in words: `not logged in` / `logged in` for a login flag, else
/// `key is value`; any other line as it is.
fn in_words(line: &str) -> String {
    static JSON_FIELD: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r#"^[{\[\s]*"([^"]+)"\s*:\s*"?([^",}]*)"?[,}\]\s]*$"#).expect("valid")
    });
    let Some(c) = JSON_FIELD.captures(line) else {
        return line.to_string();
    };
    let (key, value) = (c[1].replace(['_', '-', ' '], ""), c[2].trim());
    let flag = match value {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    };
    match flag {
        Some(on) if key.contains("loggedin") || key.contains("authenticated") => {
            if on { "logged in" } else { "not logged in" }.to_string()
        }
        _ => format!(
            "{} is {}",
            &c[1],
            if value.is_empty() { "empty" } else { value }
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::Registry;

    #[test]
    fn seed_rules() {
        let none: &[String] = &[];
        assert_eq!(
            classify_probe(Some(0), "Logged in using ChatGPT", none, none).0,
            AuthState::Authenticated
        );
        assert_eq!(
            classify_probe(Some(1), "Not logged in", none, none).0,
            AuthState::NotAuthenticated
        );
        assert_eq!(
            classify_probe(Some(0), "You are not authenticated", none, none).0,
            AuthState::NotAuthenticated
        );
        assert_eq!(
            classify_probe(
                Some(2),
                "error: unrecognized subcommand 'status'",
                none,
                none
            )
            .0,
            AuthState::Unknown
        );
        assert_eq!(
            classify_probe(Some(1), "please run login first", none, none).0,
            AuthState::NotAuthenticated
        );
        assert_eq!(
            classify_probe(Some(3), "boom", none, none).0,
            AuthState::Unknown
        );
        assert_eq!(classify_probe(None, "", none, none).0, AuthState::Unknown);
    }

    #[test]
    fn provider_patterns_from_real_outputs() {
        let reg = Registry::builtin();
        let claude = &reg.get("claude").unwrap().auth;
        // claude 2.1.197 `auth status` when logged out (exit 1).
        let out = "{\n  \"loggedIn\": false,\n  \"authMethod\": \"none\"\n}";
        assert_eq!(
            classify_probe(Some(1), out, &claude.not_patterns, &claude.ok_patterns).0,
            AuthState::NotAuthenticated
        );
        let out = "{\n  \"loggedIn\": true,\n  \"authMethod\": \"claude.ai\"\n}";
        assert_eq!(
            classify_probe(Some(0), out, &claude.not_patterns, &claude.ok_patterns).0,
            AuthState::Authenticated
        );
        let qwen = &reg.get("qwen").unwrap().auth;
        // qwen 0.15.10 `auth status` exits 0 when nothing is configured.
        let out = "=== Authentication Status ===\n\u{26a0}\u{fe0f}  No authentication method configured.\n";
        assert_eq!(
            classify_probe(Some(0), out, &qwen.not_patterns, &qwen.ok_patterns).0,
            AuthState::NotAuthenticated
        );
        let oc = &reg.get("opencode").unwrap().auth;
        // opencode 1.18.33 `auth list`, with ANSI colours.
        let out = "\x1b[0m\n\u{250c}  Credentials \x1b[90m~/.local/share/opencode/auth.json\n\u{2502}\n\u{2514}  0 credentials\n";
        assert_eq!(
            classify_probe(Some(0), out, &oc.not_patterns, &oc.ok_patterns).0,
            AuthState::NotAuthenticated
        );
        let out = "\u{2514}  2 credentials\n";
        assert_eq!(
            classify_probe(Some(0), out, &oc.not_patterns, &oc.ok_patterns).0,
            AuthState::Authenticated
        );
    }

    #[test]
    fn a_json_status_line_is_said_in_words() {
        let (state, why) = classify_probe(
            Some(1),
            "{\n  \"loggedIn\": false,\n  \"authMethod\": \"none\"\n}\n",
            &[r#""loggedin":\s*false"#.to_string()],
            &[],
        );
        assert_eq!(state, AuthState::NotAuthenticated);
        assert_eq!(why, "status says: not logged in");
        assert_eq!(
            in_words("\"apiprovider\": \"firstparty\","),
            "apiprovider is firstparty"
        );
        assert_eq!(in_words("not logged in to codex"), "not logged in to codex");
    }
}
