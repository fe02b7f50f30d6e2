//! The credential store's library API as a run uses it: selection at launch, rotation on a
//! rate limit, expiry notices, and handing a key to a tmux pane without putting it on argv.

use std::fs;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use crewmux::creds::{
    rate_limit_matches, ApiKey, RateLimitPatterns, SecretString, Store, Strategy,
};

const PASS: &str = "api test passphrase";

fn pass() -> SecretString {
    SecretString::from(PASS.to_owned())
}

fn key(text: &str) -> ApiKey {
    ApiKey::new(text).unwrap()
}

/// A store at a fresh path holding `labels` for `provider` (keys `sk-<label>-…`).
fn store_with(provider: &str, labels: &[&str]) -> (tempfile::TempDir, PathBuf, Store) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("credentials.enc");
    let mut store = Store::open(&path, pass()).unwrap();
    for label in labels {
        let text = format!("sk-{label}-secret-0123456789");
        store.add(provider, Some(label), key(&text), None).unwrap();
    }
    (dir, path, store)
}

fn launch(store: &mut Store, provider: &str, session: Option<&str>) -> String {
    store
        .select_for_launch(provider, session)
        .unwrap()
        .expect("a key")
        .label
}

#[test]
fn round_robin_continues_across_handles_and_counts_usage() {
    let (_dir, path, mut one) = store_with("codex", &["a", "b", "c"]);
    let mut two = Store::open(&path, pass()).unwrap();
    assert_eq!(launch(&mut one, "codex", None), "a");
    assert_eq!(
        launch(&mut two, "codex", None),
        "b",
        "the second handle re-reads the file"
    );
    assert_eq!(launch(&mut one, "codex", None), "c");
    assert_eq!(launch(&mut two, "codex", None), "a");
    let reopened = Store::open(&path, pass()).unwrap();
    let uses: Vec<(String, u64)> = reopened
        .keys(Some("codex"))
        .into_iter()
        .map(|v| (v.label, v.usage_count))
        .collect();
    assert_eq!(uses, [("a".into(), 2), ("b".into(), 1), ("c".into(), 1)]);
    assert!(reopened.keys(None).iter().all(|v| v.last_used.is_some()));
}

#[test]
fn selected_key_goes_to_the_providers_variable_and_never_prints() {
    let (_dir, _path, mut store) = store_with("claude", &["main"]);
    let selected = store.select_for_launch("claude", None).unwrap().unwrap();
    assert_eq!(
        selected.env_pair(),
        ("ANTHROPIC_API_KEY", "sk-main-secret-0123456789")
    );
    let shown = format!("{selected:?} {store:?}");
    assert!(!shown.contains("secret-0123"), "{shown}");
    assert_eq!(
        selected.tmux_env_arg().unwrap().as_str(),
        "'ANTHROPIC_API_KEY=sk-main-secret-0123456789'"
    );
}

#[test]
fn a_session_is_pinned_by_fnv1a_and_moves_on_a_rate_limit() {
    let (_dir, _path, mut store) = store_with("gemini", &["a", "b", "c"]);
    // FNV-1a("foobar") = 0xbf9cf968 = 3214735720; 3214735720 % 3 = 1 → "b".
    for _ in 0..3 {
        assert_eq!(launch(&mut store, "gemini", Some("foobar")), "b");
    }
    let next = store
        .on_rate_limit("gemini", Some("b"), Some("foobar"))
        .unwrap();
    assert_eq!(next.as_deref(), Some("c"));
    assert_eq!(launch(&mut store, "gemini", Some("foobar")), "c");
}

#[test]
fn a_rate_limited_worker_retries_with_the_next_key_label() {
    let patterns = RateLimitPatterns::default();
    let (_dir, _path, mut store) = store_with("sim", &["first", "second"]);
    let used = launch(&mut store, "sim", None);
    assert_eq!(used, "first");
    let line = "sim: error 429: Too Many Requests (rate limit reached)";
    assert!(rate_limit_matches(line, &patterns));
    let next = store.on_rate_limit("sim", Some(&used), None).unwrap();
    assert_eq!(next.as_deref(), Some("second"));
    assert_eq!(launch(&mut store, "sim", None), "second");
}

#[test]
fn failover_holds_a_key_until_a_rate_limit_and_manual_never_moves() {
    let (_dir, _path, mut store) = store_with("kimi", &["a", "b"]);
    store.set_strategy("kimi", Strategy::Failover).unwrap();
    assert_eq!(launch(&mut store, "kimi", None), "a");
    assert_eq!(launch(&mut store, "kimi", Some("s1")), "a");
    assert_eq!(
        store
            .on_rate_limit("kimi", Some("a"), None)
            .unwrap()
            .as_deref(),
        Some("b")
    );
    assert_eq!(launch(&mut store, "kimi", None), "b");

    store.set_strategy("kimi", Strategy::Manual).unwrap();
    assert_eq!(store.on_rate_limit("kimi", Some("b"), None).unwrap(), None);
    assert_eq!(launch(&mut store, "kimi", None), "b");
    assert_eq!(store.rotate("kimi").unwrap().as_deref(), Some("a"));
    assert_eq!(launch(&mut store, "kimi", None), "a");
}

