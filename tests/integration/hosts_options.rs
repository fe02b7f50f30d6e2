//! A host whose `ssh_args` ssh refuses before it connects (an unknown option, a config
//! file that cannot be read) can never answer: a run that needs it is refused at once in
//! one line, nothing created; a host that only does not answer stays an outage.

use crate::support::on_host::*;
use crate::support::*;

/// Run a team whose one worker is pinned to a host with `ssh_args`; the output and how
/// long the refusal took.
fn refused_with(args: &str) -> (std::process::Output, std::time::Duration, Project) {
    let tmp = project();
    std::fs::create_dir_all(tmp.path().join(".crewmux")).unwrap();
    std::fs::write(
        tmp.path().join(".crewmux/hosts.toml"),
        format!(
            "[hosts.junkopt]\nssh = \"root@127.0.0.1\"\nssh_args = {args}\nworkdir = \"/tmp/crewmux-junkopt\"\nlost_after_s = 30\n"
        ),
    )
    .unwrap();
    let team = team_file(
        tmp.path(),
        "team.toml",
        "[[worker]]\nid = \"a\"\nrole = \"backend-engineer\"\nprovider = \"command\"\nhost = \"junkopt\"\nmax_attempts = 1\ncommand = [\"true\"]\n",
    );
    let t0 = std::time::Instant::now();
    let out = run_crewmux(
        tmp.path(),
        "crewmux-test-unused",
        &headless(team.to_str().unwrap(), "x"),
    );
    (out, t0.elapsed(), tmp)
}

#[test]
fn ssh_args_ssh_refuses_make_the_run_refused_at_once_in_one_line() {
    if std::process::Command::new("ssh")
        .arg("-V")
        .output()
        .is_err()
    {
        assert!(
            std::env::var_os("CREWMUX_REQUIRE_TMUX").is_none(),
            "ssh is not installed"
        );
        eprintln!("ssh is not installed: skipping");
        return;
    }
    for (args, said) in [
        (r#"["-o", "Bogus=1"]"#, "Bad configuration option: bogus"),
        (
            r#"["-F", "/nonexistent/crewmux-ssh-config"]"#,
            "/nonexistent/crewmux-ssh-config",
        ),
    ] {
        let (out, took, tmp) = refused_with(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args}: {err}");
        for part in ["host `junkopt`", said, "fix `ssh_args` in"] {
            assert!(err.contains(part), "{args}: {part}: {err}");
        }
        assert!(took.as_secs() < 20, "{args}: refused after {took:?}");
        let runs = tmp.path().join(".crewmux/runs");
        assert!(
            !runs.exists() || std::fs::read_dir(&runs).unwrap().count() == 0,
            "{args}: a run was created"
        );
    }
}

/// A team of one command worker (`true`) in `tmp`: its file.
fn one_true_worker(tmp: &Project) -> String {
    let team = team_file(
        tmp.path(),
        "team.toml",
        "[[worker]]\nid = \"a\"\nrole = \"backend-engineer\"\nprovider = \"command\"\ncommand = [\"true\"]\n",
    );
    team.to_str().unwrap().to_string()
}

/// `crewmux dispatch --team <team> <flags> x` in `tmp`, which must succeed: its stdout.
fn dispatch(tmp: &Project, team: &str, flags: &[&str]) -> String {
    let mut args = vec!["dispatch", "--team", team];
    args.extend(flags);
    args.push("x");
    let out = run_crewmux(tmp.path(), "crewmux-test-unused", &args);
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    said
}

#[test]
fn dispatch_counts_the_hosts_it_places_workers_on_in_the_right_number() {
    let tmp = project();
    let team = one_true_worker(&tmp);
    let said = dispatch(&tmp, &team, &["--hosts", "local"]);
    assert!(said.contains(" at once over 1 host):"), "{said}");
}

#[test]
fn a_listed_host_that_got_no_worker_adds_nothing_to_what_runs_at_once() {
    let tmp = project();
    // No worker runs crewmux itself: planning asks nothing of box, which need not exist.
    crate::support::sshd::write_hosts(
        tmp.path(),
        "[hosts.box]\nssh = \"root@127.0.0.1\"\nworkdir = \"/tmp/crewmux-box\"\nmax_workers = 2\n",
    );
    let team = one_true_worker(&tmp);
    let said = dispatch(&tmp, &team, &["--hosts", "box,local", "--parallel", "4"]);
    // local has the most free slots (4 against box's 2) and takes the one worker.
    assert!(
        said.contains("        box: no workers (max_workers 2"),
        "{said}"
    );
    assert!(
        said.contains("hosts:  local 4 at once (4 at once in all)")
            && said.contains(", 4 at once over 1 host):"),
        "{said}"
    );
    // The run says the same before its workers start, and plans local's share at once.
    let out = run_crewmux(
        tmp.path(),
        "crewmux-test-unused",
        &[
            "run",
            "--team",
            &team,
            "--hosts",
            "box,local",
            "--parallel",
            "4",
            "--backend",
            "process",
            "--no-clarify",
            "--headless",
            "--",
            "x",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The run went through (its exit says how its council judged it).
    assert!(matches!(out.status.code(), Some(0 | 1)), "{stderr}");
    assert!(
        stderr.contains("host box: no workers (max_workers 2"),
        "{stderr}"
    );
    let state: serde_json::Value = serde_json::from_slice(
        &std::fs::read(only_run_dir(tmp.path()).join("state.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(state["parallel"], 4, "{state}");
}
