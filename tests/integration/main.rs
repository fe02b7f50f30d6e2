//! The integration tests of crewmux: one test binary (one link, one place for helpers).
//!
//! Each module holds the tests of one concern; [`support`] holds every helper they share.
//! Tests that need tmux start a private server on a socket of their own and kill it; where
//! tmux is missing they say so loudly and skip, and `CREWMUX_REQUIRE_TMUX=1` (set by
//! `.ci/run`) turns the skip into a failure.
//!
//! New integration tests go in a module here (`mod name;` below), not in a new
//! `tests/*.rs` file: each of those would be another binary to link.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic is how a test or a benchmark reports a broken expectation"
)]
#![allow(
    clippy::too_many_lines,
    reason = "a scenario reads top to bottom, one step after the other"
)]

mod support;

// The scale benchmark's scenarios, run small by `bench_smoke` (the bench target shares them).
#[path = "../../benches/scale_lib.rs"]
mod scale_lib;

mod adopt_window;
mod after_run;
mod auth_sources;
mod bench_smoke;
mod breaker;
mod budget;
mod cancel_grace;
mod chaos;
mod cleanup;
mod cli;
mod cli_doctor_dispatch;
mod command_programs;
mod control_mode;
mod council;
mod creds;
mod creds_api;
mod creds_env;
mod creds_errors;
mod creds_run;
mod custom_roles;
mod dashboard;
mod dashboard_merge;
mod descendants;
mod exit_failures;
mod exit_meanings;
mod flow;
mod flow_limits;
mod flow_merge;
mod headless;
mod home;
mod hooks;
mod hosts;
mod hosts_banner;
mod hosts_busy;
mod hosts_driven_status;
mod hosts_end_time;
mod hosts_frozen;
mod hosts_git;
mod hosts_helper;
mod hosts_helper_refused;
mod hosts_hung;
mod hosts_keys;
mod hosts_left;
mod hosts_life;
mod hosts_ops;
mod hosts_options;
mod hosts_refused;
mod hosts_sim_down;
mod hosts_sshd;
mod hosts_start;
mod launch_start;
mod layers;
mod lead;
mod lifecycle;
mod locale;
mod mcp;
mod notify;
mod pane_identity;
mod parking;
mod planning;
mod providers_standins;
mod race;
mod rate_limit_lines;
mod real_clis;
mod result_question;
mod resume;
mod run_inputs;
mod run_needs;
mod sandbox;
mod shell;
mod state_files;
mod steer;
mod stopped_server;
mod structured_output;
mod team_files;
mod team_run;
mod tmux_version;
mod waiting;
mod waiting_screens;
mod worker_cwd;
mod worker_env;
mod worker_shell;
mod workspaces;
mod workspaces_handed;
mod workspaces_judged;
mod workspaces_taken;
