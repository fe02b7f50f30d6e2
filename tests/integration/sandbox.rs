//! The fence per worker (README "Sandbox"): bad `[sandbox]` values and `--sandbox` flags
//! are one line and exit 2 with nothing made.

use crate::support::*;

const WORKER: &str = "[[worker]]\nid = \"a\"\nrole = \"backend-engineer\"\nprovider = \"command\"\ncommand = [\"true\"]\n";

#[test]
fn bad_sandbox_values_are_one_line_naming_the_value_and_the_allowed_ones() {
    let tmp = project();
    let p = tmp.path();
    let cases: Vec<(String, Vec<&str>, &str)> = vec![
        (
            format!("[sandbox]\nmode = \"jail\"\n\n{WORKER}"),
            vec![],
            "team.toml:2:8: mode = \"jail\": unknown value (use none, bwrap or container)",
        ),
        (
            format!("[sandbox]\nnetwork = \"off\"\n\n{WORKER}"),
            vec![],
            "network = \"off\": unknown value (use allow or none)",
        ),
        (
            format!("{WORKER}sandbox = {{ mode = \"container\" }}\n"),
            vec![],
            "worker `a`: `sandbox`: `mode = \"container\"` needs `image = \"…\"`",
        ),
        (
            format!("[sandbox]\nimage = \"node:22\"\n\n{WORKER}"),
            vec![],
            "`image` is for `mode = \"container\"`, and the mode is `none`",
        ),
        (
            WORKER.to_string(),
            vec!["--sandbox", "jail"],
            "invalid value 'jail' for '--sandbox <MODE>' [possible values: none, bwrap, container]",
        ),
        (
            WORKER.to_string(),
            vec!["--sandbox", "container"],
            "--sandbox container: `mode = \"container\"` needs `image = \"…\"`",
        ),
    ];
    for (team, flags, needle) in cases {
        let file = team_file(p, "team.toml", &team);
        let mut args = vec!["run", "--headless", "--team", file.to_str().unwrap()];
        args.extend(flags.iter().copied());
        args.push("fix it");
        let out = run_crewmux(p, "unused", &args);
        let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
        assert_eq!(out.status.code(), Some(2), "{team} {flags:?}: {err}");
        assert!(err.contains(needle), "{err:?} lacks {needle:?}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    assert!(!p.join(".crewmux").exists(), "nothing created on bad input");
}
