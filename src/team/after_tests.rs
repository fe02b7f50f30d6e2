//! Team-file tests for `after`: each bad dependency is one line naming the file, the line
//! and the column of the entry at fault.

use std::path::Path;

use super::parse_and_validate;
use crate::providers::Registry;

fn team(workers: &str) -> String {
    format!("name = \"t\"\n{workers}")
}

fn worker(id: &str, after: &str) -> String {
    format!("[[worker]]\nid = \"{id}\"\nrole = \"architect\"\nafter = [{after}]\n")
}

fn err(text: &str) -> String {
    let e = parse_and_validate(Path::new("t.toml"), text, &Registry::builtin())
        .unwrap_err()
        .to_string();
    assert!(!e.contains('\n'), "one line: {e}");
    e
}

#[test]
fn a_cycle_is_refused_with_its_place_and_spelled_out() {
    let text = team(&format!(
        "{}{}{}",
        worker("a", "\"c\""),
        worker("b", "\"a\""),
        worker("c", "\"b\"")
    ));
    // Line 5 is a's `after = ["c"]`; the entry starts at column 10.
    assert_eq!(
        err(&text),
        "t.toml:5:10: worker `a`: `after` makes a cycle: a → c → b → a: remove one of these dependencies"
    );
}

#[test]
fn an_unknown_id_is_refused_naming_the_known_ones() {
    let text = team(&format!(
        "{}{}",
        worker("a", ""),
        worker("b", "\"a\", \"ghost\"")
    ));
    assert_eq!(
        err(&text),
        "t.toml:9:15: worker `b`: `after` names unknown id `ghost`: use one of a"
    );
}

#[test]
fn a_worker_naming_itself_is_refused() {
    let text = team(&worker("a", "\"a\""));
    assert_eq!(
        err(&text),
        "t.toml:5:10: worker `a`: `after` names itself: remove `a`"
    );
}

#[test]
fn critics_may_wait_for_critics_and_workers_but_not_in_a_cycle() {
    let ok = team(&format!(
        "{}[[critic]]\nid = \"r1\"\nafter = [\"a\"]\n[[critic]]\nid = \"r2\"\nafter = [\"r1\"]\n",
        worker("a", "")
    ));
    let spec = parse_and_validate(Path::new("t.toml"), &ok, &Registry::builtin()).unwrap();
    assert_eq!(spec.critics[1].after, ["r1"]);
    let bad = team(&format!(
        "{}[[critic]]\nid = \"r1\"\nafter = [\"r2\"]\n[[critic]]\nid = \"r2\"\nafter = [\"r1\"]\n",
        worker("a", "")
    ));
    assert_eq!(
        err(&bad),
        "t.toml:8:10: critic `r1`: `after` makes a cycle: r1 → r2 → r1: remove one of these dependencies"
    );
}

#[test]
fn a_diamond_and_the_upstream_policy_load() {
    let text = team(&format!(
        "{}{}{}{}on_upstream_failure = \"run\"\n",
        worker("a", ""),
        worker("b", "\"a\""),
        worker("c", "\"a\""),
        worker("d", "\"b\", \"c\"")
    ));
    let spec = parse_and_validate(Path::new("t.toml"), &text, &Registry::builtin()).unwrap();
    assert_eq!(spec.workers[3].after, ["b", "c"]);
    assert_eq!(
        spec.workers[3].on_upstream_failure,
        Some(crate::domain::UpstreamPolicy::Run)
    );
    let bad = text.replace("\"run\"", "\"maybe\"");
    assert!(err(&bad).starts_with("t.toml:18:"), "{}", err(&bad));
}

#[test]
fn an_unknown_id_on_a_lone_worker_says_there_is_no_one_to_wait_for() {
    let text = team(&worker("a", "\"ghost\""));
    assert_eq!(
        err(&text),
        "t.toml:5:10: worker `a`: `after` names unknown id `ghost`: no other worker to wait for: remove `after`"
    );
}

#[test]
fn a_worker_without_a_role_is_named_at_its_table() {
    let text = team("[[worker]]\nid = \"a\"\nrole = \"architect\"\n\n[[worker]]\nid = \"b\"\n");
    let e = err(&text);
    assert!(
        e.starts_with("t.toml:6:1: worker `b`: missing `role`: add role = \"…\" (one of "),
        "{e}"
    );
    assert!(e.contains("architect"), "{e}");
}

#[test]
fn a_check_without_a_command_is_named_at_its_table() {
    let text = team("[[worker]]\nid = \"a\"\nrole = \"architect\"\n\n[[check]]\nid = \"tests\"\n");
    assert_eq!(
        err(&text),
        "t.toml:6:1: check `tests`: missing `command`: add command = [\"argv\", …]"
    );
}