#[test]
fn nothing_to_select_is_none_and_writes_nothing() {
    let dir = crate::support::project();
    let path = dir.path().join("credentials.enc");
    let mut store = Store::open(&path, pass()).unwrap();
    assert!(store.select_for_launch("codex", None).unwrap().is_none());
    assert!(store
        .select_for_launch("command", Some("s"))
        .unwrap()
        .is_none());
    assert_eq!(store.on_rate_limit("codex", None, None).unwrap(), None);
    assert!(!path.exists(), "no store file is created by a lookup");
    assert_eq!(
        fs::read_dir(dir.path()).unwrap().count(),
        0,
        "nor a lock file"
    );
}

#[test]
fn expiring_soon_lists_keys_within_the_window_soonest_first() {
    let (_dir, _path, mut store) = store_with("qwen", &[]);
    let today = chrono::Utc::now().date_naive();
    for (label, days) in [("later", 30), ("soon", 3), ("today", 0)] {
        let text = format!("sk-qwen-{label}-0123456789");
        let day = today + chrono::Days::new(days);
        store
            .add("qwen", Some(label), key(&text), Some(day))
            .unwrap();
    }
    store
        .add("qwen", Some("forever"), key("sk-qwen-forever-0123"), None)
        .unwrap();
    let notices = store.expiring_soon(14);
    let got: Vec<(&str, i64)> = notices
        .iter()
        .map(|n| (n.label.as_str(), n.days_left))
        .collect();
    assert_eq!(got, [("today", 0), ("soon", 3)]);
    assert_eq!(store.expiring_soon(60).len(), 3);
}

/// The key reaches a tmux pane's environment through `source-file -` on stdin; no process's
/// argv ever holds it (read from /proc while the pane runs).
#[test]
fn tmux_env_arg_reaches_a_pane_without_touching_argv() {
    if which::which("tmux").is_err() {
        eprintln!("tmux not installed; skipped");
        return;
    }
    let dir = crate::support::project();
    let path = dir.path().join("credentials.enc");
    let mut store = Store::open(&path, pass()).unwrap();
    // Every character tmux's parser treats specially outside single quotes.
    let secret = "sk-Tmux;Quote#${HOME}%{x}#{pane_id}~-0123456789";
    store.add("sim", Some("t"), key(secret), None).unwrap();
    let selected = store.select_for_launch("sim", None).unwrap().unwrap();

    // Ended on drop, also when an assertion below fails.
    let server = crate::support::TmuxServer::new("creds-env");
    let socket = &server.socket;
    let tmux = |args: &[&str]| {
        Command::new("tmux")
            .args(["-L", socket, "-f", "/dev/null"])
            .args(args)
            .stdin(Stdio::null())
            .status()
            .unwrap()
    };
    assert!(tmux(&["new-session", "-d", "-s", "base"]).success());
    let out = dir.path().join("env.out");
    let script = format!(
        "new-window -d -t base -e {} 'printenv CREWMUX_SIM_API_KEY > {}; sleep 3'\n",
        selected.tmux_env_arg().unwrap().as_str(),
        out.display()
    );
    let mut client = Command::new("tmux")
        .args(["-L", socket, "source-file", "-"])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    client
        .stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    let sourced = client.wait().unwrap();

    crate::support::wait_for(
        || fs::read_to_string(&out).is_ok_and(|s| !s.is_empty()),
        Duration::from_secs(30),
    );
    let mut argv_hits = Vec::new();
    for entry in fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmdline) = fs::read(entry.path().join("cmdline")) {
            if cmdline.windows(10).any(|w| w == &secret.as_bytes()[..10]) {
                argv_hits.push(entry.file_name());
            }
        }
    }
    tmux(&["kill-server"]);
    assert!(sourced.success());
    assert_eq!(fs::read_to_string(&out).unwrap().trim_end(), secret);
    assert!(
        argv_hits.is_empty(),
        "key on the argv of pids {argv_hits:?}"
    );
}

/// A worker run as a child process: the key is in its environment only, a rate-limit line in
/// its output moves the provider on, and the retry's child sees the next key.
#[test]
fn a_child_worker_gets_the_key_by_environment_and_the_retry_the_next_one() {
    let (dir, _path, mut store) = store_with("sim", &["first", "second"]);
    // Failover keeps a key until it is limited, so only the rotation can change it.
    store.set_strategy("sim", Strategy::Failover).unwrap();
    let patterns = RateLimitPatterns::default();
    let seen = dir.path().join("seen");
    // The child records the key it was given (so the test can compare) and fails the way a
    // rate-limited agent does; the key is never on its argv or in its output.
    let script = "printenv CREWMUX_SIM_API_KEY >> \"$SEEN\"; \
                  echo 'Error: 429 Too Many Requests'; exit 1";
    let mut labels = Vec::new();
    for _attempt in 1..=2 {
        let selected = store.select_for_launch("sim", None).unwrap().unwrap();
        let (var, value) = selected.env_pair();
        let out = Command::new("sh")
            .args(["-c", script])
            .env(var, value)
            .env("SEEN", &seen)
            .output()
            .unwrap();
        let stdout = String::from_utf8(out.stdout).unwrap();
        assert!(!stdout.contains("secret"), "{stdout}");
        labels.push(selected.label.clone());
        if stdout.lines().any(|l| rate_limit_matches(l, &patterns)) {
            store
                .on_rate_limit("sim", Some(&selected.label), None)
                .unwrap();
        }
    }
    assert_eq!(labels, ["first", "second"]);
    assert_eq!(
        fs::read_to_string(&seen).unwrap(),
        "sk-first-secret-0123456789\nsk-second-secret-0123456789\n"
    );
}
