//! A host that accepts the TCP connection and never answers (ssh hangs in its banner
//! exchange) is an outage like a refused port: planning's question gives up at its limit
//! and the run starts; said not to answer within a few seconds of its first failed call
//! (the first launch's check), lost at its `lost_after_s` (plus a small bound), and its
//! worker then runs here.

use std::net::TcpListener;
use std::time::{Duration, Instant};

use crate::support::on_host::*;
use crate::support::sshd::*;
use crate::support::*;

/// A loopback listener that accepts every connection and never writes: ssh connects and
/// then waits for the server's banner. Ends with the test.
struct Silent {
    port: u16,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Silent {
    fn start() -> Silent {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        l.set_nonblocking(true).unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let done = stop.clone();
        std::thread::spawn(move || {
            let mut held = vec![];
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                match l.accept() {
                    Ok((s, _)) => held.push(s),
                    Err(_) => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        });
        Silent { port, stop }
    }
}

impl Drop for Silent {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

#[test]
fn a_host_that_hangs_in_the_banner_exchange_is_said_down_soon_and_lost_at_its_limit() {
    let Some(t) = HostRepo::start("hosts-banner") else {
        return;
    };
    let p = t.path();
    let silent = Silent::start();
    const LOST_AFTER: u64 = 6;
    write_hosts(
        p,
        &t.host.hosts_toml_lost_after("hang", LOST_AFTER).replace(
            "ssh_args = [\"-F\"",
            &format!("ssh_args = [\"-p\", \"{}\", \"-F\"", silent.port),
        ),
    );
    let team = t.team(
        "[[worker]]\nid = \"rbeta\"\nrole = \"backend-engineer\"\nprovider = \"command\"\nhost = \"hang\"\nmax_attempts = 1\n\
         command = [\"sh\", \"-c\", \"echo ran; exit 0\"]\n",
    );
    let args = headless(&team, "a host that hangs");
    let t0 = Instant::now();
    let mut child = t.spawn(&args);
    let lines = timed_lines(child.stderr.take().unwrap(), t0);
    let out = wait_limited(child, &args);
    let lines = lines.join().unwrap();
    let all: String = lines
        .iter()
        .map(|(at, l)| format!("{:>6.1} s  {l}\n", at.as_secs_f64()))
        .collect();
    let log = std::fs::read_to_string(p.join(".crewmux/crewmux.log")).unwrap_or_default();
    let when = |said: &str| {
        lines
            .iter()
            .find(|(_, l)| l.contains(said))
            .map(|(at, _)| at.as_secs_f64())
    };
    let stage = when("stage-changed: team-plan → team-exec");
    let down = when("host hang does not answer");
    let moved = when("rbeta#1 worker-moved");
    eprintln!("hosts_banner: stage {stage:?} s, said down {down:?} s, moved {moved:?} s\n{all}");
    let s = summary(&out);
    let w = worker(&s, "rbeta");
    assert_eq!(
        (w["status"].as_str(), w["placement"].as_str()),
        (Some("completed"), Some("attempt 1 on local (hang lost)")),
        "{s}\n{all}\n{log}"
    );
    let (Some(stage), Some(down), Some(moved)) = (stage, down, moved) else {
        panic!("not said in order\n{all}\n{log}");
    };
    // Planning's question is bounded (3 s): the host only does not answer, so the run
    // starts and waits for it.
    assert!(
        stage < 10.0,
        "the stage began {stage:.1} s after the start\n{all}"
    );
    // The first launch's check (5 s) fails: said not to answer, then lost at the host's
    // limit counted from then (and a short last probe), each with a loaded machine's slack.
    assert!(
        down - stage < 8.0,
        "said not to answer {:.1} s after the stage began\n{all}",
        down - stage
    );
    let bound = LOST_AFTER as f64 + 5.0;
    assert!(
        moved - stage < bound,
        "moved here {:.1} s after the stage began (bound {bound} s)\n{all}",
        moved - stage
    );
    // Every line about the host reads as one sentence: nothing glued after ssh's words.
    for line in all.lines().chain(log.lines()) {
        assert!(!line.contains("exchange worker"), "{line}");
    }
    assert_events_once(p);
}
