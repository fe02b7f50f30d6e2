//! The word lists and patterns the clarification gate reads problems with (English
//! verbs and their intents, symptom, vague and function words, auth/config vocabulary).
#![allow(
    clippy::expect_used,
    reason = "regex literals compiled once; a bad one fails every test of this module"
)]

use std::sync::LazyLock;

use regex::Regex;

use super::gate::{
    INTENT_DOCS, INTENT_FIX, INTENT_IMPLEMENT, INTENT_REFACTOR, INTENT_REVIEW, INTENT_TEST,
};

/// Verbs (base forms) and the intent each one signals.
pub(super) const VERBS: &[(&str, &str)] = &[
    ("review", INTENT_REVIEW),
    ("audit", INTENT_REVIEW),
    ("inspect", INTENT_REVIEW),
    ("assess", INTENT_REVIEW),
    ("evaluate", INTENT_REVIEW),
    ("critique", INTENT_REVIEW),
    ("analyze", INTENT_REVIEW),
    ("analyse", INTENT_REVIEW),
    ("investigate", INTENT_REVIEW),
    ("explain", INTENT_REVIEW),
    // Not a verb, but "why does X …?" asks for an investigation.
    ("why", INTENT_REVIEW),
    ("document", INTENT_DOCS),
    ("describe", INTENT_DOCS),
    ("test", INTENT_TEST),
    ("verify", INTENT_TEST),
    ("cover", INTENT_TEST),
    ("refactor", INTENT_REFACTOR),
    ("rename", INTENT_REFACTOR),
    ("restructure", INTENT_REFACTOR),
    ("reorganize", INTENT_REFACTOR),
    ("simplify", INTENT_REFACTOR),
    ("extract", INTENT_REFACTOR),
    ("split", INTENT_REFACTOR),
    ("dedupe", INTENT_REFACTOR),
    ("deduplicate", INTENT_REFACTOR),
    ("tidy", INTENT_REFACTOR),
    ("clean", INTENT_REFACTOR),
    ("move", INTENT_REFACTOR),
    ("fix", INTENT_FIX),
    ("repair", INTENT_FIX),
    ("debug", INTENT_FIX),
    ("resolve", INTENT_FIX),
    ("patch", INTENT_FIX),
    ("correct", INTENT_FIX),
    ("stop", INTENT_FIX),
    ("implement", INTENT_IMPLEMENT),
    ("add", INTENT_IMPLEMENT),
    ("create", INTENT_IMPLEMENT),
    ("build", INTENT_IMPLEMENT),
    ("write", INTENT_IMPLEMENT),
    ("make", INTENT_IMPLEMENT),
    ("support", INTENT_IMPLEMENT),
    ("introduce", INTENT_IMPLEMENT),
    ("develop", INTENT_IMPLEMENT),
    ("port", INTENT_IMPLEMENT),
    ("migrate", INTENT_IMPLEMENT),
    ("convert", INTENT_IMPLEMENT),
    ("integrate", INTENT_IMPLEMENT),
    ("update", INTENT_IMPLEMENT),
    ("upgrade", INTENT_IMPLEMENT),
    ("optimize", INTENT_IMPLEMENT),
    ("optimise", INTENT_IMPLEMENT),
    ("improve", INTENT_IMPLEMENT),
    ("speed", INTENT_IMPLEMENT),
    ("change", INTENT_IMPLEMENT),
    ("replace", INTENT_IMPLEMENT),
    ("remove", INTENT_IMPLEMENT),
    ("delete", INTENT_IMPLEMENT),
    ("drop", INTENT_IMPLEMENT),
    ("enable", INTENT_IMPLEMENT),
    ("disable", INTENT_IMPLEMENT),
    ("handle", INTENT_IMPLEMENT),
    ("expose", INTENT_IMPLEMENT),
    ("design", INTENT_IMPLEMENT),
    ("plan", INTENT_IMPLEMENT),
    ("configure", INTENT_IMPLEMENT),
    ("setup", INTENT_IMPLEMENT),
    ("set", INTENT_IMPLEMENT),
    ("wire", INTENT_IMPLEMENT),
    ("connect", INTENT_IMPLEMENT),
    ("rotate", INTENT_IMPLEMENT),
    ("store", INTENT_IMPLEMENT),
    ("deploy", INTENT_IMPLEMENT),
    ("generate", INTENT_IMPLEMENT),
    ("validate", INTENT_IMPLEMENT),
    ("parse", INTENT_IMPLEMENT),
    ("cache", INTENT_IMPLEMENT),
    ("limit", INTENT_IMPLEMENT),
    ("harden", INTENT_IMPLEMENT),
    // What people write besides (a first hour's problems: "try the steering keys", "check
    // why the build is slow", "bump the version").
    ("try", INTENT_TEST),
    ("run", INTENT_TEST),
    ("check", INTENT_TEST),
    ("exercise", INTENT_TEST),
    ("benchmark", INTENT_TEST),
    ("measure", INTENT_TEST),
    ("profile", INTENT_TEST),
    ("reproduce", INTENT_TEST),
    ("ensure", INTENT_TEST),
    ("confirm", INTENT_TEST),
    ("look", INTENT_REVIEW),
    ("find", INTENT_REVIEW),
    ("explore", INTENT_REVIEW),
    ("compare", INTENT_REVIEW),
    ("summarize", INTENT_REVIEW),
    ("summarise", INTENT_REVIEW),
    ("research", INTENT_REVIEW),
    ("trace", INTENT_REVIEW),
    ("diagnose", INTENT_FIX),
    ("revert", INTENT_FIX),
    ("restore", INTENT_FIX),
    ("prevent", INTENT_FIX),
    ("avoid", INTENT_FIX),
    ("rewrite", INTENT_REFACTOR),
    ("format", INTENT_REFACTOR),
    ("lint", INTENT_REFACTOR),
    ("modernize", INTENT_REFACTOR),
    ("modernise", INTENT_REFACTOR),
    ("cleanup", INTENT_REFACTOR),
    ("polish", INTENT_REFACTOR),
    ("use", INTENT_IMPLEMENT),
    ("allow", INTENT_IMPLEMENT),
    ("let", INTENT_IMPLEMENT),
    ("keep", INTENT_IMPLEMENT),
    ("show", INTENT_IMPLEMENT),
    ("display", INTENT_IMPLEMENT),
    ("render", INTENT_IMPLEMENT),
    ("print", INTENT_IMPLEMENT),
    ("log", INTENT_IMPLEMENT),
    ("extend", INTENT_IMPLEMENT),
    ("expand", INTENT_IMPLEMENT),
    ("adjust", INTENT_IMPLEMENT),
    ("tweak", INTENT_IMPLEMENT),
    ("enhance", INTENT_IMPLEMENT),
    ("reduce", INTENT_IMPLEMENT),
    ("increase", INTENT_IMPLEMENT),
    ("bump", INTENT_IMPLEMENT),
    ("install", INTENT_IMPLEMENT),
    ("package", INTENT_IMPLEMENT),
    ("release", INTENT_IMPLEMENT),
    ("publish", INTENT_IMPLEMENT),
    ("ship", INTENT_IMPLEMENT),
    ("automate", INTENT_IMPLEMENT),
    ("scaffold", INTENT_IMPLEMENT),
    ("prototype", INTENT_IMPLEMENT),
    ("draft", INTENT_IMPLEMENT),
    ("finish", INTENT_IMPLEMENT),
    ("complete", INTENT_IMPLEMENT),
    ("translate", INTENT_IMPLEMENT),
    ("localize", INTENT_IMPLEMENT),
    ("localise", INTENT_IMPLEMENT),
    ("sort", INTENT_IMPLEMENT),
    ("filter", INTENT_IMPLEMENT),
    ("secure", INTENT_IMPLEMENT),
    ("encrypt", INTENT_IMPLEMENT),
    ("sanitize", INTENT_IMPLEMENT),
    ("sanitise", INTENT_IMPLEMENT),
    ("retry", INTENT_IMPLEMENT),
    ("schedule", INTENT_IMPLEMENT),
    ("track", INTENT_IMPLEMENT),
    ("monitor", INTENT_IMPLEMENT),
];

