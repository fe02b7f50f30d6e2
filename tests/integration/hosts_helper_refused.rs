//! A `sim` worker (which runs crewmux itself) on a host crewmux cannot run on is refused
//! when the run is planned, in one line: a host of another system (whose JSON CLI workers
//! then show raw output). A host that does not answer is waited for: `hosts_sim_down`.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::hosts_helper::{copies_on, stand_in_codex, text, write_providers, CODEX_TEAM};
use crate::support::on_host::*;
use crate::support::sshd::*;
use crate::support::*;

/// The one line of `stderr` that is not a planning notice: the refusal.
fn the_refusal(stderr: &str) -> &str {
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.contains(": planning"))
        .collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    lines[0]
}

#[test]
fn a_host_of_another_system_shows_raw_output_and_refuses_sim_when_the_run_is_planned() {
    if !sshd_ready("hosts_helper_foreign") {
        return;
    }
    // The host's commands find a `uname` that says it is a Mac.
    let tools = tempfile::tempdir().unwrap();
    let uname = tools.path().join("uname");
    std::fs::write(&uname, "#!/bin/sh\necho 'Darwin arm64'\n").unwrap();
    std::fs::set_permissions(&uname, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:/usr/local/bin:/usr/bin:/bin", tools.path().display());
    let host = SshHost::start_with_env(&[("PATH", &path)]);
    let said = host.ssh(&["uname", "-sm"]);
    assert_eq!(String::from_utf8_lossy(&said.stdout).trim(), "Darwin arm64");
    let server = TmuxServer::new("hosts-helper-foreign");
    let tmp = repo(&[("README", "x\n")]);
    let p = tmp.path();
    host.write_hosts_file(p, "box");
    let codex = stand_in_codex(tools.path());
    write_providers(p, &codex);
    let run = |team: &Path| {
        let args = headless(team.to_str().unwrap(), "another system");
        let child = crewmux_on_host(p, &server.socket, &host, &args)
            .env("CODEX_API_KEY", "k")
            .spawn()
            .unwrap();
        wait_limited(child, &args)
    };

    // A JSON CLI runs there, its pane shows the raw events; one line says why.
    let out = run(&team_file(p, "codex.toml", CODEX_TEAM));
    assert_events_once(p);
    let (_, stderr) = text(&out);
    let s = summary(&out);
    assert_eq!(
        worker(&s, "jsonish")["status"],
        "completed",
        "{s}\n{stderr}"
    );
    let why: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("cannot run this crewmux"))
        .collect();
    assert_eq!(why.len(), 1, "{stderr}");
    assert!(
        why[0].starts_with("crewmux: host box cannot run this crewmux (it is `Darwin arm64` and this crewmux is built for `")
            && why[0].ends_with("): its agents' panes show their raw JSON output"),
        "{stderr}"
    );
    let pane =
        std::fs::read_to_string(only_run_dir(p).join("workers/jsonish/attempt-1/output.log"))
            .unwrap();
    assert!(pane.contains("{\"type\":\"item.completed\""), "raw: {pane}");
    assert!(
        copies_on(&host).is_empty(),
        "nothing copied to another system"
    );

    // A sim worker there is refused before anything is made.
    let runs = || std::fs::read_dir(p.join(".crewmux/runs")).unwrap().count();
    let before = runs();
    let sim = team_file(
        p,
        "sim.toml",
        "[[worker]]\nid = \"simmer\"\nrole = \"backend-engineer\"\nprovider = \"sim\"\nhost = \"box\"\n",
    );
    let out = run(&sim);
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let refusal = the_refusal(&stderr);
    assert!(
        refusal.starts_with("crewmux: worker `simmer` uses provider `sim`, which runs crewmux itself, and host box cannot run this crewmux (it is `Darwin arm64`")
            && refusal.ends_with("run it on `local` (host = \"local\") or on a host of this machine's system"),
        "{stderr}"
    );
    assert_eq!(runs(), before, "nothing made");

    // `--hosts box,local` spreads around the host: box has the most free slots (4 against
    // local's 1), but a sim worker goes to local while a command worker still goes to box,
    // and the run finishes.
    let mixed = team_file(
        p,
        "mixed.toml",
        &format!(
            "[[worker]]\nid = \"simmer\"\nrole = \"backend-engineer\"\nprovider = \"sim\"\n\n{}",
            command_worker("cmd", "true", "ok")
        ),
    );
    let spread = ["--hosts", "box,local", "--parallel", "1"];
    let dispatch = crewmux_on_host(p, &server.socket, &host, &["dispatch", "--team"])
        .arg(&mixed)
        .args(spread)
        .args(["--", "another system"])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&dispatch);
    assert_eq!(dispatch.status.code(), Some(0), "{stdout}{stderr}");
    let host_of = |id: &str| {
        let row = stdout
            .lines()
            .find(|l| l.starts_with(&format!("{id} ")))
            .unwrap_or_else(|| panic!("no row for {id}: {stdout}"));
        row.split_whitespace().nth(4).unwrap().to_string()
    };
    assert_eq!(
        (host_of("simmer"), host_of("cmd")),
        ("local".into(), "box".into()),
        "{stdout}"
    );
    let sim_only = team_file(
        p,
        "sim-free.toml",
        "[[worker]]\nid = \"simmer\"\nrole = \"backend-engineer\"\nprovider = \"sim\"\n",
    );
    let args = [
        "run",
        "--team",
        sim_only.to_str().unwrap(),
        "--no-clarify",
        "--headless",
        spread[0],
        spread[1],
        spread[2],
        spread[3],
        "--",
        "another system",
    ];
    let child = crewmux_on_host(p, &server.socket, &host, &args)
        .spawn()
        .unwrap();
    let out = wait_limited(child, &args);
    let (_, stderr) = text(&out);
    let s = summary(&out);
    assert_eq!(s["status"], "done", "{s}\n{stderr}");
    assert_eq!(worker(&s, "simmer")["status"], "completed", "{s}");
    let state: serde_json::Value = serde_json::from_slice(
        &std::fs::read(
            p.join(".crewmux/runs")
                .join(s["run_id"].as_str().unwrap())
                .join("state.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let simmer = state["workers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["id"] == "simmer")
        .unwrap();
    assert!(
        simmer["host"].is_null() || simmer["host"] == "local",
        "{simmer}"
    );
    assert_events_once(p);

    // doctor: a warning for the host, a failure for a team that runs sim there.
    let doctor = |args: &[&str]| {
        let out = crewmux_on_host(p, &server.socket, &host, args)
            .output()
            .unwrap();
        let (stdout, stderr) = text(&out);
        let line = stdout
            .lines()
            .find(|l| l.trim_start().starts_with("helper "))
            .unwrap_or_else(|| panic!("no helper line: {stdout}{stderr}"))
            .to_string();
        (out.status.code(), line, stdout)
    };
    let (code, line, all) = doctor(&["doctor", "--hosts"]);
    assert_eq!(code, Some(0), "{all}");
    assert!(
        line.starts_with("  helper     warn cannot run crewmux there (it is `Darwin arm64`"),
        "{line}"
    );
    let (code, line, all) = doctor(&["doctor", "--hosts", "--team", sim.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{all}");
    assert!(
        line.starts_with("  helper     FAIL cannot run crewmux there"),
        "{line}"
    );
    assert!(all.contains("=> box: unusable: helper"), "{all}");
}
