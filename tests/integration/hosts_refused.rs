//! A host that can never run a run's workers refuses the run before it starts (exit 2,
//! one line naming the host, what is wrong and the fix, no run folder left): its ssh login
//! refused, a host key that does not match `known_hosts`, ssh's config file missing, the
//! `tmux` of `hosts.toml` not running there. `doctor --hosts` says each in one line. A
//! host that only does not answer is waited for (`hosts_start`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::hosts_helper::text;
use crate::support::on_host::*;
use crate::support::sshd::write_hosts;
use crate::support::*;

/// A copy of the test host's ssh config with `from` replaced by `to`, written as `name`
/// beside it; its path.
fn config_with(t: &HostRepo, name: &str, from: &str, to: &str) -> PathBuf {
    let cfg = std::fs::read_to_string(t.host.ssh_config()).unwrap();
    assert!(cfg.contains(from), "{from} in {cfg}");
    let path = t.host.dir.path().join(name);
    std::fs::write(&path, cfg.replace(from, to)).unwrap();
    path
}

/// The `[hosts.NAME]` table of the test host reached with `config` instead of its own.
fn table(t: &HostRepo, name: &str, config: &Path) -> String {
    t.host.hosts_toml(name).replace(
        &t.host.ssh_config().display().to_string(),
        &config.display().to_string(),
    )
}

/// A fresh ed25519 key the host does not know, in the host's directory; its path.
fn stranger_key(t: &HostRepo, name: &str) -> PathBuf {
    let key = t.host.dir.path().join(name);
    let st = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(&key)
        .stdin(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success());
    key
}

/// `team.toml` with one command worker on `host`.
fn team_on(t: &HostRepo, host: &str) -> String {
    t.team(&format!(
        "{}\nhost = \"{host}\"\n",
        command_worker("w", "true", "ok").trim_end()
    ))
}

/// A headless run of `team`: its exit code, the stderr lines that are not the planning
/// line, and whether a run folder is left.
fn refused_run(t: &HostRepo, team: &str) -> (Option<i32>, Vec<String>, bool) {
    let out = t.run(&headless(team, "a host that cannot work"));
    let (_, stderr) = text(&out);
    let lines = stderr
        .lines()
        .filter(|l| l.starts_with("crewmux: ") && !l.contains(": planning"))
        .map(str::to_string)
        .collect();
    let runs = t.path().join(".crewmux/runs");
    let left = std::fs::read_dir(&runs).is_ok_and(|mut d| d.next().is_some());
    (out.status.code(), lines, left)
}

/// `doctor --hosts`: its output and the `ssh`/`tmux` line of host `name`.
fn doctor_line(t: &HostRepo, name: &str, check: &str) -> (Output, String) {
    let out = t
        .command(&["doctor", "--hosts"])
        .env("CREWMUX_CONFIG_DIR", t.path().join(".no-user-config"))
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    let section: String = stdout
        .split("\n\n")
        .find(|s| s.starts_with(&format!("host {name} ")))
        .unwrap_or_else(|| panic!("no section of {name}: {stdout}{stderr}"))
        .to_string();
    let line = section
        .lines()
        .find(|l| l.trim_start().starts_with(&format!("{check} ")))
        .unwrap_or_else(|| panic!("no {check} line: {section}"))
        .trim()
        .to_string();
    (out, line)
}

#[test]
fn a_host_that_refuses_the_login_refuses_the_run_before_it_starts() {
    let Some(t) = HostRepo::start("hosts-refused-login") else {
        return;
    };
    let key = stranger_key(&t, "stranger_key");
    let cfg = config_with(
        &t,
        "badkey_config",
        &format!("IdentityFile {}/client_key", t.host.dir.path().display()),
        &format!("IdentityFile {}", key.display()),
    );
    write_hosts(t.path(), &table(&t, "badkey", &cfg));
    let team = team_on(&t, "badkey");
    let started = std::time::Instant::now();
    let (code, lines, left) = refused_run(&t, &team);
    let took = started.elapsed();
    assert_eq!(code, Some(2), "{lines:?}");
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with("crewmux: host badkey: login refused: ")
            && lines[0].contains("Permission denied (publickey)")
            && lines[0].contains(&format!(
                "check `ssh -F {} crewmux-test-host` by hand",
                cfg.display()
            )),
        "{}",
        lines[0]
    );
    assert!(!left, "nothing made");
    // Before, the run started and waited lost_after_s for it.
    eprintln!("refused in {took:?}");
    let (_, line) = doctor_line(&t, "badkey", "ssh");
    assert!(
        line.starts_with("ssh        FAIL login refused: "),
        "{line}"
    );
}