/// Symptom words: a problem that names one asks for a fix even without a verb.
pub(super) const SYMPTOMS: &[&str] = &[
    "crash",
    "crashes",
    "crashed",
    "crashing",
    "panic",
    "panics",
    "panicking",
    "broken",
    "fails",
    "failing",
    "failed",
    "failure",
    "error",
    "errors",
    "regression",
    "hangs",
    "hanging",
    "deadlock",
    "deadlocks",
    "leak",
    "leaks",
    "leaking",
    "segfault",
    "flaky",
    "wrong",
    "incorrect",
    "timeout",
    "timeouts",
    "slow",
];

/// Nouns that turn a generic verb (add, write, improve) into the test or docs intent.
pub(super) const TEST_NOUNS: &[&str] = &["test", "tests", "testing", "coverage", "unittest", "e2e"];
pub(super) const DOCS_NOUNS: &[&str] = &[
    "docs",
    "doc",
    "documentation",
    "readme",
    "docstring",
    "docstrings",
    "comments",
    "changelog",
    "manual",
    "guide",
    "tutorial",
];

/// Words that name nothing to act on: pronouns, fillers and nouns too generic to locate.
pub(super) const VAGUE: &[&str] = &[
    "it",
    "this",
    "that",
    "these",
    "those",
    "them",
    "thing",
    "things",
    "stuff",
    "everything",
    "something",
    "anything",
    "all",
    "whole",
    "code",
    "codebase",
    "project",
    "repo",
    "app",
    "application",
    "program",
    "better",
    "faster",
    "nicer",
    "good",
    "work",
    "works",
    "working",
    "bug",
    "bugs",
    "issue",
    "issues",
    "problem",
    "problems",
    "up",
    "again",
    "properly",
    "please",
    "now",
    "asap",
    "somehow",
    "more",
    "less",
    "yes",
    "yeah",
    "yep",
    "nope",
    "okay",
    "sure",
    "fine",
    "thanks",
    "whatever",
    "idk",
];

