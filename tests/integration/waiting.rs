//! Waiting detection on agents' screens: a worker that shows a trust prompt becomes
//! `waiting`, an answer from the command line reaches it, and a busy spinner is never taken
//! for a question. Both backends.

use std::time::Duration;

use crate::support::*;

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

#[test]
fn a_prompt_on_screen_makes_the_worker_wait_and_the_answer_reaches_it() {
    for backend in backends("waiting") {
        let tmp = TeamProject::new(TEAM);
        let child = tmp.run("trust prompt").on(&backend).spawn();
        let mut spinner_waited = false;
        let s = wait_state(
            tmp.path(),
            "the asker waits",
            Duration::from_secs(60),
            |s| {
                spinner_waited |= state_worker(s, "spinner")["status"] == "waiting";
                state_worker(s, "asker")["status"] == "waiting"
            },
        );
        let q = state_worker(&s, "asker")["question"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(q.contains("trust the files"), "{backend}: question {q:?}");
        let id = run_id(tmp.path());
        let ans = run_crewmux(
            tmp.path(),
            backend.socket(),
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
        let run = only_run_dir(tmp.path());
        assert_eq!(
            count_events(&run, "worker-waiting"),
            1,
            "{backend}: asked once\n{:#?}",
            events(&run)
        );
    }
}

/// Eight workers that each print a `(y/n)` question, on a tmux server that already holds
/// another run's session (so the run's panes are `%4` and up): every one of them is seen
/// waiting, and each answer reaches its own worker.
#[test]
fn every_asker_waits_on_a_server_that_already_holds_another_run() {
    if !tmux_ready("every_asker_waits_on_a_server_that_already_holds_another_run") {
        return;
    }
    const ASKERS: usize = 8;
    let mut team = format!("parallel = {ASKERS}\n");
    for i in 0..ASKERS {
        team.push_str(&format!(
            r#"
[[worker]]
id = "asker{i}"
role = "backend-engineer"
provider = "command"
max_attempts = 1
command = ["sh", "-c", "printf 'Do you trust the files in this folder? (y/n) '; read reply; echo \"$reply\" > reply-{i}.txt"]
"#
        ));
    }
    let server = TmuxServer::new("waiting-many");
    // Another run's session with a few windows: the panes of this run come after them.
    let other = "crewmux-20260101-000000-0ther";
    let made = server.tmux(&["new-session", "-d", "-s", other, "sleep 600"]);
    assert!(made.status.success(), "{made:?}");
    for _ in 0..3 {
        assert!(server
            .tmux(&["new-window", "-d", "-t", other, "sleep 600"])
            .status
            .success());
    }
    let tmp = TeamProject::new(&team);
    let child = tmp.run("trust prompts").tmux(&server).spawn();
    let s = wait_state(
        tmp.path(),
        "every asker waits",
        Duration::from_secs(90),
        |s| count_status(s, "waiting") == ASKERS,
    );
    let id = run_id(tmp.path());
    for i in 0..ASKERS {
        let w = state_worker(&s, &format!("asker{i}"));
        assert!(
            w["question"]
                .as_str()
                .unwrap_or_default()
                .contains("trust the files"),
            "asker{i}: {w}"
        );
        let ans = run_crewmux(
            tmp.path(),
            &server.socket,
            &[
                "answer",
                &id,
                "--worker",
                &format!("asker{i}"),
                &format!("yes {i}"),
            ],
        );
        assert_eq!(ans.status.code(), Some(0), "{ans:?}");
    }
    let out = wait_limited(child, &["run"]);
    let s = summary(&out);
    for i in 0..ASKERS {
        assert_eq!(
            worker(&s, &format!("asker{i}"))["status"],
            "completed",
            "{s}"
        );
        let reply = std::fs::read_to_string(tmp.path().join(format!("reply-{i}.txt"))).unwrap();
        assert_eq!(reply.trim(), format!("yes {i}"));
    }
    // The other run's session is untouched.
    assert!(server.tmux(&["has-session", "-t", other]).status.success());
}

/// `waiting_patterns` of a user's and of a project's `providers.toml` are what the waiting
/// detector looks for, besides the built-in patterns: a prompt only they describe makes the
/// worker wait, on both backends.
#[test]
fn waiting_patterns_of_a_user_or_project_providers_file_are_used() {
    const ASKS: &str = r#"
[[worker]]
id = "asker"
role = "backend-engineer"
provider = "command"
max_attempts = 1
command = ["sh", "-c", "printf 'ready for orders, captain> '; read reply; echo \"$reply\" > reply.txt"]
"#;
    let file = "[providers.command]\nwaiting_patterns = [\"ready for orders, captain>\\\\s*$\"]\n";
    for backend in backends("waiting_patterns_of_providers_files") {
        for layer in ["user", "project"] {
            let tmp = TeamProject::new(ASKS);
            let config = tmp.path().join("user-config");
            std::fs::create_dir_all(&config).unwrap();
            let dir = match layer {
                "user" => config.clone(),
                _ => tmp.path().join(".crewmux"),
            };
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("providers.toml"), file).unwrap();
            let child = crewmux()
                .current_dir(tmp.path())
                .env("CREWMUX_CONFIG_DIR", &config)
                .env("CREWMUX_TMUX_SOCKET", backend.socket())
                .args([
                    "run",
                    "--team",
                    tmp.team_arg(),
                    "--no-clarify",
                    "--headless",
                ])
                .args(["--backend", backend.name, "--", "orders"])
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            let s = wait_state(
                tmp.path(),
                &format!("{backend}, {layer} file: the asker waits"),
                Duration::from_secs(60),
                |s| state_worker(s, "asker")["status"] == "waiting",
            );
            let q = state_worker(&s, "asker")["question"].to_string();
            assert!(q.contains("ready for orders"), "{backend} {layer}: {q}");
            let id = run_id(tmp.path());
            let ans = run_crewmux(
                tmp.path(),
                backend.socket(),
                &["answer", &id, "--worker", "asker", "aye"],
            );
            assert_eq!(ans.status.code(), Some(0), "{ans:?}");
            let out = wait_limited(child, &["run"]);
            assert_eq!(worker(&summary(&out), "asker")["status"], "completed");
            let reply = std::fs::read_to_string(tmp.path().join("reply.txt")).unwrap();
            assert_eq!(reply.trim(), "aye", "{backend} {layer}");
        }
    }
}
