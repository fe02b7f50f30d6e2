//! Starting attempts in a real tmux on a private socket: a wrapper starts its agent only once
//! the window's `pipe-pane` is attached (the agent's first byte is in `output.log`, and the
//! key that lets it go leaves no trace), and a run's first windows on a new server go over
//! the control channel from the start (no attach is tried before the session exists).

use std::path::Path;
use std::time::{Duration, Instant};

use crewmux::backend::{Multiplexer, SpawnSpec};
use crewmux::launch::{find_marker, write_wrapper, AttemptPaths, WrapperSpec};
use crewmux::tmux::TmuxBackend;

use crate::support::*;

/// Windows started at once: one launch batch.
const WINDOWS: usize = 8;

/// The wrapper of attempt `i` in `dir`: its agent prints its first line at once, then ends.
fn attempt(dir: &Path, i: usize) -> SpawnSpec {
    std::fs::create_dir_all(dir).unwrap();
    let paths = AttemptPaths::new(dir.to_path_buf());
    let argv: Vec<String> = ["printf", "first line of w%s\\n", &i.to_string()]
        .map(String::from)
        .to_vec();
    let nonce = format!("nonce{i}");
    write_wrapper(
        &paths,
        &WrapperSpec {
            worker: &format!("w{i}"),
            attempt: 1,
            nonce: &nonce,
            argv: &argv,
            cwd: dir,
            stdin_file: None,
            wait_for_log: true,
            // The wrapper looks for its marker in output.log itself (no driver here).
            release_fifo: false,
            render: None,
            fence: None,
        },
    )
    .unwrap();
    SpawnSpec {
        worker: format!("w{i}"),
        attempt: 1,
        nonce,
        window: format!("w{i}-1"),
        cwd: dir.to_path_buf(),
        launch: paths.launch,
        log: paths.output,
        env: vec![],
        secret_env: vec![],
        host: None,
    }
}

#[test]
fn an_agents_first_byte_is_in_output_log_and_a_new_servers_first_windows_use_the_channel() {
    if !tmux_ready("launch-start") {
        return;
    }
    let server = TmuxServer::new("launch-start");
    let tmp = tempfile::tempdir().unwrap();
    let mut backend = TmuxBackend::new(
        &server.socket,
        "crewmux-launch-start",
        vec!["sleep".into(), "1000".into()],
    )
    .with_control_mode();
    let specs: Vec<SpawnSpec> = (0..WINDOWS)
        .map(|i| attempt(&tmp.path().join(format!("w{i}")), i))
        .collect();
    let started = backend.spawn_many(&specs);
    for (spec, r) in specs.iter().zip(&started) {
        assert!(r.is_ok(), "{}: {r:?}", spec.window);
    }
    // No server and no session before: both were made by tmux processes, then the channel
    // came up once and carried the windows.
    let stats = backend.client().control_stats().unwrap();
    assert_eq!(
        (stats.connects, stats.fallbacks),
        (1, 0),
        "one channel, no call left to a process: {stats:?}"
    );
    for (i, spec) in specs.iter().enumerate() {
        let end = Instant::now() + Duration::from_secs(60);
        let mut log = String::new();
        while find_marker(&log, &spec.nonce).is_none() && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(20));
            log = std::fs::read_to_string(&spec.log).unwrap_or_default();
        }
        assert!(
            find_marker(&log, &spec.nonce).is_some(),
            "{}: no marker in output.log: {log:?}",
            spec.window
        );
        assert!(
            log.starts_with(&format!("first line of w{i}")),
            "{}: the agent's first bytes are missing from output.log: {log:?}",
            spec.window
        );
        assert!(
            !log.contains('\u{4}') && !log.contains("^D"),
            "{}: the start key shows: {log:?}",
            spec.window
        );
    }
}