/// English function words (also the tell-tale of English text).
pub(super) const STOPWORDS: &[&str] = &[
    "the", "a", "an", "to", "in", "of", "for", "and", "or", "with", "on", "at", "by", "from", "is",
    "are", "be", "so", "as", "into", "when", "if", "then", "than", "our", "my", "we", "i", "you",
    "your", "its", "can", "should", "must", "will", "would", "not", "no", "there", "which",
    "where", "how", "what", "why", "who", "out", "about", "over", "under", "after", "before",
    "instead", "only", "also", "very", "just", "but", "do", "does", "don't", "doesn't", "same",
    "new", "every", "each", "some", "any", "via",
];

/// Function words of French, Spanish, German, Italian and Portuguese: with no English
/// verb present they mark Latin-script text as not English.
pub(super) const FOREIGN_FUNCTION_WORDS: &[&str] = &[
    "le", "la", "les", "des", "du", "une", "dans", "avec", "pour", "est", "el", "los", "las",
    "del", "con", "para", "por", "que", "una", "der", "die", "das", "und", "ein", "eine", "mit",
    "für", "von", "nicht", "ist", "il", "di", "che", "per", "gli", "em", "um", "uma", "não", "na",
    "nos", "ao",
];

/// Auth/config words (matched on the lower-cased text).
pub(super) static AUTH_WORDS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"\b(?:auth|authentication|authenticate|authori[sz]ation|oauth2?|oidc|openid connect|saml|sso|single sign-on|jwt|credentials?|api[- ]?keys?|(?:access|auth|bearer|refresh|api|personal access) tokens?|secrets?|client secret)\b",
    )
    .expect("auth regex compiles")
});
/// An auth word as the object of a setup verb: the verb (any inflection) followed within
/// four words by an auth word, as in "add OAuth login" or "configure the API keys". An auth
/// word elsewhere in the sentence ("rate limiting … per API key") is not an auth task.
pub(super) static AUTH_SETUP_PHRASE: LazyLock<Regex> = LazyLock::new(|| {
    let verbs = AUTH_SETUP_VERBS.join("|");
    let auth = AUTH_WORDS.as_str();
    Regex::new(&format!(
        r"\b(?:{verbs})(?:s|es|ed|d|ing|ting|ped)?\b(?:[\s,]+[\w'./-]+){{0,4}}?[\s,]+{auth}"
    ))
    .expect("auth setup regex compiles")
});

