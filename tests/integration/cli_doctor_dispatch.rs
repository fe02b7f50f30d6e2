//! `crewmux doctor` and `crewmux dispatch` as a user runs them: exit codes, one-line errors,
//! JSON shapes, with only stand-in CLIs (or none) on PATH.

use crate::support::standins::{serial, Auth, Bin};
use assert_cmd::Command;
use predicates::prelude::*;

fn crewmux(bin: &Bin, project: &std::path::Path) -> Command {
    let mut c = Command::cargo_bin("crewmux").unwrap();
    c.env_clear()
        .env("PATH", bin.bin_dir())
        .env("HOME", bin.home())
        .env("CREWMUX_CONFIG_DIR", bin.dir.path().join("config"))
        .current_dir(project);
    c
}

#[test]
fn dispatch_ccg_with_no_agent_cli_fails_fast_listing_installs() {
    let _g = serial();
    let bin = Bin::new();
    let project = crate::support::project();
    let out = crewmux(&bin, project.path())
        .args(["dispatch", "--mode", "ccg", "Review the checkout flow"])
        .timeout(std::time::Duration::from_secs(20))
        .assert()
        .code(1)
        .stdout("")
        .get_output()
        .stderr
        .clone();
    let err = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = err.lines().collect();
    assert!(
        lines[0].starts_with("crewmux: no agent CLI can run workers `backend`, `frontend`"),
        "{err}"
    );
    assert!(lines[0].contains("--allow-sim-fallback"), "{err}");
    assert!(lines[0].ends_with("; or install one of:"), "{err}");
    // One CLI a line, so a terminal never breaks an install command in the middle.
    assert!(
        lines.contains(&"  codex: npm install -g @openai/codex"),
        "{err}"
    );
    assert!(
        lines.contains(&"  gemini: npm install -g @google/gemini-cli"),
        "{err}"
    );
}

#[test]
fn dispatch_json_with_sim_fallback_prints_the_decision() {
    let _g = serial();
    let bin = Bin::new();
    let project = crate::support::project();
    let out = crewmux(&bin, project.path())
        .args([
            "dispatch",
            "--mode",
            "ccg",
            "--allow-sim-fallback",
            "--json",
            "Fix the CSS layout and the API auth",
        ])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["target"], "ccg");
    assert_eq!(v["target_used"], true, "it leans the workers' routing");
    assert_eq!(v["source"], "mode:ccg");
    let workers = v["workers"].as_array().unwrap();
    assert_eq!(workers.len(), 3, "two tracks and the synthesis");
    assert_eq!(
        workers[2]["after"],
        serde_json::json!(["backend", "frontend"])
    );
    for w in workers {
        assert_eq!(w["provider"], "sim");
        assert_eq!(w["health"], "built-in");
        assert!(w["reason"]
            .as_str()
            .unwrap()
            .contains("--allow-sim-fallback"));
    }
    assert!(v["health"]
        .as_array()
        .unwrap()
        .iter()
        .all(|h| h["installed"] == false));
}

#[test]
fn dispatch_shows_each_workers_limits_with_the_run_flags() {
    let _g = serial();
    let bin = Bin::new();
    let project = crate::support::project();
    let out = crewmux(&bin, project.path())
        .args([
            "dispatch",
            "--mode",
            "ccg",
            "--allow-sim-fallback",
            "--idle-timeout",
            "0",
            "--stall-after",
            "90",
            "Fix the CSS layout and the API auth",
        ])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    let header = text.lines().find(|l| l.starts_with("worker ")).unwrap();
    assert!(header.contains(" limits "), "{text}");
    for id in ["backend", "frontend", "synthesis"] {
        let row = text
            .lines()
            .find(|l| l.starts_with(&format!("{id} ")))
            .unwrap_or_else(|| panic!("no row for {id}: {text}"));
        assert!(
            row.contains("wall 45m · idle off · stall 90s"),
            "{id}: {row}"
        );
    }
}

/// A team whose every worker names its provider has no use for a target: dispatch says
/// so instead of naming the default one and its reason.
#[test]
fn dispatch_says_the_target_is_unused_when_every_worker_names_its_provider() {
    let _g = serial();
    let bin = Bin::new();
    let project = crate::support::project();
    let team = project.path().join("team.toml");
    std::fs::write(
        &team,
        "[[worker]]\nid = \"a\"\nrole = \"backend-engineer\"\nprovider = \"command\"\ncommand = [\"/bin/true\"]\n\n\
         [[worker]]\nid = \"b\"\nrole = \"frontend-designer\"\nprovider = \"sim\"\n",
    )
    .unwrap();
    let dispatch = |extra: &[&str]| {
        let out = crewmux(&bin, project.path())
            .args(["dispatch", "--team", team.to_str().unwrap()])
            .args(extra)
            .arg("tidy the parser")
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        String::from_utf8(out).unwrap()
    };
    let text = dispatch(&[]);
    assert_eq!(
        text.lines().next(),
        Some("target: - (unused: every worker names its provider)"),
        "{text}"
    );
    let v: serde_json::Value = serde_json::from_str(&dispatch(&["--json"])).unwrap();
    assert_eq!(v["target_used"], false, "{v}");
    // One worker left to routing: the target leans it again.
    std::fs::write(
        &team,
        "[[worker]]\nid = \"a\"\nrole = \"backend-engineer\"\nprovider = \"command\"\ncommand = [\"/bin/true\"]\n\n\
         [[worker]]\nid = \"b\"\nrole = \"frontend-designer\"\n",
    )
    .unwrap();
    let text = dispatch(&["--allow-sim-fallback"]);
    assert!(
        text.starts_with("target: codex (no signal words; codex is the default)"),
        "{text}"
    );
}

