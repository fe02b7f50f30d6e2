//! Waiting detection on screens captured from the real CLIs (`tmux capture-pane -p`, first
//! run in an empty folder with no credentials; see tests/fixtures/screens/README.md), and
//! no false waiting on a spinner.

use std::time::Duration;

use crewmux::clarification::waiting::{
    default_patterns, detect_waiting, StillTracker, WaitingDetector, DEFAULT_SETTLE,
};

const SETTLED: Duration = Duration::from_millis(1600);

fn fixture(name: &str) -> String {
    let path = format!(
        "{}/tests/fixtures/screens/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn question(provider: &str, name: &str) -> Option<String> {
    detect_waiting(
        &fixture(name),
        &default_patterns(provider),
        SETTLED,
        DEFAULT_SETTLE,
    )
}

/// (provider, fixture, first line of the question, a line the question must contain)
const WAITING: &[(&str, &str, &str, &str)] = &[
    (
        "codex",
        "codex-0.171.0-signin.txt",
        "> 1. Sign in with ChatGPT",
        "Press enter to continue",
    ),
    (
        "codex",
        "codex-0.171.0-signin-other.txt",
        "> 1. Use an OpenAI API key",
        "2. Use Amazon Bedrock",
    ),
    (
        "codex",
        "codex-0.171.0-api-key.txt",
        "Paste or type your API key below.",
        "Press enter to save",
    ),
    (
        "gemini",
        "gemini-0.61.0-trust-folder.txt",
        "Do you trust the files in this folder?",
        "3. Don't trust",
    ),
    (
        "gemini",
        "gemini-0.61.0-trust-folder.ansi.txt",
        "Do you trust the files in this folder?",
        "● 1. Trust folder (proj-gemini)",
    ),
    (
        "gemini",
        "gemini-0.61.0-auth-method.txt",
        "How would you like to authenticate for this project?",
        "2. Use Gemini API Key",
    ),
    (
        "claude",
        "claude-code-2.1.197-trust-folder.txt",
        "Quick safety check: Is this a project you created or one you trust? (Like your own code, a well-known open source",
        "❯ 1. Yes, I trust this folder",
    ),
    (
        "claude",
        "claude-code-2.1.197-trust-folder.ansi.txt",
        "Quick safety check: Is this a project you created or one you trust? (Like your own code, a well-known open source",
        "Enter to confirm · Esc to cancel",
    ),
    (
        "aider",
        "aider-0.86.2-git-repo.txt",
        "No git repo found, create one to track aider's changes (recommended)? (Y)es/(N)o [Yes]:",
        "(Y)es/(N)o [Yes]:",
    ),
    (
        "aider",
        "aider-0.86.2-openrouter-login.txt",
        "Login to OpenRouter or create a free account? (Y)es/(N)o [Yes]:",
        "OpenRouter",
    ),
];

#[test]
fn real_first_run_screens_are_waiting_with_their_question() {
    for (provider, name, first, contains) in WAITING {
        let q = question(provider, name).unwrap_or_else(|| panic!("{name}: not detected"));
        assert_eq!(q.lines().next(), Some(*first), "{name}: question was\n{q}");
        assert!(
            q.contains(contains),
            "{name}: question lacks {contains:?}:\n{q}"
        );
        assert!(
            !q.contains('│') && !q.contains('╰'),
            "{name}: borders left:\n{q}"
        );
    }
}

#[test]
fn the_common_patterns_alone_catch_every_real_prompt() {
    for (_, name, _, _) in WAITING {
        assert!(question("command", name).is_some(), "{name}");
    }
}

#[test]
fn a_real_screen_is_not_waiting_before_it_settles() {
    for (provider, name, _, _) in WAITING {
        let busy = detect_waiting(
            &fixture(name),
            &default_patterns(provider),
            Duration::from_millis(300),
            DEFAULT_SETTLE,
        );
        assert_eq!(busy, None, "{name}");
    }
}

#[test]
fn an_idle_claude_repl_asks_nothing() {
    assert_eq!(
        question("claude", "claude-code-2.1.197-idle-repl.txt"),
        None
    );
}

#[test]
fn a_spinner_is_never_waiting() {
    let frames = [
        fixture("spinner-frame-1.txt"),
        fixture("spinner-frame-2.txt"),
    ];
    assert_ne!(
        frames[0], frames[1],
        "the two captures are different frames"
    );
    let patterns = default_patterns("claude");
    let mut tracker = StillTracker::default();
    // Captures every 250 ms: each one differs from the last, so the screen never settles.
    for tick in 0..12u64 {
        let frame = &frames[(tick % 2) as usize];
        let still = tracker.observe(frame, tick * 250);
        assert_eq!(still, Duration::ZERO);
        assert_eq!(
            detect_waiting(frame, &patterns, still, DEFAULT_SETTLE),
            None
        );
    }
    // Even a frozen frame is no question: the only prompt on it was answered.
    for frame in &frames {
        assert_eq!(
            detect_waiting(frame, &patterns, Duration::from_secs(60), DEFAULT_SETTLE),
            None
        );
    }
}

#[test]
fn a_detector_fed_real_captures_waits_only_after_the_settle_delay() {
    let screen = fixture("gemini-0.61.0-trust-folder.txt");
    let mut detector = WaitingDetector::for_provider("gemini");
    let spinner = fixture("spinner-frame-1.txt");
    assert_eq!(detector.observe(&spinner, 0), None);
    assert_eq!(detector.observe(&screen, 250), None);
    assert_eq!(detector.observe(&screen, 1_000), None);
    let q = detector
        .observe(&screen, 1_750)
        .expect("waiting after 1.5 s still");
    assert!(
        q.starts_with("Do you trust the files in this folder?"),
        "{q}"
    );
}
