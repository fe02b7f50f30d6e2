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
