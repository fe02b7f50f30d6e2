//! Provider health: on PATH, version, auth state; probes run in parallel, each killed (its
//! whole process group) at its timeout so that a hanging CLI never hangs the caller.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::LazyLock;
use std::time::{Duration, Instant};

use regex::Regex;
use serde::Serialize;

use super::spec::{compile, ProviderKind, ProviderSpec, Registry, Unproven};
use super::EnvSnapshot;

/// Default auth probe timeout, ms.
pub const DEFAULT_AUTH_TIMEOUT_MS: u64 = 10_000;
/// Timeout of `--version`, ms: Node CLIs take 1-3 s alone and several times that when
/// doctor starts them all at once on a small machine.
pub const VERSION_TIMEOUT_MS: u64 = 15_000;

/// Whether a CLI can make authenticated calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum AuthState {
    Authenticated,
    NotAuthenticated,
    Unknown,
}

impl AuthState {
    pub fn as_str(self) -> &'static str {
        match self {
            AuthState::Authenticated => "authenticated",
            AuthState::NotAuthenticated => "not-authenticated",
            AuthState::Unknown => "unknown",
        }
    }
}

/// What doctor and routing know about one provider.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProviderHealth {
    pub provider: String,
    pub kind: ProviderKind,
    pub installed: bool,
    pub path: Option<PathBuf>,
    pub version: Option<String>,
    pub auth: AuthState,
    /// Why: which variable, file or probe output decided the auth state.
    pub auth_detail: String,
    pub install_hint: String,
}

impl ProviderHealth {
    /// Installed and not known to be logged out (an `unknown` auth may still work).
    pub fn usable(&self) -> bool {
        self.installed && self.auth != AuthState::NotAuthenticated
    }

    /// One word for tables: ready, not-installed, not-authenticated, auth-unknown.
    pub fn summary(&self) -> &'static str {
        if self.kind != ProviderKind::Agent {
            "ready"
        } else if !self.installed {
            "not-installed"
        } else {
            match self.auth {
                AuthState::Authenticated => "ready",
                AuthState::NotAuthenticated => "not-authenticated",
                AuthState::Unknown => "auth-unknown",
            }
        }
    }
}

/// Output of a command run with a timeout.
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeOutput {
    /// None when the command was killed at its timeout or died by a signal.
    pub exit_code: Option<i32>,
    /// stdout and stderr, joined.
    pub output: String,
    pub timed_out: bool,
}

/// Run `program args` with stdin closed, a private process group and `PATH`/`HOME` from
/// `env`; kill the group with SIGKILL at `timeout`. Errors: the program cannot be started.
pub fn run_with_timeout(
    program: &Path,
    args: &[String],
    env: &EnvSnapshot,
    timeout: Duration,
) -> std::io::Result<ProbeOutput> {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(program);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    for key in ["PATH", "HOME"] {
        if let Some(v) = env.get(key) {
            cmd.env(key, v);
        }
    }
    let mut child = cmd.spawn()?;
    let pid = child.id();
    let mut out = child.stdout.take().expect("piped");
    let mut err = child.stderr.take().expect("piped");
    let t_out = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = out.read_to_end(&mut s);
        s
    });
    let t_err = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = err.read_to_end(&mut s);
        s
    });
    let deadline = Instant::now() + timeout;
    let mut timed_out = false;
    let status = loop {
        if let Some(st) = child.try_wait()? {
            break Some(st);
        }
        if Instant::now() >= deadline {
            timed_out = true;
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
            let _ = child.kill();
            break child.wait().ok();
        }
        std::thread::sleep(Duration::from_millis(15));
    };
    // The group is dead, so the pipes close and the readers end.
    let mut bytes = t_out.join().unwrap_or_default();
    bytes.push(b'\n');
    bytes.extend(t_err.join().unwrap_or_default());
    Ok(ProbeOutput {
        exit_code: if timed_out {
            None
        } else {
            status.and_then(|s| s.code())
        },
        output: String::from_utf8_lossy(&bytes).into_owned(),
        timed_out,
    })
}

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
                    format!("status says: {first_line}"),
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
                    format!("status says: {first_line}"),
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

