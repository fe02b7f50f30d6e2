//! The circuit breaker: three attempts in a row of one provider that time out open it for
//! the run, and the next worker runs on its team file's `fallback` provider.

use crate::support::*;

/// A stand-in agent CLI that hangs (`slow`) or answers at once (`quick`).
fn providers(bin: &std::path::Path) -> String {
    let slow = bin.join("slow");
    let quick = bin.join("quick");
    std::fs::write(&slow, "#!/bin/sh\ncat > /dev/null\nsleep 60\n").unwrap();
    std::fs::write(
        &quick,
        "#!/bin/sh\ncat > /dev/null\necho \"quick did it: the notes are changed.\"\n",
    )
    .unwrap();
    for f in [&slow, &quick] {
        std::fs::set_permissions(f, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    }
    let provider = |name: &str, path: &std::path::Path| {
        format!(
            "[providers.{name}]\nkind = \"agent\"\nbinary = \"{}\"\nprompt = \"stdin\"\nauth = \"none\"\n\n",
            path.display()
        )
    };
    provider("slow", &slow) + &provider("quick", &quick)
}

#[test]
fn three_timeouts_in_a_row_open_a_provider_and_the_next_worker_runs_on_its_fallback() {
    let backend = tmux_or_process("breaker");
    let mut team =
        String::from("name = \"breaker\"\nparallel = 1\ntimeout_s = 2\nfallback = [\"quick\"]\n\n");
    for i in 1..=4 {
        team.push_str(&format!(
            "[[worker]]\nid = \"w{i}\"\nrole = \"backend-engineer\"\nprovider = \"slow\"\nmax_attempts = 1\n\n"
        ));
    }
    let t = TeamProject::new(&team);
    let bin = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(t.path().join(".crewmux")).unwrap();
    std::fs::write(
        t.path().join(".crewmux/providers.toml"),
        providers(bin.path()),
    )
    .unwrap();
    let out = t.run("Change the notes").on(&backend).output();
    let s: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(only_run_dir(t.path()).join("state.json")).unwrap(),
    )
    .unwrap();
    for id in ["w1", "w2", "w3"] {
        assert_eq!(
            state_worker(&s, id)["status"],
            "timeout",
            "{}",
            stderr(&out)
        );
        assert_eq!(state_worker(&s, id)["provider"], "slow");
    }
    let w4 = state_worker(&s, "w4");
    assert_eq!(w4["provider"], "quick", "{w4}");
    assert_eq!(w4["status"], "completed", "{w4}");
    let run = only_run_dir(t.path());
    assert_eq!(count_events(&run, "provider-opened"), 1);
    assert_eq!(count_events(&run, "provider-switched"), 1);
    let why = s["routing"]["failed"]["slow"].as_str().unwrap();
    assert!(why.contains("circuit open"), "{why}");
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    assert!(
        report.contains("## Providers taken out of the run\n\n- slow: circuit open"),
        "{report}"
    );
}

#[test]
fn a_fallback_that_is_no_provider_is_one_line_and_nothing_runs() {
    let t = TeamProject::new(
        "name = \"bad\"\n\n[[worker]]\nid = \"w\"\nrole = \"backend-engineer\"\nprovider = \"sim\"\nfallback = [\"nosuch\"]\n",
    );
    let out = t.run("Change the notes").process().output();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("fallback `nosuch` is no provider"), "{err}");
    assert_eq!(
        err.trim().lines().count(),
        1,
        "one line, before any run is planned: {err}"
    );
    let runs = t.path().join(".crewmux/runs");
    let made = std::fs::read_dir(&runs).map(|d| d.count()).unwrap_or(0);
    assert_eq!(made, 0, "no run folder is left");
}
