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