/// Options of a health check.
#[derive(Debug, Clone, Default)]
pub struct ProbeOptions {
    /// Overrides every provider's auth probe timeout (tests use a short one).
    pub auth_timeout: Option<Duration>,
    /// Skip the `--version` call (routing needs no version).
    pub skip_version: bool,
}

/// Check one provider: find the binary on `env`'s PATH, read its version, decide its auth
/// state (a key variable, then the probe command, then a stored-login file, then `unproven`).
pub fn probe(
    name: &str,
    spec: &ProviderSpec,
    env: &EnvSnapshot,
    opts: &ProbeOptions,
) -> ProviderHealth {
    let mut h = ProviderHealth {
        provider: name.to_string(),
        kind: spec.kind,
        installed: false,
        path: None,
        version: None,
        auth: AuthState::Unknown,
        auth_detail: String::new(),
        install_hint: spec.install_hint.clone(),
    };
    match spec.kind {
        ProviderKind::Command => {
            h.installed = true;
            h.auth_detail = "runs the team file's argv".into();
            return h;
        }
        ProviderKind::Sim => {
            h.installed = true;
            h.auth = AuthState::Authenticated;
            h.auth_detail = "built in, no key needed".into();
            h.version = Some(env!("CARGO_PKG_VERSION").to_string());
            return h;
        }
        ProviderKind::Agent => {}
    }
    let cwd = env
        .get("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/"));
    let Ok(path) = which::which_in(&spec.binary, env.get("PATH"), cwd) else {
        h.auth_detail = format!("`{}` is not on PATH", spec.binary);
        return h;
    };
    h.installed = true;
    h.path = Some(path.clone());
    if !opts.skip_version && !spec.version_args.is_empty() {
        if let Ok(out) = run_with_timeout(
            &path,
            &spec.version_args,
            env,
            Duration::from_millis(VERSION_TIMEOUT_MS),
        ) {
            h.version = parse_version(&out.output);
        }
    }
    let (auth, detail) = auth_state(spec, &path, env, opts);
    h.auth = auth;
    h.auth_detail = detail;
    h
}

fn auth_state(
    spec: &ProviderSpec,
    path: &Path,
    env: &EnvSnapshot,
    opts: &ProbeOptions,
) -> (AuthState, String) {
    let a = &spec.auth;
    if let Some(var) = a
        .env_any
        .iter()
        .find(|v| env.get(v).is_some_and(|x| !x.is_empty()))
    {
        return (AuthState::Authenticated, format!("${var} is set"));
    }
    if !a.probe.is_empty() {
        let timeout = opts.auth_timeout.unwrap_or(Duration::from_millis(
            a.timeout_ms.unwrap_or(DEFAULT_AUTH_TIMEOUT_MS),
        ));
        match run_with_timeout(path, &a.probe, env, timeout) {
            Ok(out) if out.timed_out => {
                return (
                    AuthState::Unknown,
                    format!(
                        "`{} {}` timed out after {} ms",
                        spec.binary,
                        a.probe.join(" "),
                        timeout.as_millis()
                    ),
                )
            }
            Ok(out) => {
                let (state, detail) =
                    classify_probe(out.exit_code, &out.output, &a.not_patterns, &a.ok_patterns);
                if state != AuthState::NotAuthenticated || a.files_any.is_empty() {
                    return (state, detail);
                }
            }
            Err(e) => {
                return (
                    AuthState::Unknown,
                    format!("auth probe failed to start: {e}"),
                )
            }
        }
    }
    let home = env.get("HOME").unwrap_or("");
    for f in &a.files_any {
        let p = match f.strip_prefix("~/") {
            Some(rest) => Path::new(home).join(rest),
            None => PathBuf::from(f),
        };
        if p.exists() {
            return (AuthState::Authenticated, format!("stored login {f}"));
        }
    }
    let mut proofs: Vec<String> = a.env_any.iter().map(|v| format!("${v}")).collect();
    proofs.extend(a.files_any.iter().cloned());
    let detail = if proofs.is_empty() {
        "nothing to check".to_string()
    } else {
        format!("none of {}", proofs.join(", "))
    };
    match a.unproven {
        Unproven::Not => (AuthState::NotAuthenticated, detail),
        Unproven::Unknown => (AuthState::Unknown, detail),
    }
}

