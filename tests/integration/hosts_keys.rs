//! An API key from the credential store reaches a remote agent only through the
//! environment of its launch: it is in the agent's environment on the host, and in no
//! file under the host's workdir, its tmux socket directory or the SSH control
//! directory, nor in any process's argv (`/proc/*/cmdline` on the host), nor in the
//! host's tmux session or global environment. Nothing else of this machine's environment
//! reaches the host: the remote session keeps the host's own.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use crate::hosts_life::{explain, processes_on_host};
use crate::support::on_host::*;
use crate::support::sshd::*;
use crate::support::*;

const PASS: &str = "hosts key test passphrase";
const KEY: &str = "sk-sim-RemoteHostKEY-7e3a91c04b";
/// A variable set only in the environment of the crewmux that drives the run.
const HERE_ONLY: &str = "CREWMUX_TEST_SET_ONLY_HERE";

const TEAM: &str = r#"
[[worker]]
id = "keyed"
role = "backend-engineer"
provider = "sim"
host = "box"
max_attempts = 1
prompt = "Do: {problem}\nsim: lines=40\nsim: delay-ms=200"
"#;

/// Every regular file under `dir` on the host, concatenated (read over ssh).
fn files_on_host(host: &SshHost, dir: &str) -> Vec<u8> {
    let out = host.ssh(&[&format!(
        "find {dir} -type f -exec cat {{}} + 2>/dev/null; true"
    )]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Every regular file under `dir` here, concatenated.
fn files_here(dir: &Path) -> Vec<u8> {
    let mut all = vec![];
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let Ok(kind) = e.file_type() else { continue };
        if kind.is_dir() {
            all.extend(files_here(&e.path()));
        } else if kind.is_file() {
            all.extend(std::fs::read(e.path()).unwrap_or_default());
        }
    }
    all
}

fn holds_key(bytes: &[u8]) -> bool {
    bytes.windows(KEY.len()).any(|w| w == KEY.as_bytes())
}

#[test]
fn a_stored_key_reaches_the_remote_agent_only_through_its_launch_and_nothing_else_of_this_machine_does(
) {
    let Some(t) = HostRepo::start("hosts-keys") else {
        return;
    };
    // The store lives outside the repository whose work is shipped to the host.
    let config_dir = tempfile::tempdir().unwrap();
    let config = config_dir.path().join("config");
    let add = crewmux()
        .args(["creds", "add", "--provider", "sim", "--label", "remote"])
        .env("CREWMUX_CONFIG_DIR", &config)
        .env("CREWMUX_CREDENTIAL_PASSPHRASE", PASS)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut add = add;
        add.stdin.take().unwrap().write_all(KEY.as_bytes()).unwrap();
        let out = wait_limited(add, &["creds", "add"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let team = t.team(TEAM);
    let args = headless(&team, "keys stay in the environment");
    let child = t
        .command(&args)
        .env("CREWMUX_CONFIG_DIR", &config)
        .env("CREWMUX_CREDENTIAL_PASSPHRASE", PASS)
        .env(HERE_ONLY, "this machine only")
        .spawn()
        .unwrap();
    wait_running_remotely(t.path(), "keyed");
    let run_id = run_id(t.path());
    // The agent's environment on the host holds the key.
    let needle = format!("CREWMUX_RUN_ID={run_id}");
    let mut environ = vec![];
    let reached = wait_for(
        || {
            let pids = processes_on_host(&t.host, &needle);
            let script = pids
                .iter()
                .map(|p| format!("cat /proc/{p}/environ 2>/dev/null;"))
                .collect::<String>();
            environ = t.host.ssh(&[&format!("{script} true")]).stdout;
            let want = format!("CREWMUX_SIM_API_KEY={KEY}");
            environ.split(|&b| b == 0).any(|kv| kv == want.as_bytes())
        },
        Duration::from_secs(30),
    );
    assert!(
        reached,
        "the key is not in the agent's environment on the host"
    );
    let here_only = format!("{HERE_ONLY}=");
    assert!(
        !environ
            .split(|&b| b == 0)
            .any(|kv| kv.starts_with(here_only.as_bytes())),
        "{HERE_ONLY}, set only on this machine, reached the agent on the host"
    );
    // The host's tmux holds neither: the key went with the launch of the agent's window
    // only, and this machine's environment was not copied into the session.
    for scope in [format!("-t=crewmux-{run_id}"), "-g".to_string()] {
        let env = t.host.ssh(&[
            "tmux",
            "-L",
            &t.host.tmux_socket,
            "show-environment",
            &scope,
        ]);
        let text = String::from_utf8_lossy(&env.stdout);
        assert!(env.status.success(), "show-environment {scope}: {env:?}");
        assert!(!holds_key(&env.stdout), "the key is in tmux's {scope}");
        assert!(
            !text.lines().any(|l| l.starts_with(&here_only)),
            "{HERE_ONLY} is in the host tmux's environment ({scope}):\n{text}"
        );
    }
    // No argv on the host (here too: it is this machine) names it while the agent runs.
    let argv = t
        .host
        .ssh(&["cat /proc/[0-9]*/cmdline 2>/dev/null; true"])
        .stdout;
    assert!(!argv.is_empty());
    assert!(!holds_key(&argv), "the key is in a process's argv");
    let out = wait_limited(child, &args);
    assert_events_once(t.path());
    assert_eq!(
        worker(&summary(&out), "keyed")["status"],
        "completed",
        "{}",
        explain(t.path(), &out)
    );
    // No file the run left on the host, in its tmux socket directory or in the SSH
    // control directory holds it.
    let workdir = t.host.workdir.path().display().to_string();
    let on_host = files_on_host(&t.host, &workdir);
    assert!(!on_host.is_empty(), "the run left its files in {workdir}");
    assert!(!holds_key(&on_host), "the key is in a file under {workdir}");
    let tmux_dir = String::from_utf8_lossy(
        &t.host
            .ssh(&["echo ${TMUX_TMPDIR:-/tmp}/tmux-$(id -u)"])
            .stdout,
    )
    .trim()
    .to_string();
    assert!(!holds_key(&files_on_host(&t.host, &tmux_dir)), "{tmux_dir}");
    assert!(
        !holds_key(&files_here(&t.host.runtime_dir())),
        "the SSH control directory"
    );
}
