//! The fence per worker (README "Sandbox"): bad `[sandbox]` values and `--sandbox` flags
//! are one line and exit 2 with nothing made.

use crate::support::*;

const WORKER: &str = "[[worker]]\nid = \"a\"\nrole = \"backend-engineer\"\nprovider = \"command\"\ncommand = [\"true\"]\n";

#[test]
fn bad_sandbox_values_are_one_line_naming_the_value_and_the_allowed_ones() {
    let tmp = project();
    let p = tmp.path();
    let cases: Vec<(String, Vec<&str>, &str)> = vec![
        (
            format!("[sandbox]\nmode = \"jail\"\n\n{WORKER}"),
            vec![],
            "team.toml:2:8: mode = \"jail\": unknown value (use none, bwrap or container)",
        ),
        (
            format!("[sandbox]\nnetwork = \"off\"\n\n{WORKER}"),
            vec![],
            "network = \"off\": unknown value (use allow or none)",
        ),
        (
            format!("{WORKER}sandbox = {{ mode = \"container\" }}\n"),
            vec![],
            "worker `a`: `sandbox`: `mode = \"container\"` needs `image = \"…\"`",
        ),
        (
            format!("[sandbox]\nimage = \"node:22\"\n\n{WORKER}"),
            vec![],
            "`image` is for `mode = \"container\"`, and the mode is `none`",
        ),
        (
            WORKER.to_string(),
            vec!["--sandbox", "jail"],
            "invalid value 'jail' for '--sandbox <MODE>' [possible values: none, bwrap, container]",
        ),
        (
            WORKER.to_string(),
            vec!["--sandbox", "container"],
            "--sandbox container: `mode = \"container\"` needs `image = \"…\"`",
        ),
    ];
    for (team, flags, needle) in cases {
        let file = team_file(p, "team.toml", &team);
        let mut args = vec!["run", "--headless", "--team", file.to_str().unwrap()];
        args.extend(flags.iter().copied());
        args.push("fix it");
        let out = run_crewmux(p, "unused", &args);
        let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
        assert_eq!(out.status.code(), Some(2), "{team} {flags:?}: {err}");
        assert!(err.contains(needle), "{err:?} lacks {needle:?}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    assert!(!p.join(".crewmux").exists(), "nothing created on bad input");
}

/// bwrap is here and can make its namespaces; else the test is skipped loudly, or fails
/// under `CREWMUX_REQUIRE_BWRAP=1` (`.ci/run` installs it).
fn bwrap_ready(test: &str) -> bool {
    let ok = std::process::Command::new("bwrap")
        .args(["--ro-bind", "/", "/", "true"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("CREWMUX_REQUIRE_BWRAP").is_none(),
            "{test}: bwrap is missing or cannot start here, and CREWMUX_REQUIRE_BWRAP is set"
        );
        eprintln!("SKIP {test}: bwrap is missing or cannot make namespaces here (apt-get install bubblewrap)");
    }
    ok
}

/// A fake home with a fake SSH key, and a credential store (one key) in its crewmux
/// config dir.
fn fake_home(dir: &std::path::Path) -> std::path::PathBuf {
    let home = dir.join("home");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_ed25519"), "FAKE-SSH-KEY\n").unwrap();
    let out = crewmux()
        .args(["creds", "add", "--provider", "codex", "--label", "a"])
        .env("CREWMUX_CONFIG_DIR", home.join(".config/crewmux"))
        .env("CREWMUX_CREDENTIAL_PASSPHRASE", crate::support::creds::PASS)
        .env("HOME", &home)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin
                .take()
                .unwrap()
                .write_all(format!("{}\n", crate::support::creds::KEY_A).as_bytes())?;
            c.wait_with_output()
        })
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(home.join(".config/crewmux/credentials.enc").is_file());
    home
}