/// The example pipeline's graph: which workers start together and whom the others wait
/// for, with the upstream policy said.
#[test]
fn dispatch_prints_the_levels_of_the_teams_graph() {
    let _g = serial();
    let bin = Bin::new();
    let project = crate::support::project();
    let team = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/pipeline.toml");
    let out = crewmux(&bin, project.path())
        .args(["dispatch", "--team", team.to_str().unwrap()])
        .args(["--allow-sim-fallback", "Split the parser"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.ends_with(
            "\nflow (3 levels, parallel 2):\n  1. plan\n  2. backend (after plan), frontend (after plan)\n  3. review (after backend, frontend, runs if one fails)\n"
        ),
        "{text}"
    );
}

#[test]
fn dispatch_routes_to_the_installed_cli_with_role_models() {
    let _g = serial();
    let bin = Bin::new();
    bin.add("gemini", "", Auth::Says(0, ""));
    let project = crate::support::project();
    let out = crewmux(&bin, project.path())
        .env("GEMINI_API_KEY", "test")
        .env("CREWMUX_ROLE", "commit")
        .args(["dispatch", "--json", "Polish the dark mode theme"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["target"], "gemini", "UI words route to gemini");
    assert_eq!(v["source"], "mode:solo");
    assert_eq!(v["role"], "commit");
    assert_eq!(v["workers"][0]["provider"], "gemini");
    assert_eq!(v["workers"][0]["model"], "gemini-2.5-flash");
    assert_eq!(v["workers"][0]["task"], "Polish the dark mode theme");
}

#[test]
fn bad_inputs_exit_2_with_one_line() {
    let _g = serial();
    let bin = Bin::new();
    let project = crate::support::project();
    crewmux(&bin, project.path())
        .args(["dispatch", "--role", "huge", "x y z"])
        .assert()
        .code(2)
        .stderr("crewmux: unknown --role `huge`: use smol, slow, plan, commit or default\n");
    crewmux(&bin, project.path())
        .args(["dispatch", "--target", "nowhere", "x y z"])
        .assert()
        .code(2)
        .stderr(predicate::str::starts_with(
            "crewmux: unknown --target `nowhere`",
        ));
    std::fs::write(
        project.path().join("team.toml"),
        "[[worker]]\nid = \"a\"\nrole = \"reviewer\"\nprovider = \"codx\"\n",
    )
    .unwrap();
    crewmux(&bin, project.path())
        .args(["dispatch", "--team", "team.toml", "x y z"])
        .assert()
        .code(2)
        .stderr(predicate::str::starts_with(
            "crewmux: team.toml:4:12: worker `a`: `provider`: unknown provider `codx`",
        ));
    crewmux(&bin, project.path())
        .args(["doctor", "--bogus"])
        .assert()
        .code(2);
    // A `--project` that is no directory: said, not routed past.
    for cmd in [&["dispatch", "x y z"][..], &["doctor"][..]] {
        crewmux(&bin, project.path())
            .args(cmd)
            .args(["--project", "/nonexistent"])
            .assert()
            .code(2)
            .stderr(
                "crewmux: --project /nonexistent: no such directory; give an existing project folder\n",
            );
    }
    // A file named as the project: said as a file, not an OS error of a path inside it.
    std::fs::write(project.path().join("calc.py"), "x = 1\n").unwrap();
    let file = project.path().join("calc.py");
    for cmd in [&["run", "--headless", "x y z"][..], &["doctor"][..]] {
        crewmux(&bin, project.path())
            .args(cmd)
            .arg("--project")
            .arg(&file)
            .assert()
            .code(2)
            .stderr(format!(
                "crewmux: --project {}: a file, not a directory; give an existing project folder\n",
                file.display()
            ));
    }
    bin.user_providers("[providers.codex]\nargz = []\n");
    crewmux(&bin, project.path())
        .args(["doctor"])
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("providers.toml:2:1:").and(predicate::str::contains("argz")),
        );
}

#[test]
fn doctor_json_and_exit_codes() {
    let _g = serial();
    let bin = Bin::new();
    let project = crate::support::project();
    // Nothing installed: not ready, exit 1, and the text says what to do.
    crewmux(&bin, project.path())
        .arg("doctor")
        .assert()
        .code(1)
        .stdout(
            predicate::str::contains("install: npm install -g @openai/codex")
                .and(predicate::str::contains("not ready:")),
        );
    bin.add(
        "codex",
        "login status",
        Auth::Says(0, "Logged in using ChatGPT"),
    );
    bin.add(
        "claude",
        "auth status",
        Auth::Says(1, "{\"loggedIn\": false}"),
    );
    let out = crewmux(&bin, project.path())
        .args(["doctor", "--json"])
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["ok"], true);
    assert_eq!(v["ready"], serde_json::json!(["codex"]));
    let p = |n: &str| {
        v["providers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|h| h["provider"] == n)
            .unwrap()
            .clone()
    };
    assert_eq!(p("codex")["auth"], "authenticated");
    assert_eq!(p("codex")["version"], "9.9.9");
    assert_eq!(p("claude")["auth"], "not-authenticated");
    assert_eq!(p("gemini")["installed"], false);
    assert_eq!(
        v["tmux"]["installed"], false,
        "tmux is not on the stand-in PATH"
    );
}
