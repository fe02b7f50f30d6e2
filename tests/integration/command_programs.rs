//! The program a `command` worker or check names: one that cannot be found is refused by
//! `run` (exit 2, one line, nothing created) and shown `not-found` by `dispatch`; one that
//! goes missing after the start ends its attempt with a reason that says so, not with a
//! bare exit code.

use crate::support::*;

const MISSING: &str = "no-such-program-crewmux-test";

fn team(program: &str) -> String {
    format!(
        "[[worker]]\nid = \"a\"\nrole = \"reviewer\"\nprovider = \"command\"\ncommand = [\"{program}\", \"x\"]\n"
    )
}

#[test]
fn a_command_that_is_not_on_path_is_refused_before_the_run_exists() {
    let tmp = TeamProject::new(&team(MISSING));
    let out = tmp.run("check the build").process().output();
    let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(
        err,
        format!(
            "crewmux: worker `a`: command `{MISSING}` not found on PATH: install it, or fix `command` in the team file"
        )
    );
    assert!(
        !tmp.path().join(".crewmux/runs").exists()
            || std::fs::read_dir(tmp.path().join(".crewmux/runs"))
                .unwrap()
                .next()
                .is_none(),
        "no run is made"
    );
}

#[test]
fn dispatch_shows_a_missing_command_as_not_found_and_exits_2() {
    let tmp = TeamProject::new(&format!(
        "{}\n[[check]]\nid = \"t\"\ncommand = [\"/no/such/checker\"]\n",
        team("sh")
    ));
    let out = run_crewmux(
        tmp.path(),
        "unused",
        &["dispatch", "--team", tmp.team_arg(), "check the build"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(
        err.trim(),
        "crewmux: check `t`: command `/no/such/checker` no such file: install it, or fix `command` in the team file"
    );
    let tmp = TeamProject::new(&team(MISSING));
    let out = run_crewmux(
        tmp.path(),
        "unused",
        &["dispatch", "--team", tmp.team_arg(), "check the build"],
    );
    assert_eq!(out.status.code(), Some(2));
    let plan = String::from_utf8_lossy(&out.stdout);
    let row = plan.lines().find(|l| l.starts_with("a ")).unwrap();
    assert!(row.contains("not-found"), "{plan}");
}

#[test]
fn a_program_that_cannot_be_found_at_launch_says_not_found_in_its_reason() {
    // A relative path is read in the worker's tree, so only the launch finds it missing.
    let tmp = TeamProject::new(&team("./gone.sh"));
    let out = tmp.run("check the build").process().output();
    let s = summary(&out);
    let w = worker(&s, "a");
    assert_eq!(w["status"], "failed", "{s}");
    assert_eq!(w["exit_code"], 127, "{s}");
    let reason = w["reason"].as_str().unwrap_or("");
    assert!(
        reason.starts_with("command: command not found (exit 127): install the program"),
        "{reason}"
    );
    assert_eq!(
        w["attempts"], 1,
        "not retried: it would fail the same way: {s}"
    );
}
