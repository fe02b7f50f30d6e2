//! A manual check against the real agent CLIs, ignored by default: the argv crewmux builds
//! is accepted by each installed CLI, which then gets as far as needing auth or network.
//!
//! Run with the CLIs' directory first on PATH, e.g. after
//! `npm install -g --prefix /tmp/clis @openai/codex @google/gemini-cli`:
//! `CREWMUX_REAL_CLI_PATH=/tmp/clis/bin cargo test --test real_clis -- --ignored --nocapture`
//! (`CREWMUX_REAL_CLI_ONLY=codex,gemini` limits it to some providers).

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crewmux::providers::{LaunchRequest, Registry};

/// Words of an argument-parsing failure (clap, yargs, commander, typer, argparse).
const ARG_ERRORS: [&str; 6] = [
    "unexpected argument",
    "unknown argument",
    "unknown option",
    "unrecognized",
    "invalid value",
    "no such option",
];
/// Words showing the CLI went on to auth or the network.
const REACHED: [&str; 10] = [
    "not logged",
    "auth",
    "api key",
    "api_key",
    "fetch failed",
    "resolve",
    "network",
    "connect",
    "login",
    "credential",
];

fn run(
    argv: &[String],
    stdin: Option<&Path>,
    path: &str,
    home: &Path,
    secs: u64,
) -> (Option<i32>, String) {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .process_group(0)
        .env_clear()
        .env("PATH", path)
        .env("HOME", home)
        .env("TERM", "dumb")
        .current_dir(home)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd.stdin(match stdin {
        Some(f) => Stdio::from(std::fs::File::open(f).unwrap()),
        None => Stdio::null(),
    });
    let mut child = cmd.spawn().unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let to = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let te = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let t0 = Instant::now();
    let code = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st.code();
        }
        if t0.elapsed() > Duration::from_secs(secs) {
            // The whole group: codex's node wrapper starts the real binary as a child.
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(child.id() as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    (
        code,
        format!("{}\n{}", to.join().unwrap(), te.join().unwrap()),
    )
}

#[test]
#[ignore = "needs the real agent CLIs: set CREWMUX_REAL_CLI_PATH"]
fn real_clis_accept_the_built_argv() {
    let Ok(bin) = std::env::var("CREWMUX_REAL_CLI_PATH") else {
        panic!("set CREWMUX_REAL_CLI_PATH to the directory holding codex, gemini, ...");
    };
    let path = format!("{bin}:/usr/bin:/bin");
    let reg = Registry::builtin();
    let tmp = tempfile::tempdir().unwrap();
    let prompt = tmp.path().join("prompt.md");
    std::fs::write(&prompt, "Reply with the single word: ready.\n").unwrap();
    let result = tmp.path().join("result.md");
    let only = std::env::var("CREWMUX_REAL_CLI_ONLY").unwrap_or_default();
    let mut checked = 0;
    for (name, spec) in reg.agents() {
        if !only.is_empty() && !only.split(',').any(|o| o == name) {
            continue;
        }
        if !Path::new(&bin).join(&spec.binary).exists() {
            println!("{name}: not installed, skipped");
            continue;
        }
        let model = spec.model_for_role("default");
        let req = LaunchRequest {
            prompt_file: &prompt,
            result_file: &result,
            model,
            command: None,
            attempt: 1,
            self_exe: Path::new("crewmux"),
        };
        let l = reg.build_launch(name, &req).unwrap();
        let (version_code, version) = run(
            &[l.argv[0].clone(), "--version".into()],
            None,
            &path,
            tmp.path(),
            30,
        );
        let (code, out) = run(&l.argv, l.stdin_file.as_deref(), &path, tmp.path(), 30);
        let low = out.to_lowercase();
        if low.contains("no longer maintained") {
            // kimi-cli 1.52.0, the archived final release, only prints a notice for any argv.
            println!(
                "{name}: archived stub ({}), argv not checkable",
                version.trim()
            );
            continue;
        }
        let first: Vec<&str> = out
            .lines()
            .filter(|l| !l.trim().is_empty())
            .take(3)
            .collect();
        println!(
            "{name} {} (exit {version_code:?}): argv {:?} -> exit {code:?}: {}",
            version.trim(),
            &l.argv[1..],
            first.join(" | ")
        );
        assert!(
            !ARG_ERRORS.iter().any(|e| low.contains(e)),
            "{name} refused its argv: {out}"
        );
        // Still working at the timeout (waiting on the network) also means the argv was taken.
        let reached = REACHED.iter().any(|e| low.contains(e)) || code.is_none();
        assert!(reached, "{name} did not reach auth or network: {out}");
        checked += 1;
    }
    assert!(checked > 0, "no CLI found under {bin}");
}
