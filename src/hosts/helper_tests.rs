use std::collections::BTreeMap;

use super::*;

fn registry() -> Registry {
    Registry::builtin()
}

#[test]
fn sim_and_self_exe_run_crewmux_json_clis_need_the_filter_and_the_rest_nothing() {
    let selfie = vec!["{self_exe}".to_string(), "sim-agent".into()];
    let plain = vec!["true".to_string()];
    let to_sim = vec!["sim".to_string()];
    let to_claude = vec!["claude".to_string()];
    let w = |id, provider, command, host| WorkerNeed {
        id,
        provider,
        fallbacks: &[],
        command,
        host,
    };
    let workers: Vec<WorkerNeed<'_>> = vec![
        w("s", "sim", None, Some("box")),
        w("c", "codex", None, Some("box")),
        w("q", "qwen", None, Some("far")),
        w("p", "command", Some(plain.as_slice()), Some("far")),
        w("me", "command", Some(selfie.as_slice()), Some("far")),
        w("here", "sim", None, None),
        WorkerNeed {
            fallbacks: &to_sim,
            ..w("q2", "qwen", None, Some("fall"))
        },
        WorkerNeed {
            fallbacks: &to_claude,
            ..w("q3", "qwen", None, Some("json"))
        },
        w("q4", "qwen", None, Some("none")),
    ];
    let n = needs(&workers, &registry());
    assert_eq!(
        n["box"],
        Need {
            runs_crewmux: vec![("s".into(), "sim".into())],
            filter: true,
            fallback_runs: false,
        }
    );
    assert_eq!(
        n["far"],
        Need {
            runs_crewmux: vec![("me".into(), "command".into())],
            filter: false,
            fallback_runs: false,
        }
    );
    // A fallback counts: the copy is made for it, but nothing is refused for it.
    assert_eq!(
        n["fall"],
        Need {
            fallback_runs: true,
            ..Need::default()
        }
    );
    assert!(n["json"].filter && n["json"].runs_crewmux.is_empty());
    assert_eq!(n.len(), 4, "{n:?}");
}

fn need(sim: bool) -> BTreeMap<String, Need> {
    BTreeMap::from([(
        "box".to_string(),
        Need {
            runs_crewmux: if sim {
                vec![("w".into(), "sim".into())]
            } else {
                vec![]
            },
            filter: true,
            fallback_runs: false,
        },
    )])
}

fn one(state: HelperState) -> BTreeMap<String, HelperState> {
    BTreeMap::from([("box".to_string(), state)])
}

#[test]
fn a_host_that_cannot_run_crewmux_refuses_sim_and_shows_raw_output_otherwise() {
    let cannot = HelperState::CannotRun {
        why: "it is `Darwin arm64` and this crewmux is built for `Linux x86_64`".into(),
    };
    let e = judge(&need(true), one(cannot.clone())).unwrap_err();
    assert!(matches!(e, Error::Usage(_)));
    assert_eq!(
        e.to_string(),
        "worker `w` uses provider `sim`, which runs crewmux itself, and host box cannot run this crewmux (it is `Darwin arm64` and this crewmux is built for `Linux x86_64`): run it on `local` (host = \"local\") or on a host of this machine's system"
    );
    let p = judge(&need(false), one(cannot)).unwrap();
    assert_eq!(
        p.notices,
        ["host box cannot run this crewmux (it is `Darwin arm64` and this crewmux is built for `Linux x86_64`): its agents' panes show their raw JSON output"]
    );
    let unknown = HelperState::Unknown {
        why: "Connection refused".into(),
    };
    let e = judge(&need(true), one(unknown)).unwrap_err().to_string();
    assert!(e.contains("crewmux doctor --hosts"), "{e}");
}

#[test]
fn a_host_that_does_not_answer_at_planning_lets_sim_wait_for_it_and_says_so() {
    let awaited = HelperState::Awaited {
        why: "Connection refused".into(),
        path: "/w/bin/crewmux-0.1.0-ab".into(),
        since: None,
    };
    let p = judge(&need(true), one(awaited.clone())).unwrap();
    assert_eq!(
        p.notices,
        ["host box does not answer (Connection refused): worker `w` (provider `sim`) waits for it as the run's other workers do; crewmux is copied there when it answers, or the worker runs on local once the host is lost"]
    );
    assert_eq!(p.states["box"], awaited, "kept for the launch there");
    let p = judge(&need(false), one(awaited)).unwrap();
    assert_eq!(
        p.notices,
        ["host box does not answer (Connection refused), so crewmux is not there yet: its agents' panes show their raw JSON output"]
    );
}

#[test]
fn a_copy_is_said_once_and_a_copy_found_is_not() {
    let copied = HelperState::Ready {
        path: "/w/bin/crewmux-0.1.0-ab".into(),
        copied: true,
    };
    let p = judge(&need(true), one(copied)).unwrap();
    assert_eq!(
        p.notices,
        ["host box: copied crewmux to /w/bin/crewmux-0.1.0-ab"]
    );
    let found = HelperState::Ready {
        path: "/w/bin/crewmux-0.1.0-ab".into(),
        copied: false,
    };
    assert!(judge(&need(true), one(found)).unwrap().notices.is_empty());
}

#[test]
fn the_run_keeps_where_crewmux_is_on_each_host() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(run_helper(dir.path(), "box").unwrap(), None);
    let states = BTreeMap::from([
        (
            "box".to_string(),
            HelperState::Ready {
                path: "/w/bin/crewmux-0.1.0-ab".into(),
                copied: true,
            },
        ),
        (
            "mac".to_string(),
            HelperState::CannotRun { why: "x".into() },
        ),
    ]);
    save(dir.path(), &states).unwrap();
    assert_eq!(
        run_helper(dir.path(), "box").unwrap(),
        Some(PathBuf::from("/w/bin/crewmux-0.1.0-ab"))
    );
    assert_eq!(run_helper(dir.path(), "mac").unwrap(), None);
    std::fs::write(dir.path().join(HELPERS_FILE), "{").unwrap();
    let before = std::fs::read(dir.path().join(HELPERS_FILE)).unwrap();
    let e = run_helper(dir.path(), "box").unwrap_err();
    assert!(matches!(e, Error::CorruptState { .. }), "{e}");
    assert_eq!(
        std::fs::read(dir.path().join(HELPERS_FILE)).unwrap(),
        before
    );
}

#[test]
fn this_binary_is_named_by_its_version_and_hash() {
    let own = own_binary().unwrap();
    assert_eq!(own.hash.len(), 12);
    assert!(own.hash.chars().all(|c| c.is_ascii_hexdigit()));
    assert!(own.bytes > 0);
    assert_eq!(
        own.name(),
        format!("crewmux-{}-{}", env!("CARGO_PKG_VERSION"), own.hash)
    );
    assert!(!own.system.is_empty());
}
