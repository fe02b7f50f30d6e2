//! crewmux's own binary on an SSH host: a run whose remote worker needs it (the pane-text
//! filter of a JSON CLI, the `sim` provider) copies it once to `<workdir>/bin/crewmux-
//! <version>-<hash>` and the remote wrapper runs that copy; a later run reuses it;
//! `doctor --hosts` says whether it is there. (A host crewmux cannot be put on:
//! `hosts_helper_refused`; one that does not answer: `hosts_sim_down`.)

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::support::on_host::*;
use crate::support::sshd::*;
use crate::support::*;

pub(crate) fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The copies of crewmux in the host's `<workdir>/bin` (temporary names left out).
pub(crate) fn copies_on(host: &SshHost) -> Vec<PathBuf> {
    let bin = host.workdir.path().join("bin");
    let mut found: Vec<PathBuf> = std::fs::read_dir(&bin)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            name.starts_with("crewmux-") && !name.contains(".part.")
        })
        .collect();
    found.sort();
    found
}

/// A stand-in codex at an absolute path (the host's PATH is sshd's own) that prints what
/// `codex exec --json` prints and writes its last message to `--output-last-message`.
pub(crate) fn stand_in_codex(dir: &Path) -> PathBuf {
    let bin = dir.join("codex");
    std::fs::write(
        &bin,
        r#"#!/bin/sh
if [ "$1" = --version ]; then echo 'codex-cli 0.171.0'; exit 0; fi
out=""
while [ $# -gt 0 ]; do
  if [ "$1" = --output-last-message ]; then out=$2; fi
  shift
done
cat >/dev/null
echo '{"type":"thread.started","thread_id":"t1"}'
echo '{"type":"item.started","item":{"id":"i0","type":"command_execution","command":"ls -la src"}}'
echo '{"type":"item.completed","item":{"id":"i1","type":"agent_message","text":"REMOTE codex answer"}}'
echo '{"type":"turn.completed","usage":{"input_tokens":1200,"output_tokens":34}}'
printf 'REMOTE codex answer\n' > "$out"
"#,
    )
    .unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

/// `<project>/.crewmux/providers.toml`: codex is the stand-in; the other agent CLIs are
/// pointed at names no host has, so doctor does not wait for real CLIs a machine may have.
pub(crate) fn write_providers(project: &Path, codex: &Path) {
    let absent: String = ["aider", "claude", "gemini", "kimi", "opencode", "qwen"]
        .iter()
        .map(|n| format!("[providers.{n}]\nbinary = \"crewmux-test-absent-{n}\"\n"))
        .collect();
    std::fs::write(
        project.join(".crewmux/providers.toml"),
        format!(
            "{absent}[providers.codex]\nbinary = \"{}\"\n",
            codex.display()
        ),
    )
    .unwrap();
}

pub(crate) const CODEX_TEAM: &str = r#"
[[worker]]
id = "jsonish"
role = "backend-engineer"
provider = "codex"
host = "box"
max_attempts = 1
"#;

#[test]
fn a_remote_codex_workers_pane_shows_filtered_text_through_crewmux_copied_once() {
    let Some(t) = HostRepo::start("hosts-helper-filter") else {
        return;
    };
    let p = t.path();
    let tools = tempfile::tempdir().unwrap();
    let codex = stand_in_codex(tools.path());
    write_providers(p, &codex);
    let team = t.team(CODEX_TEAM);
    let bin_dir = t.host.workdir.path().join("bin");

    // Before any run: doctor says crewmux is not there yet and copies nothing.
    let doctor = || {
        let out = t.command(&["doctor", "--hosts"]).output().unwrap();
        let (stdout, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
        stdout
            .lines()
            .find(|l| l.trim_start().starts_with("helper "))
            .unwrap_or_else(|| panic!("no helper line: {stdout}"))
            .to_string()
    };
    let line = doctor();
    assert!(
        line.starts_with("  helper     ok   (not there yet: copied to ")
            && line.contains(&bin_dir.join("crewmux-").display().to_string()),
        "{line}"
    );
    assert!(copies_on(&t.host).is_empty());

    let args = headless(&team, "filter on the host");
    let run = |args: &[&str]| {
        let started = std::time::Instant::now();
        let out = t.command(args).env("CODEX_API_KEY", "k").spawn().unwrap();
        let out = wait_limited(out, args);
        eprintln!("run took {:?}", started.elapsed());
        assert_events_once(p);
        out
    };
    let out = run(&args);
    let (_, stderr) = text(&out);
    let s = summary(&out);
    assert_eq!(
        worker(&s, "jsonish")["status"],
        "completed",
        "{s}\n{stderr}"
    );
    let copies = copies_on(&t.host);
    assert_eq!(copies.len(), 1, "{copies:?}");
    let copy = &copies[0];
    assert!(
        stderr.contains(&format!(
            "crewmux: host box: copied crewmux to {}\n",
            copy.display()
        )),
        "said once: {stderr}"
    );
    let name = copy.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with(&format!("crewmux-{}-", env!("CARGO_PKG_VERSION"))),
        "{name}"
    );
    assert_eq!(
        std::fs::metadata(copy).unwrap().len(),
        std::fs::metadata(env!("CARGO_BIN_EXE_crewmux"))
            .unwrap()
            .len()
    );

    // The pane (its output.log, which came back) shows the events as text; the raw
    // events are kept beside it.
    let attempt = only_run_dir(p).join("workers/jsonish/attempt-1");
    let pane = std::fs::read_to_string(attempt.join("output.log")).unwrap();
    assert!(pane.contains("REMOTE codex answer"), "{pane}");
    assert!(pane.contains("$ ls -la src"), "{pane}");
    assert!(pane.contains("── 1.2k in / 34 out"), "{pane}");
    assert!(!pane.contains("{\"type\""), "no JSON in the pane: {pane}");
    let events = std::fs::read_to_string(attempt.join("cli-events.jsonl")).unwrap();
    assert!(events.contains("\"agent_message\""), "{events}");
    // The wrapper on the host ran the copy, not this machine's path.
    let wrapper = std::fs::read_to_string(attempt.join("launch.sh")).unwrap();
    assert!(wrapper.contains(&copy.display().to_string()), "{wrapper}");
    assert!(
        !wrapper.contains(env!("CARGO_BIN_EXE_crewmux")),
        "{wrapper}"
    );

    // Doctor now finds it; a second run reuses it: nothing copied, the same file.
    let line = doctor();
    assert_eq!(
        line,
        format!("  helper     ok   (crewmux there: {})", copy.display())
    );
    // Copies of other builds: one nothing uses goes when the next run is planned; one
    // named by a wrapper of the first run, whose session is still on the host, stays.
    let unused = bin_dir.join("crewmux-0.0.1-aaaaaaaaaaaa");
    let kept = bin_dir.join("crewmux-0.0.2-bbbbbbbbbbbb");
    for f in [&unused, &kept] {
        std::fs::write(f, "#!/bin/sh\n").unwrap();
        // No run was planned with them within the hour.
        let aged = Command::new("touch")
            .args(["-d", "2 hours ago"])
            .arg(f)
            .status()
            .unwrap();
        assert!(aged.success());
    }
    let first = s["run_id"].as_str().unwrap();
    let old_attempt = t
        .host
        .workdir
        .path()
        .join("runs")
        .join(first)
        .join("workers/old/attempt-1");
    std::fs::create_dir_all(&old_attempt).unwrap();
    std::fs::write(
        old_attempt.join("launch.sh"),
        format!("#!/bin/sh\n{} sim-agent\n", kept.display()),
    )
    .unwrap();
    let before = std::fs::metadata(copy).unwrap();
    let out = run(&args);
    let (_, stderr) = text(&out);
    assert!(!stderr.contains("copied crewmux"), "{stderr}");
    let after = std::fs::metadata(copy).unwrap();
    // A copy lands under a new inode (renamed over the name); the plan only touches it.
    assert_eq!(before.ino(), after.ino(), "reused, not copied again");
    let mut left = vec![copy.clone(), kept.clone()];
    left.sort();
    assert_eq!(copies_on(&t.host), left);
    assert!(
        stderr.contains(&format!(
            "crewmux: host box: removed 1 old copy of crewmux from {} ",
            bin_dir.display()
        )),
        "{stderr}"
    );
}

/// The gate waits for the test's go-ahead; `simmer` runs after it.
fn sim_team(go: &Path) -> String {
    format!(
        r#"
[[worker]]
id = "gate"
role = "backend-engineer"
provider = "command"
host = "box"
max_attempts = 1
command = ["sh", "-c", "i=0; while [ ! -e '{go}' ] && [ $i -lt 600 ]; do sleep 0.2; i=$((i+1)); done; echo gate open"]

[[worker]]
id = "simmer"
role = "backend-engineer"
provider = "sim"
host = "box"
after = ["gate"]
max_attempts = 1
prompt = "Do: {{problem}}\nsim: lines=3"
"#,
        go = go.display()
    )
}

#[test]
fn a_remote_sim_worker_runs_the_copy_when_this_machines_binary_is_gone() {
    let Some(t) = HostRepo::start("hosts-helper-sim") else {
        return;
    };
    let p = t.path();
    // crewmux runs from a copy of its own that is removed once the run is planned: the
    // host (this very machine) can then reach crewmux only through the copy in its
    // workdir.
    let exe_dir = tempfile::tempdir().unwrap();
    let exe = exe_dir.path().join("crewmux");
    std::fs::copy(env!("CARGO_BIN_EXE_crewmux"), &exe).unwrap();
    let go = exe_dir.path().join("go");
    let team = t.team(&sim_team(&go));
    let args = headless(&team, "sim on the host");
    let child = Command::new(&exe)
        .current_dir(p)
        .env("XDG_STATE_HOME", state_home())
        .env("CREWMUX_TMUX_SOCKET", &t.server.socket)
        .env("XDG_RUNTIME_DIR", t.host.runtime_dir())
        .env("CREWMUX_LOG", "debug")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_running_remotely(p, "gate");
    let copies = copies_on(&t.host);
    assert_eq!(
        copies.len(),
        1,
        "copied when the run was planned: {copies:?}"
    );
    std::fs::remove_file(&exe).unwrap();
    std::fs::write(&go, "").unwrap();
    let out = wait_limited(child, &args);
    assert_events_once(p);
    let (_, stderr) = text(&out);
    let s = summary(&out);
    let sim = worker(&s, "simmer");
    assert_eq!(
        (sim["status"].as_str(), sim["exit_code"].as_i64()),
        (Some("completed"), Some(0)),
        "{s}\n{stderr}\n{}",
        std::fs::read_to_string(only_run_dir(p).join("workers/simmer/attempt-1/output.log"))
            .unwrap_or_default()
    );
    let attempt = only_run_dir(p).join("workers/simmer/attempt-1");
    let wrapper = std::fs::read_to_string(attempt.join("launch.sh")).unwrap();
    assert!(
        wrapper.contains(&format!("{} sim-agent", copies[0].display()))
            || wrapper.contains(&format!("'{}' sim-agent", copies[0].display())),
        "{wrapper}"
    );
    assert!(!wrapper.contains(&exe.display().to_string()), "{wrapper}");
    let result = std::fs::read_dir(&attempt)
        .unwrap()
        .flatten()
        .any(|e| e.file_name().to_string_lossy().starts_with("result"));
    assert!(result, "the sim agent's result came back");
}
