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

/// `silent` types nothing back itself: the terminal's echo is off and it prints the answer
/// (the echo of the paste, as a CLI that redraws its input does) 12 s after reading it,
/// then nothing. `goes-on` gets the terminal's own echo, then prints a line of its own 6 s
/// later.
const ECHOES: &str = r#"
parallel = 2
max_fix_rounds = 0

[[worker]]
id = "silent"
role = "backend-engineer"
provider = "command"
max_attempts = 1
idle_timeout_s = 15
command = ["sh", "-c", "printf 'Do you trust the files in this folder? (y/n) '; stty -echo; read reply; sleep 12; echo \"$reply\"; sleep 600"]

[[worker]]
id = "goes-on"
role = "testing-engineer"
provider = "command"
max_attempts = 1
command = ["sh", "-c", "printf 'Shall I go on with the tests? (y/n) '; read reply; sleep 6; echo \"going on: $reply\"; sleep 1"]
"#;

/// The time of the first event of `kind` for `worker`.
fn event_at(
    run: &std::path::Path,
    kind: &str,
    worker: &str,
) -> Option<chrono::DateTime<chrono::Utc>> {
    events(run)
        .iter()
        .find(|e| e["kind"] == kind && e["worker"] == worker)
        .and_then(|e| e["ts"].as_str()?.parse().ok())
}

/// The echo of a pasted answer in the pane is not the worker's output: it is not
/// `worker-resumed`, and the idle clock runs from the answer, not from the echo; a line
/// the worker prints of its own after the echo resumes it.
#[test]
fn the_echo_of_a_pasted_answer_does_not_resume_the_worker() {
    if !tmux_ready("the_echo_of_a_pasted_answer_does_not_resume_the_worker") {
        return;
    }
    let server = TmuxServer::new("echo");
    let tmp = TeamProject::new(ECHOES);
    let child = tmp.run("echo of an answer").tmux(&server).spawn();
    wait_state(
        tmp.path(),
        "both workers wait",
        Duration::from_secs(90),
        |s| count_status(s, "waiting") == 2,
    );
    let id = run_id(tmp.path());
    let run = only_run_dir(tmp.path());
    for w in ["silent", "goes-on"] {
        let ans = run_crewmux(
            tmp.path(),
            &server.socket,
            &["answer", &id, "--worker", w, "y"],
        );
        assert_eq!(ans.status.code(), Some(0), "{w}: {ans:?}");
    }
    let log = |w: &str| {
        std::fs::read_to_string(run.join(format!("workers/{w}/attempt-1/output.log")))
            .unwrap_or_default()
    };
    // goes-on: the terminal's echo of the answer is in its log, and it still waits.
    assert!(
        wait_for(
            || log("goes-on").contains("(y/n) y"),
            Duration::from_secs(60)
        ),
        "no echo in goes-on's log: {:?}",
        log("goes-on")
    );
    // (The state is read before the log: a log without goes-on's own line then means the
    // state was saved before that line.)
    let s = wait_state(tmp.path(), "a state", Duration::from_secs(10), |_| true);
    if !log("goes-on").contains("going on: y") {
        assert_eq!(state_worker(&s, "goes-on")["status"], "waiting", "{s}");
    }
    // silent: its echo of the answer comes 12 s after it, on the prompt's line.
    assert!(
        wait_for(
            || log("silent").contains("(y/n) y"),
            Duration::from_secs(90)
        ),
        "no echo in silent's log: {:?}",
        log("silent")
    );
    let out = wait_limited(child, &["run"]);
    let s = summary(&out);
    let events_text = || format!("{:#?}", events(&run));
    // goes-on resumed on its own line, 6 s after the answer, not on the echo at once.
    assert_eq!(worker(&s, "goes-on")["status"], "completed", "{s}");
    let answered = event_at(&run, "worker-answered", "goes-on").expect("goes-on answered");
    let resumed = event_at(&run, "worker-resumed", "goes-on")
        .unwrap_or_else(|| panic!("goes-on never resumed:\n{}", events_text()));
    assert!(
        (resumed - answered).num_milliseconds() >= 4_000,
        "goes-on resumed {} ms after its answer (the echo came at once):\n{}",
        (resumed - answered).num_milliseconds(),
        events_text()
    );
    // silent never resumed: it ended by its idle limit, counted from the answer (15 s),
    // not from its echo 12 s later (27 s).
    assert_eq!(worker(&s, "silent")["status"], "timeout", "{s}");
    assert_eq!(
        event_at(&run, "worker-resumed", "silent"),
        None,
        "the echo resumed silent:\n{}",
        events_text()
    );
    let answered = event_at(&run, "worker-answered", "silent").expect("silent answered");
    let ended = event_at(&run, "worker-timeout", "silent").expect("silent timed out");
    let after = (ended - answered).num_milliseconds();
    assert!(
        (14_000..24_000).contains(&after),
        "silent's idle limit ended it {after} ms after its answer:\n{}",
        events_text()
    );
}

/// A worker answered while nobody drives its run goes on in its pane, and the answer's line
/// says the command that continues the run (it said only that the answer was pasted).
#[test]
fn an_answer_to_a_run_nobody_drives_says_how_to_continue_it() {
    let server = TmuxServer::new("answer-undriven");
    let tmp = TeamProject::new(TEAM);
    let mut child = tmp.run("trust prompt").tmux(&server).spawn();
    wait_state(
        tmp.path(),
        "the asker waits",
        Duration::from_secs(60),
        |s| state_worker(s, "asker")["status"] == "waiting",
    );
    // The headless process that drives the run is gone; the asker's pane is still there.
    child.kill().unwrap();
    child.wait().unwrap();
    let id = run_id(tmp.path());
    let ans = run_crewmux(
        tmp.path(),
        &server.socket,
        &["answer", &id, "--worker", "asker", "y"],
    );
    let err = String::from_utf8_lossy(&ans.stderr);
    assert_eq!(ans.status.code(), Some(0), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!("continue it with crewmux resume {id}")),
        "{err}"
    );
    let out = run_crewmux(tmp.path(), &server.socket, &["resume", "--headless", &id]);
    let s = summary(&out);
    assert_eq!(worker(&s, "asker")["status"], "completed", "{s}");
}
