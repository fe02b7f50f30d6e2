//! Table tests of the clarification gate: clear and vague problems, English and not.

use super::*;

/// (problem, requires clarification, intent, missing slots)
const TABLE: &[(&str, bool, &str, &[&str])] = &[
    // Clear problems.
    ("Fix the panic in src/parser.rs when the input is empty", false, "fix", &[]),
    // An auth word that is not the verb's object is not an auth/config task.
    (
        "Add per-client rate limiting to the public REST API: a token bucket per API key and a 429 with Retry-After",
        false,
        "implement",
        &[],
    ),
    ("Add unit tests for the tokenizer module", false, "test", &[]),
    ("Refactor src/lib.rs", false, "refactor", &[]),
    ("Review the error handling in the HTTP client", false, "review", &[]),
    ("Write documentation for the CLI flags in README.md", false, "docs", &[]),
    ("Implement pagination for the /users endpoint", false, "implement", &[]),
    ("Rename parse_args to parse_cli everywhere", false, "refactor", &[]),
    ("The login page crashes when the password field is empty", false, "fix", &[]),
    ("Optimize the database queries in the reports service", false, "implement", &[]),
    ("Migrate the build from webpack to vite", false, "implement", &[]),
    ("Speed up `cargo test` by sharing the fixture setup", false, "test", &[]),
    ("Add a --json flag to the status command", false, "implement", &[]),
    ("Investigate why the nightly job times out on large repos", false, "review", &[]),
    ("Fix issue #42", false, "fix", &[]),
    ("Why does CI fail on the release branch?", false, "review", &[]),
    (
        "Add GitHub OAuth login with the client secret from the env var GITHUB_CLIENT_SECRET and the read:user scope",
        false,
        "auth-config",
        &[],
    ),
    // Vague problems.
    ("fix it", true, "fix", &["detail", "target"]),
    ("make it better", true, "implement", &["detail", "target"]),
    ("Clean up the code", true, "refactor", &["target"]),
    ("help", true, "unknown", &["detail", "verb"]),
    ("", true, "unknown", &["problem"]),
    ("🚀🚀🚀", true, "unknown", &["problem"]),
    ("performance", true, "unknown", &["detail", "verb"]),
    ("Database migration for Postgres users table", true, "unknown", &["verb"]),
    ("Fix the bug", true, "fix", &["detail", "target"]),
    ("Add tests", true, "test", &["detail", "target"]),
    ("please fix everything in this project", true, "fix", &["target"]),
    ("Add OAuth login", true, "auth-config", &["detail", "provider", "credential_source", "scope"]),
    (
        "Configure SSO with Okta for the admin dashboard",
        true,
        "auth-config",
        &["credential_source"],
    ),
    (
        "Set up API key authentication using keys from the vault",
        true,
        "auth-config",
        &["provider", "scope"],
    ),
    // Not English: judged on length only.
    ("修复登录页面在密码为空时的崩溃问题", false, "unknown", &[]),
    ("修复它", true, "unknown", &["detail"]),
    ("ログインページのバグを直してください", false, "unknown", &[]),
    ("Corrige le plantage de la page de connexion quand le mot de passe est vide", false, "unknown", &[]),
    ("Behebe den Absturz beim Start der Anwendung", false, "unknown", &[]),
    ("Исправь падение парсера на пустом вводе", false, "unknown", &[]),
    ("로그인 페이지 버그를 고쳐 주세요", false, "unknown", &[]),
    ("Réparer ça", true, "unknown", &["detail"]),
    // Emoji and accents inside English text.
    ("🔥 Fix the crash in café_menu.rs when the order list is empty 🔥", false, "fix", &[]),
];

