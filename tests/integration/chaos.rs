//! The chaos test: runs of sim and command workers on tmux, in worktrees of a git
//! repository, while panes, the driver (SIGKILL, then `attach --headless` again) and the
//! whole tmux server are killed at random and workers are retried and added (`crewmux
//! steer`), and at the end of each run: the run finished (resumed when its driver was
//! killed or a steer reopened it), every worker is in a final status, every recorded exit
//! code equals its `exit.json`, no event was written twice, no process of any attempt is
//! alive (a `/proc` scan for its `CREWMUX_ATTEMPT_NONCE`, a `setsid` child included),
//! `state.json` reads and `status` accepts it, and the integration branch holds the last
//! completed attempt of every worker (each completed worker's branch is in it, and each
//! worker that writes a file, `ok` and every added one, left there what its last completed
//! attempt wrote).
//!
//! CI runs it for [`DEFAULT_SECS`] seconds; `CREWMUX_CHAOS_SECS=600` runs it longer and
//! `CREWMUX_CHAOS_SEED=N` repeats a sequence. It prints its figures (runs, workers, kills
//! of each kind, retries and added workers, violations) and fails on any violation.

use std::path::Path;
use std::process::Child;
use std::time::{Duration, Instant};

use crate::support::*;

/// Seconds of chaos in CI (the runs that are still going then finish without it).
const DEFAULT_SECS: u64 = 30;

/// What `ok` and every added worker run: `<id>.txt` holding its id and attempt, which the
/// integration check reads (sim workers write nothing, so their branches prove nothing).
const WRITES: &str = concat!(
    r#"echo "$CREWMUX_WORKER attempt $CREWMUX_ATTEMPT" > "$CREWMUX_WORKER.txt"; "#,
    "sleep 1; echo all good"
);

/// Two sim workers and two command workers (`{writes}`: [`WRITES`]); `exits3` fails with 3
/// after leaving a `setsid` child behind, which must not outlive its attempt.
const TEAM: &str = r#"
parallel = 4
max_fix_rounds = 0

[[worker]]
id = "sim1"
role = "architect"
provider = "sim"
max_attempts = 3
prompt = "{problem}\nsim: lines=8\nsim: delay-ms=150"

[[worker]]
id = "sim2"
role = "frontend-designer"
provider = "sim"
max_attempts = 3
prompt = "{problem}\nsim: lines=12\nsim: delay-ms=100"

[[worker]]
id = "ok"
role = "backend-engineer"
provider = "command"
max_attempts = 3
command = ["sh", "-c", '{writes}']

[[worker]]
id = "exits3"
role = "backend-engineer"
provider = "command"
max_attempts = 1
command = ["sh", "-c", "setsid sleep 300 >/dev/null 2>&1 < /dev/null & sleep 1.5; exit 3"]
"#;

/// A small deterministic generator (xorshift64), so a seed repeats a sequence.
struct Dice(u64);

