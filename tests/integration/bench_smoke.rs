//! The scale benchmark at a few workers, so it never rots (CI does not run the full one).

use crate::scale_lib;

#[test]
fn every_benchmark_scenario_runs_at_small_size() {
    if !crate::support::tmux_ready("every_benchmark_scenario_runs_at_small_size") {
        return;
    }
    let cfg = scale_lib::Config::smoke(env!("CARGO_BIN_EXE_crewmux").into());
    let figs = scale_lib::run_all(&cfg);
    let names: Vec<&str> = figs.iter().map(|f| f.name.as_str()).collect();
    // The remote case runs where sshd is (CI requires it); it skips loudly elsewhere.
    let remote = crate::support::sshd::sshd_ready("every_benchmark_scenario_runs_at_small_size");
    assert_eq!(figs.len(), if remote { 39 } else { 36 }, "{names:?}");
    for f in &figs {
        assert!(f.value.is_finite(), "{} measured nothing", f.name);
    }
    let by = |prefix: &str| figs.iter().find(|f| f.name.starts_with(prefix)).unwrap();
    if remote {
        // Both runs, on the host and here, started every worker and ended by themselves.
        let start = by(&format!(
            "{} workers on an SSH host, command",
            cfg.remote_workers
        ));
        assert!(start.ok, "{start:?}");
    }
    // Correctness figures hold at any size and any machine load, in both modes.
    for f in figs
        .iter()
        .filter(|f| f.name.starts_with("exits missed") || f.name.starts_with("wrong exit codes"))
    {
        assert_eq!(f.value, 0.0, "{f:?}");
    }
    // Every headless worker completed (its wall time is a figure, not a test: CI is noisy).
    let headless = by("headless");
    assert!(
        headless
            .name
            .contains(&format!("({} completed)", cfg.headless_workers)),
        "{headless:?}"
    );
    // The naive baseline spawns one tmux process per worker per 250 ms; crewmux a bounded
    // few per second whatever the number of workers.
    let procs = by("tmux processes spawned per second (idle, process polling)");
    assert!(procs.value < procs.baseline.unwrap(), "{procs:?}");
    // Over the control channel, none in steady state (the channel itself was started
    // before the window).
    let procs = by("tmux processes spawned per second (idle, control mode)");
    assert!(procs.value < 1.0, "{procs:?}");
}
