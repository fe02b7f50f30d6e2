//! The user-facing host features on the test's own SSH host (`support::sshd`): `--hosts`
//! spreading, the host in `dispatch`, `doctor --hosts`, and Enter on a remote worker in the
//! dashboard attaching through `ssh -t` and coming back.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Output, Stdio};
use std::time::Duration;

use crate::support::on_host::run_with_host;
use crate::support::sshd::{sshd_ready, SshHost};
use crate::support::*;

/// `crewmux args…` in `project` that starts no worker (dispatch, doctor), with `host`'s
/// private SSH control directory; bounded.
fn crewmux_with_host(project: &Path, host: &SshHost, args: &[&str]) -> Output {
    let child = crewmux()
        .current_dir(project)
        .env("XDG_RUNTIME_DIR", host.runtime_dir())
        .env("CREWMUX_CONFIG_DIR", project.join(".no-user-config"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("crewmux runs");
    wait_limited(child, args)
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// One worker pinned to `local`, four free to go anywhere.
const FIVE: &str = r#"
[[worker]]
id = "here"
role = "backend-engineer"
provider = "command"
host = "local"
max_attempts = 1
command = ["sh", "-c", "echo pinned on $(hostname) in $PWD"]

[[worker]]
id = "a"
role = "backend-engineer"
provider = "command"
max_attempts = 1
command = ["sh", "-c", "echo a in $PWD"]

[[worker]]
id = "b"
role = "backend-engineer"
provider = "command"
max_attempts = 1
command = ["sh", "-c", "echo b in $PWD"]

[[worker]]
id = "c"
role = "backend-engineer"
provider = "command"
max_attempts = 1
command = ["sh", "-c", "echo c in $PWD"]

[[worker]]
id = "d"
role = "backend-engineer"
provider = "command"
max_attempts = 1
command = ["sh", "-c", "echo d in $PWD"]
"#;

/// `local` takes 3 (`--parallel`), one already pinned there; `box` takes 4 (its
/// `max_workers`). a, b → box (4, 3 free); c → local (2 free ties box's 2, listed first);
/// d → box.
const SPREAD: [(&str, &str); 5] = [
    ("here", "local"),
    ("a", "box"),
    ("b", "box"),
    ("c", "local"),
    ("d", "box"),
];

#[test]
fn hosts_spreads_the_free_workers_by_capacity_and_dispatch_shows_the_same_hosts() {
    if !sshd_ready("hosts_spread") {
        return;
    }
    let host = SshHost::start();
    let server = TmuxServer::new("hosts-spread");
    let t = TeamProject::in_repo(&[("README.md", "spread\n")], FIVE);
    host.write_hosts_file(t.path(), "box");
    let flags = ["--hosts", "local,box", "--parallel", "3"];

    // dispatch: a host column, and the host of each worker in --json.
    let mut args = vec!["dispatch", "--team", t.team_arg()];
    args.extend(flags);
    args.push("spread it");
    let out = crewmux_with_host(t.path(), &host, &args);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let header = stdout.lines().find(|l| l.starts_with("worker ")).unwrap();
    assert!(header.contains(" host "), "{stdout}");
    assert!(
        stdout.contains("hosts:  box 4, local 3 at once (7 at once in all)"),
        "{stdout}"
    );
    // `--parallel` is local's share: the run has the hosts' sum live at once.
    assert!(stdout.contains(", parallel 3 on local,"), "{stdout}");
    assert!(
        stdout.contains("level, 7 at once over 2 hosts):"),
        "{stdout}"
    );
    for (id, want) in SPREAD {
        let row = stdout
            .lines()
            .find(|l| l.starts_with(&format!("{id} ")))
            .unwrap_or_else(|| panic!("no row for {id}: {stdout}"));
        let cols: Vec<&str> = row.split_whitespace().collect();
        assert!(cols.contains(&want), "{id} on {want}: {row}");
    }
    args.insert(1, "--json");
    let out = crewmux_with_host(t.path(), &host, &args);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for (id, want) in SPREAD {
        let w = json["workers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|w| w["id"] == id)
            .unwrap();
        assert_eq!(w["host"], want, "{id}: {w}");
    }

    // run: the same hosts, kept in the state and in each dispatch record.
    let mut args = vec!["run", "--team", t.team_arg(), "--no-clarify", "--headless"];
    args.extend(flags);
    args.extend(["--", "spread it"]);
    let out = run_with_host(t.path(), &server.socket, &host, &args);
    let s = summary(&out);
    let state = try_state(t.path()).unwrap();
    // Each host runs its own share at once, the run all of them.
    assert_eq!(state["parallel"], 7, "{state}");
    assert_eq!(
        state["host_slots"],
        serde_json::json!({"local": 3, "box": 4}),
        "{state}"
    );
    for (id, want) in SPREAD {
        assert_eq!(
            worker(&s, id)["status"],
            "completed",
            "{id}: {s}\n{}",
            text(&out).1
        );
        let w = state_worker(&state, id);
        let pane = w["pane_id"].as_str().unwrap_or("");
        let d = state["dispatches"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["worker_id"] == id)
            .unwrap();
        if want == "local" {
            assert!(w.get("host").is_none_or(|h| h.is_null()), "{id}: {w}");
            assert!(pane.starts_with('%'), "{id}: {pane}");
            assert!(d.get("host").is_none_or(|h| h.is_null()), "{id}: {d}");
        } else {
            assert_eq!(w["host"], want, "{id}: {w}");
            assert!(pane.starts_with("box:%"), "{id}: {pane}");
            assert_eq!(d["host"], want, "{id}: {d}");
        }
    }
}

#[test]
fn a_bad_hosts_list_is_one_line_and_nothing_runs() {
    let t = TeamProject::new(FIVE);
    let out = t.run("x").args(&["--hosts", "local,nowhere"]).output();
    let (_, err) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.trim()
            .starts_with("crewmux: --hosts: unknown host `nowhere`: the hosts are local;"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(try_run_dir(t.path()).is_none());
}

/// A stand-in agent CLI `mine` at an absolute path (the host's PATH is sshd's own):
/// `--version` answers, `auth status` says logged in when `$MINE_LOGIN` is `yes`.
fn stand_in_agent(dir: &Path) -> String {
    let bin = dir.join("mine");
    std::fs::write(
        &bin,
        "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'mine 4.5.6'; exit 0; fi\n\
         if [ \"$1 $2\" = 'auth status' ]; then\n  if [ \"$MINE_LOGIN\" = yes ]; then echo 'Logged in'; exit 0; fi\n  echo 'Not logged in'; exit 1\nfi\nexit 0\n",
    )
    .unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    bin.display().to_string()
}

#[test]
fn doctor_hosts_checks_each_host_and_fails_when_one_a_team_names_is_unusable() {
    if !sshd_ready("hosts_doctor") {
        return;
    }
    let host = SshHost::start();
    let tmp = project();
    let p = tmp.path();
    let bin = stand_in_agent(p);
    // `box` is the test's sshd; `gone` the same destination on a port nothing listens on.
    let gone = host
        .hosts_toml("gone")
        .replace("ssh_args = [\"-F\"", "ssh_args = [\"-p\", \"1\", \"-F\"");
    std::fs::create_dir_all(p.join(".crewmux")).unwrap();
    std::fs::write(
        p.join(".crewmux/hosts.toml"),
        format!("{}{gone}", host.hosts_toml("box")),
    )
    .unwrap();
    // The provider's env reaches the probe on the host: logged in there. The built-in
    // agent CLIs are pointed at names no host has, so the test reads only `mine` and does
    // not wait for real CLIs a machine may have installed.
    let absent: String = [
        "aider", "claude", "codex", "gemini", "kimi", "opencode", "qwen",
    ]
    .iter()
    .map(|n| format!("[providers.{n}]\nbinary = \"crewmux-test-absent-{n}\"\n"))
    .collect();
    std::fs::write(
        p.join(".crewmux/providers.toml"),
        format!(
            "{absent}[providers.mine]\nkind = \"agent\"\nbinary = \"{bin}\"\nversion_args = [\"--version\"]\n\
             install_hint = \"build mine\"\n[providers.mine.env]\nMINE_LOGIN = \"yes\"\n\
             [providers.mine.auth]\nprobe = [\"auth\", \"status\"]\n"
        ),
    )
    .unwrap();

    let out = crewmux_with_host(p, &host, &["doctor", "--hosts"]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "gone counts: {stdout}{stderr}");
    let section = |name: &str| -> String {
        stdout
            .split("\n\n")
            .find(|s| s.starts_with(&format!("host {name} ")))
            .unwrap_or_else(|| panic!("no section for {name}: {stdout}"))
            .to_string()
    };
    let good = section("box");
    for want in [
        "  ssh        ok  ",
        "  tmux       ok   (tmux 3.",
        "  git        ok   (git version",
        "  workdir    ok ",
    ] {
        assert!(good.contains(want), "{want:?} in:\n{good}");
    }
    let mine = good
        .lines()
        .find(|l| l.trim_start().starts_with("mine "))
        .unwrap();
    assert!(
        mine.contains("ready") && mine.contains("4.5.6") && mine.contains("reports a login"),
        "{mine}"
    );
    assert!(
        good.contains("=> box: usable; agent CLIs there: "),
        "{good}"
    );
    let bad = section("gone");
    assert!(bad.contains("  ssh        FAIL unreachable:"), "{bad}");
    assert!(bad.contains("=> gone: unusable: ssh"), "{bad}");
    // One line per check: the unreachable host is tried for nothing else.
    assert!(!bad.contains("tmux"), "{bad}");

    // A team that uses only `box` is fine; `gone` is said to be unused.
    let team = team_file(
        p,
        "team.toml",
        "[[worker]]\nid = \"w\"\nrole = \"backend-engineer\"\nprovider = \"mine\"\nhost = \"box\"\n",
    );
    let args = ["doctor", "--hosts", "--team", team.to_str().unwrap()];
    let out = crewmux_with_host(p, &host, &args);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("(the team does not use it)"), "{stdout}");

    // Logged out there: the team's agent is not usable on its host.
    let providers = std::fs::read_to_string(p.join(".crewmux/providers.toml")).unwrap();
    std::fs::write(
        p.join(".crewmux/providers.toml"),
        providers.replace("MINE_LOGIN = \"yes\"", "MINE_LOGIN = \"no\""),
    )
    .unwrap();
    let out = crewmux_with_host(p, &host, &args);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(
        stdout.contains("=> box: unusable: mine is not usable there"),
        "{stdout}"
    );
    // --json has the same verdict.
    let mut json_args = args.to_vec();
    json_args.push("--json");
    let out = crewmux_with_host(p, &host, &json_args);
    assert_eq!(out.status.code(), Some(1));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["ok"], false, "{json}");
    assert_eq!(
        json["problems"]["box"][0], "mine is not usable there",
        "{json}"
    );

    // A team naming a host no hosts.toml defines: one line, exit 2.
    let team = team_file(
        p,
        "team2.toml",
        "[[worker]]\nid = \"w\"\nrole = \"backend-engineer\"\nprovider = \"command\"\nhost = \"elsewhere\"\ncommand = [\"true\"]\n",
    );
    let out = crewmux_with_host(
        p,
        &host,
        &["doctor", "--hosts", "--team", team.to_str().unwrap()],
    );
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("unknown host `elsewhere`"), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
}

const REMOTE_SLEEPER: &str = r#"
[[worker]]
id = "there"
role = "backend-engineer"
provider = "command"
host = "box"
max_attempts = 1
command = ["sh", "-c", "echo REMOTE-PANE-MARKER on the host; sleep 300"]
"#;

#[test]
fn enter_on_a_remote_worker_attaches_through_ssh_and_comes_back() {
    if !sshd_ready("hosts_attach") {
        return;
    }
    let host = SshHost::start();
    let workers = TmuxServer::new("hosts-attach-workers");
    let t = TeamProject::in_repo(&[("README.md", "attach\n")], REMOTE_SLEEPER);
    host.write_hosts_file(t.path(), "box");
    // The roster shows where the worker runs, and it runs.
    let (viewer, screen) = crate::support::on_host::dashboard_on_host(
        &t,
        &workers,
        &host,
        "hosts-attach",
        "attach to the host",
        "there",
    );
    let row = screen.lines().find(|l| l.contains("▶ there")).unwrap();
    assert!(row.contains("box"), "the host column:\n{screen}");
    // Its one worker is remote: this machine's tmux, never started, is not called gone
    // while the focused worker is still being launched.
    let log = std::fs::read_to_string(t.path().join(".crewmux/crewmux.log")).unwrap_or_default();
    assert!(
        !log.contains("is gone") && !log.contains("answers again"),
        "{log}"
    );
    assert!(screen.contains("host"), "{screen}");

    viewer.keys(&["Enter"]);
    // The remote pane, through `ssh -t … tmux attach`, fills the screen: the host's tmux
    // status line names the worker's window (active: `*`) and the dashboard is gone.
    let attached = viewer.wait_screen(":there-1*", Duration::from_secs(30));
    assert!(
        attached.contains("REMOTE-PANE-MARKER on the host"),
        "{attached}"
    );
    assert!(!attached.contains("Workers 1"), "{attached}");
    // The terminal is held by the attach's own processes only: a client riding on the
    // shared connection handed it to the master, which read on from it after ssh had
    // ended and the dashboard was back, until the host closed the channel (a `q` typed
    // then went to the host, and the dashboard never saw it).
    let tty = std::path::PathBuf::from(viewer.display("#{pane_tty}"));
    let pane: u32 = viewer.display("#{pane_pid}").parse().unwrap();
    let all = crate::support::procs::all();
    let own = crate::support::procs::tree(&all, pane, |_| true);
    let strangers: Vec<String> = crate::support::procs::holding(&tty)
        .into_iter()
        .filter(|p| !own.contains(p))
        .filter_map(|p| all.iter().find(|q| q.pid == p).map(|q| q.cmdline.clone()))
        .collect();
    assert!(
        strangers.is_empty(),
        "{} held by {strangers:?}",
        tty.display()
    );
    // Detach with the remote tmux's prefix: ssh ends and the dashboard is back.
    viewer.keys(&["C-b", "d"]);
    let back = viewer.wait_screen("Workers 1", Duration::from_secs(30));
    assert!(back.contains("there"), "{back}");
    assert_eq!(viewer.display("#{alternate_on}"), "1", "{back}");
    // It still takes keys: q leaves the run detached with its worker running.
    viewer.keys(&["q"]);
    let after = viewer.wait_screen("EXITED", Duration::from_secs(30));
    assert!(after.contains("EXITED 0"), "{after}");
    let alive = host.ssh(&[
        "tmux",
        "-L",
        &host.tmux_socket,
        "list-panes",
        "-a",
        "-F",
        "'#{window_name} #{pane_dead}'",
    ]);
    assert!(
        String::from_utf8_lossy(&alive.stdout).contains("there-1 0"),
        "{}",
        String::from_utf8_lossy(&alive.stdout)
    );
    assert_events_once(t.path());
}