/// `crewmux run` of `team` in `repo` on `backend` with `HOME` at `home`, bounded and
/// event-checked like every other run of the tests.
fn run_with_home(
    repo: &std::path::Path,
    team: &std::path::Path,
    home: &std::path::Path,
    backend: &Backend,
) -> std::process::Output {
    let child = crewmux()
        .current_dir(repo)
        .env("HOME", home)
        .env("CREWMUX_CONFIG_DIR", home.join(".config/crewmux"))
        .env("CREWMUX_CREDENTIAL_PASSPHRASE", crate::support::creds::PASS)
        .env("CREWMUX_TMUX_SOCKET", backend.socket())
        .args([
            "run",
            "--team",
            team.to_str().unwrap(),
            "--no-clarify",
            "--headless",
        ])
        .args(["--backend", backend.name, "--", "probe the fence"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let out = wait_limited(child, &["run"]);
    assert_events_once(repo);
    out
}

/// A loopback listener that counts the connections it accepts until it is dropped.
struct Listener {
    port: u16,
    accepted: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl Listener {
    fn start() -> Self {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let count = accepted.clone();
        std::thread::spawn(move || {
            for s in l.incoming().flatten() {
                count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                drop(s);
            }
        });
        Listener { port, accepted }
    }

    fn accepted(&self) -> usize {
        self.accepted.load(std::sync::atomic::Ordering::SeqCst)
    }
}

#[test]
fn a_fenced_worker_reads_and_writes_only_its_own_worktree_and_network_none_is_loopback_only() {
    if !bwrap_ready("sandbox-fence") {
        return;
    }
    for backend in backends("sandbox-fence") {
        let repo = repo(&[("seed.txt", "the user's checkout\n")]);
        let r = repo.path();
        let outside = project();
        let home = fake_home(outside.path());
        let listener = Listener::start();
        let port = listener.port;
        let out_dir = outside.path().display();
        let repo_dir = r.display();
        let home_dir = home.display();
        // Each try that succeeds is a leak; the worker exits 1 on any.
        let probe = format!(
            r#"leak=0
t() {{ if sh -c "$1" >/dev/null 2>&1; then echo "LEAK: $1"; leak=1; else echo "blocked: $1"; fi; }}
t 'cat {home_dir}/.ssh/id_ed25519'
t 'cat {home_dir}/.config/crewmux/credentials.enc'
t 'cat {repo_dir}/seed.txt'
t 'cat {repo_dir}/.crewmux/worktrees/'$CREWMUX_RUN_ID'/peer/peer.txt'
# Under /tmp (the test's folders) these land in the fence's private /tmp, or fail;
# either way not on the disk (checked after the run).
echo x > {out_dir}/escape.txt; echo x > {repo_dir}/escape.txt
t 'echo x > /escape.txt'
t 'echo x > /usr/escape.txt'
t 'echo x > /etc/escape.txt'
t 'bash -c "echo hi > /dev/tcp/127.0.0.1/{port}"'
t '[ -n "$CREWMUX_CREDENTIAL_PASSPHRASE" ]'
cat seed.txt >/dev/null || leak=1
echo fenced > fenced.txt
exit $leak"#
        );
        let team = format!(
            "[sandbox]\nmode = \"bwrap\"\nnetwork = \"none\"\n\n{}{}{}\
             [[check]]\nid = \"no-key\"\ncommand = [\"sh\", \"-c\", \"! cat {home_dir}/.ssh/id_ed25519\"]\n",
            command_worker("peer", "echo peer > peer.txt", "peer done"),
            command_worker("probe", &probe, "probe done").replace(
                "max_attempts = 1\n",
                "max_attempts = 1\nafter = [\"peer\"]\n"
            ),
            command_worker(
                "online",
                &format!("bash -c 'echo hi > /dev/tcp/127.0.0.1/{port}'"),
                "online done"
            )
            .replace(
                "max_attempts = 1\n",
                "max_attempts = 1\nsandbox = { network = \"allow\" }\n"
            ),
        );
        let team_path = team_file(outside.path(), "team.toml", &team);
        let out = run_with_home(r, &team_path, &home, &backend);
        let s = summary(&out);
        let run = run_id(r);
        let log =
            std::fs::read_to_string(only_run_dir(r).join("workers/probe/attempt-1/output.log"))
                .unwrap();
        assert!(!log.contains("LEAK"), "{backend}: {log}");
        assert_eq!(log.matches("blocked: ").count(), 9, "{backend}: {log}");
        assert!(!log.contains("FAKE-SSH-KEY"), "{backend}: {log}");
        for id in ["peer", "probe", "online"] {
            assert_eq!(
                outcome(worker(&s, id)),
                (Some("completed"), Some(0), Some(1)),
                "{backend}: {id}: {s}"
            );
        }
        assert_eq!(
            listener.accepted(),
            1,
            "{backend}: only `online` reached the host's loopback"
        );
        assert!(!outside.path().join("escape.txt").exists());
        assert!(!r.join("escape.txt").exists());
        assert_eq!(
            git(r, &["show", &format!("crewmux/{run}/probe:fenced.txt")]).trim(),
            "fenced",
            "{backend}: the worker's own edit is on its branch"
        );
        let verdicts = s["council"]["verdicts"].to_string();
        assert!(
            verdicts.contains("no-key") && !verdicts.contains("\"fail\""),
            "{backend}: the check ran in the fence too: {verdicts}"
        );
    }
}

#[test]
fn exit_codes_and_a_forged_marker_come_out_right_inside_the_fence() {
    if !bwrap_ready("sandbox-exits") {
        return;
    }
    let team = format!(
        "[sandbox]\nmode = \"bwrap\"\n\n{}{}{}",
        command_worker("zero", "echo ok", "zero done"),
        command_worker("three", "echo failing; exit 3", "three done"),
        // Markers of other nonces never end a worker, fenced as unfenced. (An agent can
        // learn its own nonce, from its environment or its MCP config, with or without
        // the fence: README "Sandbox", what it does not fence.)
        command_worker(
            "forger",
            "echo __CREWMUX_EXIT_0123456789abcdef__:0; printf '__CREWMUX_EXIT_%s__:0 trailing\\n' x; sleep 1; exit 5",
            "forged"
        ),
    );
    for backend in backends("sandbox-exits") {
        let repo = repo(&[("seed.txt", "x\n")]);
        let dir = project();
        let home = dir.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        let team_path = team_file(dir.path(), "team.toml", &team);
        let out = run_with_home(repo.path(), &team_path, &home, &backend);
        let s = summary(&out);
        assert_eq!(
            outcome(worker(&s, "zero")),
            (Some("completed"), Some(0), Some(1)),
            "{backend}: {s}"
        );
        assert_eq!(
            outcome(worker(&s, "three")),
            (Some("failed"), Some(3), Some(1)),
            "{backend}: {s}"
        );
        assert_eq!(
            outcome(worker(&s, "forger")),
            (Some("failed"), Some(5), Some(1)),
            "{backend}: {s}"
        );
        let run_dir = only_run_dir(repo.path());
        let launch =
            std::fs::read_to_string(run_dir.join("workers/zero/attempt-1/launch.sh")).unwrap();
        assert!(
            launch.contains("bwrap"),
            "{backend}: the agent ran fenced: {launch}"
        );
    }
}

#[test]
fn a_fence_that_cannot_start_fails_the_attempt_as_sandbox_and_is_not_retried() {
    if !bwrap_ready("sandbox-broken") {
        return;
    }
    let dir = project();
    // A bwrap that passes the run's preflight and then cannot make its namespaces, as on a
    // machine whose user namespaces were turned off after the run began.
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let fake = bin.join("bwrap");
    std::fs::write(
        &fake,
        "#!/bin/sh\nif [ \"$*\" = '--ro-bind / / true' ] || [ \"$1\" = --version ]; then exit 0; fi\n\
         echo 'bwrap: Creating new namespace failed: Operation not permitted' >&2\nexit 1\n",
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let ran = dir.path().join("ran");
    let team = format!(
        "[sandbox]\nmode = \"bwrap\"\n\n{}",
        command_worker("w", &format!("touch {}", ran.display()), "done")
            .replace("max_attempts = 1", "max_attempts = 3"),
    );
    let tmp = TeamProject::new(&team);
    let child = crewmux()
        .current_dir(tmp.path())
        .env("PATH", path)
        .args([
            "run",
            "--team",
            tmp.team_arg(),
            "--no-clarify",
            "--headless",
            "--backend",
            "process",
            "--",
            "go",
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let out = wait_limited(child, &["run"]);
    let s = summary(&out);
    let w = worker(&s, "w");
    assert_eq!(outcome(w), (Some("failed"), Some(1), Some(1)), "{s}");
    assert_eq!(
        w["reason"], "sandbox: Creating new namespace failed: Operation not permitted",
        "{s}"
    );
    assert!(!ran.exists(), "the agent never ran unfenced");
}

#[test]
fn a_fence_the_machine_cannot_give_is_refused_at_the_start_with_the_fix() {
    let dir = project();
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for tool in ["sh", "git", "tmux", "true"] {
        if let Some(p) = std::env::split_paths(&std::env::var_os("PATH").unwrap())
            .map(|d| d.join(tool))
            .find(|p| p.is_file())
        {
            std::os::unix::fs::symlink(p, bin.join(tool)).unwrap();
        }
    }
    let tmp = TeamProject::new(WORKER);
    let refused = |path: &std::path::Path, args: &[&str]| {
        let out = crewmux()
            .current_dir(tmp.path())
            .env("PATH", path)
            .args([
                "run",
                "--team",
                tmp.team_arg(),
                "--no-clarify",
                "--headless",
                "--backend",
                "process",
            ])
            .args(args)
            .args(["--", "go"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(!tmp.path().join(".crewmux").exists(), "nothing made: {err}");
        err
    };
    assert_eq!(
        refused(&bin, &["--sandbox", "bwrap"]),
        "crewmux: sandbox `bwrap` cannot start here: bwrap (bubblewrap) is not installed: apt-get install bubblewrap"
    );
    // User namespaces off: bwrap's own words.
    let fake = bin.join("bwrap");
    std::fs::write(
        &fake,
        "#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n",
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let err = refused(&bin, &["--sandbox", "bwrap"]);
    assert!(
        err.contains("`bwrap --ro-bind / / true` failed here (bwrap: setting up uid map: Permission denied): user namespaces"),
        "{err}"
    );
    // No container runtime on this PATH: said, with the way out.
    let team = format!("[sandbox]\nmode = \"container\"\nimage = \"debian:12\"\n\n{WORKER}");
    std::fs::write(tmp.team(), team).unwrap();
    let err = refused(&bin, &[]);
    assert!(
        err.starts_with("crewmux: sandbox `container` cannot start here: no container runtime can run here (podman not installed; docker not installed)"),
        "{err}"
    );
}

#[test]
fn dispatch_and_doctor_say_each_fence_and_whether_it_can_start_here() {
    let team = format!(
        "[sandbox]\nmode = \"bwrap\"\nnetwork = \"none\"\n\n{WORKER}\n[[worker]]\nid = \"open\"\nrole = \"backend-engineer\"\nprovider = \"command\"\ncommand = [\"true\"]\nsandbox = {{ mode = \"none\" }}\n"
    );
    let tmp = TeamProject::new(&team);
    let dispatch = |extra: &[&str]| {
        let out = crewmux()
            .current_dir(tmp.path())
            .args(["dispatch", "--team", tmp.team_arg()])
            .args(extra)
            .arg("go")
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let text = dispatch(&[]);
    let json: serde_json::Value = serde_json::from_str(&dispatch(&["--json"])).unwrap();
    let bwrap = std::process::Command::new("bwrap")
        .args(["--ro-bind", "/", "/", "true"])
        .output()
        .is_ok_and(|o| o.status.success());
    if bwrap {
        assert!(
            text.contains("\nsandbox: bwrap, no network (bubblewrap "),
            "{text}"
        );
        assert_eq!(json["sandbox_here"]["bwrap"]["ready"], true, "{json}");
    } else {
        assert!(
            text.contains("\nsandbox: bwrap, no network: cannot start here: "),
            "{text}"
        );
    }
    assert!(text.contains("\n  open: none\n"), "{text}");
    assert_eq!(json["workers"][0]["sandbox"]["mode"], "bwrap", "{json}");
    assert!(json["workers"][1].get("sandbox").is_none(), "{json}");

    let out = crewmux().args(["doctor", "--json"]).output().unwrap();
    let doctor: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let modes: Vec<&str> = doctor["sandbox"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["mode"].as_str().unwrap())
        .collect();
    assert_eq!(modes, ["bwrap", "container"], "{doctor}");
    assert_eq!(doctor["sandbox"][0]["ready"], bwrap, "{doctor}");
}

#[test]
fn a_cancel_reaches_a_fenced_agent_with_its_grace() {
    if !bwrap_ready("sandbox-cancel") {
        return;
    }
    // As cancel_grace's worker, fenced: bwrap must outlive the SIGTERM and pass on the
    // handler's own exit, not die with the signal and take the agent with it.
    let team = "[sandbox]\nmode = \"bwrap\"\n\n[[worker]]\nid = \"slow\"\nrole = \"backend-engineer\"\nprovider = \"command\"\nmax_attempts = 1\ncommand = [\"sh\", \"-c\", \"trap 'echo got TERM; sleep 2; echo handler done; exit 0' TERM; echo ready; while :; do sleep 0.1; done\"]\n";
    for backend in backends("sandbox-cancel") {
        let t = TeamProject::new(team);
        let d = t.path();
        let child = t.run("wait for the cancel").on(&backend).spawn();
        wait_running(d, 1);
        let attempt = only_run_dir(d).join("workers/slow/attempt-1");
        let log = attempt.join("output.log");
        assert!(
            wait_for(
                || std::fs::read_to_string(&log).is_ok_and(|l| l.contains("ready")),
                std::time::Duration::from_secs(60)
            ),
            "{backend}: the worker never said ready"
        );
        let id = run_id(d);
        let c = run_crewmux(d, backend.socket(), &["cancel", &id, "--grace", "20"]);
        assert!(c.status.success(), "{backend}: {}", stderr(&c));
        let out = wait_limited(child, &["run"]);
        assert_eq!(summary(&out)["status"], "cancelled", "{backend}");
        let said = std::fs::read_to_string(&log).unwrap();
        assert!(
            said.contains("got TERM") && said.contains("handler done"),
            "{backend}: the TERM handler was cut: {said}"
        );
        let exit: serde_json::Value =
            serde_json::from_slice(&std::fs::read(attempt.join("exit.json")).unwrap()).unwrap();
        assert_eq!(exit["code"], 0, "{backend}: the handler's own exit: {exit}");
    }
}
