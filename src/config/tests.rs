//! The config file: every table read, and each kind of mistake reported at its place.

use std::path::Path;

use super::*;
use crate::providers::Registry;
use crate::tui::action::Action;

fn read(text: &str) -> Result<Config> {
    parse(
        Path::new("/home/u/.config/crewmux/config.toml"),
        text,
        &Registry::builtin(),
    )
}

fn error(text: &str) -> String {
    read(text).unwrap_err().to_string()
}

#[test]
fn no_file_content_means_the_defaults() {
    let c = read("").unwrap();
    assert_eq!(c.keys, Keys::default());
    assert!(c.theme.is_default());
    assert_eq!(c.notify, NotifyWays::default());
    assert_eq!((c.mode, c.provider), (None, None));
}

#[test]
fn every_table_is_read() {
    let c = read(
        r##"
[keys]
retry = "R"
add-worker = ["+", "A"]

[theme]
accent = "magenta"
error = "#ff5f5f"

[notify]
notify-send = false
tmux = false
command = ["ntfy", "publish", "my runs"]
command-timeout-s = 30

[defaults]
mode = "solo"
provider = "sim"
"##,
    )
    .unwrap();
    let worker = c.keys.apply(crate::tui::action::WORKER);
    assert!(worker
        .iter()
        .any(|b| b.action == Action::Retry && b.label == "R"));
    let global = c.keys.apply(crate::tui::action::GLOBAL);
    let add: Vec<&str> = global
        .iter()
        .filter(|b| b.action == Action::AddWorker)
        .map(|b| b.label.as_ref())
        .collect();
    assert_eq!(add, ["+", "A"]);
    assert!(!c.theme.is_default());
    assert_eq!(
        c.notify,
        NotifyWays {
            bell: true,
            osc: true,
            notify_send: false,
            tmux: false,
            command: Some(vec!["ntfy".into(), "publish".into(), "my runs".into()]),
            command_timeout: std::time::Duration::from_secs(30),
        }
    );
    assert_eq!(c.mode.as_deref(), Some("solo"));
    assert_eq!(c.provider.as_deref(), Some("sim"));
}

#[test]
fn mistakes_are_one_line_at_their_place_with_the_fix() {
    let cases: &[(&str, &str)] = &[
        (
            "[colours]\naccent = \"red\"\n",
            "config.toml:1:2: unknown field `colours`, expected one of `keys`, `theme`, `notify`, `lead`, `defaults`",
        ),
        ("[keys]\nretyr = \"R\"\n", "config.toml:2:1: unknown action `retyr`: did you mean `retry`?"),
        ("[keys]\nretry = \"Ctrl+R\"\n", "config.toml:2:9: `Ctrl+R` is not a key"),
        ("[keys]\nretry = \"q\"\n", "config.toml:2:9: `q` is already quit's key where retry works"),
        ("[theme]\nerror = \"bluish\"\n", "config.toml:2:9: `bluish` is not a colour"),
        ("[theme]\nerrors = \"red\"\n", "config.toml:2:1: unknown theme colour `errors`: use one of accent"),
        ("[notify]\nbell = \"yes\"\n", "config.toml:2:8: bell: use true or false (not \"yes\")"),
        ("[notify]\nsound = true\n", "config.toml:2:1: unknown field `sound`"),
        ("[notify]\ncomand = [\"ntfy\"]\n", "config.toml:2:1: unknown field `comand`: did you mean `command`?"),
        ("[notify]\ncommand = \"ntfy publish x\"\n", "config.toml:2:11: command: use the program and its arguments as a list of strings, e.g. [\"ntfy\", \"publish\", \"my-runs\"] (not \"ntfy publish x\")"),
        ("[notify]\ncommand = []\n", "config.toml:2:11: `command` names no program: give it and its arguments"),
        ("[notify]\ncommand = [\"\", \"x\"]\n", "config.toml:2:11: `command` names no program"),
        ("[notify]\ncommand-timeout-s = 0\n", "config.toml:2:21: command-timeout-s 0 is out of range: use 1 to 3600 seconds"),
        ("[notify]\ncommand-timeout-s = 5000\n", "config.toml:2:21: command-timeout-s 5000 is out of range"),
        ("[notify]\ncommand-timeout-s = \"10\"\n", "config.toml:2:21: command-timeout-s: use a whole number of seconds from 1 to 3600 (not \"10\")"),
        ("[defaults]\nmode = \"wild\"\n", "config.toml:2:8: unknown mode `wild`: use one of crazy, ccg, solo"),
        ("[defaults]\nprovider = \"gpt\"\n", "config.toml:2:12: unknown provider `gpt`: use one of"),
    ];
    for (text, want) in cases {
        let got = error(text);
        assert!(got.contains(want), "{text:?}\n got: {got}\nwant: {want}");
        assert_eq!(got.lines().count(), 1, "{got}");
    }
}

#[test]
fn a_value_of_the_wrong_type_names_its_key_and_what_to_write() {
    assert_eq!(
        error("[notify]\nbell = \"yes\"\n"),
        "/home/u/.config/crewmux/config.toml:2:8: bell: use true or false (not \"yes\")"
    );
    assert_eq!(
        error("[defaults]\nmode = 3\n"),
        "/home/u/.config/crewmux/config.toml:2:8: mode: use one of crazy, ccg, solo, quoted (not 3)"
    );
}
