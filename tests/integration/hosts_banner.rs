//! A host that accepts the TCP connection and never answers (ssh hangs in its banner
//! exchange) is an outage like a refused port: said not to answer within a few seconds of
//! its first failed call, lost at its `lost_after_s` (plus a small bound), and its worker
//! then runs here.

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

/// The seconds since `t0` when the first line of crewmux.log matching `said` appeared
/// (polled; `None` within `limit`).
fn seen_after(project: &std::path::Path, t0: Instant, limit: Duration, said: &str) -> Option<f64> {
    let log = project.join(".crewmux/crewmux.log");
    let ok = wait_for(
        || std::fs::read_to_string(&log).is_ok_and(|l| l.contains(said)),
        limit,
    );
    ok.then(|| t0.elapsed().as_secs_f64())
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
    let child = t.spawn(&args);
    let limit = Duration::from_secs(120);
    let failed = seen_after(p, t0, limit, "banner exchange");
    let down = seen_after(p, t0, limit, "host hang does not answer");
    let moved = seen_after(p, t0, limit, "rbeta: worker-moved");
    let out = wait_limited(child, &args);
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let log = std::fs::read_to_string(p.join(".crewmux/crewmux.log")).unwrap_or_default();
    eprintln!(
        "hosts_banner: first failed call {failed:?} s, said down {down:?} s, moved {moved:?} s"
    );
    let s = summary(&out);
    let w = worker(&s, "rbeta");
    assert_eq!(
        (w["status"].as_str(), w["placement"].as_str()),
        (Some("completed"), Some("attempt 1 on local (hang lost)")),
        "{s}\n{stderr}\n{log}"
    );
    let (Some(failed), Some(down), Some(moved)) = (failed, down, moved) else {
        panic!("not said in order\n{log}");
    };
    // Said not to answer after one probe (5 s) past the first failed call, lost at the
    // host's limit (and a short last probe), each with a loaded machine's slack.
    assert!(
        down - failed < 8.0,
        "said not to answer {:.1} s after the first failed call\n{log}",
        down - failed
    );
    let bound = LOST_AFTER as f64 + 5.0;
    assert!(
        moved - failed < bound,
        "moved here {:.1} s after the first failed call (bound {bound} s)\n{log}",
        moved - failed
    );
    // Every line about the host reads as one sentence: nothing glued after ssh's words.
    for line in log.lines().filter(|l| l.contains("banner exchange")) {
        assert!(!line.contains("exchange worker"), "{line}");
    }
    assert_events_once(p);
}
