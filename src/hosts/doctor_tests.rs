use std::sync::Mutex;

use super::*;

/// A host that answers each script by the first rule whose needle it contains; a script
/// no rule knows exits 127 (not found).
struct Fake {
    rules: Vec<(&'static str, Result<RemoteOut>)>,
    seen: Mutex<Vec<String>>,
}

fn says(code: i32, output: &str) -> Result<RemoteOut> {
    Ok(RemoteOut {
        code: Some(code),
        output: output.into(),
        timed_out: false,
    })
}

impl Fake {
    fn new(rules: Vec<(&'static str, Result<RemoteOut>)>) -> Fake {
        Fake {
            rules,
            seen: Mutex::new(vec![]),
        }
    }
}

impl RemoteSh for Fake {
    fn sh(&self, script: &str, _limit: Duration) -> Result<RemoteOut> {
        self.seen.lock().unwrap().push(script.to_string());
        for (needle, out) in &self.rules {
            if script.contains(needle) {
                return match out {
                    Ok(o) => Ok(o.clone()),
                    // ssh's own failure stays one (its words are read).
                    Err(crate::error::Error::Command { program, message }) => {
                        Err(crate::error::Error::Command {
                            program: program.clone(),
                            message: message.clone(),
                        })
                    }
                    Err(e) => Err(crate::error::Error::Other(e.to_string())),
                };
            }
        }
        says(127, "sh: not found")
    }
}

fn host() -> HostSpec {
    HostSpec {
        name: "box".into(),
        ssh: "me@box".into(),
        ssh_args: vec![],
        workdir: "/srv/crew".into(),
        max_workers: 2,
        tmux: "tmux".into(),
        tmux_socket: "crewmux".into(),
        lost_after_s: 120,
        source: "/p/.crewmux/hosts.toml".into(),
    }
}

fn no_store() -> EnvSnapshot {
    EnvSnapshot::from_pairs([("CREWMUX_CONFIG_DIR", "/nonexistent-crewmux-config")])
}

#[test]
fn an_unreachable_host_is_one_ssh_line_and_nothing_else_is_tried() {
    let fake = Fake::new(vec![(
        "exec true",
        Err(crate::error::Error::Other(
            "ssh: connect to host box port 22: Connection refused".into(),
        )),
    )]);
    let r = check_host(&host(), &fake, &Registry::builtin(), &no_store());
    assert!(!r.usable);
    assert_eq!(r.checks.len(), 1, "{:?}", r.checks);
    assert_eq!(r.checks[0].check, "ssh");
    assert!(
        r.checks[0].detail.contains("Connection refused")
            && r.checks[0].detail.contains("ssh me@box"),
        "{}",
        r.checks[0].detail
    );
    assert!(r.providers.is_empty());
    assert_eq!(fake.seen.lock().unwrap().len(), 1);
}

#[test]
fn a_refused_login_is_said_as_refused_not_as_unreachable() {
    let fake = Fake::new(vec![(
        "exec true",
        Err(crate::error::Error::Command {
            program: "ssh to host box".into(),
            message: "me@box: Permission denied (publickey).".into(),
        }),
    )]);
    let r = check_host(&host(), &fake, &Registry::builtin(), &no_store());
    assert!(!r.usable);
    assert!(
        r.checks[0].detail.starts_with(
            "login refused: me@box: Permission denied (publickey).; check `ssh me@box` by hand"
        ),
        "{}",
        r.checks[0].detail
    );
}

#[test]
fn an_old_tmux_or_a_missing_git_makes_the_host_unusable_with_the_fix_named() {
    let fake = Fake::new(vec![
        ("exec true", says(0, "")),
        ("-V", says(0, "tmux 2.9a\n")),
        ("mkdir -p", says(0, "")),
    ]);
    let r = check_host(&host(), &fake, &Registry::builtin(), &no_store());
    assert!(!r.usable);
    let line = |c: &str| r.checks.iter().find(|x| x.check == c).unwrap().clone();
    assert!(line("ssh").ok);
    let tmux = line("tmux");
    assert!(!tmux.ok && tmux.detail.contains("2.9"), "{tmux:?}");
    assert!(tmux.detail.contains("install tmux 3.2"), "{tmux:?}");
    let git = line("git");
    assert!(!git.ok && git.detail.contains("install git"), "{git:?}");
    assert!(line("workdir").ok);
    // No agent CLI is on that host's PATH.
    assert!(
        r.providers.iter().all(|p| !p.installed),
        "{:?}",
        r.providers
    );
    assert!(r.ready().is_empty());
}

#[test]
fn an_agent_cli_is_probed_on_the_host_with_its_own_rules() {
    let reg = Registry::builtin();
    let spec = reg.get("claude").unwrap();
    // Installed there, logged out by its status command, no login file there.
    let fake = Fake::new(vec![
        ("command -v", says(0, "/usr/local/bin/claude\n")),
        ("--version", says(0, "2.1.197 (Claude Code)\n")),
        (
            "auth",
            says(
                1,
                "{\n  \"loggedIn\": false,\n  \"authMethod\": \"none\"\n}",
            ),
        ),
        ("test -e", says(1, "")),
        ("printenv", says(1, "")),
    ]);
    let h = probe_agent("claude", spec, &fake, &no_store());
    assert!(h.installed, "{h:?}");
    assert_eq!(h.version.as_deref(), Some("2.1.197"));
    assert_eq!(h.auth, AuthState::NotAuthenticated, "{h:?}");
    assert!(!h.usable());
    // A key variable set in the host's own environment proves a key there.
    let fake = Fake::new(vec![
        ("command -v", says(0, "/usr/local/bin/claude\n")),
        ("--version", says(0, "2.1.197 (Claude Code)\n")),
        ("printenv", says(0, "")),
    ]);
    let h = probe_agent("claude", spec, &fake, &no_store());
    assert_eq!(h.auth, AuthState::Authenticated, "{h:?}");
    assert!(h.auth_detail.contains("on the host"), "{}", h.auth_detail);
    // Not on the host's PATH.
    let fake = Fake::new(vec![]);
    let h = probe_agent("claude", spec, &fake, &no_store());
    assert!(!h.installed && h.auth_detail.contains("not on PATH there"));
}

#[test]
fn the_providers_env_reaches_the_probe_on_stdin_never_in_an_argument() {
    let mut spec = Registry::builtin().get("claude").unwrap().clone();
    spec.env
        .insert("CLAUDE_CONFIG_DIR".into(), "/home/me/it's here".into());
    let fake = Fake::new(vec![
        ("command -v", says(0, "/opt/claude\n")),
        ("--version", says(0, "2.1.197\n")),
        ("auth", says(0, "{\"loggedIn\": true}")),
    ]);
    let h = probe_agent("claude", &spec, &fake, &no_store());
    assert_eq!(h.auth, AuthState::Authenticated, "{h:?}");
    let seen = fake.seen.lock().unwrap();
    let probe = seen.iter().find(|s| s.contains("auth")).unwrap();
    assert!(
        probe.contains("export CLAUDE_CONFIG_DIR=\"/home/me/it's here\"\n"),
        "{probe}"
    );
    assert!(probe.contains("exec /opt/claude "), "{probe}");
}

#[test]
fn an_account_without_a_shell_says_its_exit_code_as_a_number() {
    let fake = Fake::new(vec![(
        "exec true",
        says(1, "This account is currently not available.\n"),
    )]);
    let r = check_host(&host(), &fake, &Registry::builtin(), &no_store());
    assert!(!r.usable);
    assert!(
        r.checks[0]
            .detail
            .starts_with("unreachable: `true` exited 1: This account is currently not available.;"),
        "{}",
        r.checks[0].detail
    );
    assert_eq!(how_it_ended(None), "ended on a signal");
}
