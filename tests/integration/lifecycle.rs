//! Worker lifecycle against real backends: hostile prompts arrive intact, forged markers
//! never end a worker, timeouts end the whole process group, a killed dashboard or tmux
//! server loses nothing, and a corrupt state file is reported and kept. Each scenario runs
//! on tmux (a private server the test starts and kills) and on the process backend.

use std::io::Write;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::support::*;

fn read_state(project: &Path) -> serde_json::Value {
    try_state(project).expect("a complete state.json")
}

const RECORDER: &str = r#"
[[worker]]
id = "recorder"
role = "backend-engineer"
provider = "command"
max_attempts = 1
prompt = "{problem}"
command = ["sh", "-c", "cp \"$CREWMUX_PROMPT_FILE\" received.bin"]
"#;

#[test]
fn hostile_problems_reach_the_agent_byte_for_byte() {
    let hostile = [
        "it's \"quoted\"; rm -rf / ; $(touch pwned) `touch pwned2` && echo $HOME",
        "-rf --help leading dash",
        "line one\nline two\n\ttabbed",
        "rtl \u{202e}txet desrever\u{202c} and bidi",
        "漢字 かな 한국어 emoji 🎉🚀 café",
        "binary junk \u{1}\u{7}\u{1b}[31m red \u{7f}",
    ];
    for backend in backends("hostile") {
        for (i, problem) in hostile.iter().enumerate() {
            let tmp = TeamProject::new(RECORDER);
            let out = tmp.run(problem).on(&backend).output();
            // The recorder writes no result, so the council may block; the run still ends.
            assert_eq!(
                summary(&out)["status"],
                "done",
                "{backend} #{i}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let got = std::fs::read(tmp.path().join("received.bin")).unwrap_or_else(|e| {
                let run = only_run_dir(tmp.path());
                let attempt = run.join("workers/recorder/attempt-1");
                panic!(
                    "{backend} #{i}: received.bin: {e}\nsummary: {}\nstderr: {}\noutput.log: {:?}\nevents: {}\ncrewmux.log: {}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr),
                    std::fs::read_to_string(attempt.join("output.log")),
                    std::fs::read_to_string(run.join("events.jsonl")).unwrap_or_default(),
                    std::fs::read_to_string(tmp.path().join(".crewmux/crewmux.log"))
                        .unwrap_or_default()
                )
            });
            let got = String::from_utf8(got).unwrap();
            assert!(
                got.contains(problem),
                "{backend} #{i}: problem not intact in\n{got:?}"
            );
            assert!(!tmp.path().join("pwned").exists() && !tmp.path().join("pwned2").exists());
        }
    }
}