/// Verbs that make an auth word an auth/config task (rather than, say, a review of it).
pub(super) const AUTH_SETUP_VERBS: &[&str] = &[
    "add",
    "configure",
    "setup",
    "set",
    "enable",
    "integrate",
    "wire",
    "connect",
    "rotate",
    "store",
    "implement",
    "support",
    "use",
    "migrate",
    "switch",
    "provision",
];
pub(super) const AUTH_PROVIDERS: &[&str] = &[
    "github",
    "gitlab",
    "google",
    "microsoft",
    "azure",
    "entra",
    "okta",
    "auth0",
    "keycloak",
    "cognito",
    "firebase",
    "apple",
    "facebook",
    "supabase",
    "clerk",
    "openai",
    "anthropic",
    "gemini",
    "aws",
    "gcp",
    "ldap",
    "bitbucket",
    "slack",
    "discord",
    "stripe",
    "twilio",
    "vercel",
    "heroku",
    "cloudflare",
    "workos",
    "fusionauth",
    "authentik",
];
/// Where credentials come from (matched on the lower-cased text).
pub(super) static CREDENTIAL_SOURCE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"\b(?:env|environment(?: variables?)?|dotenv|vault|keychain|keyring|1password|kms|ssm|doppler|sops|secrets? manager|secretsmanager|parameter store|infisical|file)\b|\.env\b",
    )
    .expect("credential-source regex compiles")
});
/// An environment variable named in the original text (`$GITHUB_TOKEN`, `GITHUB_TOKEN`).
pub(super) static ENV_VAR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\$[A-Z_][A-Z0-9_]*|\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b").expect("env-var regex compiles")
});
/// Scopes and permissions (matched on the lower-cased text).
pub(super) static SCOPE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"\b(?:scopes?|permissions?|roles?|read[- ]only|read[/ -]write|(?:read|write|repo|admin):[a-z_]+|admin|tenant|org-wide|per-user|audience|claims|rbac|acl)\b",
    )
    .expect("scope regex compiles")
});

/// Concrete targets: a path with a directory or an extension, an identifier with `_`,
/// `::`, `.` calls or inner capitals, or a backticked span.
pub(super) static CONCRETE_TARGET: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?x)
        `[^`\n]+`
        | (?:^|[\s(\x22'])(?:\.{0,2}/)?[\w.-]+/[\w./-]*\w
        | \b[\w-]+\.(?:rs|py|ts|tsx|js|jsx|go|java|kt|c|h|cc|cpp|hpp|rb|php|cs|swift|toml|yaml|yml|json|md|sh|sql|html|css|vue|lock|cfg|ini|txt)\b
        | \b[A-Za-z]+(?:_[A-Za-z0-9]+)+\b
        | \b\w+::\w+
        | \b[a-z]+[A-Z][A-Za-z]*\b
        | \b[A-Z][a-z]+[A-Z][A-Za-z]*\b
        | \b\w+\(\)
        | \#\d+\b
        ",
    )
    .expect("concrete-target regex compiles")
});