/// First `N.N[.N][suffix]` in a version output.
pub fn parse_version(output: &str) -> Option<String> {
    static V: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"\d+\.\d+(?:\.\d+)?[0-9A-Za-z.+-]*").expect("valid"));
    V.find(output).map(|m| m.as_str().to_string())
}

/// Probe the named providers in parallel (one thread each); results in the given order.
pub fn probe_many(
    registry: &Registry,
    names: &[&str],
    env: &EnvSnapshot,
    opts: &ProbeOptions,
) -> Vec<ProviderHealth> {
    std::thread::scope(|s| {
        let handles: Vec<_> = names
            .iter()
            .filter_map(|n| registry.get(n).map(|spec| (*n, spec)))
            .map(|(n, spec)| s.spawn(move || probe(n, spec, env, opts)))
            .collect();
        handles.into_iter().filter_map(|h| h.join().ok()).collect()
    })
}

/// tmux on PATH and its version (`tmux -V` prints e.g. `tmux 3.3a`, `tmux next-3.4`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TmuxHealth {
    pub installed: bool,
    pub path: Option<PathBuf>,
    pub version: Option<String>,
    /// Parsed `(major, minor)`.
    pub parsed: Option<(u32, u32)>,
    /// Installed and ≥ 3.0 (crewmux relies on `remain-on-exit` per pane and `#{pane_dead_status}`).
    pub ok: bool,
}

/// Parse `tmux -V` output into `(major, minor)`.
pub fn parse_tmux_version(output: &str) -> Option<(u32, u32)> {
    static V: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(\d+)\.(\d+)").expect("valid"));
    let c = V.captures(output)?;
    Some((c[1].parse().ok()?, c[2].parse().ok()?))
}

/// Check tmux.
pub fn probe_tmux(env: &EnvSnapshot) -> TmuxHealth {
    let cwd = PathBuf::from("/");
    let mut t = TmuxHealth {
        installed: false,
        path: None,
        version: None,
        parsed: None,
        ok: false,
    };
    let Ok(path) = which::which_in("tmux", env.get("PATH"), cwd) else {
        return t;
    };
    t.installed = true;
    if let Ok(out) = run_with_timeout(&path, &["-V".to_string()], env, Duration::from_secs(5)) {
        let line = out.output.trim().to_string();
        t.parsed = parse_tmux_version(&line);
        t.version = Some(line);
    }
    t.path = Some(path);
    t.ok = t.parsed.is_some_and(|v| v >= (3, 0));
    t
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn versions() {
        assert_eq!(
            parse_version("codex-cli 0.171.0\n").as_deref(),
            Some("0.171.0")
        );
        assert_eq!(
            parse_version("2.1.197 (Claude Code)").as_deref(),
            Some("2.1.197")
        );
        assert_eq!(parse_tmux_version("tmux 3.3a"), Some((3, 3)));
        assert_eq!(parse_tmux_version("tmux next-3.4"), Some((3, 4)));
        assert_eq!(parse_tmux_version("tmux 2.9a"), Some((2, 9)));
        assert_eq!(parse_tmux_version("tmux master"), None);
    }

    #[test]
    fn hanging_command_is_killed_at_its_timeout() {
        let env = EnvSnapshot::from_pairs([("PATH", "/usr/bin:/bin")]);
        let t0 = Instant::now();
        let out = run_with_timeout(
            Path::new("/bin/sh"),
            &["-c".into(), "sleep 30 & sleep 30".into()],
            &env,
            Duration::from_millis(200),
        )
        .unwrap();
        assert!(out.timed_out);
        assert_eq!(out.exit_code, None);
        assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    }
}