#[test]
fn a_tmux_that_does_not_run_on_the_host_refuses_the_run_with_doctors_line() {
    let Some(t) = HostRepo::start("hosts-refused-tmux") else {
        return;
    };
    write_hosts(
        t.path(),
        &format!("{}tmux = \"/no/tmux\"\n", t.host.hosts_toml("box")),
    );
    let fix = format!(
        "; install tmux 3.2 or newer there, or set `tmux` in {}",
        t.path().join(".crewmux/hosts.toml").display()
    );
    // doctor first: the run then asks over the connection doctor opened (a loaded
    // machine's first login can take longer than planning waits for a host).
    let (_, line) = doctor_line(&t, "box", "tmux");
    assert!(
        line.starts_with("tmux       FAIL `/no/tmux` does not run there (") && line.ends_with(&fix),
        "{line}"
    );
    let team = team_on(&t, "box");
    let (code, lines, left) = refused_run(&t, &team);
    assert_eq!(code, Some(2), "{lines:?}");
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with("crewmux: host box: `/no/tmux` does not run there (")
            && lines[0].ends_with(&fix),
        "{}",
        lines[0]
    );
    assert!(!left, "nothing made");
}

#[test]
fn a_changed_host_key_and_a_missing_ssh_config_are_one_line_each_and_refuse_the_run() {
    let Some(t) = HostRepo::start("hosts-refused-key") else {
        return;
    };
    // known_hosts names the host with another key.
    let other = stranger_key(&t, "other_host_key");
    let known = std::fs::read_to_string(t.host.dir.path().join("known_hosts")).unwrap();
    let name = known.split_whitespace().next().unwrap().to_string();
    let wrong = t.host.dir.path().join("wrong_known_hosts");
    let other_pub = std::fs::read_to_string(other.with_extension("pub")).unwrap();
    std::fs::write(&wrong, format!("{name} {}", other_pub.trim())).unwrap();
    let cfg = config_with(
        &t,
        "wrong_key_config",
        &format!(
            "UserKnownHostsFile {}/known_hosts",
            t.host.dir.path().display()
        ),
        &format!("UserKnownHostsFile {}", wrong.display()),
    );
    let missing = t.host.dir.path().join("no-such-config");
    let noconf = table(&t, "noconf", &missing).replace(
        &format!("tmux_socket = \"{}\"", t.host.tmux_socket),
        "tmux_socket = \"other\"",
    );
    write_hosts(
        t.path(),
        &format!("{}\n{noconf}", table(&t, "changed", &cfg)),
    );
    let (out, line) = doctor_line(&t, "changed", "ssh");
    let (stdout, _) = text(&out);
    assert!(!stdout.contains("@@@"), "{stdout}");
    assert_eq!(
        line,
        format!(
            "ssh        FAIL host key of {name} does not match the known_hosts entry: check it and fix known_hosts (ssh-keygen -f \"{}\" -R \"{name}\")",
            wrong.display()
        )
    );
    let (_, line) = doctor_line(&t, "noconf", "ssh");
    assert_eq!(
        line,
        format!(
            "ssh        FAIL ssh config file {} cannot be read (No such file or directory): fix `ssh_args` in {}",
            missing.display(),
            t.path().join(".crewmux/hosts.toml").display()
        )
    );
    for (host, starts) in [
        (
            "changed",
            format!("crewmux: host changed: host key of {name} does not match"),
        ),
        // Refused earlier, by `ssh -G` on the host's options (`hosts_options`).
        (
            "noconf",
            "crewmux: host `noconf`: ssh refuses its options".to_string(),
        ),
    ] {
        let team = team_on(&t, host);
        let (code, lines, left) = refused_run(&t, &team);
        assert_eq!(code, Some(2), "{lines:?}");
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(
            lines[0].starts_with(&starts) && !lines[0].contains("@@@"),
            "{}",
            lines[0]
        );
        assert!(!left, "nothing made");
    }
}

