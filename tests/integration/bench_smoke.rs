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
    assert_eq!(figs.len(), 13, "{names:?}");
    for f in &figs {
        assert!(f.value.is_finite(), "{} measured nothing", f.name);
    }
    let by = |prefix: &str| figs.iter().find(|f| f.name.starts_with(prefix)).unwrap();
    // Correctness figures hold at any size and any machine load.
    assert_eq!(by("exits missed").value, 0.0);
    assert_eq!(by("wrong exit codes").value, 0.0);
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
    let procs = by("tmux processes spawned per second (idle)");
    assert!(procs.value < procs.baseline.unwrap(), "{procs:?}");
}