impl Dice {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

#[derive(Default, Debug)]
struct Figures {
    runs: usize,
    workers: usize,
    pane_kills: usize,
    driver_kills: usize,
    server_kills: usize,
    retries: usize,
    added: usize,
    /// Files of a last completed attempt found on an integration branch.
    files: usize,
    violations: Vec<String>,
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
fn runs_survive_killed_panes_drivers_and_servers_and_leave_nothing_behind() {
    if !tmux_ready("chaos") {
        return;
    }
    let secs = env_u64("CREWMUX_CHAOS_SECS", DEFAULT_SECS);
    let seed = env_u64("CREWMUX_CHAOS_SEED", u64::from(std::process::id()) | 1);
    let mut dice = Dice(seed);
    let mut f = Figures::default();
    let end = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < end {
        one_run(&mut dice, &mut f, end);
    }
    println!(
        "chaos (seed {seed}, {secs} s): {} runs, {} workers, kills: {} panes, {} drivers, {} servers; steered: {} retries, {} added; {} files checked; {} violations",
        f.runs,
        f.workers,
        f.pane_kills,
        f.driver_kills,
        f.server_kills,
        f.retries,
        f.added,
        f.files,
        f.violations.len()
    );
    assert!(f.runs > 0, "no run was made");
    assert!(
        f.files > 0,
        "no worker's file was checked on an integration branch"
    );
    assert!(f.violations.is_empty(), "{}", f.violations.join("\n"));
}

/// The pane ids of the workers' windows on `server` (not the session's first window).
fn worker_panes(server: &TmuxServer) -> Vec<String> {
    let out = server.tmux(&["list-panes", "-a", "-F", "#{pane_id} #{window_name}"]);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.ends_with(" crewmux"))
        .filter_map(|l| l.split(' ').next().map(str::to_string))
        .collect()
}

/// One run under chaos until it ends or `end` comes, then to its end without chaos, then
/// the checks.
fn one_run(dice: &mut Dice, f: &mut Figures, end: Instant) {
    let server = TmuxServer::new("chaos");
    let t = TeamProject::in_repo(&[("README", "chaos\n")], &TEAM.replace("{writes}", WRITES));
    let mut driver = t.run("Chaos problem").tmux(&server).spawn();
    let state = wait_state(t.path(), "a run", Duration::from_secs(60), |s| {
        s["run_id"].is_string()
    });
    let run_id = state["run_id"].as_str().unwrap().to_string();
    let attach = |socket: &str| -> Child {
        spawn_crewmux(t.path(), socket, &["attach", "--headless", &run_id])
    };
    // The kinds take turns from a random one, so a run of four steps or more has each.
    let first = dice.below(4);
    for step in 0.. {
        std::thread::sleep(Duration::from_millis(300 + dice.below(900)));
        if Instant::now() >= end || driver.try_wait().unwrap().is_some() {
            break;
        }
        match (first + step) % 4 {
            0 => {
                // After a server kill the driver starts the workers again: wait for a pane.
                let mut panes: Vec<String> = vec![];
                let some = wait_for(
                    || {
                        panes = worker_panes(&server);
                        !panes.is_empty()
                    },
                    Duration::from_secs(5),
                );
                if some {
                    let p = &panes[dice.below(panes.len() as u64) as usize];
                    if server.tmux(&["kill-pane", "-t", p]).status.success() {
                        f.pane_kills += 1;
                    }
                }
            }
            1 => {
                driver.kill().unwrap();
                driver.wait().unwrap();
                f.driver_kills += 1;
                driver = attach(&server.socket);
            }
            2 => {
                server.kill();
                f.server_kills += 1;
            }
            _ => steer(t.path(), &server.socket, &run_id, dice, f),
        }
    }
    let out = wait_limited(driver, &["chaos run", &run_id]);
    let out =
        if out.status.code().is_none() || out.stdout.is_empty() || !finished(t.path(), &run_id) {
            // Killed at the very end, stopped without a summary, or reopened by a steer that
            // came as the driver left: resume it.
            run_crewmux(t.path(), &server.socket, &["attach", "--headless", &run_id])
        } else {
            out
        };
    f.runs += 1;
    check_run(t.path(), &server.socket, &run_id, &out, f);
}

/// Retry `ok`, `sim1` or `sim2` (one that has ended when there is one) or add a command
/// worker that writes its file ([`WRITES`]), through `crewmux steer` as a person would (the
/// events are checked once the run has ended, not while it writes them).
fn steer(project: &Path, socket: &str, run_id: &str, dice: &mut Dice, f: &mut Figures) {
    let steer = |args: &[&str]| wait_limited(spawn_crewmux(project, socket, args), args);
    let out = if dice.below(2) == 0 {
        // A worker that has ended, when one has (a live one is refused).
        let state: serde_json::Value = std::fs::read_to_string(
            project
                .join(".crewmux/runs")
                .join(run_id)
                .join("state.json"),
        )
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
        let ended = |id: &&&str| {
            matches!(
                state_worker(&state, id)["status"].as_str(),
                Some("completed" | "failed" | "crashed" | "timeout")
            )
        };
        // `ok` first: its attempts write `ok.txt`, which the integration check reads.
        let pick = if dice.below(3) == 0 {
            ["sim1", "sim2", "ok"]
        } else {
            ["ok", "sim1", "sim2"]
        };
        let who = pick.iter().find(ended).copied().unwrap_or(pick[0]);
        let out = steer(&["steer", run_id, "retry", who]);
        f.retries += usize::from(out.status.success());
        out
    } else {
        let command = format!("sh -c '{WRITES}'");
        let out = steer(&["steer", run_id, "add", "--command", &command]);
        f.added += usize::from(out.status.success());
        out
    };
    // A refusal is one line and exit 2 (a worker still running, a run that ended).
    if !out.status.success() && out.status.code() != Some(2) {
        f.violations.push(format!(
            "run {run_id}: steer failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
}

/// True when the run's state says it ended.
fn finished(project: &Path, run_id: &str) -> bool {
    let path = project
        .join(".crewmux/runs")
        .join(run_id)
        .join("state.json");
    let state: serde_json::Value = std::fs::read_to_string(path)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
    serde_json::from_value::<crewmux::domain::RunStatus>(state["status"].clone())
        .is_ok_and(|s| s.is_final())
}

/// The integration branch holds the last completed attempt of every worker: each completed
/// worker's branch is merged into it, and for each worker that writes a file ([`WRITES`] in
/// its command) `<id>.txt` there is what its last completed attempt wrote (a later attempt
/// that failed is not taken). Returns how many such files it checked.
fn check_integration(
    project: &Path,
    state: &serde_json::Value,
    events: &[crewmux::domain::RunEvent],
    bad: &mut impl FnMut(String),
) -> usize {
    let Some(integration) = state["workspace"]["integration"]["branch"].as_str() else {
        return 0;
    };
    let workers = state["workers"].as_array().cloned().unwrap_or_default();
    let completed = |w: &&serde_json::Value| w["status"] == "completed" && w["kind"] == "worker";
    for w in workers.iter().filter(completed) {
        let id = w["id"].as_str().unwrap_or_default();
        let Some(branch) = state["workspace"]["workers"][id]["branch"].as_str() else {
            continue;
        };
        if !git_ok(
            project,
            &["merge-base", "--is-ancestor", branch, integration],
        ) {
            bad(format!(
                "{integration} lacks {id}'s last attempt ({branch})"
            ));
        }
    }
    let writes = |w: &&serde_json::Value| {
        w["command"]
            .as_array()
            .is_some_and(|argv| argv.iter().any(|a| a == WRITES))
    };
    let mut files = 0;
    for w in workers.iter().filter(writes) {
        let id = w["id"].as_str().unwrap_or_default();
        let last = events
            .iter()
            .filter(|e| {
                e.kind == crewmux::domain::EventKind::WorkerCompleted
                    && e.worker.as_deref() == Some(id)
            })
            .filter_map(|e| e.attempt)
            .max();
        let Some(n) = last else { continue };
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(project)
            .args(["show", &format!("{integration}:{id}.txt")])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        files += 1;
        if text.trim() != format!("{id} attempt {n}") {
            bad(format!(
                "{integration}:{id}.txt reads {:?}, {id}'s last completed attempt is {n}",
                text.trim()
            ));
        }
    }
    files
}

/// The checks of one finished run (see the module doc); each failure is a violation.
fn check_run(
    project: &Path,
    socket: &str,
    run_id: &str,
    out: &std::process::Output,
    f: &mut Figures,
) {
    let mut bad = |what: String| f.violations.push(format!("run {run_id}: {what}"));
    let run = project.join(".crewmux").join("runs").join(run_id);
    let text = std::fs::read_to_string(run.join("state.json")).unwrap_or_default();
    let state: serde_json::Value = match serde_json::from_str(&text) {
        Ok(s) => s,
        Err(e) => {
            bad(format!("state.json does not read: {e}"));
            return;
        }
    };
    if serde_json::from_slice::<serde_json::Value>(&out.stdout).is_err() {
        bad(format!(
            "no summary at the end: {}",
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .last()
                .unwrap_or_default()
        ));
    }
    let status = run_crewmux(project, socket, &["status", run_id]);
    if !status.status.success() {
        bad(format!(
            "status refuses the run: {}",
            String::from_utf8_lossy(&status.stderr)
        ));
    }
    let workers = state["workers"].as_array().cloned().unwrap_or_default();
    f.workers += workers.len();
    for w in &workers {
        let st: Option<crewmux::domain::WorkerStatus> =
            serde_json::from_value(w["status"].clone()).ok();
        if !st.is_some_and(|s| s.is_terminal()) {
            bad(format!("worker {} ends {}", w["id"], w["status"]));
        }
    }
    let dispatches = state["dispatches"].as_array().cloned().unwrap_or_default();
    for d in &dispatches {
        let (id, attempt, nonce) = (
            d["worker_id"].as_str().unwrap_or_default(),
            d["attempt"].as_u64().unwrap_or_default(),
            d["nonce"].as_str().unwrap_or_default(),
        );
        let exit = run.join(format!("workers/{id}/attempt-{attempt}/exit.json"));
        if let Ok(rec) = std::fs::read_to_string(&exit) {
            let rec: serde_json::Value = serde_json::from_str(&rec).unwrap_or_default();
            if rec["nonce"] == nonce && !d["exit_code"].is_null() && rec["code"] != d["exit_code"] {
                bad(format!(
                    "{id} attempt {attempt}: recorded exit {} but exit.json says {}",
                    d["exit_code"], rec["code"]
                ));
            }
        }
        let gone = wait_for(
            || crewmux::backend::reap::attempt_pids(nonce).is_empty(),
            Duration::from_secs(10),
        );
        if !gone {
            bad(format!(
                "{id} attempt {attempt}: processes still alive: {:?}",
                crewmux::backend::reap::attempt_pids(nonce)
            ));
        }
    }
    let events: Vec<crewmux::domain::RunEvent> = std::fs::read_to_string(run.join("events.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    for v in crewmux::lead::once::violations(&events) {
        bad(format!("events: {v}"));
    }
    f.files += check_integration(project, &state, &events, &mut bad);
}