/// `clean … <args>` in `t`'s project: its exit code and stderr.
fn clean(t: &HostRepo, args: &[&str]) -> (Option<i32>, String) {
    let mut all = vec!["clean"];
    all.extend(args);
    let out = t.run(&all);
    let (_, stderr) = text(&out);
    (out.status.code(), stderr)
}

#[test]
fn clean_asks_no_host_the_run_made_nothing_on_and_force_drops_a_run_whose_host_refuses_the_login() {
    let Some(t) = HostRepo::start("hosts-refused-clean") else {
        return;
    };
    // Run A: a worker on box completes (its worktree and files are there).
    let out = t.run(&headless(&team_on(&t, "box"), "made something there"));
    let a = summary(&out);
    assert_eq!(a["status"], "done", "{a}");
    let a = a["run_id"].as_str().unwrap().to_string();
    // Run B: box's worker never starts there (the worker it waits for fails).
    let team = t.team(&format!(
        "{}{}\nafter = [\"first\"]\nhost = \"box\"\n",
        command_worker("first", "exit 3", "no"),
        command_worker("far", "true", "ok").trim_end()
    ));
    let out = t.run(&headless(&team, "made nothing there"));
    let b = summary(&out);
    assert_eq!(worker(&b, "far")["status"], "skipped", "{b}");
    let b = b["run_id"].as_str().unwrap().to_string();
    let runs = t.path().join(".crewmux/runs");
    let workdir = t.host.workdir.path().to_path_buf();
    assert!(workdir.join("runs").join(&a).exists());

    // From now on the host refuses crewmux's login.
    let stranger = stranger_key(&t, "stranger_key");
    let stranger_pub = std::fs::read_to_string(stranger.with_extension("pub")).unwrap();
    std::fs::write(t.host.dir.path().join("authorized_keys"), stranger_pub).unwrap();
    t.host.drop_connections();
    assert!(
        !t.host.ssh(&["true"]).status.success(),
        "the login is refused"
    );

    // B made nothing on box: box is not asked, and the run goes.
    let (code, stderr) = clean(&t, &["--run", &b, "--purge"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!stderr.contains("box"), "{stderr}");
    assert!(!runs.join(&b).exists(), "{stderr}");

    // A without --force: kept, one line naming what stays there and both ways on.
    let (code, stderr) = clean(&t, &["--run", &a, "--purge"]);
    assert_eq!(code, Some(1), "{stderr}");
    let host_lines: Vec<&str> = stderr.lines().filter(|l| l.contains("host box")).collect();
    assert_eq!(host_lines.len(), 1, "{stderr}");
    let wt = workdir.join("worktrees").join(&a).join("w");
    let folder = workdir.join("runs").join(&a);
    assert!(
        host_lines[0].starts_with(&format!("crewmux: could not remove {} (branch crewmux/{a}/w), {} on host box (", wt.display(), folder.display()))
            && host_lines[0].contains("Permission denied (publickey)")
            && host_lines[0].ends_with(&format!("run `crewmux clean --purge --run {a}` again once it is fixed (`crewmux doctor --hosts`), or add --force to drop the run and leave them there")),
        "{stderr}"
    );
    assert!(runs.join(&a).exists());

    // With --force the run goes here, and the line says what is left there.
    let (code, stderr) = clean(&t, &["--run", &a, "--purge", "--force"]);
    assert_eq!(code, Some(0), "{stderr}");
    let host_lines: Vec<&str> = stderr.lines().filter(|l| l.contains("host box")).collect();
    assert_eq!(host_lines.len(), 1, "{stderr}");
    assert!(
        host_lines[0].starts_with("crewmux: left on host box (")
            && host_lines[0].contains(&format!(
                "{} (branch crewmux/{a}/w), {}; remove them there by hand",
                wt.display(),
                folder.display()
            )),
        "{stderr}"
    );
    assert!(!runs.join(&a).exists(), "{stderr}");
    assert!(folder.exists(), "left on the host");
}
