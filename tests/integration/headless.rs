//! A headless run's stderr is for people reading a log or a script reading lines: the
//! terminal notification sequences (bell, OSC 9 / OSC 777) go only to a terminal.

use crate::support::{summary, TeamProject};

#[test]
fn a_headless_run_writes_no_escape_sequences_to_a_stderr_that_is_not_a_terminal() {
    let tmp = TeamProject::new("[[worker]]\nid = \"w\"\nrole = \"backend-engineer\"\nprovider = \"sim\"\nmax_attempts = 1\nprompt = \"{problem}\\nsim: lines=2\"\n");
    // A question (answered by its default) and the end of the run both notify.
    let out = tmp.run("go").process().output();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(summary(&out)["outcome"], "passed");
    assert!(
        !out.stderr.contains(&0x1b) && !out.stderr.contains(&0x07),
        "escape sequences or a bell on a non-terminal stderr: {err:?}"
    );
}
