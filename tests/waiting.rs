//! Waiting detection on agents' screens: a worker that shows a trust prompt becomes
//! `waiting`, an answer from the command line reaches it, and a busy spinner is never taken
//! for a question. Both backends.

mod common;

use std::time::{Duration, Instant};

use common::*;

const TEAM: &str = r#"
parallel = 2

[[worker]]
id = "asker"
role = "backend-engineer"
provider = "command"
max_attempts = 1
command = ["sh", "-c", "echo 'Working in this folder.'; printf 'Do you trust the files in this folder? (y/n) '; read reply; echo \"reply: $reply\" > reply.txt; echo thanks"]

[[worker]]
id = "spinner"
role = "testing-engineer"
provider = "command"
max_attempts = 1
command = ["sh", "-c", "for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do printf '\\r%s Thinking… (%ss)' '|/-\\\\' $i; sleep 0.2; done; echo; echo done"]
"#;

fn state(project: &std::path::Path) -> serde_json::Value {
    if !project.join(".crewmux/runs").exists() {
        return serde_json::Value::Null;
    }
    let run = only_run_dir(project);
    std::fs::read_to_string(run.join("state.json"))
        .ok()
        .and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or_default()
}

#[test]
fn a_prompt_on_screen_makes_the_worker_wait_and_the_answer_reaches_it() {
    let mut backends: Vec<(&str, Option<TmuxServer>)> = vec![("process", None)];
    if tmux_ready("waiting") {
        backends.push(("tmux", Some(TmuxServer::new("waiting"))));
    }
    for (backend, server) in backends {
        let sock = server
            .as_ref()
            .map(|s| s.socket.clone())
            .unwrap_or_else(|| "unused".into());
        let tmp = tempfile::tempdir().unwrap();
        let team = team_file(tmp.path(), "team.toml", TEAM);
        let child = spawn_crewmux(
            tmp.path(),
            &sock,
            &[
                "run",
                "--team",
                team.to_str().unwrap(),
                "--no-clarify",
                "--headless",
                "--backend",
                backend,
                "trust prompt",
            ],
        );
        let end = Instant::now() + Duration::from_secs(20);
        let mut spinner_waited = false;
        loop {
            assert!(
                Instant::now() < end,
                "{backend}: asker never became waiting: {}",
                state(tmp.path())
            );
            let s = state(tmp.path());
            let ws = |id: &str| {
                s["workers"]
                    .as_array()
                    .and_then(|a| a.iter().find(|w| w["id"] == id).cloned())
                    .unwrap_or_default()
            };
            spinner_waited |= ws("spinner")["status"] == "waiting";
            if ws("asker")["status"] == "waiting" {
                let q = ws("asker")["question"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                assert!(q.contains("trust the files"), "{backend}: question {q:?}");
                break;
            }
            std::thread::sleep(Duration::from_millis(150));
        }
        let id = only_run_dir(tmp.path())
            .file_name()
            .unwrap()
            .to_string_lossy()
            .to_string();
        let ans = run_crewmux(
            tmp.path(),
            &sock,
            &["answer", &id, "--worker", "asker", "y"],
        );
        assert_eq!(
            ans.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&ans.stderr)
        );
        let out = wait_limited(child, &["run"]);
        let s = summary(&out);
        assert_eq!(worker(&s, "asker")["status"], "completed", "{backend}: {s}");
        assert_eq!(worker(&s, "spinner")["status"], "completed");
        assert!(
            !spinner_waited,
            "{backend}: the spinner was taken for a question"
        );
        let reply = std::fs::read_to_string(tmp.path().join("reply.txt")).unwrap();
        assert_eq!(reply.trim(), "reply: y", "{backend}");
        let events =
            std::fs::read_to_string(only_run_dir(tmp.path()).join("events.jsonl")).unwrap();
        assert_eq!(
            events.matches("\"worker-waiting\"").count(),
            1,
            "{backend}: asked once\n{events}"
        );
    }
}
