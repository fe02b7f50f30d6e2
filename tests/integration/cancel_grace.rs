//! A cancel gives the agent the grace it asked for: SIGTERM, the whole `--grace`, then
//! SIGKILL. The agent's own TERM handler runs to its end, and the exit evidence is the
//! agent's, on both backends and through the process that drives the run.

use std::time::Duration;

use crate::support::*;

/// A worker whose TERM handler takes 6 s (more than the driving process's own 5 s grace)
/// and then exits 0.
const TERM_HANDLER: &str = r#"
[[worker]]
id = "slow"
role = "backend-engineer"
provider = "command"
max_attempts = 1
command = ["sh", "-c", "trap 'echo got TERM; sleep 6; echo handler done; exit 0' TERM; echo ready; while :; do sleep 0.1; done"]
"#;

#[test]
fn cancel_with_a_grace_lets_the_agent_finish_its_term_handler() {
    for backend in backends("cancel_grace") {
        let t = TeamProject::new(TERM_HANDLER);
        let d = t.path();
        let child = t.run("wait for the cancel").on(&backend).spawn();
        wait_running(d, 1);
        let attempt = only_run_dir(d).join("workers/slow/attempt-1");
        let log = attempt.join("output.log");
        assert!(
            wait_for(
                || std::fs::read_to_string(&log).is_ok_and(|l| l.contains("ready")),
                Duration::from_secs(60)
            ),
            "{backend}: the worker never said ready"
        );
        let id = run_id(d);
        let c = run_crewmux(d, backend.socket(), &["cancel", &id, "--grace", "20"]);
        assert!(c.status.success(), "{backend}: {}", stderr(&c));
        let out = wait_limited(child, &["run"]);
        let s = summary(&out);
        assert_eq!(s["status"], "cancelled", "{backend}: {s}");
        let said = std::fs::read_to_string(&log).unwrap();
        assert!(
            said.contains("got TERM") && said.contains("handler done"),
            "{backend}: the TERM handler was cut: {said}"
        );
        let exit: serde_json::Value =
            serde_json::from_slice(&std::fs::read(attempt.join("exit.json")).unwrap()).unwrap();
        assert_eq!(exit["code"], 0, "{backend}: the handler's own exit: {exit}");
    }
}
