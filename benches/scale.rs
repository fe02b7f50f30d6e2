//! `cargo bench --bench scale`: the scale benchmark of crewmux (see `scale_lib.rs`). Sizes
//! come from `CREWMUX_BENCH_*` variables; needs tmux.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic is how a test or a benchmark reports a broken expectation"
)]

#[path = "scale_lib.rs"]
mod scale_lib;

/// What the remote case borrows from the integration tests' support: their SSH host.
#[path = "scale_support.rs"]
mod support;

fn main() {
    if std::process::Command::new("tmux")
        .arg("-V")
        .output()
        .is_err()
    {
        eprintln!("the scale benchmark needs tmux on PATH");
        std::process::exit(2);
    }
    let cfg = scale_lib::Config::full(env!("CARGO_BIN_EXE_crewmux").into());
    eprintln!("crewmux scale benchmark: {cfg:?}");
    let figs = scale_lib::run_all(&cfg);
    let missed = figs.iter().filter(|f| !f.ok).count();
    println!(
        "\n{} of {} figures meet their targets",
        figs.len() - missed,
        figs.len()
    );
}
