//! Bad input on the command line: one clear line naming the value and the fix, a non-zero
//! exit (2 for usage errors), and nothing created.

use crate::support::*;

fn err_line(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).trim().to_string()
}

#[test]
fn bad_inputs_give_one_line_naming_the_value_and_exit_2() {
    let tmp = crate::support::project();
    let p = tmp.path();
    let bad_team = team_file(
        p,
        "bad.toml",
        "[[worker]]\nid = \"x\"\nrole = \"r\"\nflavour = 3\n",
    );
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["run", "--provider", "sim", "--headless", "   "],
            "problem is empty",
        ),
        (
            vec![
                "run",
                "--provider",
                "sim",
                "--headless",
                "--parallel",
                "0",
                "do it now please",
            ],
            "'0' for '--parallel <PARALLEL>': use a whole number 1..=256",
        ),
        (
            vec!["run", "--headless", "--parallel", "-3", "fix it"],
            "'-3' for '--parallel <PARALLEL>': use a whole number 1..=256",
        ),
        (
            vec!["run", "--headless", "--parallel", "abc", "fix it"],
            "'abc' for '--parallel <PARALLEL>': use a whole number 1..=256",
        ),
        (
            vec!["run", "--headless", "--timeout", "-1", "fix it"],
            "'-1' for '--timeout <SECONDS>': use a whole number of seconds",
        ),
        (
            vec!["run", "--headless", "--provider", "sim"],
            "give the problem as the last argument",
        ),
        (
            vec!["run", "--headless", "--team", "nope.toml", "fix the bug"],
            "nope.toml",
        ),
        (
            vec![
                "run",
                "--headless",
                "--team",
                bad_team.to_str().unwrap(),
                "fix the bug",
            ],
            "bad.toml:4",
        ),
        (
            vec![
                "run",
                "--headless",
                "--project",
                "/no/such/dir",
                "fix the bug",
            ],
            "/no/such/dir",
        ),
        (vec!["status", "no-such-run"], "no runs under"),
    ];
    for (args, needle) in cases {
        let out = run_crewmux(p, "unused", &args);
        let err = err_line(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err:?} lacks {needle:?}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    }
    assert!(!p.join(".crewmux").exists(), "nothing created on bad input");
}

#[test]
fn clap_usage_errors_exit_2() {
    let out = crewmux()
        .args(["run", "--mode", "bogus", "x"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bogus"), "{err}");
    // One line that names the value and where to look, like every other bad input.
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.starts_with("crewmux: invalid value 'bogus' for '--mode"),
        "{err}"
    );
    assert!(err.contains("(see 'crewmux run --help')"), "{err}");
    // --help is not an error: clap's own page on stdout, exit 0.
    let help = crewmux().args(["run", "--help"]).output().unwrap();
    assert_eq!(help.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&help.stdout).contains("Usage: crewmux run"));
}

#[test]
fn answering_without_a_question_or_a_waiting_worker_is_refused() {
    let tmp = TeamProject::new("[[worker]]\nid = \"a\"\nrole = \"architect\"\nprovider = \"sim\"\nprompt = \"{problem}\\nsim: lines=1\\nsim: delay-ms=10\"\n");
    let out = tmp.run("write the plan").process().output();
    assert_eq!(out.status.code(), Some(0), "{}", err_line(&out));
    let id = summary(&out)["run_id"].as_str().unwrap().to_string();
    let out = run_crewmux(tmp.path(), "unused", &["answer", &id, "hello"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(err_line(&out).contains("no pending question"));
    let out = run_crewmux(
        tmp.path(),
        "unused",
        &["answer", &id, "--worker", "zz", "hello"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(err_line(&out).contains("no worker `zz`"));
    let out = run_crewmux(
        tmp.path(),
        "unused",
        &["answer", &id, "--worker", "a", "hello"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(err_line(&out).contains("not waiting"));
}

#[test]
fn an_io_error_names_its_path_on_one_line_and_v_shows_the_cause() {
    let tmp = crate::support::project();
    // `.crewmux/runs` is a file, so listing the runs fails with ENOTDIR.
    std::fs::create_dir_all(tmp.path().join(".crewmux")).unwrap();
    let runs = tmp.path().join(".crewmux/runs");
    std::fs::write(&runs, "not a directory").unwrap();
    let args = ["status", "--project", tmp.path().to_str().unwrap()];
    let out = crewmux().args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        err_line(&out),
        format!("crewmux: {}: Not a directory (os error 20)", runs.display())
    );
    // An exported RUST_BACKTRACE (common in shells) keeps the one line.
    let out = crewmux()
        .env("RUST_BACKTRACE", "1")
        .args(args)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&out.stderr).lines().count(), 1);
    let out = crewmux().arg("-v").args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        err.lines().count() > 1 && err.contains(&runs.display().to_string()),
        "{err}"
    );
    assert!(err.contains("Not a directory (os error 20)"), "{err}");
}

#[test]
fn a_bad_config_file_is_one_line_at_its_place_and_nothing_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("config");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.toml"),
        "[keys]\nretry = \"R\"\n\n[defaults]\nmode = \"wild\"\n",
    )
    .unwrap();
    let out = crewmux()
        .current_dir(tmp.path())
        .env("CREWMUX_CONFIG_DIR", &config)
        .args(["run", "--provider", "sim", "--headless", "fix the bug"])
        .output()
        .unwrap();
    let err = err_line(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.ends_with("config.toml:5:8: unknown mode `wild`: use one of crazy, ccg, solo"),
        "{err}"
    );
    assert!(!tmp.path().join(".crewmux").exists(), "nothing ran");
}

#[test]
fn home_screen_flags_before_a_command_are_refused_not_ignored() {
    let out = crewmux()
        .args(["--tmux-socket", "other", "status"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(err_line(&out).contains("--tmux-socket before a command is the home screen's"));
}

/// A stderr reader that leaves after the first line (`crewmux run … 2>&1 | head -1`) must
/// not end the run half way: crewmux drops the lines it cannot write and the run finishes.
#[test]
fn a_run_outlives_a_stderr_reader_that_went_away() {
    use std::io::BufRead;
    let project = project();
    let mut child = crewmux()
        .current_dir(project.path())
        .args(["run", "--headless", "--no-clarify", "--backend", "process"])
        .args([
            "--provider",
            "sim",
            "--mode",
            "solo",
            "Add a health endpoint to the API",
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut first = String::new();
    stderr.read_line(&mut first).unwrap();
    assert!(!first.is_empty(), "crewmux wrote nothing to stderr");
    drop(stderr);
    let out = wait_limited(child, &["run", "(stderr closed)"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let state: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(only_run_dir(project.path()).join("state.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(state["status"], "done", "{state}");
}