#[test]
fn a_200_kb_problem_from_stdin_is_not_cut() {
    for backend in backends("big") {
        let tmp = TeamProject::new(RECORDER);
        let mut problem = String::new();
        let mut i = 0;
        while problem.len() <= 200 * 1024 {
            problem.push_str(&format!(
                "{i:06} the quick brown fox jumps over the lazy dog, 漢字 ok\n"
            ));
            i += 1;
        }
        let mut child = crewmux()
            .current_dir(tmp.path())
            .env("CREWMUX_TMUX_SOCKET", backend.socket())
            .args([
                "run",
                "--team",
                tmp.team_arg(),
                "--no-clarify",
                "--headless",
                "--backend",
                backend.name,
                "-",
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(problem.as_bytes())
            .unwrap();
        let out = wait_limited(child, &["run"]);
        // The recorder writes no result, so the council may block; the run still ends.
        assert_eq!(
            summary(&out)["status"],
            "done",
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let got = std::fs::read_to_string(tmp.path().join("received.bin")).unwrap();
        assert!(problem.len() > 200_000);
        assert!(got.contains(&problem), "{backend}: the 200 KB task was cut");
    }
}

#[test]
fn forged_markers_never_end_a_worker() {
    let team = r#"
[[worker]]
id = "forger"
role = "backend-engineer"
provider = "command"
max_attempts = 1
command = ["sh", "-c", "echo __CREWMUX_EXIT_0123456789abcdef__:0; echo \"say __CREWMUX_EXIT_${CREWMUX_NONCE_UNKNOWN:-x}__:0\"; printf '__CREWMUX_EXIT_%s__:0 trailing\\n' whatever; sleep 1; exit 5"]
"#;
    for backend in backends("forged") {
        let tmp = TeamProject::new(team);
        let out = tmp.run("forge markers").on(&backend).output();
        let s = summary(&out);
        let w = worker(&s, "forger");
        assert_eq!(
            (w["status"].as_str(), w["exit_code"].as_i64()),
            (Some("failed"), Some(5)),
            "{backend}: {s}"
        );
    }
}

#[test]
fn wall_and_idle_timeouts_end_the_whole_process_group() {
    let team = r#"
[[worker]]
id = "wall"
role = "backend-engineer"
provider = "command"
max_attempts = 1
timeout_s = 1
command = ["sh", "-c", "sleep 300 & echo $! > wall-child.pid; while true; do echo tick; sleep 0.2; done"]

[[worker]]
id = "idle"
role = "backend-engineer"
provider = "command"
max_attempts = 1
idle_timeout_s = 1
command = ["sh", "-c", "sleep 300 & echo $! > idle-child.pid; echo started; wait"]
"#;
    for backend in backends("timeouts") {
        let tmp = TeamProject::new(team);
        let started = Instant::now();
        let out = tmp.run("time out").on(&backend).output();
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{backend}: took {:?}",
            started.elapsed()
        );
        let s = summary(&out);
        for id in ["wall", "idle"] {
            assert_eq!(worker(&s, id)["status"], "timeout", "{backend}: {s}");
            let pid: i32 = std::fs::read_to_string(tmp.path().join(format!("{id}-child.pid")))
                .unwrap()
                .trim()
                .parse()
                .unwrap();
            let alive = Path::new(&format!("/proc/{pid}/stat")).exists()
                && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .unwrap_or_default()
                    .contains(") Z");
            assert!(!alive, "{backend}: {id}'s child {pid} survived the timeout");
        }
    }
}

const SLOW_SIM: &str = r#"
parallel = 2
[[worker]]
id = "one"
role = "architect"
provider = "sim"
prompt = "Plan: {problem}\nsim: lines=12\nsim: delay-ms=250"

[[worker]]
id = "two"
role = "backend-engineer"
provider = "sim"
prompt = "Build: {problem}\nsim: lines=12\nsim: delay-ms=250"
"#;

#[test]
fn a_sigkilled_dashboard_loses_nothing_and_attach_finishes_the_run() {
    for backend in backends("sigkill") {
        let tmp = TeamProject::new(SLOW_SIM);
        let mut child = tmp.run("kill the dashboard").on(&backend).spawn();
        wait_running(tmp.path(), 2);
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        // The workers go on without it and finish.
        let run = only_run_dir(tmp.path());
        assert!(
            wait_for(
                || ["one", "two"].iter().all(|w| run
                    .join(format!("workers/{w}/attempt-1/exit.json"))
                    .exists()),
                Duration::from_secs(60)
            ),
            "{backend}: workers did not finish after the dashboard died"
        );
        let out = run_crewmux(tmp.path(), backend.socket(), &["attach", "--headless"]);
        let s = summary(&out);
        assert_eq!(s["status"], "done", "{backend}: {s}");
        for w in ["one", "two"] {
            let w = worker(&s, w);
            assert_eq!(
                (w["status"].as_str(), w["attempts"].as_i64()),
                (Some("completed"), Some(1)),
                "{backend}"
            );
            assert!(tmp.path().join(w["result"].as_str().unwrap()).exists());
        }
    }
}

#[test]
fn a_killed_tmux_server_crashes_its_workers_and_retries_start_a_new_one() {
    if !tmux_ready("a_killed_tmux_server") {
        return;
    }
    let server = TmuxServer::new("killsrv");
    let tmp = TeamProject::new(SLOW_SIM);
    let child = tmp.run("kill the server").tmux(&server).spawn();
    wait_running(tmp.path(), 2);
    // Both agents have started printing, so the kill lands on live panes.
    let run = only_run_dir(tmp.path());
    assert!(
        wait_for(
            || ["one", "two"].iter().all(|w| std::fs::metadata(
                run.join(format!("workers/{w}/attempt-1/output.log"))
            )
            .is_ok_and(|m| m.len() > 0)),
            Duration::from_secs(30)
        ),
        "the workers never printed"
    );
    server.kill();
    let out = wait_limited(child, &["run"]);
    let s = summary(&out);
    assert_eq!(
        s["status"],
        "done",
        "{s}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let state = read_state(tmp.path());
    for id in ["one", "two"] {
        let w = state_worker(&state, id);
        assert_eq!(
            (w["status"].as_str(), w["attempt"].as_i64()),
            (Some("completed"), Some(2)),
            "{w}"
        );
        let first = state["dispatches"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["worker_id"] == id && d["attempt"] == 1)
            .unwrap();
        assert_eq!(first["status"], "crashed", "{first}");
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("tmux server"),
        "the person is told: {stderr}"
    );
}

#[test]
fn a_corrupt_state_file_is_reported_and_left_untouched() {
    let tmp = TeamProject::new(RECORDER);
    let out = tmp.run("corrupt me later").process().output();
    assert_eq!(summary(&out)["status"], "done");
    let run = only_run_dir(tmp.path());
    let path = run.join("state.json");
    let good = std::fs::read(&path).unwrap();
    let truncated = &good[..good.len() / 2];
    std::fs::write(&path, truncated).unwrap();
    for args in [
        vec!["status", "--json"],
        vec!["attach", "--headless"],
        vec!["cancel"],
        vec!["answer"],
    ] {
        let mut a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let id = run.file_name().unwrap().to_string_lossy().to_string();
        match args[0] {
            "status" => a.insert(1, id),
            "attach" => a.insert(1, id),
            "cancel" => a.push(id),
            _ => {
                a.push(id);
                a.push("text".into());
            }
        }
        let a: Vec<&str> = a.iter().map(|s| s.as_str()).collect();
        let out = run_crewmux(tmp.path(), "unused", &a);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{a:?}: {err}");
        assert!(
            err.contains("state.json") && err.lines().count() == 1,
            "{a:?}: {err}"
        );
        assert_eq!(
            std::fs::read(&path).unwrap(),
            truncated,
            "{a:?} changed the file"
        );
    }
}

#[test]
fn a_second_process_cannot_drive_a_run_that_is_driven() {
    let tmp = TeamProject::new(SLOW_SIM);
    let first = tmp.run("two drivers").process().spawn();
    // Workers running means the first process holds the run.
    wait_running(tmp.path(), 2);
    let second = run_crewmux(tmp.path(), "unused", &["attach", "--headless"]);
    assert_eq!(second.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&second.stderr).contains("already being driven"));
    // Meanwhile `status` of another process reads a consistent state.
    let st = run_crewmux(tmp.path(), "unused", &["status", "--json"]);
    assert_eq!(st.status.code(), Some(0));
    let out = wait_limited(first, &["run"]);
    assert_eq!(summary(&out)["status"], "done");
    // Attaching to the ended run prints the same summary JSON, so a script reads one shape.
    let again = run_crewmux(tmp.path(), "unused", &["attach", "--headless"]);
    assert_eq!(again.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&again.stderr).contains("is already done"));
    assert_eq!(summary(&again), summary(&out));
}

#[test]
fn cancel_from_another_process_stops_every_worker() {
    for backend in backends("cancel") {
        let tmp = TeamProject::new(SLOW_SIM);
        let child = tmp.run("cancel me").on(&backend).spawn();
        wait_running(tmp.path(), 2);
        let id = run_id(tmp.path());
        let c = run_crewmux(tmp.path(), backend.socket(), &["cancel", &id]);
        assert_eq!(
            c.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&c.stderr)
        );
        let out = wait_limited(child, &["run"]);
        let s = summary(&out);
        assert_eq!(s["status"], "cancelled", "{backend}: {s}");
        assert_eq!(out.status.code(), Some(1));
        for w in ["one", "two"] {
            assert_eq!(worker(&s, w)["status"], "cancelled", "{backend}");
        }
    }
}

#[test]
fn a_pane_gets_the_environment_of_the_crewmux_that_launched_it() {
    if !tmux_ready("pane_environment") {
        return;
    }
    let server = TmuxServer::new("env");
    let team = r#"
[[worker]]
id = "env"
role = "backend-engineer"
provider = "command"
max_attempts = 1
command = ["sh", "-c", "printf '%s' \"${CREWMUX_TEST_ENV:-unset}\" > env.txt"]
"#;
    for value in ["first", "second"] {
        let tmp = TeamProject::new(team);
        let child = crewmux()
            .current_dir(tmp.path())
            .env("CREWMUX_TMUX_SOCKET", &server.socket)
            .env("CREWMUX_TEST_ENV", value)
            .args([
                "run",
                "--team",
                tmp.team_arg(),
                "--no-clarify",
                "--headless",
                "--backend",
                "tmux",
                "env",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let out = wait_limited(child, &["run"]);
        assert_eq!(summary(&out)["status"], "done");
        // The server was started by the first run; the second run's value still arrives.
        assert_eq!(
            std::fs::read_to_string(tmp.path().join("env.txt")).unwrap(),
            value
        );
    }
}