#[test]
fn gate_decides_the_table() {
    assert!(TABLE.len() >= 30, "the table needs at least 30 problems");
    let mut wrong = Vec::new();
    for (problem, requires, intent, slots) in TABLE {
        let gate = evaluate(problem, &[]);
        let slots: Vec<String> = slots.iter().map(|s| s.to_string()).collect();
        if gate.requires_clarification != *requires
            || gate.intent_class != *intent
            || gate.missing_slots != slots
        {
            wrong.push(format!(
                "{problem:?}: got requires={} intent={} slots={:?}, want requires={requires} intent={intent} slots={slots:?}",
                gate.requires_clarification, gate.intent_class, gate.missing_slots
            ));
        }
        assert_eq!(
            gate.prompt.is_some(),
            gate.requires_clarification,
            "{problem:?}"
        );
        assert!((0.0..=1.0).contains(&gate.confidence), "{problem:?}");
    }
    assert!(
        wrong.is_empty(),
        "gate decisions differ:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn a_good_answer_clears_the_gate() {
    let held = evaluate("fix it", &[]);
    assert!(held.requires_clarification);
    let answers = vec!["the off-by-one in src/pager.rs next_page()".to_string()];
    let cleared = evaluate("fix it", &answers);
    assert!(!cleared.requires_clarification, "{cleared:?}");
    assert_eq!(cleared.intent_class, "fix");
    assert!(cleared.prompt.is_none());
    assert!(cleared.confidence > held.confidence);
}

#[test]
fn a_useless_answer_keeps_the_gate_shut() {
    let gate = evaluate("fix it", &["yes".to_string()]);
    assert!(gate.requires_clarification);
    assert!(gate.missing_slots.contains(&"target".to_string()));
}

#[test]
fn auth_answers_fill_slots_one_by_one() {
    let problem = "Add OAuth login to the web app";
    let first = evaluate(problem, &[]);
    assert_eq!(
        first.missing_slots,
        vec!["provider", "credential_source", "scope"]
    );
    let second = evaluate(problem, &["Use GitHub".to_string()]);
    assert_eq!(second.missing_slots, vec!["credential_source", "scope"]);
    let third = evaluate(
        problem,
        &[
            "Use GitHub".to_string(),
            "client secret in $GITHUB_SECRET, scope read:user".to_string(),
        ],
    );
    assert!(!third.requires_clarification, "{third:?}");
}

#[test]
fn the_prompt_is_one_question_naming_each_missing_slot() {
    let gate = evaluate("Add OAuth login", &[]);
    let prompt = gate.prompt.expect("a prompt");
    assert!(
        prompt.starts_with("\"Add OAuth login\": could you say "),
        "{prompt}"
    );
    assert!(prompt.ends_with('?'), "{prompt}");
    assert_eq!(prompt.matches('?').count(), 1, "{prompt}");
    for needle in [
        "auth provider",
        "credentials come from",
        "scopes or permissions",
    ] {
        assert!(prompt.contains(needle), "{prompt} lacks {needle}");
    }
    let empty = evaluate("   ", &[]).prompt.expect("a prompt");
    assert_eq!(
        empty,
        "Could you say what the team should work on (what to change, and where)?"
    );
}

#[test]
fn long_problems_are_shortened_in_the_prompt() {
    let problem = "Database ".repeat(20);
    let prompt = evaluate(&problem, &[]).prompt.expect("a prompt");
    assert!(prompt.contains("…\": could you say what to do"), "{prompt}");
}

#[test]
fn confidence_falls_with_each_missing_slot() {
    let clear = evaluate(
        "Fix the panic in src/parser.rs when the input is empty",
        &[],
    );
    let one = evaluate("Clean up the code", &[]);
    let two = evaluate("fix it", &[]);
    assert!(clear.confidence > one.confidence, "{clear:?} {one:?}");
    assert!(one.confidence > two.confidence, "{one:?} {two:?}");
    assert_eq!(clear.confidence, 0.9);
}

#[test]
fn non_english_text_is_capped_in_confidence() {
    let gate = evaluate("修复登录页面在密码为空时的崩溃问题", &[]);
    assert!(gate.confidence <= NON_ENGLISH_CONFIDENCE_CAP);
}

#[test]
fn stems_cover_simple_inflections() {
    assert_eq!(stem("fixes"), "fix");
    assert_eq!(stem("fixed"), "fix");
    assert_eq!(stem("refactoring"), "refactor");
    assert_eq!(stem("optimizing"), "optimize");
    assert_eq!(stem("debugging"), "debug");
    assert_eq!(verb_intent("crashes"), None);
    assert_eq!(verb_intent("adding"), Some(INTENT_IMPLEMENT));
    assert_eq!(stem("tries"), "try");
    assert_eq!(stem("tried"), "try");
    assert_eq!(stem("trying"), "try");
}

#[test]
fn the_verbs_people_write_open_the_gate() {
    for problem in [
        "Try the steering keys on this run",
        "Check why the nightly build is slow",
        "Bump the version and publish the crate",
        "Look into the flaky login test",
        "Polish the settings page copy",
        "Use the new logger in the payment service",
    ] {
        let gate = evaluate(problem, &[]);
        assert!(
            !gate.missing_slots.contains(&"verb".to_string()),
            "{problem}: {:?}",
            gate.missing_slots
        );
    }
}

#[test]
fn spaceless_scripts_count_half_a_word_per_character() {
    assert_eq!(word_units("修复它"), 1.5);
    assert_eq!(word_units("parser"), 1.0);
}
