//! `crewmux completions` and `crewmux man`: generated from the command line, for every
//! shell clap_complete knows; a shell it does not know is one line and exit 2.

use crate::support::*;

#[test]
fn completions_for_every_shell_name_the_subcommands() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = crewmux().args(["completions", shell]).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{shell}");
        let text = String::from_utf8_lossy(&out.stdout);
        for sub in ["attach", "doctor", "completions"] {
            assert!(text.contains(sub), "{shell} script lacks {sub}");
        }
    }
}

#[test]
fn the_bash_script_is_valid_bash() {
    let out = crewmux().args(["completions", "bash"]).output().unwrap();
    let tmp = crate::support::project();
    let path = tmp.path().join("crewmux.bash");
    std::fs::write(&path, &out.stdout).unwrap();
    let check = std::process::Command::new("bash")
        .arg("-n")
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
}

#[test]
fn an_unknown_shell_is_refused_with_the_choices() {
    let out = crewmux().args(["completions", "nushell"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("possible values: bash"), "{err}");
}

#[test]
fn the_man_page_is_roff_for_section_1() {
    let out = crewmux().arg("man").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(".TH crewmux 1"), "{text}");
    assert!(
        text.contains(".SH NAME") && text.contains("attach"),
        "{text}"
    );
}

#[test]
fn every_page_the_man_page_names_exists_and_it_covers_keys_teams_and_exit_codes() {
    let out = crewmux().arg("man").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    for section in [
        ".SH DASHBOARD KEYS",
        ".SH TEAM FILES",
        ".SH EXIT STATUS",
        ".SH FILES",
    ] {
        assert!(text.contains(section), "{section}: {text}");
    }
    // The answer key, as the help overlay lists it.
    assert!(text.contains(".TP\n\\fBa\\fR\nanswer"), "{text}");
    let dir = tempfile::tempdir().unwrap();
    let wrote = crewmux()
        .args(["man", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(
        wrote.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&wrote.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("crewmux.1")).unwrap(),
        text,
        "the folder's main page is the printed one"
    );
    // Each `crewmux-NAME(1)` the page names is a page of the folder.
    let named: Vec<&str> = text
        .split("crewmux\\-")
        .skip(1)
        .filter_map(|rest| rest.split_once("(1)").map(|(name, _)| name))
        .filter(|name| !name.contains(char::is_whitespace))
        .collect();
    assert!(named.len() >= 10, "{named:?}");
    for name in named {
        let page = dir
            .path()
            .join(format!("crewmux-{}.1", name.replace("\\-", "-")));
        assert!(page.is_file(), "{} is named but missing", page.display());
    }
}

/// The bash script offers this project's run ids, newest first, after a command that takes
/// one and after `--run`, and clap's own words elsewhere.
#[test]
fn bash_completes_run_ids_from_the_project() {
    let tmp = crate::support::project();
    for id in ["20261201-090000-aaaa", "20261202-090000-bbbb"] {
        std::fs::create_dir_all(tmp.path().join(".crewmux/runs").join(id)).unwrap();
    }
    let out = crewmux().args(["completions", "bash"]).output().unwrap();
    let script = tmp.path().join("crewmux.bash");
    std::fs::write(&script, &out.stdout).unwrap();
    let exe = assert_cmd::cargo::cargo_bin("crewmux");
    let path = format!(
        "{}:{}",
        exe.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let complete = |words: &str, cword: usize| {
        let probe = format!(
            "source {}; COMP_WORDS=({words}); COMP_CWORD={cword}; _crewmux_runs crewmux \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"; echo \"${{COMPREPLY[*]}}\"",
            script.display()
        );
        let out = std::process::Command::new("bash")
            .arg("-c")
            .arg(probe)
            .current_dir(tmp.path())
            .env("PATH", &path)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    assert_eq!(
        complete("crewmux attach ''", 2),
        "20261202-090000-bbbb 20261201-090000-aaaa"
    );
    assert_eq!(complete("crewmux diff 20261201", 2), "20261201-090000-aaaa");
    assert_eq!(
        complete("crewmux clean --run ''", 3),
        "20261202-090000-bbbb 20261201-090000-aaaa"
    );
    assert_eq!(complete("crewmux docto", 1), "doctor");
}

/// The zsh script names its run-id function where clap wrote `_default` for a run.
#[test]
fn zsh_and_fish_scripts_ask_for_run_ids() {
    let zsh = crewmux().args(["completions", "zsh"]).output().unwrap();
    let zsh = String::from_utf8_lossy(&zsh.stdout);
    assert!(zsh.contains("_crewmux_runs() {"), "{zsh}");
    assert!(
        zsh.contains(
            "'::run -- Run id (or a unique prefix); default\\: the newest run:_crewmux_runs'"
        ),
        "attach's run"
    );
    let fish = crewmux().args(["completions", "fish"]).output().unwrap();
    let fish = String::from_utf8_lossy(&fish.stdout);
    assert!(
        fish.contains("-f -a \"(crewmux __complete runs 2>/dev/null)\""),
        "{fish}"
    );
}
