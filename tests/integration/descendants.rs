//! Nothing a worker started outlives it: children that leave the process group (`setsid`,
//! a double fork, `nohup … &`) are ended with their attempt, on a timeout and when the
//! attempt ends by itself, on both backends.

use std::time::Duration;

use crate::support::*;

/// Pids of live processes whose environment names `run_id` as their run.
fn processes_of(run_id: &str) -> Vec<u32> {
    let needle = format!("CREWMUX_RUN_ID={run_id}");
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .map(|s| {
                    s.rsplit_once(')')
                        .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
                })
                .unwrap_or(true);
            !zombie
                && std::fs::read(format!("/proc/{pid}/environ"))
                    .map(|env| env.split(|&b| b == 0).any(|kv| kv == needle.as_bytes()))
                    .unwrap_or(false)
        })
        .collect()
}

const ESCAPERS: &str = r#"
parallel = 2
[[worker]]
id = "leaver"
role = "backend-engineer"
provider = "command"
max_attempts = 1
command = ["sh", "-c", "setsid sleep 300 >/dev/null 2>&1 & nohup sleep 301 >/dev/null 2>&1 & echo done"]

[[worker]]
id = "hanger"
role = "backend-engineer"
provider = "command"
max_attempts = 1
timeout_s = 2
command = ["sh", "-c", "setsid sh -c 'sleep 302 & sleep 303' >/dev/null 2>&1 & sleep 300"]
"#;

#[test]
fn children_that_left_the_group_end_with_their_attempt() {
    for backend in backends("desc") {
        let tmp = TeamProject::new(ESCAPERS);
        let out = tmp.run("leave").on(&backend).output();
        let s = summary(&out);
        assert_eq!(worker(&s, "hanger")["status"], "timeout", "{backend}: {s}");
        let id = s["run_id"].as_str().unwrap().to_string();
        let left = processes_of(&id);
        // The run's own processes are gone once crewmux returned; give the kernel a moment
        // to reap what was SIGKILLed just before.
        let clean = wait_for(|| processes_of(&id).is_empty(), Duration::from_secs(5));
        assert!(
            clean,
            "{backend}: processes of the run outlived it: {left:?}"
        );
    }
}

/// A lead killed between recording an attempt's end and reaping it leaves a child that
/// quit the attempt's group; the next lead of the run ends it (here the survivor is made by
/// hand: a process carrying the ended attempt's nonce).
#[test]
fn the_next_lead_ends_what_an_ended_attempt_left_when_its_lead_was_killed() {
    let t = TeamProject::new(&command_worker("one", "true", "Done."));
    let d = t.path();
    let out = t.run("change nothing").process().output();
    assert_eq!(summary(&out)["status"], "done", "{}", stderr(&out));
    let run = only_run_dir(d);
    let id = run.file_name().unwrap().to_string_lossy().to_string();
    let state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("state.json")).unwrap()).unwrap();
    let nonce = state["dispatches"][0]["nonce"]
        .as_str()
        .unwrap()
        .to_string();
    let mut survivor = std::process::Command::new("sleep")
        .arg("300")
        .env(crewmux::launch::ATTEMPT_ENV, &nonce)
        .spawn()
        .unwrap();
    // The run is reopened and driven again by a new lead.
    let retried = run_crewmux(d, "unused", &["steer", &id, "retry", "one"]);
    assert!(retried.status.success(), "{}", stderr(&retried));
    let resumed = run_crewmux(d, "unused", &["resume", &id, "--headless"]);
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    let gone = wait_for(
        || matches!(survivor.try_wait(), Ok(Some(_))),
        Duration::from_secs(10),
    );
    if !gone {
        let _ = survivor.kill();
    }
    assert!(
        gone,
        "the ended attempt's leftover is ended by the next lead"
    );
}
