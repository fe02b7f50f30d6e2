//! Usage limits park, not fail: a stand-in CLI (Claude Code's stream-json) whose first
//! attempt ends on "You've hit your session limit · resets <time>" parks its worker until
//! then (`parked` in state and `status`, a `worker-parked` event, the attempt not counted),
//! and its next attempt starts no earlier than the reset and continues the conversation; a
//! parked worker of a cancelled run ends at once.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::support::*;

/// The stand-in: appends its argv to `calls.txt`; its first call says the limit resets
/// `$RESET_IN` seconds from now (UTC, with seconds) and exits 1, later calls succeed.
const CLI: &str = r#"#!/bin/sh
dir=$(dirname "$0")
n=$(( $(cat "$dir/calls.txt" 2>/dev/null | wc -l) + 1 ))
echo "$*" >> "$dir/calls.txt"
cat > /dev/null
printf '{"type":"system","subtype":"init","session_id":"s-%s"}\n' "$n"
if [ "$n" = 1 ]; then
  at=$(date -u -d "@$(( $(date +%s) + $(cat "$dir/reset_in") ))" +%H:%M:%S)
  printf '{"type":"result","subtype":"success","is_error":true,"session_id":"s-1","result":"You'"'"'ve hit your session limit · resets %s (UTC)"}\n' "$at"
  exit 1
fi
printf '{"type":"result","subtype":"success","is_error":false,"session_id":"s-%s","result":"Done after the reset (attempt %s)."}\n' "$n" "$n"
"#;

struct Limited {
    team: TeamProject,
    bin: tempfile::TempDir,
}

impl Limited {
    /// A project whose one worker (`max_attempts = 1`) runs the stand-in, its limit
    /// resetting `reset_in_s` after its first call.
    fn new(reset_in_s: u64) -> Self {
        let team = TeamProject::new(
            "name = \"limited\"\n\n[[worker]]\nid = \"capped\"\nrole = \"backend-engineer\"\nprovider = \"capped\"\nmax_attempts = 1\n",
        );
        let bin = tempfile::tempdir().unwrap();
        let cli = bin.path().join("capped");
        std::fs::write(&cli, CLI).unwrap();
        std::fs::write(bin.path().join("reset_in"), reset_in_s.to_string()).unwrap();
        std::fs::set_permissions(&cli, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        std::fs::create_dir_all(team.path().join(".crewmux")).unwrap();
        // The built-in claude rule's pattern, in a project's providers.toml.
        std::fs::write(
            team.path().join(".crewmux/providers.toml"),
            format!(
                "[providers.capped]\nkind = \"agent\"\nbinary = \"{}\"\nargs = [\"--fresh\"]\nresume_args = [\"--resume\", \"{{session}}\"]\nprompt = \"stdin\"\noutput = \"claude-json\"\nauth = \"none\"\n\n[[providers.capped.exit_output]]\npattern = \"you've hit your [a-z0-9 ]*limit · resets (?P<reset>[^\\\"]+)\"\nmeaning = \"limit\"\nfix = \"wait for the reset\"\n",
                cli.display()
            ),
        )
        .unwrap();
        Limited { team, bin }
    }

    fn path(&self) -> &Path {
        self.team.path()
    }

    fn calls(&self) -> Vec<String> {
        std::fs::read_to_string(self.bin.path().join("calls.txt"))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    fn state(&self) -> serde_json::Value {
        let file: PathBuf = only_run_dir(self.path()).join("state.json");
        serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap()
    }
}

fn time(v: &serde_json::Value) -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::parse_from_rfc3339(v.as_str().unwrap_or_else(|| panic!("not a time: {v}")))
        .unwrap()
        .with_timezone(&chrono::Utc)
}

#[test]
fn a_usage_limit_with_a_reset_5s_ahead_parks_the_worker_then_continues_its_conversation() {
    let backend = tmux_or_process("parking");
    let l = Limited::new(5);
    let child = l.team.run("Change the notes").on(&backend).spawn();
    let st = wait_state(l.path(), "capped parked", Duration::from_secs(60), |s| {
        !state_worker(s, "capped")["flow"]["parked"].is_null()
    });
    let w = state_worker(&st, "capped");
    assert_eq!(w["status"], "pending", "{w}");
    assert_eq!(
        w["max_attempts"], 2,
        "the limited attempt is not counted: {w}"
    );
    let until = time(&w["flow"]["parked"]["until"]);
    assert!(
        w["reason"].as_str().unwrap().starts_with("parked until "),
        "{w}"
    );
    let id = run_id(l.path());
    let status = run_crewmux(l.path(), backend.socket(), &["status", &id]);
    let text = String::from_utf8_lossy(&status.stdout).to_string();
    assert!(
        text.contains("parked") && text.contains("usage limit reached"),
        "{text}"
    );

    let out = wait_limited(child, &["run"]);
    assert_eq!(summary(&out)["status"], "done", "{}", stderr(&out));
    assert_eq!(
        l.calls(),
        ["--fresh", "--resume s-1"],
        "the same conversation goes on"
    );
    let st = l.state();
    let second = &st["dispatches"][1];
    assert!(
        time(&second["started_at"]) >= until,
        "attempt 2 started before the reset {until}: {second}"
    );
    let w = state_worker(&st, "capped");
    assert_eq!(
        (w["status"].as_str(), w["attempt"].as_u64()),
        (Some("completed"), Some(2))
    );
    assert!(w["flow"]["parked"].is_null(), "{w}");
    let run = only_run_dir(l.path());
    assert_eq!(count_events(&run, "worker-parked"), 1);
    assert_eq!(count_events(&run, "provider-opened"), 0);
}

#[test]
fn a_parked_worker_of_a_cancelled_run_ends_at_once() {
    let backend = tmux_or_process("parking-cancel");
    let l = Limited::new(3_600);
    let child = l.team.run("Change the notes").on(&backend).spawn();
    wait_state(l.path(), "capped parked", Duration::from_secs(60), |s| {
        !state_worker(s, "capped")["flow"]["parked"].is_null()
    });
    let id = run_id(l.path());
    let asked = Instant::now();
    let cancel = run_crewmux(l.path(), backend.socket(), &["cancel", &id]);
    assert_eq!(cancel.status.code(), Some(0), "{}", stderr(&cancel));
    let out = wait_limited(child, &["run"]);
    assert!(
        asked.elapsed() < Duration::from_secs(20),
        "the run waited {:?} after the cancel",
        asked.elapsed()
    );
    assert_eq!(summary(&out)["status"], "cancelled", "{}", stderr(&out));
    let st = l.state();
    assert_eq!(state_worker(&st, "capped")["status"], "cancelled", "{st:#}");
    assert_eq!(l.calls(), ["--fresh"], "no attempt after the cancel");
}
